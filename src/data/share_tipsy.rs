//! A rank's share of a tipsy file: for each family, only the byte range of its records in the
//! rank's index range is read, by the whole file's reader (`tipsy.rs`), so values decode
//! exactly as there and on every thread.

use super::share::{Share, Span};
use super::subsample::Subsample;
use super::tipsy::{FamilyPart, detect_layout, read_family_part};
use super::tipsy_format::{FAMILIES, record_bytes};
use super::{Header, LoadOptions, ReadError, Snapshot, SnapshotFormat, SourceInfo};
use crate::jobs::Progress;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

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
    for (&(kind, extras), &count) in FAMILIES.iter().zip(&layout.counts) {
        let rec_bytes = record_bytes(extras.len(), layout.double_positions);
        if count == 0 {
            continue;
        }
        let span = Span::of(&sub, first_global, count, rank, ranks);
        let part = FamilyPart {
            kind,
            extras,
            first_global,
            family_offset,
            read: span.files.clone(),
        };
        let decoded = read_family_part(&mut file, &layout, &sub, (path, progress), part)?;
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
