//! Values and layouts the readers refuse, in real files written by the project's writers:
//! unusable smoothing lengths and masses, a non-cubic box, HDF5 external storage, a 2-D
//! per-particle dataset, text that is no snapshot, and `--knn` above a species' count.

use haloscope::data::gadget_hdf5::{self, GadgetWriteOptions};
use haloscope::data::tipsy::{self, TipsyWriteOptions};
use haloscope::data::{LoadOptions, Masses, Snapshot, SpeciesKind, demo::demo_snapshot};
use haloscope::jobs::Progress;
use haloscope::render::resolve::field_values;
use haloscope::render::smoothing::check_knn;
use std::path::Path;

fn load(path: &Path) -> Result<Snapshot, String> {
    haloscope::data::load_snapshot(path, &LoadOptions::default(), &Progress::none())
        .map_err(|e| e.to_string())
}

fn demo() -> Snapshot {
    demo_snapshot(200, 3)
}

fn gas_mut(snapshot: &mut Snapshot) -> &mut haloscope::data::Species {
    snapshot
        .species
        .iter_mut()
        .find(|s| s.kind == SpeciesKind::Gas)
        .expect("gas")
}

#[test]
fn nan_zero_negative_and_infinite_smoothing_lengths_are_refused_in_tipsy_and_gadget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut snapshot = demo();
    let gas = gas_mut(&mut snapshot);
    let n = gas.len();
    let h = gas.smoothing_lengths.as_mut().expect("demo gas has h");
    h[3] = f32::NAN;
    h[5] = 0.0;
    h[6] = -1.0;
    h[9] = f32::INFINITY;

    let tbin = dir.path().join("h.tbin");
    tipsy::write(&tbin, &snapshot, &TipsyWriteOptions::default()).expect("write tipsy");
    let err = load(&tbin).expect_err("tipsy with bad h");
    assert_eq!(
        err,
        format!(
            "{}: gas hsmooth: 4 of {n} particles are NaN, infinite, zero or negative \
             (first: particle 3, NaN)",
            tbin.display()
        )
    );

    let h5 = dir.path().join("h.hdf5");
    gadget_hdf5::write(&h5, &snapshot, &GadgetWriteOptions::default()).expect("write hdf5");
    let err = load(&h5).expect_err("gadget with bad h");
    assert_eq!(
        err,
        format!(
            "{}: gas SmoothingLength: 4 of {n} particles are NaN, infinite, zero or negative \
             (first: particle 3, NaN)",
            h5.display()
        )
    );
}

#[test]
fn nan_and_negative_masses_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut snapshot = demo();
    let dark = snapshot
        .species
        .iter_mut()
        .find(|s| s.kind == SpeciesKind::Dark)
        .expect("dark");
    let n = dark.len();
    let mut masses = vec![1.0f32; n];
    masses[7] = -2.5;
    masses[8] = f32::NAN;
    dark.masses = Masses::PerParticle(masses);
    for (name, write) in [("m.tbin", true), ("m.hdf5", false)] {
        let path = dir.path().join(name);
        if write {
            tipsy::write(&path, &snapshot, &TipsyWriteOptions::default()).expect("write");
        } else {
            gadget_hdf5::write(&path, &snapshot, &GadgetWriteOptions::default()).expect("write");
        }
        let err = load(&path).expect_err("bad masses");
        assert_eq!(
            err,
            format!(
                "{}: dark mass: 2 of {n} particles are NaN, infinite or negative \
                 (first: particle 7, -2.5)",
                path.display()
            )
        );
    }
}

#[test]
fn a_box_with_three_different_sides_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("box.hdf5");
    gadget_hdf5::write(&path, &demo(), &GadgetWriteOptions::default()).expect("write");
    assert!(load(&path).is_ok());
    {
        let file = hdf5::File::open_rw(&path).expect("open");
        let header = file.group("Header").expect("header");
        header.delete_attr("BoxSize").expect("delete");
        header
            .new_attr::<f64>()
            .shape(3)
            .create("BoxSize")
            .expect("attr")
            .write(&[1.0, 1.0, 2.0])
            .expect("write");
    }
    let err = load(&path).expect_err("non-cubic");
    assert_eq!(
        err,
        format!(
            "{}: Header/BoxSize = [1, 1, 2]: the sides differ, but the periodic box must be a \
             cube (one side for every axis)",
            path.display()
        )
    );
}

#[test]
fn a_dataset_in_external_storage_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ext.hdf5");
    let snapshot = demo();
    gadget_hdf5::write(&path, &snapshot, &GadgetWriteOptions::default()).expect("write");
    let n = snapshot
        .species
        .iter()
        .find(|s| s.kind == SpeciesKind::Dark)
        .expect("dark")
        .len();
    // The "secret" the crafted file points at: a local file the reader must not pull in.
    let secret = dir.path().join("secret.bin");
    std::fs::write(&secret, vec![0x3fu8; n * 12]).expect("secret");
    {
        let file = hdf5::File::open_rw(&path).expect("open");
        let group = file.group("PartType1").expect("dark group");
        group.unlink("Coordinates").expect("unlink");
        group
            .new_dataset::<f32>()
            .shape([n, 3])
            .external(secret.to_str().expect("utf-8"), 0, n * 12)
            .create("Coordinates")
            .expect("external dataset");
    }
    let err = load(&path).expect_err("external storage");
    assert!(
        err.starts_with(&format!(
            "{}: PartType1/Coordinates: dataset stored in 1 external file(s) (first: '",
            path.display()
        )),
        "{err}"
    );
    assert!(
        err.ends_with("external storage is refused, as it would read files outside the snapshot"),
        "{err}"
    );
}

#[test]
fn a_two_column_density_is_named_with_its_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("d.hdf5");
    let snapshot = demo();
    gadget_hdf5::write(&path, &snapshot, &GadgetWriteOptions::default()).expect("write");
    let n = snapshot
        .species
        .iter()
        .find(|s| s.kind == SpeciesKind::Gas)
        .expect("gas")
        .len();
    {
        let file = hdf5::File::open_rw(&path).expect("open");
        let group = file.group("PartType0").expect("gas group");
        group.unlink("Density").expect("unlink");
        let values = ndarray::Array2::<f32>::ones((n, 3));
        group
            .new_dataset_builder()
            .with_data(&values)
            .create("Density")
            .expect("2-D density");
    }
    let read = load(&path).expect("the rest still reads");
    let gas = read.species(SpeciesKind::Gas).expect("gas");
    let Err(err) = field_values(gas, "Density") else {
        panic!("a 2-D Density must not read as a field");
    };
    assert_eq!(
        err.to_string(),
        format!(
            "species gas: dataset 'PartType0/Density' has shape [{n}, 3], expected one value \
             per particle"
        )
    );
}

#[test]
fn text_is_no_snapshot_of_any_known_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("passwd");
    let text = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n";
    std::fs::write(&path, text).expect("write");
    let err = load(&path).expect_err("text");
    assert_eq!(
        err,
        format!(
            "{}: not a snapshot of any known format: its {} bytes start with text; tried tipsy \
             (big- and little-endian, 28- and 32-byte headers) and Gadget/SWIFT/AREPO HDF5 (no \
             HDF5 signature)",
            path.display(),
            text.len()
        )
    );
}

#[test]
fn binary_garbage_is_no_snapshot_either_and_keeps_the_tipsy_detail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("garbage.bin");
    let bytes: Vec<u8> = (0u32..300)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&path, &bytes).expect("write");
    let err = load(&path).expect_err("garbage");
    let expected = format!(
        "{}: not a snapshot of any known format: not Gadget/SWIFT/AREPO HDF5 (no HDF5 \
         signature), and not a tipsy file: it is 300 bytes",
        path.display()
    );
    assert!(err.starts_with(&expected), "{err}");
}

#[test]
fn knn_above_the_species_count_names_the_species() {
    let snapshot = demo_snapshot(100, 1);
    let mut star = snapshot.species(SpeciesKind::Star).expect("stars").clone();
    assert_eq!(star.len(), 10);
    star.smoothing_lengths = None;
    let err = check_knn(&star, 40).expect_err("k too large");
    assert!(
        err.to_string()
            .contains("--knn 40: species star has only 10 particles"),
        "{err}"
    );
    // The default k is lowered for tiny species, as before.
    assert!(check_knn(&star, 32).is_ok());
    assert!(check_knn(&star, 9).is_ok());
}
