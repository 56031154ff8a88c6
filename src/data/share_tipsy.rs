//! A rank's share of a tipsy file: for each family, only the byte range of its records in the
//! rank's index range is read. Values decode exactly as `tipsy.rs` decodes them.

use super::share::{Share, Span};
use super::subsample::Subsample;
use super::tipsy::{ByteOrder, detect_layout};
use super::tipsy_format::{FAMILIES, record_bytes, record_position};
use super::tipsy_kept::Kept;
use super::{Header, LoadOptions, ReadError, Snapshot, SnapshotFormat, SourceInfo, SpeciesKind};
use crate::jobs::Progress;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes read per chunk.
const CHUNK_BYTES: u64 = 8 << 20;

/// Reads rank `rank`'s share (of `ranks`) of the tipsy file `path`.
pub(super) fn read(
    path: &Path,
    options: &LoadOptions,
    progress: &Progress,
    rank: usize,
    ranks: usize,
) -> Result<Share, ReadError> {
    let io = |e| ReadError::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let file_bytes = file.seek(SeekFrom::End(0)).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut head = vec![0u8; file_bytes.min(32) as usize];
    file.read_exact(&mut head).map_err(io)?;
    let layout = detect_layout(&head, file_bytes).map_err(|m| ReadError::invalid(path, m))?;
    let total: u64 = layout.counts.iter().sum();
    let sub = Subsample::new(total, options.max_particles);
    let mut species = Vec::new();
    let (mut first, mut totals) = (Vec::new(), Vec::new());
    let mut family_offset = u64::from(layout.header_bytes);
    let mut first_global = 0u64;
    let mut buf = Vec::new();
    for (&(kind, extras), &count) in FAMILIES.iter().zip(&layout.counts) {
        let rec_bytes = record_bytes(extras.len(), layout.double_positions);
        if count == 0 {
            continue;
        }
        let span = Span::of(&sub, first_global, count, rank, ranks);
        let decoder = Decoder {
            kind,
            order: layout.byte_order,
            double_positions: layout.double_positions,
            first_global,
            sub: &sub,
        };
        let mut kept = Kept::new(extras.len());
        let chunk_records = (CHUNK_BYTES / rec_bytes).max(1);
        let mut start = span.files.start;
        while start < span.files.end {
            progress.check().map_err(|_| ReadError::Cancelled {
                path: path.to_path_buf(),
            })?;
            let end = (start + chunk_records).min(span.files.end);
            let offset = family_offset + (start - first_global) * rec_bytes;
            let n_bytes = ((end - start) * rec_bytes) as usize;
            buf.resize(n_bytes, 0);
            file.seek(SeekFrom::Start(offset)).map_err(io)?;
            file.read_exact(&mut buf).map_err(|e| {
                ReadError::invalid(
                    path,
                    format!(
                        "cannot read {n_bytes} bytes of {} records at offset {offset}: {e}",
                        kind.name()
                    ),
                )
            })?;
            decoder
                .decode(&buf, start, rec_bytes, &mut kept)
                .map_err(|m| ReadError::invalid(path, m))?;
            progress.report(
                "reading share",
                end - span.files.start,
                span.files.end - span.files.start,
            );
            start = end;
        }
        let decoded = kept.into_species(kind, extras);
        super::validate::check_species(path, &decoded, "hsmooth")?;
        species.push(decoded);
        first.push(span.first);
        totals.push(span.total);
        family_offset += count * rec_bytes;
        first_global += count;
    }
    let snapshot = Snapshot {
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
            particles_in_file: total,
        },
    };
    Ok(Share {
        snapshot,
        first,
        totals,
    })
}

/// How one family's records decode.
struct Decoder<'a> {
    kind: SpeciesKind,
    order: ByteOrder,
    double_positions: bool,
    /// Global index of the family's first record.
    first_global: u64,
    sub: &'a Subsample,
}

impl Decoder<'_> {
    /// Decodes the kept records of `bytes` (global indices from `first`) into `kept`.
    fn decode(
        &self,
        bytes: &[u8],
        first: u64,
        rec_bytes: u64,
        kept: &mut Kept,
    ) -> Result<(), String> {
        let order = self.order;
        for (j, rec) in bytes.chunks_exact(rec_bytes as usize).enumerate() {
            let global = first + j as u64;
            if !self.sub.keeps_all() && !self.sub.is_kept(global) {
                continue;
            }
            let pos = record_position(rec, order, self.double_positions);
            if !pos.iter().all(|x| x.is_finite()) {
                return Err(format!(
                    "{} particle {}: position is NaN or infinite",
                    self.kind.name(),
                    global - self.first_global
                ));
            }
            kept.push(rec, order, self.double_positions, pos);
        }
        Ok(())
    }
}
