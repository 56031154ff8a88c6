//! Screenshots: the current view rendered off-screen at any resolution and saved as PNG.

use super::viewport_renderer::{RendererFactory, ViewRequest};
use crate::jobs::Progress;
use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// Settings of the Screenshot window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenshotSettings {
    /// Width in pixels.
    pub width_px: u32,
    /// Height in pixels.
    pub height_px: u32,
}

impl Default for ScreenshotSettings {
    fn default() -> Self {
        Self {
            width_px: 3840,
            height_px: 2160,
        }
    }
}

/// Renders `request` with a fresh renderer from `factory` and writes it to `path` as PNG.
/// Runs on a worker.
pub fn save_screenshot(
    factory: &RendererFactory,
    request: &ViewRequest,
    path: &Path,
    progress: &Progress,
) -> anyhow::Result<PathBuf> {
    let mut renderer = factory();
    progress.report("rendering", 0, 2);
    let image = renderer
        .render(request, progress)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("rendering {}×{}", request.width_px, request.height_px))?;
    progress.check()?;
    progress.report("writing", 1, 2);
    let buffer = image::RgbaImage::from_raw(image.width_px, image.height_px, image.rgba)
        .context("the renderer returned an image of the wrong size")?;
    buffer
        .save_with_format(path, image::ImageFormat::Png)
        .with_context(|| format!("{}: writing PNG", path.display()))?;
    progress.report("writing", 2, 2);
    Ok(path.to_path_buf())
}
