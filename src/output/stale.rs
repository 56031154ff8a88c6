//! Removing the temporary files an interrupted run left beside its targets: a new run removes
//! those older than its own start, before it makes its own (so never its own, nor a newer
//! concurrent run's).

use super::OutputError;
use super::atomic::{folder_of, target_of_temporary};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Removes the temporary files of `path` ([`super::temporary_beside`]'s names) last modified
/// before `started`, and returns the files removed. Call it before making new temporaries.
pub fn remove_stale_temporaries(
    path: &Path,
    started: SystemTime,
) -> Result<Vec<PathBuf>, OutputError> {
    let Some(target_name) = path.file_name() else {
        return Err(OutputError::NoFileName {
            path: path.to_path_buf(),
        });
    };
    let target = target_name.as_encoded_bytes();
    remove_stale_temporaries_in(folder_of(path), started, |name| name == target)
}

/// Removes, in `folder`, the temporary files whose target's file name satisfies `is_target`
/// (bytes of the name) and that were last modified before `started`; returns those removed. A
/// folder that cannot be listed removes nothing (the write itself reports why it is unusable).
pub fn remove_stale_temporaries_in(
    folder: &Path,
    started: SystemTime,
    is_target: impl Fn(&[u8]) -> bool,
) -> Result<Vec<PathBuf>, OutputError> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Ok(Vec::new());
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !target_of_temporary(&name).is_some_and(&is_target) {
            continue;
        }
        let stale_path = entry.path();
        // symlink_metadata: a link under a temporary name is not ours to follow or remove.
        let Ok(metadata) = stale_path.symlink_metadata() else {
            continue;
        };
        if metadata.is_file() && metadata.modified().is_ok_and(|time| time < started) {
            std::fs::remove_file(&stale_path).map_err(|e| OutputError::io(&stale_path, e))?;
            removed.push(stale_path);
        }
    }
    Ok(removed)
}
