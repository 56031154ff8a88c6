//! Other finders' halo catalogues: small files in the real Rockstar, AHF and SUBFIND formats,
//! read exactly, placed on a snapshot's length unit, summarised by `haloscope info`, and bad
//! files refused with the file and the problem named.

#[path = "common/app_harness.rs"]
mod app_harness;
mod common;

use common::{haloscope_bin, shared_data};
use haloscope::data::{Header, LoadOptions, load_snapshot};
use haloscope::halo::finders::{Finder, LengthUnit, SubfindTable, read_catalogue};
use haloscope::jobs::Progress;
use ndarray::{ArrayView1, ArrayView2};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROCKSTAR_LIST_HEADER: &str = "#ID DescID Mvir Vmax Vrms Rvir Rs Np X Y Z VX VY VZ JX JY JZ \
Spin rs_klypin Mvir_all M200b M200c M500c M2500c Xoff Voff spin_bullock b_to_a c_to_a A[x] A[y] \
A[z] b_to_a(500c) c_to_a(500c) A[x](500c) A[y](500c) A[z](500c) T/|U| M_pe_Behroozi M_pe_Diemer \
Halfmass_Radius
#a = 1.000000
#Om = 0.300000; Ol = 0.700000; h = 0.700000
#FOF linking length: 0.280000
#Unbound Threshold: 0.500000; FOF Refinement Threshold: 0.700000
#Particle mass: 1.03289e+10 Msun/h
#Box size: 50.000000 Mpc/h
#Force resolution assumed: 0.009 Mpc/h
#Units: Masses in Msun / h
#Units: Positions in Mpc / h (comoving)
#Units: Velocities in km / s (physical, peculiar)
#Units: Halo Distances, Lengths, and Radii in kpc / h (comoving)
#Units: Angular Momenta in (Msun/h) * (Mpc/h) * km/s (physical)
#Units: Spins are dimensionless
#Np is an internal debugging quantity.
#Rockstar Version: 0.99.9-RC3+
";

/// One row: the named values, every other column 0.5.
fn row(header: &str, values: &[(&str, &str)]) -> String {
    let names: Vec<&str> = header
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches('#')
        .split_whitespace()
        .collect();
    let cells: Vec<String> = names
        .iter()
        .map(|n| {
            let bare = n.split('(').next().unwrap_or(n);
            values
                .iter()
                .find(|(k, _)| *k == *n || *k == bare)
                .map_or("0.5".to_owned(), |(_, v)| (*v).to_owned())
        })
        .collect();
    cells.join(if header.contains('\t') { "\t" } else { " " })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

fn rockstar_list(dir: &Path) -> PathBuf {
    let h = ROCKSTAR_LIST_HEADER;
    let mut text = h.to_owned();
    for values in [
        [
            ("ID", "0"),
            ("Mvir", "1.5e13"),
            ("Rvir", "500.0"),
            ("Np", "1452"),
            ("X", "10.0"),
            ("Y", "20.0"),
            ("Z", "30.0"),
            ("VX", "100"),
            ("VY", "-50"),
            ("VZ", "7"),
        ],
        [
            ("ID", "1"),
            ("Mvir", "2.0e12"),
            ("Rvir", "250.0"),
            ("Np", "194"),
            ("X", "49.5"),
            ("Y", "0.25"),
            ("Z", "0.0"),
            ("VX", "1"),
            ("VY", "2"),
            ("VZ", "3"),
        ],
    ] {
        text.push_str(&row(h, &values));
        text.push('\n');
    }
    write(dir, "out_0.list", &text)
}

fn snapshot_header() -> Header {
    let path = shared_data("snapshots/g2_lcdm_gas_snapshot_004.hdf5");
    load_snapshot(&path, &LoadOptions::default(), &Progress::none())
        .expect("snapshot")
        .header
}

#[test]
fn rockstar_list_reads_by_column_name_with_radii_in_the_positions_unit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = read_catalogue(&rockstar_list(dir.path()), SubfindTable::Groups).expect("catalogue");
    assert_eq!(c.finder, Finder::Rockstar);
    assert_eq!(c.length_unit, Some(LengthUnit::MpcH));
    assert_eq!((c.box_size, c.scale_factor), (Some(50.0), Some(1.0)));
    assert_eq!(c.halos.len(), 2);
    let h = &c.halos[0];
    assert_eq!(
        (h.id, h.host, h.n_particles, h.mass),
        (0, None, 1452, 1.5e13)
    );
    assert_eq!(h.centre, [10.0, 20.0, 30.0]);
    assert_eq!(h.radius, 0.5); // 500 kpc/h in Mpc/h
    assert_eq!(h.velocity, Some([100.0, -50.0, 7.0]));
    // The shared Gadget-4 snapshot is in kpc/h (UnitLength_in_cm = 3.085678e21).
    let factor = c.length_factor(&snapshot_header()).expect("units decided");
    assert_eq!(factor, 1000.0);
    let halos = c.to_halos(factor);
    assert_eq!(halos[1].com, [49_500.0, 250.0, 0.0]);
    assert_eq!((halos[1].radius_rms, halos[1].size), (250.0, 194));
}

#[test]
fn rockstar_halos_ascii_and_ahf_halos_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = "#id num_p mvir mbound_vir rvir vmax rvmax vrms x y z vx vy vz Jx Jy Jz E Spin \
PosUncertainty VelUncertainty bulk_vx bulk_vy bulk_vz BulkVelUnc n_core m200b m200c m500c m2500c \
Xoff Voff spin_bullock b_to_a c_to_a A[x] A[y] A[z] b_to_a(500c) c_to_a(500c) A[x](500c) \
A[y](500c) A[z](500c) Rs Rs_Klypin T/|U| M_pe_Behroozi M_pe_Diemer Halfmass_Radius idx i_so i_ph \
num_cp mmetric\n#a = 0.500000\n#Units: Positions in Mpc / h (comoving)\n";
    let text = format!(
        "{h}{}\n",
        row(
            h,
            &[
                ("id", "7"),
                ("num_p", "30"),
                ("mvir", "3e11"),
                ("rvir", "120"),
                ("x", "1.5"),
                ("y", "2.5"),
                ("z", "3.5")
            ]
        )
    );
    let c = read_catalogue(
        &write(dir.path(), "halos_0.0.ascii", &text),
        SubfindTable::Groups,
    )
    .expect("catalogue");
    assert_eq!(c.finder, Finder::Rockstar);
    assert_eq!((c.halos[0].id, c.halos[0].n_particles), (7, 30));
    assert_eq!(
        (c.halos[0].centre, c.halos[0].radius),
        ([1.5, 2.5, 3.5], 0.12)
    );
    assert_eq!(c.scale_factor, Some(0.5));

    let names = [
        "ID(1)",
        "hostHalo(2)",
        "numSubStruct(3)",
        "Mvir(4)",
        "npart(5)",
        "Xc(6)",
        "Yc(7)",
        "Zc(8)",
        "VXc(9)",
        "VYc(10)",
        "VZc(11)",
        "Rvir(12)",
        "Rmax(13)",
        "r2(14)",
        "mbp_offset(15)",
        "com_offset(16)",
        "Vmax(17)",
        "v_esc(18)",
        "sigV(19)",
        "lambda(20)",
        "lambdaE(21)",
        "Lx(22)",
        "Ly(23)",
        "Lz(24)",
        "b(25)",
        "c(26)",
    ];
    let h = format!("#{}\n", names.join("\t"));
    let mut text = h.clone();
    text.push_str(&row(
        &h,
        &[
            ("ID", "2785"),
            ("hostHalo", "0"),
            ("Mvir", "8.1e13"),
            ("npart", "41203"),
            ("Xc", "25000.5"),
            ("Yc", "1200.25"),
            ("Zc", "49999.0"),
            ("Rvir", "812.5"),
        ],
    ));
    text.push('\n');
    text.push_str(&row(
        &h,
        &[
            ("ID", "2786"),
            ("hostHalo", "2785"),
            ("Mvir", "1e12"),
            ("npart", "503"),
            ("Xc", "25100"),
            ("Yc", "1300"),
            ("Zc", "49990"),
            ("Rvir", "90"),
        ],
    ));
    text.push('\n');
    let c = read_catalogue(
        &write(dir.path(), "snap_004.z0.000.AHF_halos", &text),
        SubfindTable::Groups,
    )
    .expect("catalogue");
    assert_eq!(c.finder, Finder::Ahf);
    assert_eq!(c.length_unit, Some(LengthUnit::KpcH));
    assert_eq!(c.halos.len(), 2);
    assert_eq!((c.halos[0].host, c.halos[1].host), (None, Some(2785)));
    assert_eq!(c.halos[0].centre, [25000.5, 1200.25, 49999.0]);
    assert_eq!((c.halos[0].radius, c.halos[0].n_particles), (812.5, 41203));
    assert_eq!(c.length_factor(&snapshot_header()).expect("units"), 1.0);
}

/// Writes one SUBFIND file: `n_groups` groups and one subhalo per group.
fn write_subfind(path: &Path, first: usize, n_groups: usize, n_files: i32) {
    let file = hdf5::File::create(path).expect("create");
    let header = file.create_group("Header").expect("group");
    let int = |g: &hdf5::Group, name: &str, v: i32| {
        g.new_attr::<i32>()
            .create(name)
            .and_then(|a| a.write_scalar(&v))
            .expect("attr");
    };
    let real = |g: &hdf5::Group, name: &str, v: f64| {
        g.new_attr::<f64>()
            .create(name)
            .and_then(|a| a.write_scalar(&v))
            .expect("attr");
    };
    int(&header, "Ngroups_ThisFile", n_groups as i32);
    int(&header, "Nsubhalos_ThisFile", n_groups as i32);
    int(&header, "NumFiles", n_files);
    real(&header, "BoxSize", 50_000.0);
    real(&header, "Time", 1.0);
    real(&header, "Redshift", 0.0);
    let params = file.create_group("Parameters").expect("group");
    real(&params, "UnitLength_in_cm", 3.085678e21);
    real(&params, "UnitMass_in_g", 1.989e43);
    for (group, prefix, radius) in [
        ("Group", "Group", "Group_R_Crit200"),
        ("Subhalo", "Subhalo", "SubhaloHalfmassRad"),
    ] {
        let g = file.create_group(group).expect("group");
        let idx: Vec<usize> = (first..first + n_groups).collect();
        let pos: Vec<f32> = idx
            .iter()
            .flat_map(|&i| [1000.0 * i as f32, 2.0, 3.0])
            .collect();
        let mass: Vec<f32> = idx.iter().map(|&i| 10.0 / (i + 1) as f32).collect();
        let len: Vec<i32> = idx.iter().map(|&i| 100 - i as i32).collect();
        let r: Vec<f32> = idx.iter().map(|&i| 50.0 + i as f32).collect();
        let ds = |name: String, view: ArrayView1<f32>| {
            g.new_dataset_builder()
                .with_data(view)
                .create(name.as_str())
                .expect("dataset");
        };
        g.new_dataset_builder()
            .with_data(ArrayView2::from_shape((n_groups, 3), &pos).expect("shape"))
            .create(format!("{prefix}Pos").as_str())
            .expect("dataset");
        g.new_dataset_builder()
            .with_data(ArrayView2::from_shape((n_groups, 3), &pos).expect("shape"))
            .create(format!("{prefix}Vel").as_str())
            .expect("dataset");
        ds(format!("{prefix}Mass"), ArrayView1::from(&mass));
        ds(radius.to_owned(), ArrayView1::from(&r));
        g.new_dataset_builder()
            .with_data(ArrayView1::from(&len))
            .create(format!("{prefix}Len").as_str())
            .expect("dataset");
        if group == "Subhalo" {
            let host: Vec<i32> = idx.iter().map(|&i| i as i32).collect();
            g.new_dataset_builder()
                .with_data(ArrayView1::from(&host))
                .create("SubhaloGrNr")
                .expect("dataset");
        }
    }
}

#[test]
fn subfind_groups_and_subhalos_single_and_multi_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let single = dir.path().join("fof_subhalo_tab_004.hdf5");
    write_subfind(&single, 0, 3, 1);
    let c = read_catalogue(&single, SubfindTable::Groups).expect("catalogue");
    assert_eq!(
        (c.finder, c.table, c.mass_unit),
        (Finder::Subfind, "groups", "1e10 Msun/h")
    );
    assert_eq!(
        (c.length_unit, c.box_size),
        (Some(LengthUnit::KpcH), Some(50_000.0))
    );
    let got: Vec<(i64, u64, f64, [f64; 3], f64)> = c
        .halos
        .iter()
        .map(|h| (h.id, h.n_particles, h.mass, h.centre, h.radius))
        .collect();
    assert_eq!(
        got,
        [
            (0, 100, 10.0, [0.0, 2.0, 3.0], 50.0),
            (1, 99, 5.0, [1000.0, 2.0, 3.0], 51.0),
            (2, 98, f64::from(10.0f32 / 3.0), [2000.0, 2.0, 3.0], 52.0)
        ]
    );
    let subs = read_catalogue(&single, SubfindTable::Subhalos).expect("subhalos");
    assert_eq!(subs.radius_name, "SubhaloHalfmassRad");
    assert_eq!(subs.halos[2].host, Some(2));

    let multi = dir.path().join("fof_subhalo_tab_005.0.hdf5");
    write_subfind(&multi, 0, 2, 2);
    write_subfind(&dir.path().join("fof_subhalo_tab_005.1.hdf5"), 2, 1, 2);
    let m = read_catalogue(
        &dir.path().join("fof_subhalo_tab_005.1.hdf5"),
        SubfindTable::Groups,
    )
    .expect("multi-file catalogue");
    assert_eq!(m.paths.len(), 2);
    let ids: Vec<(i64, [f64; 3])> = m.halos.iter().map(|h| (h.id, h.centre)).collect();
    assert_eq!(
        ids,
        [
            (0, [0.0, 2.0, 3.0]),
            (1, [1000.0, 2.0, 3.0]),
            (2, [2000.0, 2.0, 3.0])
        ]
    );
    let result = m.to_fof_result(m.length_factor(&snapshot_header()).expect("units"), None);
    assert_eq!((result.halos.len(), result.n_particles), (3, 297));
}

#[test]
fn bad_catalogues_and_undecidable_units_are_one_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = ROCKSTAR_LIST_HEADER;
    let text = format!("{h}{}\n", row(h, &[("ID", "0"), ("X", "ten")]));
    let bad = write(dir.path(), "out_1.list", &text);
    let err = read_catalogue(&bad, SubfindTable::Groups)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "{}: line 17, column `X`: \"ten\" is not a finite number",
            bad.display()
        )
    );
    let text = format!("{h}1 2 3\n");
    let short = write(dir.path(), "out_2.list", &text);
    let err = read_catalogue(&short, SubfindTable::Groups)
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 17: 3 values"), "{err}");
    let other = write(dir.path(), "notes.txt", "hello\n");
    let err = read_catalogue(&other, SubfindTable::Groups)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&other.display().to_string()) && err.contains("not a halo catalogue"),
        "{err}"
    );
    // A SUBFIND file whose header count disagrees with its datasets.
    let lying = dir.path().join("fof_subhalo_tab_006.hdf5");
    write_subfind(&lying, 0, 2, 1);
    let f = hdf5::File::open_rw(&lying).expect("open");
    f.group("Header")
        .and_then(|g| g.attr("Ngroups_ThisFile"))
        .and_then(|a| a.write_scalar(&5i32))
        .expect("attr");
    drop(f);
    let err = read_catalogue(&lying, SubfindTable::Groups)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Group/GroupPos: expected shape [5, 3]"),
        "{err}"
    );
    // Rockstar's Mpc/h on a tipsy snapshot (no units, no box): cannot be decided.
    let c = read_catalogue(&rockstar_list(dir.path()), SubfindTable::Groups).expect("catalogue");
    let tipsy = Header {
        parameters: BTreeMap::new(),
        ..Header::default()
    };
    let err = c.length_factor(&tipsy).unwrap_err().to_string();
    assert!(
        err.contains("lengths are in Mpc/h but the snapshot's length unit cannot be decided"),
        "{err}"
    );
}

#[test]
fn info_summarises_a_catalogue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = rockstar_list(dir.path());
    let out = Command::new(haloscope_bin())
        .args(["info", "--json"])
        .arg(&path)
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["finder"], "Rockstar");
    assert_eq!(v["n_halos"], 2);
    assert_eq!(v["particles_in_halos"], 1646);
    assert_eq!(v["length_unit"], "Mpc/h");
    assert_eq!(v["largest"]["mass"], 1.5e13);
}

/// AHF halos (kpc/h, as the shared Gadget-4 snapshot) around two particles of the snapshot.
fn ahf_around(dir: &Path, centres: &[[f32; 3]]) -> PathBuf {
    let mut text = "#ID(1)\thostHalo(2)\tnumSubStruct(3)\tMvir(4)\tnpart(5)\tXc(6)\tYc(7)\tZc(8)\t\
VXc(9)\tVYc(10)\tVZc(11)\tRvir(12)\n"
        .to_owned();
    for (k, c) in centres.iter().enumerate() {
        text.push_str(&format!(
            "{}\t-1\t0\t{}e12\t{}\t{}\t{}\t{}\t0\t0\t0\t{}\n",
            k + 1,
            k + 1,
            100 * (k + 1),
            c[0],
            c[1],
            c[2],
            500.0 * (k + 1) as f64
        ));
    }
    write(dir, "snap_004.z0.000.AHF_halos", &text)
}

#[test]
fn the_window_opens_a_catalogue_over_the_snapshot_and_loads_the_region_around_a_halo() {
    use egui_kittest::kittest::Queryable as _;
    let snapshot_path = shared_data("snapshots/g2_lcdm_gas_snapshot_004.hdf5");
    let snapshot = load_snapshot(&snapshot_path, &LoadOptions::default(), &Progress::none())
        .expect("snapshot");
    let centres = [
        snapshot.species[1].positions[0],
        snapshot.species[1].positions[1000],
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let catalogue = ahf_around(dir.path(), &centres);
    let files = vec![snapshot_path.clone()];
    let mut harness = egui_kittest::Harness::builder()
        .with_size(egui::vec2(1000.0, 640.0))
        .build_ui_state(
            move |ui, state: &mut Option<haloscope::app::HaloscopeApp>| {
                let app = state.get_or_insert_with(|| {
                    haloscope::app::HaloscopeApp::new(
                        ui.ctx(),
                        None,
                        files.clone(),
                        app_harness::gradient_factory(std::time::Duration::ZERO),
                    )
                });
                app.ui(ui);
            },
            None,
        );
    app_harness::step_until(&mut harness, "the snapshot", |app| {
        app.documents.pending.is_empty() && app.documents.shown_snapshot().is_some()
    });
    app_harness::app_mut(&mut harness).open_path(&catalogue);
    app_harness::step_until(&mut harness, "the catalogue", |app| {
        app.halos.running.is_none() && app.halos.catalogue.is_some()
    });
    let app = app_harness::app(&harness);
    let document = app.documents.shown_snapshot().expect("shown");
    let shown = app
        .halos
        .catalogue_of(document.id)
        .expect("over the snapshot");
    // The file holds the f32 positions written shortest: they read back exactly as f32.
    let coms: Vec<[f32; 3]> = shown
        .result
        .halos
        .iter()
        .map(|h| h.com.map(|x| x as f32))
        .collect();
    assert_eq!(coms, centres);
    assert_eq!(app.halos.markers(document.id).len(), 2);
    // Select the second halo and load the particles within 3 Rvir (1500 kpc/h) of it.
    {
        let app = app_harness::app_mut(&mut harness);
        // Only the Halos section open, so its buttons lie inside the window.
        let panels = &mut app.panels;
        (panels.file, panels.render, panels.events, panels.movie) = (false, false, false, false);
        panels.halos = true;
        app.halos.selected = Some(1);
    }
    harness.run_ok();
    harness.get_by_label("Load region around halo").click();
    app_harness::step_until(&mut harness, "the region", |app| {
        app.documents.pending.is_empty() && app.documents.snapshots.len() == 2
    });
    let region = haloscope::data::region::Region::around(centres[1].map(f64::from), 3000.0);
    let expected = haloscope::data::region::filter_snapshot(&snapshot, &region, Some(50_000.0));
    let app = app_harness::app(&harness);
    let opened = &app.documents.snapshots[1].snapshot;
    assert_eq!(opened.n_particles(), expected.n_particles());
    assert!(opened.n_particles() > 0);
}

#[test]
fn fof_catalogues_written_by_haloscope_read_back_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let halo = |size: usize, x: f64| haloscope::halo::Halo {
        size,
        min_index: 0,
        mass: 0.1 * size as f64,
        com: [x, 0.25, -0.125],
        velocity: Some([1.0, 2.0, 3.0]),
        radius_max: 0.5 / 3.0,
        radius_rms: 0.01,
    };
    let c = read_catalogue(&rockstar_list(dir.path()), SubfindTable::Groups).expect("catalogue");
    let mut result = c.to_fof_result(1.0, None);
    result.halos = vec![halo(40, 0.1), halo(21, -0.3)];
    for name in ["cat.csv", "cat.hdf5"] {
        let path = dir.path().join(name);
        haloscope::halo::export::write_catalogue(&path, &result).expect("export");
        let back = haloscope::halo::finders::read_fof_catalogue(&path).expect("read back");
        let got: Vec<(usize, f64, [f64; 3], f64, f64)> = back
            .iter()
            .map(|h| (h.size, h.mass, h.com, h.radius_max, h.radius_rms))
            .collect();
        let want: Vec<(usize, f64, [f64; 3], f64, f64)> = result
            .halos
            .iter()
            .map(|h| (h.size, h.mass, h.com, h.radius_max, h.radius_rms))
            .collect();
        assert_eq!(got, want, "{name}");
    }
    let bad = write(dir.path(), "other.csv", "a,b\n1,2\n");
    let err = haloscope::halo::finders::read_fof_catalogue(&bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no `size` column"), "{err}");
}
