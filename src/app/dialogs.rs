//! Work the application hands to other threads: file dialogs (rfd), off-screen screenshots,
//! the catalogue export dialog and the window capture for the README.

use super::documents::Notice;
use super::haloscope_app::{DialogAnswer, HaloscopeApp};
use super::overlay::OverlayOptions;
use super::screenshot::save_screenshot;
use super::viewport::OverlayInput;
use super::viewport_renderer::ViewRequest;
use std::path::{Path, PathBuf};

impl HaloscopeApp {
    /// Shows the system file dialog on its own thread (the UI keeps running); the chosen files
    /// open when it answers.
    pub fn open_dialog(&mut self) {
        if self.dialog_open {
            return;
        }
        self.dialog_open = true;
        let tx = self.dialog_tx.clone();
        let waker = self.waker.clone();
        let start_dir = self
            .documents
            .recent
            .first()
            .and_then(|p| p.parent())
            .map(Path::to_path_buf);
        let spawned = std::thread::Builder::new()
            .name("open dialog".into())
            .spawn(move || {
                let mut dialog = rfd::FileDialog::new()
                    .set_title("Open snapshot or event list")
                    .add_filter(
                        "Snapshots and event lists",
                        &["hdf5", "h5", "tbin", "bin", "std", "csv", "txt", "dat"],
                    )
                    .add_filter("All files", &["*"]);
                if let Some(dir) = start_dir {
                    dialog = dialog.set_directory(dir);
                }
                let files = dialog.pick_files().unwrap_or_default();
                let _ = tx.send(DialogAnswer::Open(files));
                waker();
            });
        if let Err(err) = spawned {
            self.dialog_open = false;
            self.notify(Notice::Error(format!(
                "could not open the file dialog: {err}"
            )));
        }
    }

    /// Asks where to save a screenshot (on a dialog thread), then renders and saves it.
    pub fn screenshot_dialog(&mut self) {
        if self.dialog_open {
            return;
        }
        self.dialog_open = true;
        let tx = self.dialog_tx.clone();
        let waker = self.waker.clone();
        let spawned = std::thread::Builder::new()
            .name("save dialog".into())
            .spawn(move || {
                let path = rfd::FileDialog::new()
                    .set_title("Save screenshot")
                    .set_file_name("haloscope.png")
                    .add_filter("PNG image", &["png"])
                    .save_file();
                let _ = tx.send(DialogAnswer::SaveScreenshot(path));
                waker();
            });
        if let Err(err) = spawned {
            self.dialog_open = false;
            self.notify(Notice::Error(format!(
                "could not open the save dialog: {err}"
            )));
        }
    }

    /// Renders the current view at the screenshot size on a worker and saves it to `path`.
    pub fn save_screenshot_to(&mut self, path: PathBuf) {
        let Some(document) = self.documents.shown_snapshot() else {
            self.notify(Notice::Error("screenshot: no snapshot is shown".to_owned()));
            return;
        };
        let request = ViewRequest {
            snapshot: document.snapshot.clone(),
            camera: document.camera,
            style: self.style.clone(),
            width_px: self.screenshot.width_px.max(1),
            height_px: self.screenshot.height_px.max(1),
        };
        let overlay = self.screenshot.overlays.then(|| OverlayInput {
            halos: self.halos.markers(document.id),
            selected: self.halos.selected,
            options: Some(OverlayOptions {
                halos: self.halos.show_circles,
                labels: self.halos.show_labels,
                color_bar: self.style.show_color_bar,
                scale_bar: self.style.show_scale_bar,
            }),
        });
        let factory = self.factory.clone();
        let label = format!("screenshot {}", path.display());
        self.screenshot_job = Some(self.screenshot_jobs.spawn(label, 0, move |progress| {
            save_screenshot(&factory, &request, overlay.as_ref(), &path, progress)
                .map_err(|e| format!("{e:#}"))
        }));
    }

    /// Saves a PNG of the whole window to `path` once loading is over and a full render is
    /// shown, then closes the window (for the README screenshots made under Xvfb).
    pub fn capture_window_then_quit(&mut self, path: PathBuf) {
        self.capture = Some((path, false));
    }

    pub(super) fn capture_window_when_ready(&mut self, ctx: &egui::Context) {
        let Some((path, requested)) = &mut self.capture else {
            return;
        };
        let ready = self.documents.pending.is_empty()
            && !self.viewport.is_rendering()
            && (self.viewport.error().is_some()
                || self
                    .viewport
                    .shown()
                    .is_some_and(|s| s.quality == super::progressive::Quality::Full));
        if *requested || !ready {
            ctx.request_repaint_after(std::time::Duration::from_millis(50));
            return;
        }
        *requested = true;
        let path = path.clone();
        let close_ctx = ctx.clone();
        ctx.request_screenshot(move |image| {
            // Encode off the UI thread, then close.
            std::thread::spawn(move || {
                let [w, h] = image.size;
                let rgba: Vec<u8> = image
                    .pixels
                    .iter()
                    .flat_map(|c| c.to_srgba_unmultiplied())
                    .collect();
                let saved = image::RgbaImage::from_raw(w as u32, h as u32, rgba)
                    .map(|buffer| buffer.save_with_format(&path, image::ImageFormat::Png));
                match saved {
                    Some(Ok(())) => log::info!("saved window to {}", path.display()),
                    Some(Err(err)) => log::error!("{}: {err}", path.display()),
                    None => log::error!("{}: window image of the wrong size", path.display()),
                }
                close_ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            });
        });
        ctx.request_repaint();
    }

    /// Asks where to save the halo catalogue (on a dialog thread), then writes it.
    pub fn export_dialog(&mut self) {
        if self.dialog_open {
            return;
        }
        self.dialog_open = true;
        let tx = self.dialog_tx.clone();
        let waker = self.waker.clone();
        let spawned = std::thread::Builder::new()
            .name("export dialog".into())
            .spawn(move || {
                let path = rfd::FileDialog::new()
                    .set_title("Export halo catalogue")
                    .set_file_name("halos.csv")
                    .add_filter("CSV", &["csv"])
                    .add_filter("HDF5", &["hdf5", "h5"])
                    .save_file();
                let _ = tx.send(DialogAnswer::ExportCatalogue(path));
                waker();
            });
        if let Err(err) = spawned {
            self.dialog_open = false;
            self.notify(Notice::Error(format!(
                "could not open the save dialog: {err}"
            )));
        }
    }
}
