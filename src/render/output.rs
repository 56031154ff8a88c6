//! Writing results without leaving partial files: everything goes to a temporary file in the
//! destination folder and is renamed into place only when complete.

use super::RenderError;
use image::DynamicImage;
use std::io::Write;
use std::path::Path;

/// Writes `path` through `write` into a temporary file beside it, then renames it into place.
/// On any error the temporary file is removed and `path` is left as it was.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&mut std::fs::File>) -> Result<(), RenderError>,
) -> Result<(), RenderError> {
    let io = |error: std::io::Error| RenderError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut temp = temporary_beside(path)?;
    {
        let mut writer = std::io::BufWriter::new(temp.as_file_mut());
        write(&mut writer)?;
        writer.flush().map_err(io)?;
    }
    temp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Checks that a file can be created beside `path` (the folder exists and is writable), so a
/// long job can fail at once rather than at the end. Leaves nothing behind.
pub fn check_writable(path: &Path) -> Result<(), RenderError> {
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

/// A new temporary file in the folder of `path`, removed when dropped unless persisted.
fn temporary_beside(path: &Path) -> Result<tempfile::NamedTempFile, RenderError> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut builder = usual_mode_builder();
    builder.prefix(".haloscope-").suffix(".part");
    builder
        .tempfile_in(folder)
        // tempfile's own message names the temporary file; name the folder instead.
        .map_err(|e| RenderError::Io {
            path: path.to_path_buf(),
            error: std::io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {}", folder.display(), e.kind()),
            ),
        })
}

/// Saves `image` as PNG (8- or 16-bit RGB) at `path`, atomically.
pub fn save_png(path: &Path, image: &DynamicImage) -> Result<(), RenderError> {
    write_atomically(path, |writer| {
        image
            .write_to(writer, image::ImageFormat::Png)
            .map_err(|e| RenderError::Encode {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
    })
}
