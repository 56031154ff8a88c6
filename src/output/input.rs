//! Inputs must be regular files: a FIFO or a device would block or never end a read, a folder
//! fails only on the first read. Checked with `stat`, which never blocks, before any open.

use std::path::Path;

/// What a path that is not a regular file is, in words, or `None` for a regular file (or a
/// path that cannot be examined, left for the opener to report).
pub fn special_file_kind(path: &Path) -> Option<&'static str> {
    // `metadata` follows symbolic links: a link to a FIFO is a FIFO.
    let file_type = std::fs::metadata(path).ok()?.file_type();
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some("a special file")
}

/// Refuses a path that exists but is not a regular file (FIFO, device, folder, socket) with an
/// I/O error of kind `InvalidInput` saying what it is, so that every reader can report it
/// through its own I/O error variant (`<file>: is a named pipe (FIFO), not a regular file`).
/// A path that does not exist passes: opening it reports that, as before.
pub fn require_regular_file(path: &Path) -> std::io::Result<()> {
    match special_file_kind(path) {
        None => Ok(()),
        Some(kind) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {kind}, not a regular file"),
        )),
    }
}
