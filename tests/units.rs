//! Units, cosmology and the derived temperature from real files: the shared Gadget-4
//! snapshot, SWIFT- and Gadget-2-flavoured HDF5 written here, tipsy with and without a
//! `.param` file, and the units a FoF catalogue records.

mod common;

use common::shared_data;
use haloscope::data::gadget_hdf5::{self, GadgetWriteOptions};
use haloscope::data::kernel::SimCode;
use haloscope::data::tipsy::{TipsyWriteOptions, write as write_tipsy};
use haloscope::data::units::UnitSource;
use haloscope::data::{
    Field, Header, LoadOptions, Masses, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind,
    TEMPERATURE_FIELD, load_snapshot,
};
use haloscope::jobs::Progress;
use hdf5::types::VarLenUnicode;
use std::path::Path;

/// Proton mass (g) and Boltzmann's constant (erg/K) of the formula T = (γ−1)·u·μ·m_p/k_B.
const M_P: f64 = 1.672_621_923_69e-24;
const K_B: f64 = 1.380_649e-16;

/// The expected temperature: γ = 5/3, X = 0.76, μ = 4/(1 + 3X + 4X·x_e), or 4/(3 + 5X).
fn expected_kelvin(u_cgs: f64, x_e: Option<f64>) -> f32 {
    let x = 0.76;
    let mu = match x_e {
        Some(x_e) => 4.0 / (1.0 + 3.0 * x + 4.0 * x * x_e),
        None => 4.0 / (3.0 + 5.0 * x),
    };
    ((5.0 / 3.0 - 1.0) * u_cgs * mu * M_P / K_B) as f32
}

fn load(path: &Path) -> Snapshot {
    load_snapshot(path, &LoadOptions::default(), &Progress::none()).expect("reads")
}

fn field(name: &str, values: Vec<f32>) -> Field {
    Field {
        name: name.to_owned(),
        values,
        units: Default::default(),
    }
}

/// Eight gas particles with u and an electron abundance, in a box of 10.
fn gas_snapshot(time: f64, redshift: Option<f64>) -> Snapshot {
    let mut gas = Species::empty(SpeciesKind::Gas);
    gas.positions = (0..8).map(|i| [i as f32, 1.0, 2.0]).collect();
    gas.masses = Masses::Uniform(0.5);
    gas.smoothing_lengths = Some(vec![0.5; 8]);
    gas.fields = vec![
        field(
            "ElectronAbundance",
            (0..8).map(|i| i as f32 * 0.15).collect(),
        ),
        field("InternalEnergy", (0..8).map(|i| 10f32.powi(i)).collect()),
    ];
    Snapshot {
        header: Header {
            time,
            redshift,
            box_size: Some(10.0),
            periodic: true,
            ..Header::default()
        },
        species: vec![gas],
        source: SourceInfo {
            paths: Vec::new(),
            format: SnapshotFormat::GadgetHdf5,
            byte_order: None,
            header_bytes: None,
            particles_in_file: 0,
        },
    }
}

fn text_attr(loc: &hdf5::Location, name: &str, value: &str) {
    let value: VarLenUnicode = value.parse().expect("text");
    loc.new_attr::<VarLenUnicode>()
        .create(name)
        .expect("attr")
        .write_scalar(&value)
        .expect("written");
}

fn number_attr(loc: &hdf5::Location, name: &str, value: f64) {
    loc.new_attr::<f64>()
        .create(name)
        .expect("attr")
        .write_scalar(&value)
        .expect("written");
}

#[test]
fn shared_gadget4_snapshot_has_typed_units_cosmology_and_temperature() {
    let s = load(&shared_data("snapshots/g2_lcdm_gas_snapshot_003.hdf5"));
    let h = &s.header;
    assert_eq!(h.code, SimCode::Gadget4);
    assert_eq!(h.units.source, UnitSource::File);
    assert_eq!(h.units.length_cm, Some(3.085_678e21));
    assert_eq!(h.units.mass_g, Some(1.989e43));
    assert_eq!(h.units.velocity_cm_per_s, Some(1e5));
    assert!(h.units.comoving && h.units.per_h);
    assert_eq!(h.units.length_label(false), "ckpc/h");
    assert_eq!(h.units.length_label(true), "kpc");
    assert_eq!(h.units.mass_label(), "1e10 Msun/h");
    assert_eq!(
        h.units.field_unit("Density").as_deref(),
        Some("1e10 Msun/h / (ckpc/h)^3")
    );
    assert_eq!(h.cosmology.hubble_param, Some(0.7));
    assert_eq!(h.cosmology.omega_matter, Some(0.3));
    assert_eq!(h.cosmology.omega_lambda, Some(0.7));
    assert!(h.cosmology.comoving);
    assert!((h.scale_factor() - 0.5).abs() < 1e-5);
    assert_eq!(h.kernel.support_over_h, 1.0);

    // Temperature from the file's own u (to_cgs, a and h exponents), fully ionised.
    let gas = s.species(SpeciesKind::Gas).expect("gas");
    let u = gas.field("InternalEnergy").expect("u");
    let to_cgs = u
        .field_units()
        .physical_cgs_factor(h.scale_factor(), 0.7)
        .expect("to_cgs on InternalEnergy");
    assert_eq!(to_cgs, 1e10, "(km/s)² in erg/g, no a or h factor");
    let t = gas.field(TEMPERATURE_FIELD).expect("derived Temperature");
    assert_eq!(t.values.len(), u.values.len());
    for (k, (&t, &u)) in t.values.iter().zip(&u.values).enumerate() {
        assert_eq!(
            t,
            expected_kelvin(f64::from(u) * 1e10, None),
            "particle {k}"
        );
    }
    assert!(
        t.units
            .get("derived")
            .is_some_and(|d| d.contains("fully ionised"))
    );
}

#[test]
fn gadget2_file_without_units_gets_gadget_defaults_and_electron_temperatures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("g2.hdf5");
    gadget_hdf5::write(&path, &gas_snapshot(0.25, Some(3.0)), &Default::default())
        .expect("written");
    // Gadget-2 HDF5 has only a Header: drop the writer's Parameters group.
    hdf5::File::open_rw(&path)
        .expect("opens")
        .unlink("Parameters")
        .expect("unlinked");
    let s = load(&path);
    let h = &s.header;
    assert_eq!(h.code, SimCode::Gadget2);
    assert_eq!(h.units.source, UnitSource::GadgetDefaults);
    assert!(h.cosmology.comoving, "a = 1/(1+z)");
    assert_eq!(h.units.length_label(false), "ckpc/h");
    let gas = s.species(SpeciesKind::Gas).expect("gas");
    let t = &gas.field(TEMPERATURE_FIELD).expect("Temperature").values;
    let expected: Vec<f32> = (0..8)
        .map(|i| {
            expected_kelvin(
                f64::from(10f32.powi(i)) * 1e10,
                Some(f64::from(i as f32 * 0.15)),
            )
        })
        .collect();
    assert_eq!(t, &expected);
    assert_eq!(gas.kernel_support, Some(1.0));
}

#[test]
fn swift_file_gives_its_units_cosmology_and_kernel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("swift.hdf5");
    let options = GadgetWriteOptions {
        plural_smoothing: true,
        ..GadgetWriteOptions::default()
    };
    let mut snapshot = gas_snapshot(0.5, Some(1.0));
    snapshot.species[0].fields.clear();
    gadget_hdf5::write(&path, &snapshot, &options).expect("written");
    {
        let file = hdf5::File::open_rw(&path).expect("opens");
        file.unlink("Parameters").expect("unlinked");
        text_attr(&file.create_group("Code").expect("Code"), "Code", "SWIFT");
        let units = file.create_group("Units").expect("Units");
        number_attr(&units, "Unit length in cgs (U_L)", 3.085_677_581e24);
        number_attr(&units, "Unit mass in cgs (U_M)", 1.988_41e43);
        number_attr(&units, "Unit time in cgs (U_t)", 3.085_677_581e19);
        let cosmology = file.create_group("Cosmology").expect("Cosmology");
        number_attr(&cosmology, "h", 0.6777);
        number_attr(&cosmology, "Omega_m", 0.307);
        number_attr(&cosmology, "Omega_lambda", 0.693);
        number_attr(&cosmology, "Cosmological run", 1.0);
        let scheme = file.create_group("HydroScheme").expect("HydroScheme");
        text_attr(&scheme, "Kernel function", "Quartic spline (M5)");
    }
    let s = load(&path);
    let h = &s.header;
    assert_eq!(h.code, SimCode::Swift);
    let velocity = h.units.velocity_cm_per_s.expect("U_L/U_t");
    assert!((velocity / 1e5 - 1.0).abs() < 1e-12, "{velocity}");
    assert!(
        h.units.comoving && !h.units.per_h,
        "SWIFT lengths carry no h"
    );
    assert_eq!(h.units.length_label(false), "cMpc");
    assert_eq!(h.units.mass_label(), "1e10 Msun");
    assert_eq!(h.units.velocity_label(), "km/s");
    assert_eq!(h.cosmology.hubble_param, Some(0.6777));
    assert_eq!(h.kernel.kernel, "Quartic spline (M5)");
    assert_eq!(h.kernel.support_over_h, 2.018_932);
    assert_eq!(s.species[0].kernel_support, Some(2.018_932));
}

#[test]
fn tipsy_units_come_from_the_param_file_beside_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cosmo.00100");
    let mut snapshot = gas_snapshot(0.5, None);
    snapshot.species[0].fields.clear();
    write_tipsy(&path, &snapshot, &TipsyWriteOptions::default()).expect("tipsy");
    let bare = load(&path);
    assert_eq!(bare.header.units.source, UnitSource::TipsyNoParam);
    assert_eq!(
        bare.header.units.length_label(false),
        "box units (no .param)"
    );
    assert_eq!(bare.header.redshift, None);

    std::fs::write(
        dir.path().join("cosmo.param"),
        "dKpcUnit = 100000\ndMsolUnit = 1.35992947e17 # critical mass of the box for h = 0.7\nbComove = 1\ndOmega0 = 0.3\n\
         dLambda = 0.7\ndHubble0 = 2.894405\nachOutName = cosmo\n",
    )
    .expect("param");
    let s = load(&path);
    let h = &s.header;
    assert_eq!(h.code, SimCode::Tipsy);
    assert_eq!(h.units.source, UnitSource::TipsyParam);
    assert_eq!(h.units.length_label(false), "c(100 Mpc)");
    assert_eq!(h.units.mass_label(), "1.3599e17 Msun");
    assert!(h.cosmology.comoving);
    assert_eq!(h.cosmology.omega_matter, Some(0.3));
    assert_eq!(h.cosmology.omega_lambda, Some(0.7));
    assert_eq!(h.redshift, Some(1.0));
    // With the box's critical mass as mass unit, dHubble0 = √(8π/3) is H₀ = 70 km/s/Mpc.
    let hubble = h.cosmology.hubble_param.expect("h from dHubble0");
    assert!((hubble - 0.70).abs() < 1e-3, "{hubble}");
    assert_eq!(s.species[0].kernel_support, Some(2.0));

    // A .param that names no units (another tool's file) leaves box units.
    std::fs::write(dir.path().join("cosmo.param"), "nSteps = 100\n").expect("param");
    assert_eq!(load(&path).header.units.source, UnitSource::TipsyNoParam);

    std::fs::write(
        dir.path().join("cosmo.param"),
        "dKpcUnit = 0\ndMsolUnit = 1\n",
    )
    .expect("param");
    let e = load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect_err("bad");
    assert!(
        e.to_string().contains("cosmo.param") && e.to_string().contains("dKpcUnit = 0"),
        "{e}"
    );
}

#[test]
fn fof_catalogues_record_source_redshift_and_units() {
    let snapshot = shared_data("snapshots/g2_lcdm_gas_snapshot_004.hdf5");
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("halos.csv");
    let h5 = dir.path().join("halos.hdf5");
    for out in [&csv, &h5] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_haloscope"))
            .args(["fof", "--species", "dark", "--backend", "cpu", "--out"])
            .arg(out)
            .arg(&snapshot)
            .output()
            .expect("runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let text = std::fs::read_to_string(&csv).expect("csv");
    let comments: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
    assert_eq!(
        comments[0],
        format!("# source_file: {}", snapshot.display())
    );
    assert_eq!(comments[1], "# code: Gadget-4");
    assert!(comments.contains(&"# length_unit: ckpc/h"), "{comments:?}");
    assert!(
        comments.contains(&"# mass_unit: 1e10 Msun/h"),
        "{comments:?}"
    );
    assert!(comments.contains(&"# velocity_unit: km/s"), "{comments:?}");
    assert!(comments.iter().any(|l| l.starts_with("# redshift: ")));
    let header = text.lines().find(|l| !l.starts_with('#')).expect("header");
    assert!(header.starts_with("rank,size,min_index,mass,"));

    let file = hdf5::File::open(&h5).expect("hdf5");
    let attr = |loc: &hdf5::Location, name: &str| -> String {
        loc.attr(name)
            .and_then(|a| a.read_scalar::<VarLenUnicode>())
            .expect(name)
            .to_string()
    };
    assert_eq!(attr(&file, "mass_unit"), "1e10 Msun/h");
    assert_eq!(attr(&file, "source_file"), snapshot.display().to_string());
    assert_eq!(
        attr(&file.dataset("mass").expect("mass"), "unit"),
        "1e10 Msun/h"
    );
    assert_eq!(attr(&file.dataset("com").expect("com"), "unit"), "ckpc/h");
    let z: f64 = file
        .attr("redshift")
        .and_then(|a| a.read_scalar())
        .expect("z");
    assert!(z.abs() < 1e-4, "{z}");
}
