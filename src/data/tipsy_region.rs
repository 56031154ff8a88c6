//! Tipsy records streamed chunk by chunk, keeping those inside a [`Region`]: memory is one
//! chunk plus the kept particles. Values decode exactly as `tipsy.rs` decodes them.

use super::region::{Region, collapse_masses};
use super::tipsy::detect_layout;
use super::tipsy_format::{FAMILIES, record_bytes};
use super::{Field, Header, ReadError, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind};
use crate::jobs::Progress;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes read per chunk.
const CHUNK_BYTES: u64 = 8 << 20;

/// Reads the particles of the tipsy file `path` inside `region` (wrapped by `period` if given).
pub(super) fn read(
    path: &Path,
    region: &Region,
    period: Option<f64>,
    progress: &Progress,
) -> Result<Snapshot, ReadError> {
    let io = |e| ReadError::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let file_bytes = file.seek(SeekFrom::End(0)).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut head = vec![0u8; file_bytes.min(32) as usize];
    file.read_exact(&mut head).map_err(io)?;
    let layout = detect_layout(&head, file_bytes).map_err(|m| ReadError::invalid(path, m))?;
    file.seek(SeekFrom::Start(u64::from(layout.header_bytes)))
        .map_err(io)?;
    let order = layout.byte_order;
    let pos_bytes = if layout.double_positions { 24 } else { 12 };
    let total_bytes = file_bytes - u64::from(layout.header_bytes);
    let mut done_bytes = 0u64;
    let mut offset = u64::from(layout.header_bytes);
    let mut buf = Vec::new();
    let mut species = Vec::new();
    for (&(kind, extras), &count) in FAMILIES.iter().zip(&layout.counts) {
        let rec_bytes = record_bytes(extras.len(), layout.double_positions);
        let chunk_records = (CHUNK_BYTES / rec_bytes).max(1);
        let mut kept = Kept::new(extras.len());
        let mut start = 0u64;
        while start < count {
            progress.check().map_err(|_| ReadError::Cancelled {
                path: path.to_path_buf(),
            })?;
            let end = (start + chunk_records).min(count);
            let n_bytes = ((end - start) * rec_bytes) as usize;
            buf.resize(n_bytes, 0);
            file.read_exact(&mut buf).map_err(|e| {
                ReadError::invalid(
                    path,
                    format!(
                        "cannot read {n_bytes} bytes of {} records at offset {offset}: {e}",
                        kind.name()
                    ),
                )
            })?;
            for (j, rec) in buf.chunks_exact(rec_bytes as usize).enumerate() {
                let pos = if layout.double_positions {
                    [
                        order.f64_at(rec, 4),
                        order.f64_at(rec, 12),
                        order.f64_at(rec, 20),
                    ]
                    .map(|x| x as f32)
                } else {
                    [
                        order.f32_at(rec, 4),
                        order.f32_at(rec, 8),
                        order.f32_at(rec, 12),
                    ]
                };
                if !pos.iter().all(|x| x.is_finite()) {
                    return Err(ReadError::invalid(
                        path,
                        format!(
                            "{} particle {}: position is NaN or infinite",
                            kind.name(),
                            start + j as u64
                        ),
                    ));
                }
                if !region.contains(pos, period) {
                    continue;
                }
                let v = 4 + pos_bytes;
                kept.masses.push(order.f32_at(rec, 0));
                kept.positions.push(pos);
                kept.velocities.push([
                    order.f32_at(rec, v),
                    order.f32_at(rec, v + 4),
                    order.f32_at(rec, v + 8),
                ]);
                for (e, column) in kept.extras.iter_mut().enumerate() {
                    column.push(order.f32_at(rec, v + 12 + 4 * e));
                }
            }
            offset += n_bytes as u64;
            done_bytes += n_bytes as u64;
            progress.report("reading region", done_bytes, total_bytes);
            start = end;
        }
        if !kept.positions.is_empty() {
            species.push(kept.into_species(kind, extras));
        }
    }
    Ok(Snapshot {
        header: Header {
            time: layout.time,
            redshift: None,
            box_size: None,
            periodic: false,
            ..Header::default()
        },
        species,
        source: SourceInfo {
            paths: vec![path.to_path_buf()],
            format: SnapshotFormat::Tipsy,
            byte_order: Some(layout.byte_order.name().to_owned()),
            header_bytes: Some(layout.header_bytes),
            particles_in_file: layout.counts.iter().sum(),
        },
    })
}

/// The kept records of one family (structure of arrays).
struct Kept {
    positions: Vec<[f32; 3]>,
    velocities: Vec<[f32; 3]>,
    masses: Vec<f32>,
    extras: Vec<Vec<f32>>,
}

impl Kept {
    fn new(n_extras: usize) -> Self {
        Self {
            positions: Vec::new(),
            velocities: Vec::new(),
            masses: Vec::new(),
            extras: vec![Vec::new(); n_extras],
        }
    }

    /// The species as the full reader builds it: gas `hsmooth` doubles as smoothing lengths.
    fn into_species(self, kind: SpeciesKind, extras: &[&str]) -> Species {
        let fields: Vec<Field> = extras
            .iter()
            .zip(self.extras)
            .map(|(name, values)| Field {
                name: (*name).to_owned(),
                values,
                units: Default::default(),
            })
            .collect();
        let smoothing_lengths = (kind == SpeciesKind::Gas)
            .then(|| fields.iter().find(|f| f.name == "hsmooth"))
            .flatten()
            .map(|f| f.values.clone());
        Species {
            kind,
            positions: self.positions,
            masses: collapse_masses(self.masses),
            velocities: Some(self.velocities),
            ids: None,
            kernel_support: smoothing_lengths.as_ref().map(|_| 2.0),
            smoothing_lengths,
            fields,
            left_out: Vec::new(),
        }
    }
}
