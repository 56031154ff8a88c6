//! The central viewport: shows the latest render as a texture (updated in place), asks the
//! render worker for previews while the camera moves and a full render when it rests, and turns
//! mouse input into orbit-camera motion.

use super::camera::OrbitCamera;
use super::progressive::{ProgressiveScheduler, Quality};
use super::viewport_renderer::{RenderedImage, RendererFactory, ViewRequest, ViewStyle};
use crate::data::Snapshot;
use crate::jobs::{LatestWorker, VersionGate, Waker};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Everything that decides the image: when it changes, a new render is due.
#[derive(Debug, Clone, PartialEq)]
struct ViewKey {
    document_id: u64,
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
    /// The camera, moved by the mouse.
    pub camera: &'a mut OrbitCamera,
}

/// The viewport and its render worker.
pub struct Viewport {
    worker: LatestWorker<ViewRequest, RenderedImage>,
    gate: VersionGate,
    scheduler: ProgressiveScheduler<ViewKey>,
    submitted: VecDeque<(u64, Quality)>,
    latest_submitted: u64,
    texture: Option<egui::TextureHandle>,
    shown: Option<ShownRender>,
    error: Option<String>,
    backend: String,
}

impl Viewport {
    /// A viewport whose worker thread renders with a renderer from `factory`.
    pub fn new(factory: &RendererFactory, waker: Waker) -> Self {
        let mut renderer = factory();
        let backend = renderer.backend_name();
        let worker = LatestWorker::new("viewport render", waker, move |request, progress| {
            renderer.render(&request, progress)
        });
        Self {
            worker,
            gate: VersionGate::default(),
            scheduler: ProgressiveScheduler::default(),
            submitted: VecDeque::new(),
            latest_submitted: 0,
            texture: None,
            shown: None,
            error: None,
            backend,
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

    /// The texture on screen (for tests and screenshots of the window).
    pub fn texture_id(&self) -> Option<egui::TextureId> {
        self.texture.as_ref().map(egui::TextureHandle::id)
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
            Ok(image) => {
                let size = [image.width_px as usize, image.height_px as usize];
                if image.rgba.len() != size[0] * size[1] * 4 {
                    self.error = Some(format!(
                        "the renderer returned {} bytes for a {}×{} image",
                        image.rgba.len(),
                        size[0],
                        size[1]
                    ));
                    return;
                }
                let color_image = egui::ColorImage::from_rgba_unmultiplied(size, &image.rgba);
                let options = egui::TextureOptions::LINEAR;
                match &mut self.texture {
                    // Update in place: the texture id stays, no reallocation when the size holds.
                    Some(texture) => texture.set(color_image, options),
                    None => self.texture = Some(ctx.load_texture("viewport", color_image, options)),
                }
                self.backend.clone_from(&image.backend);
                self.shown = Some(ShownRender {
                    backend: image.backend,
                    seconds: image.seconds,
                    size_px: [image.width_px, image.height_px],
                    quality,
                });
                self.error = None;
            }
            Err(error) => self.error = Some(error),
        }
    }

    /// Draws the viewport into all of `ui`'s space, moves the camera from mouse input, and asks
    /// for a new render when the view changed. Returns the interaction response.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        target: Option<ViewTarget<'_>>,
        style: &ViewStyle,
    ) -> egui::Response {
        let (rect, response) =
            ui.allocate_exact_size(ui.available_size(), egui::Sense::click_and_drag());
        let painter = ui.painter_at(rect);
        painter.rect_filled(rect, 0.0, egui::Color32::BLACK);

        let Some(target) = target else {
            self.centre_text(
                &painter,
                rect,
                "Open a snapshot: File > Open…, or drop a file here",
            );
            return response;
        };
        move_camera(ui, &response, target.camera, rect.height());

        let pixels_per_point = ui.ctx().pixels_per_point();
        let scale = style.resolution_scale.clamp(0.1, 4.0) * pixels_per_point;
        let size_px = [
            ((rect.width() * scale).round() as u32).max(1),
            ((rect.height() * scale).round() as u32).max(1),
        ];
        let key = ViewKey {
            document_id: target.document_id,
            camera: *target.camera,
            style: style.clone(),
            size_px,
        };
        let now = Instant::now();
        if let Some(quality) = self.scheduler.poll(&key, now) {
            let [width_px, height_px] = quality.size_px(size_px);
            let request = ViewRequest {
                snapshot: target.snapshot.clone(),
                camera: key.camera,
                style: key.style.clone(),
                width_px,
                height_px,
            };
            if let Some(version) = self.worker.submit(request) {
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
        self.corner_label_ui(&painter, rect);
        draw_scale_bar(&painter, rect, target.camera, target.snapshot);
        response
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

/// A scale bar of a round length at the look-at depth, in the file's length unit.
fn draw_scale_bar(
    painter: &egui::Painter,
    rect: egui::Rect,
    camera: &OrbitCamera,
    snapshot: &Snapshot,
) {
    let world_per_point = camera.world_per_point(rect.height());
    if !(world_per_point.is_finite() && world_per_point > 0.0) {
        return;
    }
    let length_world = nice_length(world_per_point * rect.width() * 0.2);
    let length_points = length_world / world_per_point;
    let unit = snapshot
        .header
        .units
        .get("length")
        .map_or(String::new(), |u| format!(" {u}"));
    let right = rect.right_bottom() + egui::vec2(-16.0, -16.0);
    let left = right - egui::vec2(length_points, 0.0);
    let stroke = egui::Stroke::new(2.0, egui::Color32::WHITE);
    painter.line_segment([left, right], stroke);
    for end in [left, right] {
        painter.line_segment([end, end - egui::vec2(0.0, 6.0)], stroke);
    }
    painter.text(
        egui::pos2(0.5 * (left.x + right.x), left.y - 8.0),
        egui::Align2::CENTER_BOTTOM,
        format!("{}{unit}", format_length(length_world)),
        egui::FontId::proportional(12.0),
        egui::Color32::WHITE,
    );
}

/// The largest 1, 2 or 5 × 10ⁿ not above `length` (at least a tiny positive number).
pub fn nice_length(length: f32) -> f32 {
    if !(length.is_finite() && length > 0.0) {
        return 1.0;
    }
    let magnitude = 10f32.powf(length.log10().floor());
    let mantissa = length / magnitude;
    let nice = if mantissa >= 5.0 {
        5.0
    } else if mantissa >= 2.0 {
        2.0
    } else {
        1.0
    };
    nice * magnitude
}

fn format_length(length: f32) -> String {
    if (1e-3..1e5).contains(&length.abs()) {
        let text = format!("{length:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        format!("{length:.0e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_lengths_are_1_2_5_times_a_power_of_ten() {
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-6 * b;
        assert!(close(nice_length(7.3), 5.0));
        assert!(close(nice_length(0.031), 0.02));
        assert!(close(nice_length(1999.0), 1000.0));
        assert_eq!(nice_length(0.0), 1.0);
        assert_eq!(format_length(0.02), "0.02");
        assert_eq!(format_length(1000.0), "1000");
        assert_eq!(format_length(5e6), "5e6");
    }
}
