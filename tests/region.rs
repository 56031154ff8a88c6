//! Region loading: a region read equals a full read filtered by the same rule (tipsy and Gadget
//! HDF5, exact), periodic regions keep particles from across the boundary, bad input is refused.

mod common;

use common::shared_data;
use haloscope::data::region::{Region, filter_snapshot, read_region};
use haloscope::data::{LoadOptions, Snapshot, load_snapshot};
use haloscope::jobs::Progress;

fn full(name: &str) -> Snapshot {
    let path = shared_data(&format!("snapshots/{name}"));
    load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("readable snapshot")
}

fn region_of(name: &str, region: &Region, period: Option<f64>) -> Snapshot {
    let path = shared_data(&format!("snapshots/{name}"));
    read_region(&path, region, period, &Progress::none()).expect("readable region")
}

/// The region read and the filtered full read hold the same species, bit for bit.
fn assert_same_particles(name: &str, region: &Region, period: Option<f64>) -> usize {
    let expected = filter_snapshot(&full(name), region, period);
    let got = region_of(name, region, period);
    assert_eq!(got.species, expected.species, "{name} {region:?}");
    assert_eq!(
        got.source.particles_in_file,
        expected.source.particles_in_file
    );
    got.n_particles()
}

#[test]
fn tipsy_region_equals_the_filtered_full_read() {
    let sphere = Region::parse("sphere:0.0,0.0,0.0,0.08").expect("region");
    let n = assert_same_particles("test4.tbin", &sphere, None);
    assert!(n > 1_000 && n < 67_495, "{n} particles kept");
    // Gas-free star + dark file: both families filtered.
    let cube = Region::parse("box:-1,-1,-0.1,1,1,0.1").expect("region");
    let n = assert_same_particles("run581.20000", &cube, None);
    assert!(n > 0 && n < 8_948, "{n} particles kept");
}

#[test]
fn wrapped_tipsy_region_keeps_particles_across_the_boundary() {
    // A box straddling x = ±0.5 of test4.tbin's periodic unit box.
    let straddle = Region::parse("box:0.45,-0.5,-0.5,0.55,0.5,0.5").expect("region");
    let n = assert_same_particles("test4.tbin", &straddle, Some(1.0));
    let got = region_of("test4.tbin", &straddle, Some(1.0));
    let xs: Vec<f32> = got
        .species
        .iter()
        .flat_map(|s| s.positions.iter().map(|p| p[0]))
        .collect();
    assert_eq!(xs.len(), n);
    // Positions stay as in the file: both sides appear, none moved outside [-0.5, 0.5).
    assert!(xs.iter().any(|&x| x >= 0.45) && xs.iter().any(|&x| x < -0.45));
    assert!(xs.iter().all(|&x| x >= 0.45 || x <= -0.45));
    // Without the period, only the side inside the file's box is kept.
    let open = region_of("test4.tbin", &straddle, None);
    let n_open = open.n_particles();
    assert!(n_open < n && n_open > 0, "{n_open} of {n}");
}

#[test]
fn gadget_region_equals_the_filtered_full_read_and_wraps_by_box_size() {
    let name = "g2_lcdm_gas_snapshot_004.hdf5";
    let sphere = Region::parse("sphere:25000,25000,25000,8000").expect("region");
    let n = assert_same_particles(name, &sphere, Some(50_000.0));
    assert!(n > 100 && n < 65_536, "{n} particles kept");
    // The header's periodic BoxSize is the default period: a sphere on the corner keeps the
    // particles of all eight corners.
    let corner = Region::parse("sphere:0,0,0,6000").expect("region");
    let expected = filter_snapshot(&full(name), &corner, Some(50_000.0));
    let got = region_of(name, &corner, None);
    assert_eq!(got.species, expected.species);
    let far = got
        .species
        .iter()
        .flat_map(|s| &s.positions)
        .filter(|p| p.iter().all(|&x| x > 44_000.0))
        .count();
    assert!(far > 0, "no particle from the opposite corner");
    assert_eq!(got.header, full(name).header);
}

#[test]
fn region_outside_the_data_keeps_no_species_and_bad_input_names_the_file() {
    let nowhere = Region::parse("box:10,10,10,11,11,11").expect("region");
    assert!(region_of("test4.tbin", &nowhere, None).species.is_empty());
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("short.tbin");
    std::fs::write(&bad, [0u8; 10]).expect("write");
    let err = read_region(&bad, &nowhere, None, &Progress::none()).unwrap_err();
    assert!(
        err.to_string().starts_with(&bad.display().to_string()),
        "{err}"
    );
    let sphere = Region::parse("sphere:0,0,0,1").expect("region");
    let path = shared_data("snapshots/test4.tbin");
    let err = read_region(&path, &sphere, Some(-1.0), &Progress::none()).unwrap_err();
    assert!(err.to_string().contains("must be positive"), "{err}");
}

#[test]
fn multi_file_gadget_with_per_particle_masses_reads_the_same_region() {
    // test4.tbin's five mass levels written as a 3-file Gadget snapshot with f64 columns.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = haloscope::data::gadget_hdf5::GadgetWriteOptions {
        double_precision: true,
        n_files: 3,
        ..Default::default()
    };
    let files = haloscope::data::gadget_hdf5::write(
        &dir.path().join("zoom.hdf5"),
        &full("test4.tbin"),
        &options,
    )
    .expect("write");
    assert_eq!(files.len(), 3);
    let whole = load_snapshot(&files[0], &LoadOptions::default(), &Progress::none())
        .expect("multi-file snapshot");
    let sphere = Region::parse("sphere:0.49,0.0,0.0,0.1").expect("region");
    let expected = filter_snapshot(&whole, &sphere, Some(1.0));
    let got = read_region(&files[1], &sphere, Some(1.0), &Progress::none()).expect("region");
    assert_eq!(got.species, expected.species);
    let n = got.n_particles();
    assert!(n > 0 && n < whole.n_particles(), "{n}");
}
