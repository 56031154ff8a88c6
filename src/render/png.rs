//! Saving a rendered image as PNG, through the crate's one output rule ([`crate::output`]):
//! a temporary file beside the target, renamed into place when complete.

use super::RenderError;
use crate::output::write_atomically;
use image::DynamicImage;
use std::path::Path;

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
