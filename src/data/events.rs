//! Neutrino event lists (IceCube release text formats, CSV).

use super::{EventList, ReadError};
use crate::jobs::Progress;
use std::path::Path;

/// Whether the file looks like an event list (a text header naming RA and Dec columns).
pub fn looks_like_events(_path: &Path) -> Result<bool, ReadError> {
    Ok(false)
}

/// Reads and concatenates event files in the order given.
pub fn read(paths: &[&Path], _progress: &Progress) -> Result<EventList, ReadError> {
    let path = paths.first().map(|p| p.to_path_buf()).unwrap_or_default();
    Err(ReadError::invalid(path, "event reader not written yet"))
}
