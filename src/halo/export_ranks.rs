//! The per-particle labels file of friends-of-friends over ranks, written by every rank at
//! once: rank 0 makes the temporary file beside the target (crate::output's rule) with the
//! `.npy` header and the whole length, every rank writes the labels of the particles it read
//! at their places, and rank 0 renames the file into place only when every rank wrote its
//! part. A rank that fails ends every rank with its error, and the temporary file is removed.

use super::domains::id_runs;
use super::export::ExportError;
use crate::cluster::{Agreed, Collective, agree};
use crate::output::temporary_beside;
use rayon::prelude::*;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// Labels per write call: pieces written on every thread, each at its own offset.
const WRITE_PIECE: usize = 1 << 22;

/// Writes `path` as the int32 `.npy` array of `n` labels, this rank's `labels` at the places
/// `ids` (increasing particle indices; the ranks' ids together are 0..n, each once);
/// collective. The bytes equal `export::write_labels` of the whole array.
pub fn write_labels_npy_on_ranks(
    collective: &dyn Collective,
    path: &Path,
    n: usize,
    ids: &[u64],
    labels: &[i32],
) -> Result<(), Agreed> {
    let io = |e| ExportError::Io {
        path: path.to_path_buf(),
        io_error: e,
    };
    // As many labels as particles over the ranks (each rank checks that its own are in
    // range and increase), so no place of the file is left unwritten.
    let mut count = [ids.len() as u64];
    collective.sum_u64(&mut count);
    // Rank 0: the temporary file with the header and every label's place.
    let made = if count[0] != n as u64 {
        Err(ExportError::Npy {
            path: path.to_path_buf(),
            message: format!(
                "{}: the ranks hold {} labels for {n} particles",
                path.display(),
                count[0]
            ),
        })
    } else if collective.is_root() {
        temporary_beside(path)
            .map_err(ExportError::from)
            .and_then(|temp| {
                ndarray_npy::write_zeroed_npy::<i32, _>(temp.as_file(), n)
                    .map_err(|e| npy_error(path, e))?;
                let len = temp.as_file().metadata().map_err(io)?.len();
                Ok((temp, len))
            })
            .map(Some)
    } else {
        Ok(None)
    };
    let made = agree(collective, made)?;
    // Where the labels start, and the temporary file's name, from rank 0.
    let mut shared = Vec::new();
    if let Some((temp, len)) = &made {
        let start = len.saturating_sub(4 * n as u64);
        shared.extend(start.to_le_bytes());
        shared.extend(temp.path().as_os_str().as_encoded_bytes());
    }
    collective.broadcast_bytes(0, &mut shared);
    let (start, temp_path) = match shared.split_first_chunk::<8>() {
        Some((start, name)) => (u64::from_le_bytes(*start), path_of_bytes(name)),
        None => (0, PathBuf::new()),
    };
    let written = match &made {
        Some((temp, _)) => write_places(temp.as_file(), start, n, ids, labels, path),
        None => OpenOptions::new()
            .write(true)
            .open(&temp_path)
            .map_err(io)
            .and_then(|file| write_places(&file, start, n, ids, labels, path)),
    };
    // Every rank's file closed (its writes handed to the file system) before rank 0 renames.
    agree(collective, written)?;
    let renamed = match made {
        Some((temp, _)) => temp.persist(path).map(drop).map_err(|e| ExportError::Io {
            path: path.to_path_buf(),
            io_error: e.error,
        }),
        None => Ok(()),
    };
    agree(collective, renamed)
}

/// Writes `labels` little-endian at `start + 4 × id` for their increasing `ids` below `n`:
/// each run of consecutive ids in pieces, on every thread.
fn write_places(
    file: &File,
    start: u64,
    n: usize,
    ids: &[u64],
    labels: &[i32],
    path: &Path,
) -> Result<(), ExportError> {
    let refused = |what: String| ExportError::Npy {
        path: path.to_path_buf(),
        message: format!("{}: {what}", path.display()),
    };
    if ids.len() != labels.len() {
        return Err(refused(format!(
            "{} labels for {} particles",
            labels.len(),
            ids.len()
        )));
    }
    let Some(runs) = id_runs(ids) else {
        return Err(refused("particle ids do not increase".to_owned()));
    };
    if let Some(&last) = ids.last()
        && last >= n as u64
    {
        return Err(refused(format!("particle {last} of {n}")));
    }
    // Each run's labels follow the earlier runs' in `labels`.
    let mut at = 0;
    let runs: Vec<(u64, usize, usize)> = runs
        .iter()
        .map(|&[first, len]| {
            let run = (first, at, len as usize);
            at += len as usize;
            run
        })
        .collect();
    let pieces: Vec<(u64, usize, usize)> = runs
        .iter()
        .flat_map(|&(first, at, len)| {
            (0..len)
                .step_by(WRITE_PIECE)
                .map(move |k| (first + k as u64, at + k, WRITE_PIECE.min(len - k)))
        })
        .collect();
    pieces.par_iter().try_for_each(|&(id, at, len)| {
        let bytes: Vec<u8> = labels[at..at + len]
            .iter()
            .flat_map(|l| l.to_le_bytes())
            .collect();
        write_at(file, &bytes, start + 4 * id).map_err(|e| ExportError::Io {
            path: path.to_path_buf(),
            io_error: e,
        })
    })
}

/// Writes `bytes` at `offset` of `file` without moving a shared position, so threads can
/// write their own places at once.
#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

/// Writes `bytes` at `offset` of `file`; one writer at a time, as seek and write share the
/// file's position here.
#[cfg(not(unix))]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    static ONE_WRITER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _writing = ONE_WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(bytes)
}

/// The path whose bytes rank 0 sent (`OsStr::as_encoded_bytes` on the same system).
#[cfg(unix)]
fn path_of_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes))
}

/// The path whose bytes rank 0 sent (a temporary name beside the target, UTF-8 here).
#[cfg(not(unix))]
fn path_of_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// The export error of a failed header.
fn npy_error(path: &Path, error: ndarray_npy::WriteNpyError) -> ExportError {
    match error {
        ndarray_npy::WriteNpyError::Io(io_error) => ExportError::Io {
            path: path.to_path_buf(),
            io_error,
        },
        other => ExportError::Npy {
            path: path.to_path_buf(),
            message: format!("{}: .npy: {other}", path.display()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Solo;
    use crate::halo::export::write_labels;

    #[test]
    fn one_rank_writes_the_bytes_of_the_one_process_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = 2 * WRITE_PIECE + 3;
        let labels: Vec<i32> = (0..n as i32).map(|i| i % 1001 - 1).collect();
        let ids: Vec<u64> = (0..n as u64).collect();
        let mine = dir.path().join("ranks.npy");
        let one = dir.path().join("one.npy");
        write_labels_npy_on_ranks(&Solo, &mine, n, &ids, &labels).expect("written");
        write_labels(&one, &labels).expect("written");
        assert!(std::fs::read(&mine).expect("read") == std::fs::read(&one).expect("read"));
    }

    #[test]
    fn a_failed_write_leaves_the_older_file_and_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("labels.npy");
        std::fs::write(&path, b"older").expect("older file");
        // Particle 5 of 5, and ids that do not increase: both refused before the rename.
        for ids in [[0u64, 1, 2, 3, 5], [0, 1, 3, 2, 4]] {
            let failed = write_labels_npy_on_ranks(&Solo, &path, 5, &ids, &[1; 5]);
            assert!(failed.is_err(), "{ids:?}");
            assert_eq!(std::fs::read(&path).expect("read"), b"older");
            assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);
        }
    }
}
