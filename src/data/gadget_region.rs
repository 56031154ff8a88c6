//! Gadget HDF5 particles inside a [`Region`]: `Coordinates` read in hyperslabs and selected,
//! then every other dataset read only over the span of each hyperslab's kept rows, so memory is
//! one hyperslab plus the kept particles. Values convert exactly as `gadget_hdf5.rs` converts.

use super::gadget_hdf5_meta::{self as meta, Part, Plan, PlannedSpecies};
use super::region::{Region, collapse_masses};
use super::{Field, Masses, ReadError, Snapshot, SnapshotFormat, SourceInfo, Species};
use crate::jobs::Progress;
use hdf5::H5Type;
use ndarray::s;
use std::path::Path;

/// Rows per hyperslab.
const CHUNK_ROWS: usize = 1 << 18;

/// Reads the particles of the Gadget snapshot `path` (every file of a multi-file one) inside
/// `region`, wrapped by `period`, or by the header's `BoxSize` when periodic and `period` is
/// `None`.
pub(super) fn read(
    path: &Path,
    region: &Region,
    period: Option<f64>,
    progress: &Progress,
) -> Result<Snapshot, ReadError> {
    let plan = meta::plan(path)?;
    let period = period.or(if plan.header.periodic {
        plan.header.box_size.filter(|&b| b > 0.0)
    } else {
        None
    });
    let total: u64 = plan
        .species
        .iter()
        .flat_map(|s| &s.parts)
        .map(|p| p.count)
        .sum();
    let mut species = Vec::new();
    let mut done = 0u64;
    for planned in &plan.species {
        // Kept rows of each part, in increasing order.
        let mut kept: Vec<Vec<usize>> = Vec::with_capacity(planned.parts.len());
        let first_global = planned.parts.first().map_or(0, |p| p.global_first);
        let mut positions = Vec::new();
        for part in &planned.parts {
            let mut rows = Vec::new();
            let ds = dataset(&plan, part, "Coordinates", 3)?;
            let count = part.count as usize;
            let mut row = 0usize;
            while row < count {
                progress.check().map_err(|_| ReadError::Cancelled {
                    path: path.to_path_buf(),
                })?;
                let end = (row + CHUNK_ROWS).min(count);
                let chunk = ds
                    .read_slice_2d::<f32, _>(s![row..end, ..])
                    .map_err(|e| invalid(&plan, part, "Coordinates", e))?;
                for (j, p) in chunk.outer_iter().enumerate() {
                    let pos = [p[0], p[1], p[2]];
                    if !pos.iter().all(|x| x.is_finite()) {
                        return Err(ReadError::invalid(
                            path,
                            format!(
                                "{} particle {}: position is NaN or infinite",
                                planned.kind.name(),
                                part.global_first - first_global + (row + j) as u64
                            ),
                        ));
                    }
                    if region.contains(pos, period) {
                        rows.push(row + j);
                        positions.push(pos);
                    }
                }
                done += (end - row) as u64;
                progress.report("reading region", done, total);
                row = end;
            }
            kept.push(rows);
        }
        if positions.is_empty() {
            continue;
        }
        species.push(read_kept_species(&plan, planned, &kept, positions)?);
    }
    Ok(Snapshot {
        header: plan.header.clone(),
        species,
        source: SourceInfo {
            paths: plan.files.iter().map(|f| f.path.clone()).collect(),
            format: SnapshotFormat::GadgetHdf5,
            byte_order: None,
            header_bytes: None,
            particles_in_file: total,
        },
    })
}

/// Every column but the positions, for the kept rows of each part.
fn read_kept_species(
    plan: &Plan,
    planned: &PlannedSpecies,
    kept: &[Vec<usize>],
    positions: Vec<[f32; 3]>,
) -> Result<Species, ReadError> {
    let mut species = Species::empty(planned.kind);
    species.positions = positions;
    let column = |name_of: &dyn Fn(&Part) -> Option<String>, width: usize| {
        let mut out = Vec::new();
        for (part, rows) in planned.parts.iter().zip(kept) {
            if let Some(name) = name_of(part) {
                read_rows::<f32>(plan, part, &name, width, rows, &mut out)?;
            }
        }
        Ok::<_, ReadError>(out)
    };
    if planned.has_velocities {
        let v = column(&|_| Some("Velocities".to_owned()), 3)?;
        species.velocities = Some(v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect());
    }
    if planned.has_ids {
        let mut ids = Vec::new();
        for (part, rows) in planned.parts.iter().zip(kept) {
            read_rows::<u64>(plan, part, "ParticleIDs", 1, rows, &mut ids)?;
        }
        species.ids = Some(ids);
    }
    if planned.has_smoothing {
        species.smoothing_lengths = Some(column(&|p| p.smoothing_name.clone(), 1)?);
        species.kernel_support = Some(plan.header.kernel.support_over_h);
    }
    let table: Vec<Option<f64>> = planned.parts.iter().map(|p| p.table_mass).collect();
    species.masses = match table.first() {
        Some(Some(m)) if table.iter().all(|t| *t == Some(*m)) => Masses::Uniform(*m as f32),
        _ => {
            let mut masses = Vec::new();
            for (part, rows) in planned.parts.iter().zip(kept) {
                match part.table_mass {
                    Some(m) => masses.extend(std::iter::repeat_n(m as f32, rows.len())),
                    None => read_rows::<f32>(plan, part, "Masses", 1, rows, &mut masses)?,
                }
            }
            collapse_masses(masses)
        }
    };
    for (name, units) in &planned.fields {
        species.fields.push(Field {
            name: name.clone(),
            values: column(&|_| Some(name.clone()), 1)?,
            units: units.clone(),
        });
    }
    Ok(species)
}

/// Opens `PartTypeN/name` of `part`'s file and checks its shape against the header count.
fn dataset(plan: &Plan, part: &Part, name: &str, width: usize) -> Result<hdf5::Dataset, ReadError> {
    let file = &plan.files[part.file];
    let dataset_path = format!("PartType{}/{name}", part.ptype);
    let ds = file
        .handle
        .dataset(&dataset_path)
        .map_err(|e| ReadError::invalid(&file.path, format!("{dataset_path}: {e}")))?;
    meta::check_dataset(&ds, part.count, width)
        .map_err(|m| ReadError::invalid(&file.path, format!("{dataset_path}: {m}")))?;
    Ok(ds)
}

/// A read error naming the file and the dataset.
fn invalid(plan: &Plan, part: &Part, name: &str, e: hdf5::Error) -> ReadError {
    ReadError::invalid(
        &plan.files[part.file].path,
        format!("PartType{}/{name}: {e}", part.ptype),
    )
}

/// Appends the `rows` (increasing) of dataset `name` to `out`: per hyperslab window with kept
/// rows, one read over the span from its first to its last kept row.
fn read_rows<T: H5Type + Copy>(
    plan: &Plan,
    part: &Part,
    name: &str,
    width: usize,
    rows: &[usize],
    out: &mut Vec<T>,
) -> Result<(), ReadError> {
    if rows.is_empty() {
        return Ok(());
    }
    let ds = dataset(plan, part, name, width)?;
    let mut i = 0;
    while i < rows.len() {
        let window = rows[i] / CHUNK_ROWS;
        let mut j = i;
        while j < rows.len() && rows[j] / CHUNK_ROWS == window {
            j += 1;
        }
        let (lo, hi) = (rows[i], rows[j - 1] + 1);
        let values: Vec<T> = if width == 1 {
            ds.read_slice_1d::<T, _>(lo..hi)
                .map_err(|e| invalid(plan, part, name, e))?
                .into_raw_vec_and_offset()
                .0
        } else {
            ds.read_slice_2d::<T, _>(s![lo..hi, ..])
                .map_err(|e| invalid(plan, part, name, e))?
                .as_standard_layout()
                .iter()
                .copied()
                .collect()
        };
        for &row in &rows[i..j] {
            let at = (row - lo) * width;
            out.extend_from_slice(&values[at..at + width]);
        }
        i = j;
    }
    Ok(())
}
