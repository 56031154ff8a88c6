use std::path::PathBuf;

/// Why a snapshot could not be written. Displays as `<file>: <what>`.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The operating system refused or failed a write.
    #[error("{}: {io_error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        io_error: std::io::Error,
    },
    /// The snapshot cannot be expressed in the format (or the HDF5 library refused it).
    #[error("{}: {message}", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What could not be written.
        message: String,
    },
}
