//! A rank's share of a Gadget/SWIFT/AREPO HDF5 snapshot: every `PartType` dataset read in
//! hyperslabs over the rank's rows only (for a multi-file snapshot, only the files its range
//! touches). Values convert exactly as `gadget_hdf5.rs` converts them.

use super::gadget_hdf5_checks as checks;
use super::gadget_hdf5_meta::{self as meta, Part, Plan, PlannedSpecies};
use super::region::collapse_masses;
use super::share::{Share, Span};
use super::subsample::Subsample;
use super::{Field, LoadOptions, Masses, ReadError, Snapshot, SnapshotFormat, SourceInfo, Species};
use crate::jobs::Progress;
use hdf5::H5Type;
use ndarray::s;
use std::ops::Range;
use std::path::Path;

/// Rows per hyperslab.
const CHUNK_ROWS: u64 = 1 << 18;

/// Reads rank `rank`'s share (of `ranks`) of the Gadget snapshot `path`.
pub(super) fn read(
    path: &Path,
    options: &LoadOptions,
    progress: &Progress,
    rank: usize,
    ranks: usize,
) -> Result<Share, ReadError> {
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
    let reader = ShareReader {
        plan: &plan,
        sub,
        progress,
        path,
    };
    let (mut species, mut first, mut totals) = (Vec::new(), Vec::new(), Vec::new());
    for planned in &plan.species {
        let global_first = planned.parts.first().map_or(0, |p| p.global_first);
        let count: u64 = planned.parts.iter().map(|p| p.count).sum();
        let span = Span::of(&sub, global_first, count, rank, ranks);
        let decoded = reader.read_species(planned, &span.files)?;
        let smoothing_name = planned
            .parts
            .iter()
            .find_map(|p| p.smoothing_name.as_deref())
            .unwrap_or("SmoothingLength");
        super::validate::check_species(path, &decoded, smoothing_name)?;
        species.push(decoded);
        first.push(span.first);
        totals.push(span.total);
    }
    let snapshot = Snapshot {
        header: plan.header.clone(),
        species,
        source: SourceInfo {
            paths: plan.files.iter().map(|f| f.path.clone()).collect(),
            format: SnapshotFormat::GadgetHdf5,
            byte_order: None,
            header_bytes: None,
            particles_in_file: total,
        },
    };
    Ok(Share {
        snapshot,
        first,
        totals,
    })
}

/// Reads the rows of a global index range from every part of a species.
struct ShareReader<'a> {
    plan: &'a Plan,
    sub: Subsample,
    progress: &'a Progress,
    path: &'a Path,
}

impl ShareReader<'_> {
    fn read_species(
        &self,
        planned: &PlannedSpecies,
        range: &Range<u64>,
    ) -> Result<Species, ReadError> {
        let mut species = Species::empty(planned.kind);
        let coords = self.column::<f32>(planned, range, &|_| Some("Coordinates".into()), 3)?;
        let positions: Vec<[f32; 3]> = coords.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        if let Some(i) = positions
            .iter()
            .position(|p| !p.iter().all(|x| x.is_finite()))
        {
            return Err(self.non_finite(planned, range, i));
        }
        species.positions = positions;
        if planned.has_velocities {
            let v = self.column::<f32>(planned, range, &|_| Some("Velocities".into()), 3)?;
            species.velocities = Some(v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect());
        }
        if planned.has_ids {
            species.ids =
                Some(self.column::<u64>(planned, range, &|_| Some("ParticleIDs".into()), 1)?);
        }
        if planned.has_smoothing {
            species.smoothing_lengths =
                Some(self.column::<f32>(planned, range, &|p| p.smoothing_name.clone(), 1)?);
            species.kernel_support = Some(self.plan.header.kernel.support_over_h);
        }
        species.masses = self.masses(planned, range)?;
        for part in &planned.parts {
            let group_name = format!("PartType{}", part.ptype);
            if let Ok(group) = self.plan.files[part.file].handle.group(&group_name) {
                for left_out in checks::multi_column_datasets(&group, &group_name, part.count) {
                    if !species.left_out.iter().any(|(name, _)| *name == left_out.0) {
                        species.left_out.push(left_out);
                    }
                }
            }
        }
        for (name, units) in &planned.fields {
            species.fields.push(Field {
                name: name.clone(),
                values: self.column::<f32>(planned, range, &|_| Some(name.clone()), 1)?,
                units: units.clone(),
            });
        }
        Ok(species)
    }

    /// Masses from `Header/MassTable` where every part has one, else per particle (the
    /// `Masses` dataset, or the table for the parts without the dataset).
    fn masses(&self, planned: &PlannedSpecies, range: &Range<u64>) -> Result<Masses, ReadError> {
        let table: Vec<Option<f64>> = planned.parts.iter().map(|p| p.table_mass).collect();
        if let Some(Some(m)) = table.first()
            && table.iter().all(|t| *t == Some(*m))
        {
            return Ok(Masses::Uniform(*m as f32));
        }
        let mut masses = Vec::new();
        for part in &planned.parts {
            let rows = self.rows_of(part, range);
            match part.table_mass {
                Some(m) => {
                    let kept = self
                        .sub
                        .kept_in(part.global_first + rows.start..part.global_first + rows.end);
                    masses.extend(std::iter::repeat_n(m as f32, kept as usize));
                }
                None => self.read_rows::<f32>(part, "Masses", 1, rows, &mut masses)?,
            }
        }
        Ok(collapse_masses(masses))
    }

    /// The rows of `part` whose global indices fall in `range`.
    fn rows_of(&self, part: &Part, range: &Range<u64>) -> Range<u64> {
        let lo = range
            .start
            .clamp(part.global_first, part.global_first + part.count);
        let hi = range.end.clamp(lo, part.global_first + part.count);
        lo - part.global_first..hi - part.global_first
    }

    /// Dataset `name_of(part)` of every part (parts where it gives `None` are skipped) over
    /// `range`, the kept rows only.
    fn column<T: H5Type + Copy>(
        &self,
        planned: &PlannedSpecies,
        range: &Range<u64>,
        name_of: &dyn Fn(&Part) -> Option<String>,
        width: usize,
    ) -> Result<Vec<T>, ReadError> {
        let mut out = Vec::new();
        for part in &planned.parts {
            if let Some(name) = name_of(part) {
                self.read_rows(part, &name, width, self.rows_of(part, range), &mut out)?;
            }
        }
        Ok(out)
    }

    /// Appends the kept rows among `rows` of `PartTypeN/name` to `out`, hyperslab by hyperslab.
    fn read_rows<T: H5Type + Copy>(
        &self,
        part: &Part,
        name: &str,
        width: usize,
        rows: Range<u64>,
        out: &mut Vec<T>,
    ) -> Result<(), ReadError> {
        let file = &self.plan.files[part.file];
        let dataset_path = format!("PartType{}/{name}", part.ptype);
        let invalid =
            |e: hdf5::Error| ReadError::invalid(&file.path, format!("{dataset_path}: {e}"));
        let ds = file.handle.dataset(&dataset_path).map_err(invalid)?;
        meta::check_dataset(&ds, part.count, width)
            .map_err(|m| ReadError::invalid(&file.path, format!("{dataset_path}: {m}")))?;
        let mut row = rows.start;
        while row < rows.end {
            self.progress.check().map_err(|_| ReadError::Cancelled {
                path: self.path.to_path_buf(),
            })?;
            let end = (row + CHUNK_ROWS).min(rows.end);
            let (lo, hi) = (row as usize, end as usize);
            let values: Vec<T> = if width == 1 {
                ds.read_slice_1d::<T, _>(lo..hi)
                    .map_err(invalid)?
                    .into_raw_vec_and_offset()
                    .0
            } else {
                ds.read_slice_2d::<T, _>(s![lo..hi, ..])
                    .map_err(invalid)?
                    .as_standard_layout()
                    .iter()
                    .copied()
                    .collect()
            };
            let g0 = part.global_first + row;
            for (j, chunk) in values.chunks_exact(width).enumerate() {
                if self.sub.keeps_all() || self.sub.is_kept(g0 + j as u64) {
                    out.extend_from_slice(chunk);
                }
            }
            row = end;
        }
        Ok(())
    }

    /// The error for the share's `kept_index`-th particle, named by its index in the species.
    fn non_finite(
        &self,
        planned: &PlannedSpecies,
        range: &Range<u64>,
        kept_index: usize,
    ) -> ReadError {
        let species_first = planned.parts.first().map_or(0, |p| p.global_first);
        let mut seen = 0usize;
        let mut index = range.start;
        for g in range.clone() {
            if self.sub.keeps_all() || self.sub.is_kept(g) {
                if seen == kept_index {
                    index = g;
                    break;
                }
                seen += 1;
            }
        }
        ReadError::invalid(
            self.path,
            format!(
                "{} particle {}: position is NaN or infinite",
                planned.kind.name(),
                index - species_first
            ),
        )
    }
}
