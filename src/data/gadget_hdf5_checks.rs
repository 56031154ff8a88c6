//! Gadget HDF5 checks beyond the layout: a dataset stored outside the file (HDF5 external
//! storage) is refused before anything reads it, so a crafted snapshot cannot pull in another
//! local file; a `BoxSize` of three unequal sides is refused (the periodic box is a cube
//! everywhere downstream); per-particle datasets of several columns are listed, so that asking
//! for one says what it is rather than that it does not exist.

use super::ReadError;
use super::gadget_hdf5_meta::attr_f64s;
use std::path::Path;

/// Refuses a dataset whose data live in external files (`H5Pset_external`).
pub(crate) fn refuse_external(ds: &hdf5::Dataset) -> Result<(), String> {
    let plist = ds
        .dcpl()
        .map_err(|e| format!("cannot read the dataset's creation properties: {e}"))?;
    let external = plist.external();
    if let Some(first) = external.first() {
        let shown: String = first.name.chars().take(80).collect();
        return Err(format!(
            "dataset stored in {} external file(s) (first: '{shown}'); external storage is \
             refused, as it would read files outside the snapshot",
            external.len()
        ));
    }
    Ok(())
}

/// Refuses a `Header/BoxSize` of several values that are not all equal.
pub(crate) fn check_box_size(path: &Path, file: &hdf5::File) -> Result<(), ReadError> {
    let Ok(header) = file.group("Header") else {
        return Ok(());
    };
    let Some(sides) = attr_f64s(&header, "BoxSize") else {
        return Ok(());
    };
    if let Some(&first) = sides.first()
        && sides.iter().any(|&s| s.to_bits() != first.to_bits())
    {
        let shown: Vec<String> = sides.iter().take(8).map(f64::to_string).collect();
        return Err(ReadError::invalid(
            path,
            format!(
                "Header/BoxSize = [{}]: the sides differ, but the periodic box must be a cube \
                 (one side for every axis)",
                shown.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Numeric datasets of `group` with one row per particle but several columns (other than the
/// vectors read as such), as (name, why it is left out).
pub(crate) fn multi_column_datasets(
    group: &hdf5::Group,
    group_name: &str,
    count: u64,
) -> Vec<(String, String)> {
    let mut names = group.member_names().unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .filter(|name| !matches!(name.as_str(), "Coordinates" | "Velocities"))
        .filter_map(|name| {
            let shape = group.dataset(&name).ok()?.shape();
            (shape.len() > 1 && shape[0] as u64 == count).then(|| {
                let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
                let why = format!(
                    "dataset '{group_name}/{name}' has shape [{}], expected one value per particle",
                    dims.join(", ")
                );
                (name, why)
            })
        })
        .collect()
}
