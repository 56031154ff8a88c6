//! The Render movie window: size, frame rate, length, back-end, format and folder; a progress
//! bar with frames done, ETA and Cancel while the worker runs; how the last export ended.

use super::render::{
    BACKEND_CHOICES, MP4_FILE_NAME, MovieEnd, MovieFormat, backend_label, format_duration,
};
use crate::app::haloscope_app::HaloscopeApp;
use crate::movie::CameraPath;
use std::time::Instant;

impl HaloscopeApp {
    /// The Render movie window.
    pub(in crate::app) fn movie_window_ui(&mut self, ctx: &egui::Context) {
        let mut open = self.movie.render.show_window;
        egui::Window::new("Render movie")
            .open(&mut open)
            .collapsible(false)
            .resizable(false)
            .show(ctx, |ui| self.movie_window_body_ui(ui));
        self.movie.render.show_window = open;
    }

    fn movie_window_body_ui(&mut self, ui: &mut egui::Ui) {
        let path = self.movie.editor.path().ok().cloned();
        let running = self.movie.render.is_running();
        let settings = &mut self.movie.render.settings;
        let mut choose_folder = false;
        ui.add_enabled_ui(!running, |ui| {
            egui::Grid::new("movie settings")
                .num_columns(2)
                .show(ui, |ui| {
                    ui.label("Size");
                    ui.horizontal(|ui| {
                        ui.add(
                            egui::DragValue::new(&mut settings.width_px)
                                .range(16..=16384)
                                .suffix(" px"),
                        );
                        ui.label("×");
                        ui.add(
                            egui::DragValue::new(&mut settings.height_px)
                                .range(16..=16384)
                                .suffix(" px"),
                        );
                        for (w, h) in [(1280, 720), (1920, 1080), (3840, 2160)] {
                            if ui.small_button(format!("{h}p")).clicked() {
                                settings.width_px = w;
                                settings.height_px = h;
                            }
                        }
                    });
                    ui.end_row();
                    ui.label("Frame rate");
                    ui.add(
                        egui::DragValue::new(&mut settings.fps)
                            .range(1.0..=240.0)
                            .suffix(" frames/s"),
                    );
                    ui.end_row();
                    ui.label("Length");
                    ui.horizontal(|ui| {
                        let own_s = path.as_ref().map_or(0.0, CameraPath::duration_s);
                        let mut own = settings.duration_s.is_none();
                        if ui
                            .checkbox(&mut own, format!("the path's ({own_s:.2} s)"))
                            .changed()
                        {
                            settings.duration_s = (!own).then_some(own_s.max(1.0));
                        }
                        if let Some(duration_s) = &mut settings.duration_s {
                            ui.add(
                                egui::DragValue::new(duration_s)
                                    .range(0.1..=36000.0)
                                    .speed(0.1)
                                    .suffix(" s"),
                            );
                        }
                    });
                    ui.end_row();
                    ui.label("Back-end");
                    ui.horizontal(|ui| {
                        for backend in BACKEND_CHOICES {
                            ui.radio_value(&mut settings.backend, backend, backend_label(backend));
                        }
                    });
                    ui.end_row();
                    ui.label("Format");
                    ui.horizontal(|ui| {
                        ui.radio_value(&mut settings.format, MovieFormat::Png, "PNG frames");
                        ui.radio_value(
                            &mut settings.format,
                            MovieFormat::PngAndMp4,
                            format!("PNG frames + MP4 ({MP4_FILE_NAME})"),
                        );
                    });
                    ui.end_row();
                    ui.label("Folder");
                    ui.horizontal(|ui| {
                        ui.add(
                            egui::TextEdit::singleline(&mut settings.out_dir)
                                .hint_text("output folder")
                                .desired_width(260.0),
                        );
                        choose_folder = ui.button("Choose…").clicked();
                    });
                    ui.end_row();
                });
        });
        if choose_folder {
            self.movie.out_dir_dialog();
        }
        let settings = &self.movie.render.settings;
        let plan = path.as_ref().map(|p| settings.plan(p));
        match (&plan, self.movie.editor.path()) {
            (Some(plan), _) => {
                ui.label(format!(
                    "{} frames of {}×{} at {} frames/s ({})",
                    plan.n_frames,
                    plan.width,
                    plan.height,
                    plan.fps,
                    format_duration(plan.n_frames as f64 / plan.fps.max(1e-9))
                ));
            }
            (None, Err(err)) => {
                ui.colored_label(ui.visuals().error_fg_color, format!("No path: {err}"));
            }
            (None, Ok(_)) => {}
        }
        ui.separator();
        let ready = plan.is_some()
            && !settings.out_dir.trim().is_empty()
            && self.documents.shown_snapshot().is_some();
        match &self.movie.render.running {
            Some(running) => {
                let now = Instant::now();
                let (fraction, text) = match (running.frames(), &running.progress) {
                    (Some((done, total)), _) => {
                        let eta = running
                            .eta_s(now)
                            .map_or_else(String::new, |s| format!(", ETA {}", format_duration(s)));
                        (
                            done as f32 / total.max(1) as f32,
                            format!("{done}/{total} frames{eta}"),
                        )
                    }
                    (None, Some(p)) => (0.0, format!("{}…", p.stage)),
                    (None, None) => (0.0, "starting…".to_owned()),
                };
                ui.horizontal(|ui| {
                    ui.add(
                        egui::ProgressBar::new(fraction)
                            .text(text)
                            .desired_width(300.0),
                    );
                    if ui.button("Cancel").clicked() {
                        self.movie.render.cancel();
                    }
                });
                ui.ctx()
                    .request_repaint_after(std::time::Duration::from_millis(100));
            }
            None => {
                let render = ui
                    .add_enabled(ready, egui::Button::new("Render frames"))
                    .on_hover_text("Frames already in the folder are kept (resume)");
                if render.clicked() {
                    self.start_movie_render();
                }
            }
        }
        match &self.movie.render.last {
            Some(MovieEnd::Done(outcome)) => {
                let s = &outcome.summary;
                ui.label(format!(
                    "Done: {} frames ({} rendered, {} already there) in {:.1} s",
                    s.n_frames, s.rendered, s.skipped, s.seconds
                ));
                if let Some(mp4) = &s.mp4 {
                    ui.label(format!(
                        "{}: {:.1} MB",
                        mp4.path.display(),
                        mp4.bytes as f64 / 1e6
                    ));
                }
            }
            Some(MovieEnd::Failed(error)) => {
                ui.colored_label(ui.visuals().error_fg_color, format!("Error: {error}"));
            }
            Some(MovieEnd::Cancelled) => {
                ui.label(
                    "Cancelled: the frames rendered so far stay in the folder; \
                     Render frames again to resume.",
                );
            }
            None => {}
        }
    }
}
