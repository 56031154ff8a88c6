//! Window-wide input: files dropped on the window and the keyboard shortcuts.

use super::haloscope_app::HaloscopeApp;
use std::path::PathBuf;

impl HaloscopeApp {
    /// Opens the files dropped on the window.
    pub(super) fn handle_dropped_files(&mut self, ctx: &egui::Context) {
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .collect()
        });
        for path in dropped {
            self.open_path(&path);
        }
    }

    /// Keyboard shortcuts, unless a text field or the built-in file chooser takes the keys.
    pub(super) fn handle_shortcuts(&mut self, ctx: &egui::Context) {
        // Keys typed into the file chooser are the chooser's, focused field or not: an 'h' in
        // a path sent the camera home.
        if ctx.egui_wants_keyboard_input() || self.file_browser.is_some() {
            return;
        }
        let command = egui::Modifiers::COMMAND;
        let (open, quit, reset, home, frame, undo) = ctx.input_mut(|i| {
            (
                i.consume_key(command, egui::Key::O),
                i.consume_key(command, egui::Key::Q),
                i.consume_key(egui::Modifiers::NONE, egui::Key::R),
                i.consume_key(egui::Modifiers::NONE, egui::Key::H),
                i.consume_key(egui::Modifiers::NONE, egui::Key::F),
                i.consume_key(command, egui::Key::Z),
            )
        });
        if undo {
            self.undo_preset();
        }
        if open {
            self.open_dialog();
        }
        if quit {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
        if reset {
            self.reset_view();
        }
        if home {
            self.home_view();
        }
        if frame {
            self.frame_all();
        }
    }
}
