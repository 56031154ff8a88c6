//! The Movie panel's presets (DESIGN §1 `movie/presets`): orbit around the look-at point, zoom
//! into the selected halo, fly along the largest halos; each replaces the keyframes, after a
//! confirmation when hand-made keyframes would go, and one level of undo brings them back.

use super::edit::fov_x_deg;
use crate::app::files::documents::Notice;
use crate::app::haloscope_app::HaloscopeApp;
use crate::app::viewport::camera::OrbitCamera;
use crate::movie::CameraPath;
use crate::movie::presets::{self, HaloStop, Orbit, PresetError, Zoom};

/// Camera-derived inputs of the presets, in the keyframes' f64 world.
struct PresetView {
    eye: glam::DVec3,
    look_at: glam::DVec3,
    up: [f64; 3],
    fov_x_deg: f64,
}

impl PresetView {
    fn of(camera: &OrbitCamera, aspect: f64) -> Self {
        Self {
            eye: glam::DVec3::from(camera.eye_world.map(f64::from)),
            look_at: glam::DVec3::from(camera.look_at_world.map(f64::from)),
            up: camera.up_world.map(f64::from),
            fov_x_deg: fov_x_deg(f64::from(camera.fov_y_deg), aspect),
        }
    }
}

impl HaloscopeApp {
    /// Preset buttons; the path made replaces the keyframes.
    pub(in crate::app) fn presets_ui(&mut self, ui: &mut egui::Ui, camera: Option<OrbitCamera>) {
        ui.horizontal_wrapped(|ui| {
            let name = ui.label("Presets, length");
            ui.add(
                egui::DragValue::new(&mut self.movie.preset_duration_s)
                    .range(0.5..=3600.0)
                    .suffix(" s"),
            )
            .labelled_by(name.id);
        });
        let catalogue = self
            .documents
            .shown_snapshot()
            .and_then(|d| self.halos.catalogue_of(d.id))
            .map(|c| c.result.clone());
        let selected = self
            .halos
            .selected
            .and_then(|i| catalogue.as_ref()?.halos.get(i).cloned());
        let mut made: Option<Result<CameraPath, PresetError>> = None;
        let Some(camera) = camera else {
            ui.small("Open a snapshot for presets.");
            return;
        };
        let view = PresetView::of(&camera, self.movie.aspect());
        let duration_s = self.movie.preset_duration_s;
        let ease_s = self.movie.editor.timing().ease_s;
        ui.horizontal_wrapped(|ui| {
            if ui
                .button("Orbit")
                .on_hover_text("One turn around the look-at point")
                .clicked()
            {
                made = Some(presets::orbit(
                    &Orbit {
                        center: view.look_at.to_array(),
                        radius: view.eye.distance(view.look_at),
                        axis: view.up,
                        start_direction: (view.eye - view.look_at).to_array(),
                        elevation_deg: 0.0,
                        turns: 1.0,
                        duration_s,
                        fov_deg: view.fov_x_deg,
                    },
                    ease_s,
                ));
            }
            let zoom = ui
                .add_enabled(selected.is_some(), egui::Button::new("Zoom into halo"))
                .on_hover_text("From here into the selected halo (select one in Halos)");
            if zoom.clicked()
                && let Some(halo) = &selected
            {
                made = Some(zoom_preset(&view, halo, duration_s, ease_s));
            }
            let count = catalogue.as_ref().map_or(0, |c| c.halos.len());
            let fly = ui
                .add_enabled(count >= 2, egui::Button::new("Fly along halos"))
                .on_hover_text("Visit the largest halos of the catalogue, largest first");
            ui.add(
                egui::DragValue::new(&mut self.movie.fly_halos)
                    .range(2..=50)
                    .suffix(" halos"),
            );
            if fly.clicked()
                && let Some(catalogue) = &catalogue
            {
                let stops: Vec<HaloStop> = catalogue
                    .halos
                    .iter()
                    .take(self.movie.fly_halos)
                    .map(|h| HaloStop {
                        center: h.com,
                        radius: h.radius_max,
                    })
                    .collect();
                made = Some(presets::fly_along_halos(
                    &stops,
                    view.up,
                    view.fov_x_deg,
                    duration_s,
                    ease_s,
                ));
            }
        });
        match made {
            Some(Ok(path)) => {
                if self.movie.replacing_needs_confirmation() {
                    self.movie.pending_preset = Some(path);
                } else {
                    self.apply_preset(&path);
                }
            }
            Some(Err(err)) => self.movie.message = Some(Notice::Error(format!("preset: {err}"))),
            None => {}
        }
        self.preset_confirmation_ui(ui);
        if self.movie.undo.is_some()
            && ui
                .button("Undo preset")
                .on_hover_text("Bring back the keyframes the preset replaced (Ctrl+Z)")
                .clicked()
        {
            self.undo_preset();
        }
    }

    /// Asks whether the preset waiting for an answer may replace the keyframes.
    fn preset_confirmation_ui(&mut self, ui: &mut egui::Ui) {
        let Some(path) = self.movie.pending_preset.clone() else {
            return;
        };
        let count = self.movie.editor.keyframes().len();
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "The preset replaces your {count} keyframes with {} (Undo brings them back).",
                path.keyframes().len()
            ),
        );
        ui.horizontal(|ui| {
            if ui.button("Replace keyframes").clicked() {
                self.movie.pending_preset = None;
                self.apply_preset(&path);
            }
            if ui.button("Keep mine").clicked() {
                self.movie.pending_preset = None;
            }
        });
    }

    /// Replaces the keyframes with the preset `path`, keeping the old ones for one undo.
    fn apply_preset(&mut self, path: &CameraPath) {
        self.movie.undo = Some(self.movie.editor.clone());
        self.movie.use_path(path);
        self.movie.preset_keys = Some(self.movie.editor.keys().clone());
        self.movie.message = Some(Notice::Info(format!(
            "preset: {} keyframes over {:.1} s",
            path.keyframes().len(),
            path.duration_s()
        )));
        self.apply_movie_camera();
    }

    /// Ctrl+Z or Undo preset: the keyframes from before the last preset come back.
    pub(in crate::app) fn undo_preset(&mut self) {
        let Some(before) = self.movie.undo.take() else {
            return;
        };
        self.movie.editor = before;
        self.movie.preset_keys = None;
        self.movie.pending_preset = None;
        self.movie.timeline.pause();
        self.movie.message = Some(Notice::Info(format!(
            "preset undone: {} keyframes back",
            self.movie.editor.keyframes().len()
        )));
        self.apply_movie_camera();
    }
}

/// From the current eye (or farther, so the zoom has room) towards `halo`, ending where it fills
/// the view (the preset's own framing distance).
fn zoom_preset(
    view: &PresetView,
    halo: &crate::halo::Halo,
    duration_s: f64,
    ease_s: f64,
) -> Result<CameraPath, PresetError> {
    let centre = glam::DVec3::from(halo.com);
    let end_distance = presets::framing_distance(halo.radius_max, view.fov_x_deg);
    let offset = view.eye - centre;
    let direction = if offset.length() > 0.0 {
        offset
    } else {
        view.eye - view.look_at
    };
    // Start at least 4 end distances away, so a camera already close still zooms in.
    let start_distance = offset.length().max(4.0 * end_distance);
    presets::zoom_to_halo(
        &Zoom {
            center: halo.com,
            radius: halo.radius_max,
            direction: direction.to_array(),
            start_distance,
            end_distance: None,
            up: view.up,
            duration_s,
            fov_deg: view.fov_x_deg,
        },
        ease_s,
    )
}
