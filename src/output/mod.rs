//! The one output-safety rule of every writer (CLI and window): an [`OutputPlan`] refuses,
//! before any work, an output that is an input or another output of the same command; every
//! file is written to a temporary file beside its target and renamed into place when complete
//! ([`write_atomically`]), with the usual mode; inputs that are not regular files are refused
//! before they are opened ([`require_regular_file`]).

pub mod atomic;
pub mod input;
pub mod plan;
pub mod stale;

pub use atomic::{
    check_writable, temporary_beside, usual_mode_builder, write_atomically, write_atomically_io,
    write_via_temporary_path,
};
pub use input::{require_regular_file, special_file_kind};
pub use plan::OutputPlan;
pub use stale::{remove_stale_temporaries, remove_stale_temporaries_in};

use std::path::{Path, PathBuf};

/// Why an output could not be planned or written. Displays as `<file>: <what>`.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The operating system refused or failed a write.
    // Not marked as the source: the message already includes it, and anyhow's `{:#}` would
    // print it a second time.
    #[error("{}: {io_error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        io_error: std::io::Error,
    },
    /// An option was given an empty path.
    #[error("{role}: the path is empty; give a file name")]
    Empty {
        /// The option or argument.
        role: String,
    },
    /// The path ends in no file name (`..`, `/`).
    #[error("{}: names no file (expected a path ending in a file name)", path.display())]
    NoFileName {
        /// The path.
        path: PathBuf,
    },
    /// The folder of an output cannot be resolved (it does not exist, or is not searchable).
    #[error("{role} {}: folder {}: {io_error}", path.display(), folder.display())]
    Folder {
        /// The option or argument.
        role: String,
        /// The output.
        path: PathBuf,
        /// Its folder.
        folder: PathBuf,
        /// What the OS said.
        io_error: std::io::Error,
    },
    /// An output folder exists but is a file.
    #[error("{role} {}: is a file, expected a folder (it is never written over)", path.display())]
    NotFolder {
        /// The option.
        role: String,
        /// The path.
        path: PathBuf,
    },
    /// An input exists but is not a regular file.
    #[error("{}: is {kind}, not a regular file", path.display())]
    NotRegular {
        /// The input.
        path: PathBuf,
        /// What it is (`a named pipe (FIFO)`, `a directory`, …).
        kind: &'static str,
    },
    /// An output resolves to an input or to another output of the same command.
    #[error(
        "{role} {} is the same file as the {what} {other_role} {}: a command never writes over \
         its own input or another of its outputs",
        path.display(),
        other_path.display()
    )]
    SameFile {
        /// The output's option.
        role: String,
        /// The output.
        path: PathBuf,
        /// The other file's option or argument.
        other_role: String,
        /// The other file.
        other_path: PathBuf,
        /// `input` or `output`.
        what: &'static str,
    },
}

impl OutputError {
    /// An [`OutputError::Io`] for `path`.
    pub fn io(path: &Path, io_error: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            io_error,
        }
    }
}
