//! The files one command reads and writes, checked before any work starts: an output never
//! resolves to an input or to another output of the same command.

use super::OutputError;
use super::atomic::folder_of;
use super::input::special_file_kind;
use std::path::{Path, PathBuf};

/// Where a file really is: its folder canonicalised plus its own name (so `dir/../dir/f` and a
/// link to the folder are caught), and its (device, inode) when it exists (so a hard link or a
/// symbolic link to the file is caught).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    resolved: PathBuf,
    device_inode: Option<(u64, u64)>,
}

impl Identity {
    fn of(role: &str, path: &Path) -> Result<Self, OutputError> {
        let Some(name) = path.file_name() else {
            return Err(OutputError::NoFileName {
                path: path.to_path_buf(),
            });
        };
        let folder = folder_of(path);
        let folder = folder.canonicalize().map_err(|e| OutputError::Folder {
            role: role.to_owned(),
            path: path.to_path_buf(),
            folder: folder.to_path_buf(),
            io_error: e,
        })?;
        Ok(Self {
            resolved: folder.join(name),
            device_inode: device_inode(path),
        })
    }

    fn same_file(&self, other: &Self) -> bool {
        self.resolved == other.resolved
            || matches!((self.device_inode, other.device_inode), (Some(a), Some(b)) if a == b)
    }
}

#[cfg(unix)]
fn device_inode(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn device_inode(_path: &Path) -> Option<(u64, u64)> {
    None
}

/// One file of the plan and the option or argument that named it.
#[derive(Debug)]
struct Entry {
    role: String,
    path: PathBuf,
    identity: Identity,
}

/// The inputs and outputs of one command. Fill it as the arguments are read; each call refuses
/// what would make the command lose data, before any file is opened for writing.
#[derive(Debug, Default)]
pub struct OutputPlan {
    inputs: Vec<Entry>,
    outputs: Vec<Entry>,
}

impl OutputPlan {
    /// An empty plan.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input named by `role` (e.g. `snapshot`, `--path`). Refuses one that exists but is
    /// not a regular file (FIFO, device, folder); a missing input is left for its reader to
    /// report. Outputs added earlier are checked against it.
    pub fn input(&mut self, role: &str, path: &Path) -> Result<(), OutputError> {
        if let Some(kind) = special_file_kind(path) {
            return Err(OutputError::NotRegular {
                path: path.to_path_buf(),
                kind,
            });
        }
        // An input whose folder does not exist cannot be any output; its reader reports it.
        let Ok(identity) = Identity::of(role, path) else {
            return Ok(());
        };
        let entry = Entry {
            role: role.to_owned(),
            path: path.to_path_buf(),
            identity,
        };
        if let Some(output) = self
            .outputs
            .iter()
            .find(|o| o.identity.same_file(&entry.identity))
        {
            return Err(clash(output, &entry, "input"));
        }
        self.inputs.push(entry);
        Ok(())
    }

    /// Adds an output named by `role` (e.g. `--out`). Refuses an empty path or one with no file
    /// name, a folder that does not exist, and a file that is an input or another output.
    pub fn output(&mut self, role: &str, path: &Path) -> Result<(), OutputError> {
        if path.as_os_str().is_empty() {
            return Err(OutputError::Empty {
                role: role.to_owned(),
            });
        }
        // The rename at the end would fail on a folder, or replace a device or FIFO node.
        if let Some(kind) = special_file_kind(path) {
            return Err(OutputError::NotRegular {
                path: path.to_path_buf(),
                kind,
            });
        }
        let identity = Identity::of(role, path)?;
        let entry = Entry {
            role: role.to_owned(),
            path: path.to_path_buf(),
            identity,
        };
        if let Some(input) = self
            .inputs
            .iter()
            .find(|i| i.identity.same_file(&entry.identity))
        {
            return Err(clash(&entry, input, "input"));
        }
        if let Some(output) = self
            .outputs
            .iter()
            .find(|o| o.identity.same_file(&entry.identity))
        {
            return Err(clash(&entry, output, "output"));
        }
        self.outputs.push(entry);
        Ok(())
    }

    /// Adds an output folder named by `role` (movie frames): refuses an empty path and one that
    /// exists but is not a folder (an input file, say). Files in it are the caller's to name.
    pub fn output_folder(&mut self, role: &str, path: &Path) -> Result<(), OutputError> {
        if path.as_os_str().is_empty() {
            return Err(OutputError::Empty {
                role: role.to_owned(),
            });
        }
        match std::fs::metadata(path) {
            Ok(metadata) if !metadata.is_dir() => Err(OutputError::NotFolder {
                role: role.to_owned(),
                path: path.to_path_buf(),
            }),
            _ => Ok(()),
        }
    }

    /// Checks one output (`role`, e.g. `screenshot`) of the window against the files it has
    /// open: refused when it is one of them. Open files that are gone or unreadable are skipped.
    pub fn check_against_open_files(
        role: &str,
        output: &Path,
        open_files: &[PathBuf],
    ) -> Result<(), OutputError> {
        let mut plan = Self::new();
        for file in open_files {
            // An open file that has become a FIFO or vanished cannot be written over by us.
            let _ = plan.input("open file", file);
        }
        match plan.output(role, output) {
            // A folder that does not exist yet (a movie's) holds no open file.
            Err(OutputError::Folder { .. }) => Ok(()),
            other => other,
        }
    }

    /// Adds an optional output (see [`output`](Self::output)).
    pub fn maybe_output(&mut self, role: &str, path: Option<&Path>) -> Result<(), OutputError> {
        path.map_or(Ok(()), |path| self.output(role, path))
    }
}

fn clash(output: &Entry, other: &Entry, what: &'static str) -> OutputError {
    OutputError::SameFile {
        role: output.role.clone(),
        path: output.path.clone(),
        other_role: other.role.clone(),
        other_path: other.path.clone(),
        what,
    }
}
