//! Tipsy records streamed chunk by chunk, keeping those inside a [`Region`]: memory is one
//! chunk plus the kept particles. Values decode exactly as `tipsy.rs` decodes them.

use super::region::Region;
use super::tipsy::detect_layout;
use super::tipsy_format::{FAMILIES, record_bytes, record_position};
use super::tipsy_kept::Kept;
use super::{Header, ReadError, Snapshot, SnapshotFormat, SourceInfo};
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
                let pos = record_position(rec, order, layout.double_positions);
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
                kept.push(rec, order, layout.double_positions, pos);
            }
            offset += n_bytes as u64;
            done_bytes += n_bytes as u64;
            progress.report("reading region", done_bytes, total_bytes);
            start = end;
        }
        if !kept.is_empty() {
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
