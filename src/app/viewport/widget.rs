//! The central viewport: shows the latest render as a texture (updated in place), asks the
//! render worker for previews while the camera moves and a full render when it rests, and turns
//! mouse input into orbit-camera motion.

use super::camera::OrbitCamera;
use super::overlay::{self, HaloMarker, Overlay, OverlayOptions};
use super::pick::ShownImage;
use super::progressive::{ProgressiveScheduler, Quality};
use super::viewport_renderer::{
    Legend, Pixels, RenderedImage, RendererFactory, ViewRequest, ViewStyle,
};
use super::wgpu_view;
use crate::data::Snapshot;
use crate::jobs::{LatestWorker, VersionGate, Waker};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Everything that decides the image: when it changes, a new render is due.
#[derive(Debug, Clone, PartialEq)]
struct ViewKey {
    document_id: u64,
    /// The snapshot's address: a document's snapshot is replaced when its smoothing lengths
    /// arrive (the new one is made while the old one lives, so the address differs).
    snapshot: usize,
    camera: OrbitCamera,
    style: ViewStyle,
    size_px: [u32; 2],
}

/// Facts about the image on screen, for the corner label and the status bar.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownRender {
    /// Back-end that made it.
    pub backend: String,
    /// Render wall time in seconds.
    pub seconds: f64,
    /// Image size in pixels.
    pub size_px: [u32; 2],
    /// Preview or full.
    pub quality: Quality,
}

/// What the viewport shows: a snapshot, its id (changes when another one is shown) and camera.
pub struct ViewTarget<'a> {
    /// Identifies the document (a new id means a new image is due).
    pub document_id: u64,
    /// The particles.
    pub snapshot: &'a Arc<Snapshot>,
    /// A subsample for previews while the camera moves (big snapshots).
    pub preview: Option<&'a Arc<Snapshot>>,
    /// The camera, moved by the mouse.
    pub camera: &'a mut OrbitCamera,
}

/// What is drawn over the render besides the bars.
#[derive(Debug, Clone, Default)]
pub struct OverlayInput {
    /// Halos to circle, in catalogue order.
    pub halos: Vec<HaloMarker>,
    /// The selected halo.
    pub selected: Option<usize>,
    /// What to draw.
    pub options: Option<OverlayOptions>,
}

/// What happened in the viewport this frame.
#[derive(Debug, Clone)]
pub struct ViewportOutput {
    /// The interaction response.
    pub response: egui::Response,
    /// A halo circle was clicked (catalogue index).
    pub clicked_halo: Option<usize>,
    /// A double-click, in points from the viewport's corner (the pick starts from the
    /// brightest pixel near it: [`super::pick::ShownImage::snap`]).
    pub double_clicked: Option<egui::Pos2>,
    /// The user moved the camera with the mouse.
    pub camera_moved: bool,
}

/// A finished render as the worker hands it over: for pixels in host memory, egui's image of
/// them is made there too (5 ms at 1920×1080 on the 2-core box), so that the window's thread
/// only hands it to the texture.
struct WorkerFrame {
    image: RenderedImage,
    /// egui's image of host pixels of the right size.
    color: Option<egui::ColorImage>,
}

impl WorkerFrame {
    fn new(image: RenderedImage) -> Self {
        let size = [image.width_px as usize, image.height_px as usize];
        let color = match &image.pixels {
            Pixels::Host(rgba) if rgba.len() == size[0] * size[1] * 4 => {
                Some(egui::ColorImage::from_rgba_unmultiplied(size, rgba))
            }
            _ => None,
        };
        Self { image, color }
    }
}

/// The texture on screen.
enum ScreenTexture {
    /// egui's own, uploaded from an image in host memory.
    Managed(egui::TextureHandle),
    /// The renderer's texture on the window's device, registered as it is (the viewport's
    /// `pixels` hold it, so that the renderer draws into it again only once it is replaced).
    Native(egui::TextureId),
}

impl ScreenTexture {
    fn id(&self) -> egui::TextureId {
        match self {
            Self::Managed(handle) => handle.id(),
            Self::Native(id) => *id,
        }
    }
}

/// The viewport and its render worker.
pub struct Viewport {
    worker: LatestWorker<ViewRequest, WorkerFrame>,
    gate: VersionGate,
    scheduler: ProgressiveScheduler<ViewKey>,
    submitted: VecDeque<(u64, Quality)>,
    latest_submitted: u64,
    last_submitted_quality: Option<Quality>,
    texture: Option<ScreenTexture>,
    shown: Option<ShownRender>,
    error: Option<String>,
    backend: String,
    legend: Option<Legend>,
    pixels: Option<ShownImage>,
    overlay: Overlay,
    rect: egui::Rect,
}

impl Viewport {
    /// A viewport whose worker thread renders with a renderer from `factory`.
    pub fn new(factory: &RendererFactory, waker: Waker) -> Self {
        let mut renderer = factory();
        let backend = renderer.backend_name();
        let worker = LatestWorker::new("viewport render", waker, move |request, progress| {
            renderer
                .render_for_window(&request, progress)
                .map(WorkerFrame::new)
        });
        Self {
            worker,
            gate: VersionGate::default(),
            scheduler: ProgressiveScheduler::default(),
            submitted: VecDeque::new(),
            latest_submitted: 0,
            last_submitted_quality: None,
            texture: None,
            shown: None,
            error: None,
            backend,
            legend: None,
            pixels: None,
            overlay: Overlay::default(),
            rect: egui::Rect::NOTHING,
        }
    }

    /// The back-end name of the renderer.
    pub fn backend(&self) -> &str {
        &self.backend
    }

    /// The render on screen, if any.
    pub fn shown(&self) -> Option<&ShownRender> {
        self.shown.as_ref()
    }

    /// The last render error, if the newest render failed.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Whether a render newer than the one shown is on its way.
    pub fn is_rendering(&self) -> bool {
        self.latest_submitted > self.gate.shown() && self.error.is_none()
    }

    /// The overlay drawn in the last frame (halo circles placed, bars).
    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// Where the viewport was drawn in the last frame, in points.
    pub fn rect(&self) -> egui::Rect {
        self.rect
    }

    /// The RGBA pixels of the image shown (width, height, bytes), when they are in host memory.
    pub fn shown_pixels(&self) -> Option<(u32, u32, &[u8])> {
        let image = self.pixels.as_ref()?;
        Some((image.width_px, image.height_px, image.pixels.host()?))
    }

    /// The image shown, wherever its pixels are.
    pub fn shown_image(&self) -> Option<&ShownImage> {
        self.pixels.as_ref()
    }

    /// The colour bar of the render shown.
    pub fn legend(&self) -> Option<&Legend> {
        self.legend.as_ref()
    }

    /// The texture on screen (for tests and screenshots of the window).
    pub fn texture_id(&self) -> Option<egui::TextureId> {
        self.texture.as_ref().map(ScreenTexture::id)
    }

    /// Takes in finished renders (newest only; stale ones are dropped). Never blocks.
    pub fn receive(&mut self, ctx: &egui::Context) {
        let Some(result) = self.worker.latest() else {
            return;
        };
        if !self.gate.accept(result.version) {
            return;
        }
        let quality = self
            .submitted
            .iter()
            .find(|(v, _)| *v == result.version)
            .map_or(Quality::Full, |(_, q)| *q);
        self.submitted.retain(|(v, _)| *v > result.version);
        match result.outcome {
            Ok(WorkerFrame { image, color }) => {
                if let Err(error) = self.show(ctx, &image, color) {
                    self.error = Some(error);
                    self.clear_image();
                    return;
                }
                self.backend.clone_from(&image.backend);
                self.shown = Some(ShownRender {
                    backend: image.backend,
                    seconds: image.seconds,
                    size_px: [image.width_px, image.height_px],
                    quality,
                });
                self.legend = image.legend;
                crate::app::startup_log::step("first image in the viewport");
                if quality == Quality::Full {
                    crate::app::startup_log::step("first full-resolution image in the viewport");
                }
                self.pixels = Some(ShownImage {
                    width_px: image.width_px,
                    height_px: image.height_px,
                    pixels: Arc::new(image.pixels),
                });
                self.error = None;
            }
            Err(error) => {
                // The old image (another file's, or other species') is not what was asked for:
                // showing it under the error read as a result.
                self.clear_image();
                self.error = Some(error);
            }
        }
    }

    /// Puts `image` on screen: egui's texture updated in place from host pixels (`color`, egui's
    /// image of them; the id stays, no reallocation while the size holds), or the renderer's
    /// texture registered as it is.
    fn show(
        &mut self,
        ctx: &egui::Context,
        image: &RenderedImage,
        color: Option<egui::ColorImage>,
    ) -> Result<(), String> {
        match &image.pixels {
            Pixels::Host(rgba) => {
                let Some(color_image) = color else {
                    return Err(format!(
                        "the renderer returned {} bytes for a {}×{} image",
                        rgba.len(),
                        image.width_px,
                        image.height_px
                    ));
                };
                let options = egui::TextureOptions::LINEAR;
                match &mut self.texture {
                    Some(ScreenTexture::Managed(texture)) => texture.set(color_image, options),
                    _ => {
                        self.free_native();
                        let handle = ctx.load_texture("viewport", color_image, options);
                        self.texture = Some(ScreenTexture::Managed(handle));
                    }
                }
            }
            Pixels::Device(frame) => {
                let reused = match &self.texture {
                    Some(ScreenTexture::Native(id)) => Some(*id),
                    _ => None,
                };
                let id = wgpu_view::show_texture(frame, reused)
                    .ok_or("the renderer drew on a device the window does not show")?;
                self.texture = Some(ScreenTexture::Native(id));
            }
        }
        Ok(())
    }

    /// Lets go of the renderer's texture, if one is registered.
    fn free_native(&mut self) {
        if let Some(ScreenTexture::Native(id)) = self.texture.take() {
            wgpu_view::free_texture(id);
        }
    }

    /// Drops the image on screen, its legend and its pixels.
    fn clear_image(&mut self) {
        self.free_native();
        self.texture = None;
        self.legend = None;
        self.shown = None;
        self.pixels = None;
    }

    /// Draws the viewport into all of `ui`'s space with `input`'s overlay, moves the camera from
    /// mouse input, and asks for a new render when the view changed.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        target: Option<ViewTarget<'_>>,
        style: &ViewStyle,
        input: &OverlayInput,
    ) -> ViewportOutput {
        let (rect, response) =
            ui.allocate_exact_size(ui.available_size(), egui::Sense::click_and_drag());
        self.rect = rect;
        let painter = ui.painter_at(rect);
        painter.rect_filled(rect, 0.0, egui::Color32::BLACK);
        let mut output = ViewportOutput {
            response: response.clone(),
            clicked_halo: None,
            double_clicked: None,
            camera_moved: false,
        };

        let Some(target) = target else {
            self.overlay = Overlay::default();
            self.centre_text(
                &painter,
                rect,
                "Open a snapshot: File > Open..., or drop a file here",
            );
            return output;
        };
        let before = *target.camera;
        move_camera(ui, &response, target.camera, rect.height());
        output.camera_moved = *target.camera != before;
        if let Some(pos) = response.interact_pointer_pos() {
            if response.double_clicked() {
                output.double_clicked = Some((pos - rect.min).to_pos2());
            } else if response.clicked() {
                output.clicked_halo = overlay::halo_at(&self.overlay.placed, pos);
            }
        }

        let pixels_per_point = ui.ctx().pixels_per_point();
        let scale = style.resolution_scale.clamp(0.1, 4.0) * pixels_per_point;
        let size_px = [
            ((rect.width() * scale).round() as u32).max(1),
            ((rect.height() * scale).round() as u32).max(1),
        ];
        let key = ViewKey {
            document_id: target.document_id,
            snapshot: Arc::as_ptr(target.snapshot) as usize,
            camera: *target.camera,
            style: style.clone(),
            size_px,
        };
        let now = Instant::now();
        if let Some(quality) = self.scheduler.poll(&key, now) {
            let [width_px, height_px] = quality.size_px(size_px);
            let snapshot = match (quality, target.preview) {
                (Quality::Preview, Some(preview)) => preview.clone(),
                _ => target.snapshot.clone(),
            };
            let request = ViewRequest {
                snapshot,
                camera: key.camera,
                style: key.style.clone(),
                width_px,
                height_px,
            };
            // Only a full render is worth cancelling (seconds of work for a view that is gone).
            // A preview in flight finishes and the next request waits for it: during a long
            // drag the previews keep coming, and the full render of a view at rest never throws
            // away the quick preview of the same view (on first start that preview is the first
            // image, long before the full one).
            let submitted = if self.last_submitted_quality == Some(Quality::Full) {
                self.worker.submit(request)
            } else {
                self.worker.submit_after_current(request)
            };
            self.last_submitted_quality = Some(quality);
            if let Some(version) = submitted {
                crate::app::startup_log::step("first render requested");
                self.latest_submitted = version;
                self.submitted.push_back((version, quality));
                self.error = None;
            } else {
                self.error = Some("the render worker has stopped".to_owned());
            }
        }
        if let Some(wait) = self.scheduler.time_to_full(now) {
            ui.ctx().request_repaint_after(wait);
        }

        if let Some(texture) = &self.texture {
            let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
            painter.image(texture.id(), rect, uv, egui::Color32::WHITE);
        }
        if target.snapshot.n_particles() == 0 {
            self.centre_text(&painter, rect, "This snapshot has no particles");
        } else if let Some(error) = &self.error {
            let text = format!("Render failed: {error}");
            painter.text(
                rect.center(),
                egui::Align2::CENTER_CENTER,
                text,
                egui::FontId::proportional(14.0),
                ui.visuals().error_fg_color,
            );
        }
        let options = input.options.unwrap_or(OverlayOptions {
            halos: true,
            labels: true,
            color_bar: style.show_color_bar,
            scale_bar: style.show_scale_bar,
        });
        let unit = length_unit(target.snapshot);
        let content = overlay::OverlayContent {
            halos: &input.halos,
            selected: input.selected,
            legend: self.legend.as_ref(),
            length_unit: &unit,
        };
        self.overlay = overlay::build_overlay(rect, target.camera, content, options, 1.0);
        overlay::paint(&painter, &self.overlay.items);
        self.corner_label_ui(&painter, rect);
        output
    }

    fn centre_text(&self, painter: &egui::Painter, rect: egui::Rect, text: &str) {
        painter.text(
            rect.center(),
            egui::Align2::CENTER_CENTER,
            text,
            egui::FontId::proportional(16.0),
            egui::Color32::from_gray(200),
        );
    }

    fn corner_label_ui(&self, painter: &egui::Painter, rect: egui::Rect) {
        let mut text = match &self.shown {
            Some(shown) => format!(
                "{} · {:.0} ms · {}×{}{}",
                shown.backend,
                shown.seconds * 1e3,
                shown.size_px[0],
                shown.size_px[1],
                if shown.quality == Quality::Preview {
                    " · preview"
                } else {
                    ""
                }
            ),
            None => self.backend.clone(),
        };
        if self.is_rendering() {
            text.push_str(" · rendering…");
        }
        painter.text(
            rect.left_top() + egui::vec2(8.0, 6.0),
            egui::Align2::LEFT_TOP,
            text,
            egui::FontId::monospace(12.0),
            egui::Color32::from_gray(220),
        );
    }
}

/// Drag = rotate about the look-at point; right-, middle- or shift-drag = pan; wheel or pinch =
/// zoom (only while the pointer is over the viewport).
fn move_camera(
    ui: &egui::Ui,
    response: &egui::Response,
    camera: &mut OrbitCamera,
    height_points: f32,
) {
    let delta = response.drag_delta();
    let shift = ui.input(|i| i.modifiers.shift);
    if delta != egui::Vec2::ZERO {
        let pan = response.dragged_by(egui::PointerButton::Secondary)
            || response.dragged_by(egui::PointerButton::Middle)
            || (response.dragged_by(egui::PointerButton::Primary) && shift);
        if pan {
            camera.pan([delta.x, delta.y], height_points);
        } else if response.dragged_by(egui::PointerButton::Primary) {
            camera.rotate([delta.x, delta.y]);
        }
    }
    if response.hovered() {
        let (scroll, pinch) = ui.input(|i| (i.smooth_scroll_delta.y, i.zoom_delta()));
        if scroll != 0.0 {
            camera.zoom(scroll);
        }
        if pinch != 1.0 && pinch > 0.0 {
            // zoom(s) scales the distance by exp(−s·k); pinch p should scale it by 1/p.
            camera.zoom(pinch.ln() / super::camera::ZOOM_PER_POINT);
        }
    }
}

/// The snapshot's length unit for the scale bar: the code length as astronomers write it
/// ("ckpc/h" for comoving Gadget runs, whose lengths are in h⁻¹ units, Springel 2005), tipsy's
/// box units, or "" for data with no unit system at all (the demo).
pub fn length_unit(snapshot: &Snapshot) -> String {
    let units = &snapshot.header.units;
    if units.length_cm.is_none() && units.source == crate::data::units::UnitSource::BoxUnits {
        return String::new();
    }
    units.length_label(false)
}

/// Re-exported for callers of the shell's API.
pub use super::overlay::nice_length;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_units_read_as_astronomers_write_them() {
        use crate::data::units::{CM_PER_KPC, UnitSource, Units};
        let mut snapshot = crate::data::demo::demo_snapshot(10, 1);
        assert_eq!(length_unit(&snapshot), "");
        snapshot.header.units = Units::gadget_defaults(true);
        assert_eq!(length_unit(&snapshot), "ckpc/h");
        snapshot.header.units.length_cm = Some(CM_PER_KPC * 1e3);
        assert_eq!(length_unit(&snapshot), "cMpc/h");
        snapshot.header.units = Units {
            source: UnitSource::TipsyNoParam,
            ..Units::default()
        };
        assert_eq!(length_unit(&snapshot), "box units (no .param)");
    }
}
