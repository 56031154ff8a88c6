//! The Movie section of the side panel: keyframe list (add the current view, go to, set,
//! reorder, retime, delete), the timeline, presets, the path file buttons, and the hooks that
//! let the timeline drive the viewport camera.

use super::render::{MP4_FILE_NAME, MovieEnd, MovieFormat, MovieJob};
use crate::app::files::documents::Notice;
use crate::app::haloscope_app::HaloscopeApp;
use crate::app::viewport::camera::OrbitCamera;
use crate::movie::Timing;
use std::path::PathBuf;

/// Smallest gap between neighbouring keyframe times the time fields allow, seconds.
const MIN_KEYFRAME_GAP_S: f64 = 0.01;
/// Height of the keyframe list before it scrolls, points.
const KEYFRAME_LIST_HEIGHT: f32 = 220.0;

impl HaloscopeApp {
    /// Per frame: dialog answers, the render worker's messages and the preview's playback step.
    pub(in crate::app) fn poll_movie(&mut self, ctx: &egui::Context) {
        let open_files = self.documents.open_paths();
        self.movie.poll_dialogs(&open_files);
        if let Some(ended) = self.movie.render.poll() {
            self.notify(match ended {
                Ok(text) => Notice::Info(text),
                Err(text) => Notice::Error(text),
            });
        }
        let range = self.movie.editor.time_range();
        let now_s = ctx.input(|i| i.time);
        if self.movie.timeline.advance(now_s, range) {
            self.apply_movie_camera();
        }
        if self.movie.timeline.playing {
            ctx.request_repaint();
        }
    }

    /// Moves the scrubber to `time_s` and the viewport camera to the path's camera there.
    pub fn set_movie_time(&mut self, time_s: f64) {
        let range = self.movie.editor.time_range();
        self.movie.timeline.seek(time_s, range);
        self.apply_movie_camera();
    }

    /// Adds the current view as a keyframe at the scrubber time (after the last keyframe when
    /// one is there already) and moves the scrubber to it.
    pub fn add_movie_keyframe(&mut self) {
        let Some(camera) = self.camera() else {
            return;
        };
        let aspect = self.movie.aspect();
        let (_, time_s) = self
            .movie
            .editor
            .add_view(&camera, self.movie.timeline.time_s, aspect);
        self.movie.timeline.time_s = time_s;
    }

    /// The viewport shows the path's camera at the scrubber time.
    pub(in crate::app) fn apply_movie_camera(&mut self) {
        let aspect = self.movie.aspect();
        let Some(camera) = self
            .movie
            .editor
            .camera_at(self.movie.timeline.time_s, aspect)
        else {
            return;
        };
        self.set_camera(camera);
    }

    fn set_camera(&mut self, camera: OrbitCamera) {
        if let Some(document) = self.documents.shown_snapshot_mut() {
            document.camera = camera;
            self.glide = None;
        }
    }

    /// Starts rendering the movie with the window's settings (errors go to the window).
    pub fn start_movie_render(&mut self) {
        let settings = self.movie.render.settings.clone();
        let Some(document) = self.documents.shown_snapshot() else {
            self.movie.render.last = Some(MovieEnd::Failed("no snapshot is shown".to_owned()));
            return;
        };
        let path = match self.movie.editor.path() {
            Ok(path) => path.clone(),
            Err(err) => {
                self.movie.render.last = Some(MovieEnd::Failed(format!("no camera path: {err}")));
                return;
            }
        };
        let out_dir = PathBuf::from(settings.out_dir.trim());
        let mp4 = (settings.format == MovieFormat::PngAndMp4).then(|| out_dir.join(MP4_FILE_NAME));
        if let Some(mp4) = &mp4 {
            let open_files = self.documents.open_paths();
            if let Err(err) =
                crate::output::OutputPlan::check_against_open_files("movie", mp4, &open_files)
            {
                self.movie.render.last = Some(MovieEnd::Failed(err.to_string()));
                return;
            }
        }
        let job = MovieJob {
            snapshot: document.snapshot.clone(),
            style: self.style.clone(),
            plan: settings.plan(&path),
            path,
            out_dir,
            mp4,
            backend: settings.backend,
            factory: self.factory.clone(),
        };
        self.movie.render.start(job);
    }

    /// The Movie section of the side panel.
    pub(in crate::app) fn movie_section_ui(&mut self, ui: &mut egui::Ui) {
        let camera = self.camera();
        ui.horizontal_wrapped(|ui| {
            let add = ui
                .add_enabled(camera.is_some(), egui::Button::new("Add current view"))
                .on_hover_text("A keyframe at the scrubber time (after the last one if taken)");
            if add.clicked() {
                self.add_movie_keyframe();
            }
            if ui.button("Load path…").clicked() {
                self.movie.load_dialog();
            }
            let can_save = self.movie.editor.path().is_ok();
            if ui
                .add_enabled(can_save, egui::Button::new("Save path…"))
                .clicked()
            {
                self.movie.save_dialog();
            }
        });
        let range = self.movie.editor.time_range();
        if self.movie.timeline.ui(ui, range) {
            self.apply_movie_camera();
        }
        self.keyframes_ui(ui);
        self.timing_ui(ui);
        ui.separator();
        self.presets_ui(ui, camera);
        ui.separator();
        ui.horizontal_wrapped(|ui| {
            if ui.button("Render movie…").clicked() {
                self.movie.render.show_window = true;
            }
            if let Some(running) = &self.movie.render.running
                && let Some((done, total)) = running.frames()
            {
                ui.small(format!("rendering {done}/{total}"));
            }
        });
        match &self.movie.message {
            Some(Notice::Info(text)) => {
                ui.small(text);
            }
            Some(Notice::Error(text)) => {
                ui.colored_label(ui.visuals().error_fg_color, text);
            }
            None => {}
        }
    }

    fn keyframes_ui(&mut self, ui: &mut egui::Ui) {
        let aspect = self.movie.aspect();
        let keyframes = self.movie.editor.keyframes().to_vec();
        if keyframes.is_empty() {
            ui.small("No keyframes: place the view, then Add current view.");
            return;
        }
        enum Edit {
            GoTo(usize),
            Set(usize),
            Up(usize),
            Down(usize),
            Delete(usize),
            Retime(usize, f64),
        }
        let mut edit = None;
        let now_s = self.movie.timeline.time_s;
        // A long list (an orbit preset has 17) scrolls on its own, so the controls below stay.
        egui::ScrollArea::vertical()
            .id_salt("movie keyframes scroll")
            .max_height(KEYFRAME_LIST_HEIGHT)
            .show(ui, |ui| {
                egui::Grid::new("movie keyframes")
                    .striped(true)
                    .num_columns(3)
                    .show(ui, |ui| {
                        for (index, key) in keyframes.iter().enumerate() {
                            let current = (key.time_s - now_s).abs() < 1e-9;
                            if ui
                                .selectable_label(current, format!("{}", index + 1))
                                .on_hover_text("Show this keyframe")
                                .clicked()
                            {
                                edit = Some(Edit::GoTo(index));
                            }
                            // Between the neighbours, so retiming never reorders (Up/Down do that).
                            // The range always holds the time itself, so showing it never changes it
                            // (a loaded file may have keyframes closer than the gap, or before 0).
                            let earliest = index
                                .checked_sub(1)
                                .map_or(0.0, |i| keyframes[i].time_s + MIN_KEYFRAME_GAP_S)
                                .min(key.time_s);
                            let latest = keyframes
                                .get(index + 1)
                                .map_or(f64::INFINITY, |k| k.time_s - MIN_KEYFRAME_GAP_S)
                                .max(key.time_s);
                            let mut time_s = key.time_s;
                            let field = ui
                                .add(
                                    egui::DragValue::new(&mut time_s)
                                        .range(earliest..=latest)
                                        .speed(0.05)
                                        .max_decimals(2)
                                        .suffix(" s"),
                                )
                                .on_hover_text("Time of this keyframe");
                            if field.changed() {
                                edit = Some(Edit::Retime(index, time_s));
                            }
                            ui.horizontal_wrapped(|ui| {
                                let last = keyframes.len() - 1;
                                if ui
                                    .small_button("Go to")
                                    .on_hover_text("Show this keyframe")
                                    .clicked()
                                {
                                    edit = Some(Edit::GoTo(index));
                                }
                                if ui
                                    .small_button("Set")
                                    .on_hover_text("Replace with the current view")
                                    .clicked()
                                {
                                    edit = Some(Edit::Set(index));
                                }
                                if ui
                                    .add_enabled(index > 0, egui::Button::new("Up").small())
                                    .on_hover_text("Swap with the previous view (times stay)")
                                    .clicked()
                                {
                                    edit = Some(Edit::Up(index));
                                }
                                if ui
                                    .add_enabled(index < last, egui::Button::new("Down").small())
                                    .on_hover_text("Swap with the next view (times stay)")
                                    .clicked()
                                {
                                    edit = Some(Edit::Down(index));
                                }
                                if ui.small_button("Delete").clicked() {
                                    edit = Some(Edit::Delete(index));
                                }
                            });
                            ui.end_row();
                        }
                    });
            });
        let editor = &mut self.movie.editor;
        match edit {
            None => {}
            Some(Edit::GoTo(index)) => {
                if let Some(camera) = editor.camera_of(index, aspect) {
                    self.movie.timeline.pause();
                    self.movie.timeline.time_s = keyframes[index].time_s;
                    self.set_camera(camera);
                }
            }
            Some(Edit::Set(index)) => {
                if let Some(camera) = self.camera() {
                    self.movie.editor.set_view(index, &camera, aspect);
                }
            }
            Some(Edit::Up(index)) => editor.move_up(index),
            Some(Edit::Down(index)) => editor.move_down(index),
            Some(Edit::Delete(index)) => editor.delete(index),
            Some(Edit::Retime(index, time_s)) => {
                editor.retime(index, time_s);
            }
        }
        if let Err(err) = self.movie.editor.path()
            && self.movie.editor.keyframes().len() >= 2
        {
            ui.colored_label(ui.visuals().error_fg_color, err.to_string());
        }
    }

    fn timing_ui(&mut self, ui: &mut egui::Ui) {
        let mut timing: Timing = self.movie.editor.timing();
        let mut orthographic = self.movie.editor.orthographic();
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut timing.constant_speed, "Constant speed")
                .on_hover_text("Move at constant speed along the track");
            let name = ui.label("ease");
            ui.add(
                egui::DragValue::new(&mut timing.ease_s)
                    .range(0.0..=60.0)
                    .speed(0.05)
                    .suffix(" s"),
            )
            .labelled_by(name.id)
            .on_hover_text("Gentle start and stop at each end");
            ui.checkbox(&mut orthographic, "Orthographic");
        });
        if timing != self.movie.editor.timing() {
            self.movie.editor.set_timing(timing);
        }
        if orthographic != self.movie.editor.orthographic() {
            self.movie.editor.set_orthographic(orthographic);
        }
    }
}
