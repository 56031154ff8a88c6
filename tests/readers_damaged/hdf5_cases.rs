//! Damaged Gadget HDF5 snapshots, made by editing a valid file written by the tests.

use super::{err_text, largest_allocation_in, read_path};
use haloscope::data::demo;
use haloscope::data::gadget_hdf5::{self, GadgetWriteOptions};
use ndarray::{Array1, Array2};
use std::path::{Path, PathBuf};

/// Writes a valid snapshot (gas, dark, star) and returns its path; the directory lives as long
/// as the returned guard.
fn valid(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let snap = demo::demo_snapshot(90, 4);
    gadget_hdf5::write(&path, &snap, &GadgetWriteOptions::default()).expect("written");
    assert!(read_path(&path).is_ok());
    path
}

fn edit(path: &Path, f: impl FnOnce(&hdf5::File) -> hdf5::Result<()>) {
    let file = hdf5::File::open_rw(path).expect("open for editing");
    f(&file).expect("edited");
}

/// An edit that damages a file.
type Damage = fn(&hdf5::File) -> hdf5::Result<()>;

#[test]
fn missing_datasets_and_groups_are_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases: [(&str, Damage, &str); 4] = [
        (
            "no_coords.hdf5",
            |f| f.unlink("PartType1/Coordinates"),
            "PartType1/Coordinates is missing",
        ),
        (
            "no_group.hdf5",
            |f| f.unlink("PartType4"),
            "PartType4 is missing but Header/NumPart_ThisFile[4] = 9",
        ),
        (
            "no_header.hdf5",
            |f| f.unlink("Header"),
            "no `Header` group",
        ),
        (
            "no_counts.hdf5",
            |f| f.group("Header")?.delete_attr("NumPart_ThisFile"),
            "Header/NumPart_ThisFile is missing",
        ),
    ];
    for (name, damage, expected) in cases {
        let path = valid(dir.path(), name);
        edit(&path, damage);
        let text = err_text(read_path(&path));
        assert!(text.contains(expected), "{name}: {text}");
        assert!(text.starts_with(&path.display().to_string()), "{text}");
    }
}

#[test]
fn wrong_dataset_shapes_are_named_with_expected_and_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = valid(dir.path(), "shape2.hdf5");
    edit(&path, |f| {
        f.unlink("PartType1/Coordinates")?;
        let flat = Array2::<f32>::zeros((45, 2));
        f.group("PartType1")?
            .new_dataset_builder()
            .with_data(&flat)
            .create("Coordinates")?;
        Ok(())
    });
    let text = err_text(read_path(&path));
    assert!(
        text.contains("PartType1/Coordinates: expected shape [45, 3]") && text.contains("[45, 2]"),
        "{text}"
    );

    let path = valid(dir.path(), "short_h.hdf5");
    edit(&path, |f| {
        f.unlink("PartType0/SmoothingLength")?;
        f.group("PartType0")?
            .new_dataset_builder()
            .with_data(&Array1::<f32>::zeros(35))
            .create("SmoothingLength")?;
        Ok(())
    });
    let text = err_text(read_path(&path));
    assert!(
        text.contains("PartType0/SmoothingLength: expected shape [36]"),
        "{text}"
    );
}

fn set_counts(f: &hdf5::File, counts: &[i64]) -> hdf5::Result<()> {
    let header = f.group("Header")?;
    header.delete_attr("NumPart_ThisFile")?;
    header
        .new_attr_builder()
        .with_data(&Array1::from(counts.to_vec()))
        .create("NumPart_ThisFile")?;
    Ok(())
}

#[test]
fn lying_and_negative_header_counts_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = valid(dir.path(), "lying.hdf5");
    edit(&path, |f| set_counts(f, &[36, 1_000_000_000, 0, 0, 9, 0]));
    let (result, largest) = largest_allocation_in(|| read_path(&path));
    let text = err_text(result);
    assert!(
        text.contains("PartType1/Coordinates: expected shape [1000000000, 3]"),
        "{text}"
    );
    assert!(largest < 1 << 24, "allocated {largest} bytes");

    let path = valid(dir.path(), "negative.hdf5");
    edit(&path, |f| set_counts(f, &[36, -45, 0, 0, 9, 0]));
    let text = err_text(read_path(&path));
    assert!(text.contains("NumPart_ThisFile[1] is -45"), "{text}");

    // Data for a type the header does not count.
    let path = valid(dir.path(), "uncounted.hdf5");
    edit(&path, |f| set_counts(f, &[36, 45]));
    let text = err_text(read_path(&path));
    assert!(text.contains("PartType4/Coordinates has 9 rows"), "{text}");
}

#[test]
fn a_dataset_shape_with_no_stored_bytes_is_refused_before_allocation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = valid(dir.path(), "hollow.hdf5");
    let n = 500_000_000usize;
    edit(&path, |f| {
        set_counts(f, &[36, n as i64, 0, 0, 9, 0])?;
        let g = f.group("PartType1")?;
        g.unlink("Coordinates")?;
        // Chunked and never written: HDF5 stores nothing but reports the full shape.
        g.new_dataset::<f32>()
            .chunk((1024, 3))
            .shape((n, 3))
            .create("Coordinates")?;
        Ok(())
    });
    let (result, largest) = largest_allocation_in(|| read_path(&path));
    let text = err_text(result);
    assert!(
        text.contains("PartType1/Coordinates") && text.contains("stores only 0"),
        "{text}"
    );
    assert!(largest < 1 << 24, "allocated {largest} bytes");
}

#[test]
fn masses_with_no_source_and_missing_multi_file_parts_are_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = valid(dir.path(), "nomass.hdf5");
    edit(&path, |f| {
        let header = f.group("Header")?;
        header.delete_attr("MassTable")?;
        header
            .new_attr_builder()
            .with_data(&Array1::from(vec![0f64; 6]))
            .create("MassTable")?;
        Ok(())
    });
    let text = err_text(read_path(&path));
    assert!(
        text.contains("PartType0 has no Masses dataset and Header/MassTable[0]"),
        "{text}"
    );

    let snap = demo::demo_snapshot(90, 4);
    let options = GadgetWriteOptions {
        n_files: 3,
        ..GadgetWriteOptions::default()
    };
    let files = gadget_hdf5::write(&dir.path().join("multi.hdf5"), &snap, &options).expect("w");
    std::fs::remove_file(&files[2]).expect("remove");
    let text = err_text(read_path(&files[0]));
    assert!(text.contains("file 2 of 3"), "{text}");
}

#[test]
fn truncated_hdf5_files_are_errors() {
    let bytes = std::fs::read(super::shared_data(
        "snapshots/g2_lcdm_gas_snapshot_003.hdf5",
    ))
    .expect("read");
    let dir = tempfile::tempdir().expect("temp dir");
    for len in [8, 100, 2048, 50_000, 1_000_000, bytes.len() - 1] {
        let path = dir.path().join(format!("cut{len}.hdf5"));
        std::fs::write(&path, &bytes[..len]).expect("write");
        let text = err_text(read_path(&path));
        assert!(text.starts_with(&path.display().to_string()), "{text}");
    }
}
