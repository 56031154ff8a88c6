use std::path::PathBuf;

/// Why a file could not be read. Displays as `<file>: <what>`.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The operating system refused or failed a read.
    // Not marked as the error's source: the message already includes it, and anyhow's `{:#}`
    // would print it a second time.
    #[error("{}: {io_error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        io_error: std::io::Error,
    },
    /// The content is not what the format promises.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What was wrong, naming the offset, dataset, line or field and what was expected.
        message: String,
    },
    /// The user cancelled the read.
    #[error("{}: reading cancelled", path.display())]
    Cancelled {
        /// The file.
        path: PathBuf,
    },
}

impl ReadError {
    /// An [`ReadError::Invalid`] for `path`.
    pub fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }

    /// An [`ReadError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, io_error: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            io_error,
        }
    }
}
