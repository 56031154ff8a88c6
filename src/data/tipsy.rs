//! Tipsy binary snapshots (big or little endian, 32- or 28-byte header).

use super::{LoadOptions, ReadError, Snapshot};
use crate::jobs::Progress;
use std::path::Path;

/// Reads a tipsy file.
pub fn read(
    path: &Path,
    _options: &LoadOptions,
    _progress: &Progress,
) -> Result<Snapshot, ReadError> {
    Err(ReadError::invalid(path, "tipsy reader not written yet"))
}
