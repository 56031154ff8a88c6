//! Gadget/SWIFT/AREPO HDF5 snapshots (Gadget-2/3/4 layout, DESIGN.md §3).
//!
//! `Header` attributes give per-type counts (arrays of any length: Gadget-4 built with two types
//! writes length 2), `MassTable`, `Time`, `Redshift`, `BoxSize`; particles live in `PartType0..5`
//! (0 gas, 1 dark, 4 star, 2/3/5 other). Every claimed count is checked against the dataset
//! shapes and the bytes the datasets store before anything is allocated; datasets are read in
//! large hyperslabs, chunk by chunk, with progress, keeping only the subsampled rows.

pub use super::gadget_hdf5_write::{GadgetWriteOptions, write};

use super::gadget_hdf5_checks as checks;
use super::gadget_hdf5_meta::{self as meta, Part, Plan};
use super::subsample::Subsample;
use super::{Field, LoadOptions, Masses, ReadError, Snapshot, SnapshotFormat, SourceInfo, Species};
use crate::jobs::Progress;
use hdf5::H5Type;
use ndarray::s;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The 8-byte signature at the start of an HDF5 file (at offset 0 when there is no user block).
pub(crate) const HDF5_SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Rows per hyperslab read: large enough to stream at disk speed, small enough to bound memory.
const CHUNK_ROWS: usize = 1 << 18;

/// Whether the file starts with the HDF5 signature.
pub fn looks_like_hdf5(path: &Path) -> Result<bool, ReadError> {
    let mut file = std::fs::File::open(path).map_err(|e| ReadError::io(path, e))?;
    let mut head = [0u8; 8];
    match file.read_exact(&mut head) {
        Ok(()) => Ok(head == HDF5_SIGNATURE),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(ReadError::io(path, e)),
    }
}

/// Reads a Gadget HDF5 snapshot; for `name.K.hdf5` with `NumFilesPerSnapshot` > 1, every file
/// `name.0.hdf5 … name.(N-1).hdf5` of the snapshot.
pub fn read(
    path: &Path,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<Snapshot, ReadError> {
    let plan = meta::plan(path)?;
    for file in &plan.files {
        checks::check_box_size(&file.path, &file.handle)?;
    }
    let total: u64 = plan
        .species
        .iter()
        .flat_map(|s| &s.parts)
        .map(|p| p.count)
        .sum();
    let sub = Subsample::new(total, options.max_particles);
    let mut reader = ChunkReader {
        progress,
        sub,
        done: 0,
        total: plan.elements_to_read(),
        first_path: path.to_path_buf(),
    };
    let mut species = Vec::new();
    for planned in &plan.species {
        let decoded = reader.read_species(&plan, planned)?;
        let smoothing_name = planned
            .parts
            .iter()
            .find_map(|p| p.smoothing_name.as_deref())
            .unwrap_or("SmoothingLength");
        super::validate::check_species(path, &decoded, smoothing_name)?;
        species.push(decoded);
    }
    progress.report("reading", reader.total, reader.total);
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

/// Reads datasets hyperslab by hyperslab, keeping the subsampled rows.
struct ChunkReader<'p> {
    progress: &'p Progress,
    sub: Subsample,
    done: u64,
    total: u64,
    first_path: PathBuf,
}

impl ChunkReader<'_> {
    fn read_species(
        &mut self,
        plan: &Plan,
        planned: &meta::PlannedSpecies,
    ) -> Result<Species, ReadError> {
        let first = planned.parts.first().map_or(0, |p| p.global_first);
        let end = planned.parts.last().map_or(0, |p| p.global_first + p.count);
        let n_kept = self.sub.kept_in(first..end) as usize;
        let mut species = Species::empty(planned.kind);

        let mut positions = vec![[0f32; 3]; n_kept];
        self.read_column(
            plan,
            planned,
            |_| Some("Coordinates"),
            positions.as_flattened_mut(),
            3,
        )?;
        for (i, pos) in positions.iter().enumerate() {
            if !pos.iter().all(|x| x.is_finite()) {
                return Err(self.non_finite(planned, first, i));
            }
        }
        species.positions = positions;

        if planned.has_velocities {
            let mut v = vec![[0f32; 3]; n_kept];
            self.read_column(
                plan,
                planned,
                |_| Some("Velocities"),
                v.as_flattened_mut(),
                3,
            )?;
            species.velocities = Some(v);
        }
        if planned.has_ids {
            let mut ids = vec![0u64; n_kept];
            self.read_column(plan, planned, |_| Some("ParticleIDs"), &mut ids, 1)?;
            species.ids = Some(ids);
        }
        if planned.has_smoothing {
            let mut h = vec![0f32; n_kept];
            self.read_column(plan, planned, |p| p.smoothing_name.as_deref(), &mut h, 1)?;
            species.smoothing_lengths = Some(h);
            species.kernel_support = Some(plan.header.kernel.support_over_h);
        }
        species.masses = self.read_masses(plan, planned, n_kept)?;
        for part in &planned.parts {
            let group_name = format!("PartType{}", part.ptype);
            if let Ok(group) = plan.files[part.file].handle.group(&group_name) {
                for left_out in checks::multi_column_datasets(&group, &group_name, part.count) {
                    if !species.left_out.iter().any(|(name, _)| *name == left_out.0) {
                        species.left_out.push(left_out);
                    }
                }
            }
        }
        for (name, units) in &planned.fields {
            let mut values = vec![0f32; n_kept];
            self.read_column(plan, planned, |_| Some(name.as_str()), &mut values, 1)?;
            species.fields.push(Field {
                name: name.clone(),
                values,
                units: units.clone(),
            });
        }
        Ok(species)
    }

    /// Masses from the `Masses` datasets where parts have them, else from `Header/MassTable`.
    fn read_masses(
        &mut self,
        plan: &Plan,
        planned: &meta::PlannedSpecies,
        n_kept: usize,
    ) -> Result<Masses, ReadError> {
        let table: Vec<Option<f64>> = planned.parts.iter().map(|p| p.table_mass).collect();
        if let Some(Some(m)) = table.first()
            && table.iter().all(|t| *t == Some(*m))
        {
            return Ok(Masses::Uniform(*m as f32));
        }
        let mut masses = vec![0f32; n_kept];
        self.read_column(
            plan,
            planned,
            |p| p.table_mass.is_none().then_some("Masses"),
            &mut masses,
            1,
        )?;
        // Parts whose masses come from the table fill their own kept range.
        let base = self
            .sub
            .kept_before(planned.parts.first().map_or(0, |p| p.global_first));
        for part in &planned.parts {
            if let Some(m) = part.table_mass {
                let lo = (self.sub.kept_before(part.global_first) - base) as usize;
                let hi = (self.sub.kept_before(part.global_first + part.count) - base) as usize;
                masses[lo..hi].fill(m as f32);
            }
        }
        Ok(match masses.first() {
            Some(&m) if masses.iter().all(|x| x.to_bits() == m.to_bits()) => Masses::Uniform(m),
            _ => Masses::PerParticle(masses),
        })
    }

    /// Reads dataset `name_of(part)` of every part (skipping parts where it gives `None`) into
    /// `dest` (`width` values per kept particle), in hyperslabs of [`CHUNK_ROWS`] rows.
    fn read_column<'n, T: H5Type + Copy + Default>(
        &mut self,
        plan: &Plan,
        planned: &'n meta::PlannedSpecies,
        name_of: impl Fn(&'n Part) -> Option<&'n str>,
        dest: &mut [T],
        width: usize,
    ) -> Result<(), ReadError> {
        let base = self
            .sub
            .kept_before(planned.parts.first().map_or(0, |p| p.global_first));
        for part in &planned.parts {
            let Some(name) = name_of(part) else { continue };
            let file = &plan.files[part.file];
            let dataset_path = format!("PartType{}/{name}", part.ptype);
            let invalid =
                |e: hdf5::Error| ReadError::invalid(&file.path, format!("{dataset_path}: {e}"));
            let ds = file.handle.dataset(&dataset_path).map_err(invalid)?;
            meta::check_dataset(&ds, part.count, width)
                .map_err(|m| ReadError::invalid(&file.path, format!("{dataset_path}: {m}")))?;
            let count = part.count as usize;
            let mut row = 0usize;
            while row < count {
                self.progress.check().map_err(|_| ReadError::Cancelled {
                    path: self.first_path.clone(),
                })?;
                let end = (row + CHUNK_ROWS).min(count);
                let g0 = part.global_first + row as u64;
                let g1 = part.global_first + end as u64;
                let lo = (self.sub.kept_before(g0) - base) as usize * width;
                let hi = (self.sub.kept_before(g1) - base) as usize * width;
                if hi > lo {
                    let out = &mut dest[lo..hi];
                    if width == 1 {
                        let chunk = ds.read_slice_1d::<T, _>(row..end).map_err(invalid)?;
                        copy_kept(chunk.as_slice(), out, 1, g0, &self.sub);
                    } else {
                        let chunk = ds
                            .read_slice_2d::<T, _>(s![row..end, ..])
                            .map_err(invalid)?;
                        copy_kept(chunk.as_slice(), out, width, g0, &self.sub);
                    }
                }
                self.done += ((end - row) * width) as u64;
                self.progress.report("reading", self.done, self.total);
                row = end;
            }
        }
        Ok(())
    }

    fn non_finite(
        &self,
        planned: &meta::PlannedSpecies,
        first: u64,
        kept_index: usize,
    ) -> ReadError {
        // Recover the file index of the kept particle: the smallest global index with
        // kept_before(g + 1) = kept_before(first) + kept_index + 1.
        let target = self.sub.kept_before(first) + kept_index as u64 + 1;
        let (mut lo, mut hi) = (
            first,
            first + planned.parts.iter().map(|p| p.count).sum::<u64>(),
        );
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.sub.kept_before(mid + 1) >= target {
                hi = mid
            } else {
                lo = mid + 1
            }
        }
        ReadError::invalid(
            &self.first_path,
            format!(
                "{} particle {}: position is NaN or infinite",
                planned.kind.name(),
                lo - first
            ),
        )
    }
}

/// Copies the kept rows of `chunk` (rows of `width`, global indices from `first`) into `out`.
fn copy_kept<T: Copy>(
    chunk: Option<&[T]>,
    out: &mut [T],
    width: usize,
    first: u64,
    sub: &Subsample,
) {
    let Some(chunk) = chunk else { return };
    if sub.keeps_all() {
        let n = out.len().min(chunk.len());
        out[..n].copy_from_slice(&chunk[..n]);
        return;
    }
    let mut k = 0;
    for (j, row) in chunk.chunks_exact(width).enumerate() {
        if sub.is_kept(first + j as u64) && k + width <= out.len() {
            out[k..k + width].copy_from_slice(row);
            k += width;
        }
    }
}
