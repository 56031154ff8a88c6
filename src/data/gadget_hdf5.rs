//! Gadget/SWIFT/AREPO HDF5 snapshots.

use super::{LoadOptions, ReadError, Snapshot};
use crate::jobs::Progress;
use std::io::Read;
use std::path::Path;

/// The 8-byte signature at the start of an HDF5 file (at offset 0 when there is no user block).
const HDF5_SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

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

/// Reads a Gadget HDF5 snapshot.
pub fn read(
    path: &Path,
    _options: &LoadOptions,
    _progress: &Progress,
) -> Result<Snapshot, ReadError> {
    Err(ReadError::invalid(
        path,
        "Gadget HDF5 reader not written yet",
    ))
}
