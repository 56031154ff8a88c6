//! Screenshots: the current view rendered off-screen at any resolution and saved as PNG.

use super::overlay::{OverlayContent, OverlayOptions, build_overlay};
use super::overlay_raster::rasterise_overlay;
use super::viewport_renderer::{RendererFactory, ViewRequest};
use super::widget::{OverlayInput, length_unit};
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
    /// Draw halo circles, labels, colour and scale bars on the image.
    pub overlays: bool,
    /// The save dialog offers FITS (τ and image) rather than PNG.
    pub fits: bool,
}

impl Default for ScreenshotSettings {
    fn default() -> Self {
        Self {
            width_px: 3840,
            height_px: 2160,
            overlays: true,
            fits: false,
        }
    }
}

/// Writes `image` as PNG at `path` through crate::output's rule (temporary file, rename, the
/// usual mode): a failed write leaves an older file as it was.
pub fn save_png(path: &Path, image: &image::RgbaImage) -> anyhow::Result<()> {
    crate::output::write_atomically(path, |writer| {
        image
            .write_to(writer, image::ImageFormat::Png)
            .map_err(|e| anyhow::anyhow!("{}: writing PNG: {e}", path.display()))
    })
}

/// Overlay text and lines are this many points for an image this many pixels tall, so they look
/// the same on a 1080-line and a 2160-line screenshot relative to the image.
const POINTS_PER_IMAGE_HEIGHT: f32 = 800.0;

/// Renders `request` with a fresh renderer from `factory`, draws `overlay` on it (when given)
/// and writes it to `path` as PNG. Runs on a worker.
pub fn save_screenshot(
    factory: &RendererFactory,
    request: &ViewRequest,
    overlay: Option<&OverlayInput>,
    path: &Path,
    progress: &Progress,
) -> anyhow::Result<PathBuf> {
    let mut image = render_screenshot(factory, request, overlay, progress)?;
    progress.report("writing", 1, 2);
    let rgba = std::mem::take(image.host_rgba().map_err(anyhow::Error::msg)?);
    let buffer = image::RgbaImage::from_raw(image.width_px, image.height_px, rgba)
        .context("the renderer returned an image of the wrong size")?;
    save_png(path, &buffer)?;
    progress.report("writing", 2, 2);
    Ok(path.to_path_buf())
}

/// The screenshot image: the render at the requested size with `overlay` drawn on it, sized as
/// in a window [`POINTS_PER_IMAGE_HEIGHT`] points tall.
pub fn render_screenshot(
    factory: &RendererFactory,
    request: &ViewRequest,
    overlay: Option<&OverlayInput>,
    progress: &Progress,
) -> anyhow::Result<super::viewport_renderer::RenderedImage> {
    let mut renderer = factory();
    progress.report("rendering", 0, 2);
    let mut image = renderer
        .render(request, progress)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("rendering {}x{}", request.width_px, request.height_px))?;
    progress.check()?;
    if let Some(input) = overlay {
        let pixels_per_point = (image.height_px as f32 / POINTS_PER_IMAGE_HEIGHT).max(0.25);
        let rect = egui::Rect::from_min_size(
            egui::Pos2::ZERO,
            egui::vec2(image.width_px as f32, image.height_px as f32) / pixels_per_point,
        );
        let options = input.options.unwrap_or(OverlayOptions {
            halos: true,
            labels: true,
            color_bar: request.style.show_color_bar,
            scale_bar: request.style.show_scale_bar,
        });
        let unit = length_unit(&request.snapshot);
        let content = OverlayContent {
            halos: &input.halos,
            selected: input.selected,
            legend: image.legend.as_ref(),
            length_unit: &unit,
        };
        let built = build_overlay(rect, &request.camera, content, options, 1.0);
        let (width_px, height_px) = (image.width_px, image.height_px);
        rasterise_overlay(
            &built.items,
            image.host_rgba().map_err(anyhow::Error::msg)?,
            width_px,
            height_px,
            pixels_per_point,
        );
    }
    Ok(image)
}
