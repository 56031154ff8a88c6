//! The top menu, the status bar and the small windows (About, shortcuts, Screenshot).

use super::files::documents::{Notice, file_name};
use super::haloscope_app::HaloscopeApp;

/// Keyboard and mouse controls, shown in Help → Keyboard shortcuts.
pub const SHORTCUTS: [(&str, &str); 12] = [
    ("Drag", "rotate about the look-at point"),
    (
        "Double-click",
        "glide to the brightest point under the cursor",
    ),
    ("Click a halo circle", "select it and fly to it"),
    ("Right-, middle- or Shift-drag", "pan"),
    ("Wheel / pinch", "zoom"),
    ("R", "reset view and automatic colour ranges"),
    ("H", "home view"),
    ("F", "frame all particles"),
    ("Ctrl+O", "open files"),
    ("Ctrl+Q", "quit"),
    ("Ctrl+Z", "undo the last movie preset"),
    ("Drop files on the window", "open them"),
];

impl HaloscopeApp {
    /// File, View, Movie and Help menus.
    pub(super) fn menu_bar_ui(&mut self, ui: &mut egui::Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| {
                if ui.button("Open…").clicked() {
                    self.open_dialog();
                }
                ui.menu_button("Open recent", |ui| {
                    if self.documents.recent.is_empty() {
                        ui.label("No recent files");
                    }
                    for path in self.documents.recent.clone() {
                        let button = ui
                            .button(file_name(&path))
                            .on_hover_text(path.display().to_string());
                        if button.clicked() {
                            self.open_path(&path);
                        }
                    }
                });
                if ui.button("Open demo data").clicked() {
                    self.documents.open_demo();
                }
                ui.separator();
                if ui.button("Screenshot…").clicked() {
                    self.show_screenshot = true;
                }
                ui.separator();
                if ui.button("Quit").clicked() {
                    ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
                }
            });
            ui.menu_button("View", |ui| {
                if ui.button("Reset view and ranges (R)").clicked() {
                    self.reset_view();
                }
                if ui.button("Home view (H)").clicked() {
                    self.home_view();
                }
                if ui.button("Frame all (F)").clicked() {
                    self.frame_all();
                }
                ui.separator();
                if ui.button("Particles").clicked() {
                    self.central = super::session::CentralView::Viewport;
                }
                if ui.button("Sky map").clicked() {
                    self.central = super::session::CentralView::SkyMap;
                }
                if ui.button("Two-point plots").clicked() {
                    self.central = super::session::CentralView::TwoPoint;
                }
                ui.separator();
                ui.checkbox(&mut self.panels.side_panel, "Side panel");
            });
            ui.menu_button("Movie", |ui| {
                if ui.button("Keyframes and timeline").clicked() {
                    self.panels.side_panel = true;
                    self.panels.movie = true;
                    self.panels.scroll_to_movie = true;
                }
                if ui.button("Render movie…").clicked() {
                    self.movie.render.show_window = true;
                }
                ui.separator();
                if ui.button("Load camera path…").clicked() {
                    self.movie.load_dialog();
                }
                if ui.button("Save camera path…").clicked() {
                    self.movie.save_dialog();
                }
            });
            ui.menu_button("Help", |ui| {
                if ui.button("Keyboard shortcuts").clicked() {
                    self.show_shortcuts = true;
                }
                if ui.button("About Haloscope").clicked() {
                    self.show_about = true;
                }
            });
        });
    }

    /// Back-end, frame time, loads and the latest message.
    pub(super) fn status_bar_ui(&mut self, ui: &mut egui::Ui) {
        let latest = self.notices.last().cloned();
        let mut wrapped = None;
        ui.horizontal(|ui| {
            ui.label(format!("back-end: {}", self.viewport.backend()));
            ui.separator();
            ui.label(format!("UI {:.1} ms/frame", self.frame_seconds * 1e3));
            if let Some(shown) = self.viewport.shown() {
                ui.separator();
                ui.label(format!("render {:.0} ms", shown.seconds * 1e3));
            }
            if !self.documents.pending.is_empty() {
                ui.separator();
                ui.spinner();
                ui.label(format!("loading {}", self.documents.pending.len()));
            }
            let Some(latest) = &latest else {
                return;
            };
            ui.separator();
            let text = notice_text(ui, latest);
            // A message too long for the rest of the row gets a wrapped line of its own below:
            // cut off at the window's edge, its end (often the cause) was lost.
            let width = egui::WidgetText::from(text.clone())
                .into_galley(
                    ui,
                    Some(egui::TextWrapMode::Extend),
                    f32::INFINITY,
                    egui::TextStyle::Body,
                )
                .size()
                .x;
            if width + 30.0 > ui.available_width() {
                wrapped = Some(text);
            } else {
                let label = ui.label(text);
                self.history_on_hover(label);
            }
            self.dismiss_button(ui);
        });
        if let Some(text) = wrapped {
            let label = ui.add(egui::Label::new(text).wrap());
            self.history_on_hover(label);
        }
    }

    fn history_on_hover(&self, label: egui::Response) {
        label.on_hover_ui(|ui| {
            for notice in self.notices.iter().rev().take(20) {
                match notice {
                    Notice::Info(text) => ui.label(text),
                    Notice::Error(text) => ui.colored_label(ui.visuals().error_fg_color, text),
                };
            }
        });
    }

    fn dismiss_button(&mut self, ui: &mut egui::Ui) {
        if ui
            .small_button("x")
            .on_hover_text("Dismiss messages")
            .clicked()
        {
            self.notices.clear();
        }
    }

    /// About, shortcuts, Screenshot and Render movie windows.
    pub(super) fn windows_ui(&mut self, ctx: &egui::Context) {
        egui::Window::new("About Haloscope")
            .open(&mut self.show_about)
            .collapsible(false)
            .resizable(false)
            .show(ctx, |ui| {
                ui.label(format!("Haloscope {}", env!("CARGO_PKG_VERSION")));
                ui.label(env!("CARGO_PKG_DESCRIPTION"));
                ui.label(format!("Renderer back-end: {}", self.viewport.backend()));
            });
        egui::Window::new("Keyboard shortcuts")
            .open(&mut self.show_shortcuts)
            .collapsible(false)
            .resizable(false)
            .show(ctx, |ui| {
                egui::Grid::new("shortcuts").striped(true).show(ui, |ui| {
                    for (keys, what) in SHORTCUTS {
                        ui.strong(keys);
                        ui.label(what);
                        ui.end_row();
                    }
                });
            });
        let mut open = self.show_screenshot;
        egui::Window::new("Screenshot")
            .open(&mut open)
            .collapsible(false)
            .resizable(false)
            .show(ctx, |ui| self.screenshot_window_ui(ui));
        self.show_screenshot = open;
        self.movie_window_ui(ctx);
    }

    fn screenshot_window_ui(&mut self, ui: &mut egui::Ui) {
        ui.label("Renders the current view off-screen at this size:");
        ui.horizontal(|ui| {
            ui.add(
                egui::DragValue::new(&mut self.screenshot.width_px)
                    .range(16..=16384)
                    .suffix(" px"),
            );
            ui.label("×");
            ui.add(
                egui::DragValue::new(&mut self.screenshot.height_px)
                    .range(16..=16384)
                    .suffix(" px"),
            );
        });
        ui.horizontal(|ui| {
            for (w, h) in [(1920, 1080), (3840, 2160), (2048, 2048)] {
                if ui.small_button(format!("{w}×{h}")).clicked() {
                    self.screenshot.width_px = w;
                    self.screenshot.height_px = h;
                }
            }
        });
        ui.checkbox(
            &mut self.screenshot.overlays,
            "with overlays (halo circles, labels, colour and scale bars)",
        );
        match &self.screenshot_job {
            Some(job) => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label("Rendering…");
                    if ui.button("Cancel").clicked() {
                        job.cancel();
                    }
                });
            }
            None => {
                let enabled = self.documents.shown_snapshot().is_some();
                ui.horizontal(|ui| {
                    for (label, fits) in [("Save PNG…", false), ("Save as FITS…", true)] {
                        if ui.add_enabled(enabled, egui::Button::new(label)).clicked() {
                            self.screenshot.fits = fits;
                            self.screenshot_dialog();
                        }
                    }
                });
            }
        }
    }
}

/// Most characters of one message the status bar lays out (a message quoting a whole damaged
/// file would take the window); the rest is counted, and is in the log.
const MAX_STATUS_CHARS: usize = 2000;

/// The status bar's text of `notice`: errors in the error colour, marked as such.
fn notice_text(ui: &egui::Ui, notice: &Notice) -> egui::RichText {
    let (text, error) = match notice {
        Notice::Info(text) => (text, false),
        Notice::Error(text) => (text, true),
    };
    let mut shown = match text.char_indices().nth(MAX_STATUS_CHARS) {
        Some((cut, _)) => format!(
            "{}… ({} more characters in the log)",
            &text[..cut],
            text[cut..].chars().count()
        ),
        None => text.clone(),
    };
    if error {
        shown = format!("Error: {shown}");
        egui::RichText::new(shown).color(ui.visuals().error_fg_color)
    } else {
        egui::RichText::new(shown)
    }
}
