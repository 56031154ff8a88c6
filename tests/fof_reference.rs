//! Friends-of-friends on the shared snapshots against ../shared/reference/fof (computed with
//! scipy, kdcount, pyfof and scikit-learn, all agreeing), plus the initial conditions
//! (cube300: no groups) and the dense cluster (test4).

mod common;
mod fof_support;

use common::{haloscope_bin, shared_data, shared_reference};
use fof_support::{canonical, exact_json_f64, labels_sha256, simple_cell_list_fof};
use haloscope::backend::Backend;
use haloscope::data::{LoadOptions, Snapshot, SpeciesKind, load_snapshot};
use haloscope::halo::{
    FofParams, FofResult, LinkingLength, SeparationFrom, fof_snapshot, link_components,
    select_particles, snapshot_box_size,
};
use haloscope::jobs::Progress;
use serde_json::Value;

fn load(name: &str) -> Snapshot {
    let path = shared_data(&format!("snapshots/{name}"));
    load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("readable snapshot")
}

/// The reference JSON, and its text for exact number parsing.
fn reference_with_text(name: &str) -> (Value, String) {
    let path = shared_reference(&format!("fof/{name}.json"));
    let text = std::fs::read_to_string(&path).expect("readable reference");
    (
        serde_json::from_str(&text).expect("reference is JSON"),
        text,
    )
}

fn reference(name: &str) -> Value {
    reference_with_text(name).0
}

fn params(b: f64, min_members: usize, box_size: Option<f64>) -> FofParams {
    FofParams {
        linking_length: LinkingLength::Relative(b),
        separation_from: Default::default(),
        min_members,
        box_size,
        // The references pin the labels' checksum.
        labels: true,
    }
}

fn f64_of(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

fn usize_of(v: &Value) -> usize {
    v.as_u64().expect("an integer") as usize
}

/// Everything the reference states about the partition and the catalogue, checked exactly
/// (centres to 1e-6 of the box or of the data extent, masses to a relative 1e-6 because the
/// reader may keep a Gadget MassTable entry in float32).
fn assert_matches_reference(result: &FofResult, name: &str) {
    let (r, text) = reference_with_text(name);
    assert_eq!(result.n_particles, usize_of(&r["n_particles"]));
    assert_eq!(result.periodic(), r["periodic"].as_bool().expect("bool"));
    assert_eq!(result.box_size(), r["box_size"].as_f64());
    assert_eq!(
        result.frame.map(|f| f.lower),
        r["coordinate_frame_lower_corner"].as_f64()
    );
    assert_eq!(
        result.mean_separation,
        exact_json_f64(&text, "mean_separation")
    );
    assert_eq!(
        result.linking_length,
        exact_json_f64(&text, "linking_length")
    );
    assert_eq!(
        result.n_sets_all_sizes,
        usize_of(&r["n_fof_groups_all_sizes"])
    );
    assert_eq!(result.halos.len(), usize_of(&r["n_groups"]));
    let sizes: Vec<usize> = result.halos.iter().map(|h| h.size).collect();
    let expected_sizes: Vec<usize> = r["sizes_sorted_desc"]
        .as_array()
        .expect("array")
        .iter()
        .map(usize_of)
        .collect();
    assert_eq!(sizes, expected_sizes);
    assert_eq!(
        result.n_particles_in_groups(),
        usize_of(&r["n_particles_in_groups"])
    );
    assert_eq!(
        labels_sha256(result.labels.as_deref().expect("labels asked for")),
        r["label_sha256"].as_str().expect("hex")
    );

    let scale = result.box_size().unwrap_or_else(|| {
        let text = r["volume_from"].as_str().expect("text");
        // "bounding box of particles, extents=[a, b, c]": the largest extent.
        let list = &text[text.find('[').expect("extents") + 1..text.find(']').expect("extents")];
        list.split(',')
            .map(|s| s.trim().parse::<f64>().expect("extent"))
            .fold(0.0, f64::max)
    });
    let groups = r["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), result.halos.len());
    for (halo, g) in result.halos.iter().zip(groups) {
        assert_eq!(halo.size, usize_of(&g["size"]));
        assert_eq!(halo.min_index, usize_of(&g["min_index"]));
        let mass = f64_of(&g["mass"]);
        assert!(
            (halo.mass - mass).abs() <= 1e-6 * mass,
            "mass {} vs {mass}",
            halo.mass
        );
        for axis in 0..3 {
            let com = f64_of(&g["com"][axis]);
            assert!(
                (halo.com[axis] - com).abs() <= 1e-6 * scale,
                "halo of min index {}: com {:?} vs {}",
                halo.min_index,
                halo.com,
                g["com"]
            );
        }
    }
}

#[test]
fn lambs_periodic_matches_reference() {
    let snapshot = load("lambs.00200_subsamp_30K");
    let result = fof_snapshot(
        &snapshot,
        &SpeciesKind::ALL,
        &params(0.2, 20, Some(1.0)),
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("fof");
    assert_matches_reference(&result, "lambs.00200_subsamp_30K_periodic_b0.2_min20");
}

#[test]
fn lambs_open_matches_reference() {
    let snapshot = load("lambs.00200_subsamp_30K");
    let result = fof_snapshot(
        &snapshot,
        &SpeciesKind::ALL,
        &params(0.2, 20, None),
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("fof");
    assert_matches_reference(&result, "lambs.00200_subsamp_30K_nonperiodic_b0.2_min20");
}

#[test]
fn run581_dark_and_stars_match_reference() {
    let snapshot = load("run581.20000");
    let result = fof_snapshot(
        &snapshot,
        &SpeciesKind::ALL,
        &params(0.2, 10, None),
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("fof");
    assert_matches_reference(&result, "run581.20000_nonperiodic_b0.2_min10");
}

#[test]
fn gadget_dark_matter_in_its_box_matches_reference() {
    let snapshot = load("g2_lcdm_gas_snapshot_003.hdf5");
    let box_size = snapshot_box_size(&snapshot);
    assert_eq!(box_size, Some(50_000.0));
    let result = fof_snapshot(
        &snapshot,
        &[SpeciesKind::Dark],
        &params(0.2, 20, box_size),
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("fof");
    let name = "g2_lcdm_gas_snapshot_003_periodic_b0.2_min20";
    assert_matches_reference(&result, name);
    let r = reference(name);
    // The smallest-index member is the same particle: compare its ID with the reference's.
    let ids = snapshot
        .species(SpeciesKind::Dark)
        .and_then(|s| s.ids.as_ref())
        .expect("dark matter IDs");
    for (halo, g) in result
        .halos
        .iter()
        .zip(r["groups"].as_array().expect("groups"))
    {
        assert_eq!(
            ids[halo.min_index],
            g["min_index_particle_id"].as_u64().expect("id")
        );
    }
}

#[test]
fn initial_conditions_have_no_groups_at_b_up_to_0_28() {
    // cube300: nearest neighbours ≥ 0.75 mean separations apart and coordinates slightly outside
    // [−0.5, 0.5): every particle must stay alone, wrapped ones included.
    let snapshot = load("cube300.tbin");
    for b in [0.2, 0.28] {
        let result = fof_snapshot(
            &snapshot,
            &[SpeciesKind::Dark],
            &params(b, 20, Some(1.0)),
            &Backend::cpu(),
            &Progress::none(),
        )
        .expect("fof");
        assert_eq!(result.n_particles, 110_592);
        assert_eq!(result.frame.map(|f| f.lower), Some(-0.5));
        assert!(result.halos.is_empty());
        assert_eq!(result.n_sets_all_sizes, result.n_particles, "b = {b}");
        let labels = result.labels.as_deref().expect("labels asked for");
        assert_eq!(labels.len(), result.n_particles);
        assert!(labels.iter().all(|&l| l == -1));
    }
}

#[test]
fn dense_cluster_is_reproducible_and_matches_a_simple_cell_list() {
    let snapshot = load("test4.tbin");
    let selected = select_particles(&snapshot, &[SpeciesKind::Dark]).expect("dark matter");
    // The mean separation of all particles, not test4's zoom-in spacing: the dense linking
    // (tens of millions of pairs) is what this test stresses.
    let mean_params = FofParams {
        separation_from: SeparationFrom::Mean,
        ..params(0.2, 20, Some(1.0))
    };
    let start = std::time::Instant::now();
    let result = fof_snapshot(
        &snapshot,
        &[SpeciesKind::Dark],
        &mean_params,
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("fof");
    let seconds = start.elapsed().as_secs_f64();
    // Tens of millions of linked pairs: a quadratic linker would take minutes here.
    assert!(seconds < 5.0, "test4 took {seconds} s");
    let again = fof_snapshot(
        &snapshot,
        &[SpeciesKind::Dark],
        &mean_params,
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("fof");
    assert_eq!(result, again);

    let frame = result.frame.expect("periodic");
    let ids = link_components(
        &selected.positions,
        result.linking_length,
        Some(frame),
        &Progress::none(),
    )
    .expect("links");
    let simple = simple_cell_list_fof(
        &selected.positions,
        result.linking_length,
        Some((frame.lower, frame.size)),
    );
    assert_eq!(canonical(&ids), simple);
    assert!(result.halos[0].size > 40_000, "the cluster is one big halo");
}

#[test]
fn cli_json_reproduces_the_periodic_reference() {
    let file = shared_data("snapshots/lambs.00200_subsamp_30K");
    let dir = tempfile::tempdir().expect("temp dir");
    let catalogue = dir.path().join("halos.csv");
    let labels = dir.path().join("labels.npy");
    let output = std::process::Command::new(haloscope_bin())
        .args(["fof", "--box", "1", "--species", "dark", "--json", "--out"])
        .arg(&catalogue)
        .arg("--labels")
        .arg(&labels)
        .arg(&file)
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let r = reference("lambs.00200_subsamp_30K_periodic_b0.2_min20");
    for key in [
        "n_particles",
        "b",
        "linking_length",
        "periodic",
        "box_size",
        "min_members",
        "n_groups",
        "sizes_sorted_desc",
    ] {
        assert_eq!(json[key], r[key], "{key}");
    }
    for (g, rg) in json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .zip(r["groups"].as_array().expect("groups"))
    {
        assert_eq!(g["size"], rg["size"]);
        assert_eq!(g["min_index"], rg["min_index"]);
    }
    assert_eq!(json["backend"], "cpu");
    for wall in ["seconds", "read_seconds", "write_seconds"] {
        assert!(json[wall].as_f64().expect(wall) >= 0.0, "{wall}");
    }

    let csv = std::fs::read_to_string(&catalogue).expect("catalogue written");
    // `#` lines record the source file, time and units before the header and 137 rows.
    assert_eq!(csv.lines().filter(|l| !l.starts_with('#')).count(), 1 + 137);
    assert!(
        csv.lines()
            .any(|l| l.starts_with("# source_file: ") && l.ends_with("lambs.00200_subsamp_30K"))
    );
    assert!(
        csv.contains("# length_unit: box units (no .param)\n"),
        "{csv}"
    );
    let npy = std::fs::read(&labels).expect("labels written");
    let header_len = u16::from_le_bytes([npy[8], npy[9]]) as usize;
    assert_eq!(
        fof_support::sha256_hex(&npy[10 + header_len..]),
        r["label_sha256"].as_str().expect("hex")
    );
}

#[test]
fn cli_errors_name_the_file() {
    let file = shared_data("snapshots/lambs.00200_subsamp_30K");
    let run = |extra: &[&str]| {
        let output = std::process::Command::new(haloscope_bin())
            .arg("fof")
            .arg(&file)
            .args(extra)
            .output()
            .expect("runs");
        assert_eq!(output.status.code(), Some(1));
        String::from_utf8_lossy(&output.stderr).trim().to_owned()
    };
    let name = file.display();
    assert_eq!(
        run(&["--b=-1"]),
        format!("error: {name}: b must be a positive number, got -1")
    );
    assert_eq!(
        run(&["--box", "0.5"]),
        format!(
            "error: {name}: box size 0.5 is smaller than the data extent 0.9999983608722687 along x"
        )
    );
    assert_eq!(
        run(&["--species", "star"]),
        format!("error: {name}: no particles selected for friends-of-friends (selection: star)")
    );
    if haloscope::gpu::cuda_available().is_err() {
        assert_eq!(
            run(&["--backend", "cuda"]),
            format!(
                "error: {name}: CUDA back-end unavailable: no NVIDIA driver library (libcuda) was found on this machine"
            )
        );
    }
}

#[test]
fn hdf5_catalogue_reads_back() {
    let snapshot = load("g2_lcdm_gas_snapshot_003.hdf5");
    let result = fof_snapshot(
        &snapshot,
        &[SpeciesKind::Dark],
        &params(0.2, 20, snapshot_box_size(&snapshot)),
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("fof");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("halos.hdf5");
    haloscope::halo::export::write_catalogue(&path, &result).expect("written");
    let file = hdf5::File::open(&path).expect("opens");
    let sizes: Vec<u64> = file
        .dataset("size")
        .and_then(|d| d.read_raw())
        .expect("size");
    assert_eq!(
        sizes,
        result
            .halos
            .iter()
            .map(|h| h.size as u64)
            .collect::<Vec<_>>()
    );
    let com: Vec<f64> = file.dataset("com").and_then(|d| d.read_raw()).expect("com");
    assert_eq!(
        com,
        result.halos.iter().flat_map(|h| h.com).collect::<Vec<_>>()
    );
    assert_eq!(
        file.dataset("com").expect("com").shape(),
        vec![result.halos.len(), 3]
    );
    let velocity: Vec<f64> = file
        .dataset("velocity")
        .and_then(|d| d.read_raw())
        .expect("velocity");
    assert_eq!(velocity.len(), 3 * result.halos.len());
    let ll: f64 = file
        .attr("linking_length")
        .and_then(|a| a.read_scalar())
        .expect("attribute");
    assert_eq!(ll, result.linking_length);
    let source: hdf5::types::VarLenUnicode = file
        .attr("linking_length_from")
        .and_then(|a| a.read_scalar())
        .expect("attribute");
    assert_eq!(source.as_str(), "mean separation of all 32768 particles");
}

#[test]
fn cli_absolute_linking_length_gives_the_same_groups() {
    let file = shared_data("snapshots/lambs.00200_subsamp_30K");
    let (r, text) = reference_with_text("lambs.00200_subsamp_30K_periodic_b0.2_min20");
    let ll = exact_json_f64(&text, "linking_length");
    let output = std::process::Command::new(haloscope_bin())
        .args(["fof", "--box", "1", "--json", "--ll", &format!("{ll:?}")])
        .arg(&file)
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(json["b"], Value::Null);
    assert_eq!(json["sizes_sorted_desc"], r["sizes_sorted_desc"]);
    assert_eq!(json["n_fof_groups_all_sizes"], r["n_fof_groups_all_sizes"]);
}
