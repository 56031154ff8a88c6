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
    folders: Vec<Folder>,
}

/// An output folder and which file names (bytes) the command writes in it.
#[derive(Debug)]
struct Folder {
    role: String,
    path: PathBuf,
    resolved: PathBuf,
    writes: fn(&[u8]) -> bool,
}

impl Folder {
    /// Whether the command writes the file `identity` in this folder.
    fn writes_over(&self, identity: &Identity) -> bool {
        identity.resolved.parent() == Some(self.resolved.as_path())
            && identity
                .resolved
                .file_name()
                .is_some_and(|name| (self.writes)(name.as_encoded_bytes()))
    }

    /// The clash of `entry` (an input or output, `what`) with a file this folder writes.
    fn clash(&self, entry: &Entry, what: &'static str) -> OutputError {
        OutputError::SameFile {
            role: self.role.clone(),
            path: self.path.join(entry.path.file_name().unwrap_or_default()),
            other_role: entry.role.clone(),
            other_path: entry.path.clone(),
            what,
        }
    }
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
        if let Some(folder) = self.folders.iter().find(|f| f.writes_over(&entry.identity)) {
            return Err(folder.clash(&entry, "input"));
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
        if let Some(folder) = self.folders.iter().find(|f| f.writes_over(&entry.identity)) {
            return Err(folder.clash(&entry, "output"));
        }
        self.outputs.push(entry);
        Ok(())
    }

    /// Adds an output folder named by `role` (movie frames) in which the command writes the
    /// files whose names satisfy `writes`: refuses an empty path, one that exists but is not a
    /// folder (an input file, say), and one where such a name is an input or another output.
    pub fn output_folder(
        &mut self,
        role: &str,
        path: &Path,
        writes: fn(&[u8]) -> bool,
    ) -> Result<(), OutputError> {
        if path.as_os_str().is_empty() {
            return Err(OutputError::Empty {
                role: role.to_owned(),
            });
        }
        match std::fs::metadata(path) {
            Ok(metadata) if !metadata.is_dir() => {
                return Err(OutputError::NotFolder {
                    role: role.to_owned(),
                    path: path.to_path_buf(),
                });
            }
            Ok(_) => {}
            // A folder still to be made holds no input and no other output yet.
            Err(_) => return Ok(()),
        }
        let Ok(resolved) = path.canonicalize() else {
            return Ok(());
        };
        let folder = Folder {
            role: role.to_owned(),
            path: path.to_path_buf(),
            resolved,
            writes,
        };
        if let Some(input) = self.inputs.iter().find(|e| folder.writes_over(&e.identity)) {
            return Err(folder.clash(input, "input"));
        }
        if let Some(output) = self
            .outputs
            .iter()
            .find(|e| folder.writes_over(&e.identity))
        {
            return Err(folder.clash(output, "output"));
        }
        self.folders.push(folder);
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn same_file(result: Result<(), OutputError>) -> (String, String) {
        match result {
            Err(OutputError::SameFile {
                role, other_role, ..
            }) => (role, other_role),
            other => panic!("expected SameFile, got {other:?}"),
        }
    }

    #[test]
    fn an_output_is_refused_under_every_spelling_of_an_input() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).expect("mkdir");
        let input = sub.join("snap");
        std::fs::write(&input, b"x").expect("write");
        let link = dir.path().join("link");
        std::fs::hard_link(&input, &link).expect("hard link");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&sub, dir.path().join("alias")).expect("symlink");
        let spellings = [
            input.clone(),
            dir.path().join("sub/../sub/snap"),
            sub.join(".").join("snap"),
            link,
            dir.path().join("alias/snap"),
        ];
        for output in spellings {
            let mut plan = OutputPlan::new();
            plan.input("FILE", &input).expect("input");
            let roles = same_file(plan.output("--out", &output));
            assert_eq!(roles, ("--out".to_owned(), "FILE".to_owned()), "{output:?}");
        }
    }

    #[test]
    fn two_outputs_may_not_be_one_file_even_before_it_exists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut plan = OutputPlan::new();
        plan.output("--out", &dir.path().join("a.png"))
            .expect("first");
        let roles = same_file(plan.output("--tau-out", &dir.path().join("./a.png")));
        assert_eq!(roles, ("--tau-out".to_owned(), "--out".to_owned()));
        plan.output("--labels", &dir.path().join("b.png"))
            .expect("another file");
    }

    #[test]
    fn empty_nameless_and_special_outputs_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut plan = OutputPlan::new();
        let err = plan.output("--out", Path::new("")).expect_err("empty");
        assert_eq!(
            err.to_string(),
            "--out: the path is empty; give a file name"
        );
        let err = plan
            .output("--out", &dir.path().join(".."))
            .expect_err("no name");
        assert!(matches!(
            err,
            OutputError::NotRegular {
                kind: "a directory",
                ..
            }
        ));
        let err = plan.output("--out", Path::new("/")).expect_err("root");
        assert!(matches!(err, OutputError::NotRegular { .. }), "{err:?}");
        let err = plan
            .output("--out", &dir.path().join("missing/a.png"))
            .expect_err("no folder");
        assert!(matches!(err, OutputError::Folder { .. }), "{err:?}");
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").expect("write");
        let frames = |name: &[u8]| name.starts_with(b"frame_");
        let err = plan
            .output_folder("--out", &file, frames)
            .expect_err("a file");
        assert!(matches!(err, OutputError::NotFolder { .. }), "{err:?}");
        plan.output_folder("--out", dir.path(), frames)
            .expect("a folder");
    }

    #[test]
    fn a_folder_refuses_the_names_it_writes_when_they_are_inputs_or_outputs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let frames = |name: &[u8]| name.starts_with(b"frame_");
        let camera = dir.path().join("frame_7.toml");
        std::fs::write(&camera, b"x").expect("write");
        let mut plan = OutputPlan::new();
        plan.input("--path", &camera).expect("input");
        let roles = same_file(plan.output_folder("--out", &dir.path().join("."), frames));
        assert_eq!(roles, ("--out".to_owned(), "--path".to_owned()));

        let mut plan = OutputPlan::new();
        plan.input("--path", &dir.path().join("cam.toml"))
            .expect("input");
        plan.output_folder("--out", dir.path(), frames)
            .expect("no clash");
        let roles = same_file(plan.output("--mp4", &dir.path().join("frame_1.mp4")));
        assert_eq!(roles, ("--out".to_owned(), "--mp4".to_owned()));
        plan.output("--mp4", &dir.path().join("movie.mp4"))
            .expect("not a frame name");
    }

    #[test]
    fn the_window_checks_against_its_open_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = dir.path().join("events.txt");
        std::fs::write(&open, b"x").expect("write");
        let open_files = [open.clone(), dir.path().join("gone")];
        let err = OutputPlan::check_against_open_files("screenshot", &open, &open_files)
            .expect_err("an open file");
        assert!(err.to_string().contains("the input open file"), "{err}");
        let new = dir.path().join("not-yet/movie.mp4");
        OutputPlan::check_against_open_files("movie", &new, &open_files).expect("new folder");
    }
}
