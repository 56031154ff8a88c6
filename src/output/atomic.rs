//! Writing a file without ever leaving a partial one: everything goes to a temporary file beside
//! the target (same folder, so the rename cannot cross file systems) and is renamed into place
//! only when complete. On any failure the temporary file is removed and an older file under the
//! target's name is left as it was.

use super::OutputError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use tempfile::NamedTempFile;

/// Random characters in a temporary name (tempfile's default), fixed so that
/// [`target_of_temporary`] can recognise the names exactly.
const RANDOM_CHARS: usize = 6;
/// Ends every temporary name.
const SUFFIX: &str = ".part";

/// Writes `path` through `write` into a temporary file beside it, then renames it into place.
/// The new file has the usual mode (0666 less the umask). On any error (the closure's, or the
/// flush or rename) the temporary file is removed and `path` is left as it was.
pub fn write_atomically<E: From<OutputError>>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> Result<(), E>,
) -> Result<(), E> {
    let mut temp = temporary_beside(path)?;
    {
        let mut writer = BufWriter::new(temp.as_file_mut());
        write(&mut writer)?;
        writer.flush().map_err(|e| OutputError::io(path, e))?;
    }
    temp.persist(path)
        .map_err(|e| OutputError::io(path, e.error))?;
    Ok(())
}

/// [`write_atomically`] for a closure that fails with a plain I/O error (named after `path`).
pub fn write_atomically_io(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> std::io::Result<()>,
) -> Result<(), OutputError> {
    write_atomically(path, |writer| {
        write(writer).map_err(|e| OutputError::io(path, e))
    })
}

/// For libraries that open files by name (HDF5): `write` gets the path of a new, empty
/// temporary file beside `path`, may truncate and fill it, and must close it before returning;
/// the file is then renamed to `path`. On any error it is removed and `path` is left as it was.
pub fn write_via_temporary_path<E: From<OutputError>>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let temp = temporary_beside(path)?.into_temp_path();
    write(&temp)?;
    temp.persist(path)
        .map_err(|e| OutputError::io(path, e.error))?;
    Ok(())
}

/// Checks that a file can be created beside `path` (the folder exists and is writable), so a
/// long job can fail at once rather than at the end. Leaves nothing behind.
pub fn check_writable(path: &Path) -> Result<(), OutputError> {
    temporary_beside(path).map(drop)
}

/// A temporary-file builder whose files get the usual mode, 0666 less the umask, as a plain
/// `File::create` would give the result: temporary files are otherwise created 0600.
pub fn usual_mode_builder<'a, 'b>() -> tempfile::Builder<'a, 'b> {
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder
}

/// The folder a file at `path` lives in (`.` for a bare name).
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// A new temporary file beside `path`, named `.<name>.XXXXXX.part` so that it is hidden and
/// recognisably the target's ([`target_of_temporary`]); removed when dropped unless persisted.
pub fn temporary_beside(path: &Path) -> Result<NamedTempFile, OutputError> {
    let folder = folder_of(path);
    let Some(name) = path.file_name() else {
        return Err(OutputError::NoFileName {
            path: path.to_path_buf(),
        });
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut builder = usual_mode_builder();
    builder
        .prefix(&prefix)
        .suffix(SUFFIX)
        .rand_bytes(RANDOM_CHARS);
    builder.tempfile_in(folder).map_err(|e| {
        // tempfile's own message names the temporary file; name the folder instead.
        OutputError::io(
            path,
            std::io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {}", folder.display(), e.kind()),
            ),
        )
    })
}

/// The target's file name (bytes) of a name made by [`temporary_beside`]
/// (`.<target>.` + 6 alphanumerics + `.part`), or `None` for any other name.
pub fn target_of_temporary(candidate: &std::ffi::OsStr) -> Option<&[u8]> {
    let rest = candidate.as_encoded_bytes().strip_prefix(b".")?;
    let rest = rest.strip_suffix(SUFFIX.as_bytes())?;
    let split = rest.len().checked_sub(RANDOM_CHARS + 1)?;
    let (target, random) = rest.split_at(split);
    let random = random.strip_prefix(b".")?;
    (!target.is_empty() && random.iter().all(u8::is_ascii_alphanumeric)).then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn temporary_names_are_recognised_exactly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("movie.mp4");
        let temp = temporary_beside(&target).expect("temporary");
        let name = temp.path().file_name().expect("name");
        assert_eq!(target_of_temporary(name), Some(&b"movie.mp4"[..]));
        assert_eq!(
            target_of_temporary(OsStr::new(".a.b.Ab12Cd.part")),
            Some(&b"a.b"[..])
        );
        for other in [
            ".movie.mp4.part",
            "movie.mp4.Ab12Cd.part",
            "..Ab12Cd.part",
            ".x.Ab-2Cd.part",
        ] {
            assert_eq!(target_of_temporary(OsStr::new(other)), None, "{other}");
        }
    }

    #[test]
    fn the_temporary_path_variant_renames_only_on_success() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("out.bin");
        write_via_temporary_path(&target, |temp| {
            std::fs::write(temp, b"new").map_err(|e| OutputError::io(temp, e))
        })
        .expect("written");
        assert_eq!(std::fs::read(&target).expect("read"), b"new");
        let failed: Result<(), OutputError> = write_via_temporary_path(&target, |temp| {
            std::fs::write(temp, b"partial").map_err(|e| OutputError::io(temp, e))?;
            Err(OutputError::io(temp, std::io::Error::other("disk full")))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&target).expect("read"), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);
    }
}
