//! What the viewport shows while files load and no snapshot is open yet: which files, how far,
//! and on a restart that the last session's files are coming back (not "Open a snapshot").

use super::haloscope_app::HaloscopeApp;

impl HaloscopeApp {
    /// The viewport's place while `documents.pending` loads and nothing is shown.
    pub(super) fn loading_ui(&mut self, ui: &mut egui::Ui) {
        let (rect, _) = ui.allocate_exact_size(ui.available_size(), egui::Sense::hover());
        ui.painter().rect_filled(rect, 0.0, egui::Color32::BLACK);
        let count = self.documents.pending.len();
        let files = if count == 1 { "file" } else { "files" };
        let heading = if self.reloading {
            format!("Reloading {count} {files} of the last session…")
        } else {
            format!("Loading {count} {files}…")
        };
        let inner = egui::Rect::from_center_size(
            rect.center(),
            egui::vec2(rect.width().min(480.0), rect.height()),
        );
        ui.scope_builder(egui::UiBuilder::new().max_rect(inner), |ui| {
            ui.vertical_centered(|ui| {
                ui.add_space((rect.height() / 3.0).max(0.0));
                ui.spinner();
                ui.label(
                    egui::RichText::new(heading)
                        .size(16.0)
                        .color(egui::Color32::from_gray(220)),
                );
                for load in &self.documents.pending {
                    let done = load
                        .progress
                        .as_ref()
                        .map(|p| format!(" ({})", p.stage))
                        .unwrap_or_default();
                    ui.label(
                        egui::RichText::new(format!("{}{done}", load.source.label()))
                            .color(egui::Color32::from_gray(180)),
                    );
                }
            });
        });
        ui.ctx()
            .request_repaint_after(std::time::Duration::from_millis(100));
    }
}
