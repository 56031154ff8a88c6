//! Work the application hands to other threads: file dialogs (rfd), off-screen screenshots,
//! the catalogue export dialog and the window capture for the README.

use super::files::documents::Notice;
use super::files::file_browser::{BrowseOutcome, BrowsePurpose, FileBrowser};
use super::haloscope_app::{DialogAnswer, HaloscopeApp};
use super::viewport::fits_export::{is_fits_path, save_fits};
use super::viewport::overlay::OverlayOptions;
use super::viewport::screenshot::save_screenshot;
use super::viewport::viewport_renderer::ViewRequest;
use super::viewport::widget::OverlayInput;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A system dialog that answers "nothing chosen" sooner than this was never shown (rfd on Linux
/// without xdg-desktop-portal or zenity fails at once); nobody cancels a dialog this fast.
const DIALOG_FAILED_WITHIN: Duration = Duration::from_millis(400);

/// `answer` from a dialog that ran since `started`, or [`DialogAnswer::Unavailable`] when it
/// came back empty too soon to have been shown.
fn answer_or_unavailable(
    started: Instant,
    chosen: bool,
    purpose: BrowsePurpose,
    answer: DialogAnswer,
) -> DialogAnswer {
    if !chosen && started.elapsed() < DIALOG_FAILED_WITHIN {
        DialogAnswer::Unavailable(purpose)
    } else {
        answer
    }
}

impl HaloscopeApp {
    /// Shows the system file dialog on its own thread (the UI keeps running); the chosen files
    /// open when it answers.
    pub fn open_dialog(&mut self) {
        if self.dialog_open {
            return;
        }
        if !self.native_dialogs {
            self.open_file_browser(BrowsePurpose::Open);
            return;
        }
        self.dialog_open = true;
        let tx = self.dialog_tx.clone();
        let waker = self.waker.clone();
        let start_dir = self.recent_dir();
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
                let started = Instant::now();
                let files = dialog.pick_files().unwrap_or_default();
                let chosen = !files.is_empty();
                let answer = DialogAnswer::Open(files);
                let _ = tx.send(answer_or_unavailable(
                    started,
                    chosen,
                    BrowsePurpose::Open,
                    answer,
                ));
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
        if !self.native_dialogs {
            self.open_file_browser(BrowsePurpose::SaveScreenshot);
            return;
        }
        self.dialog_open = true;
        let fits = self.screenshot.fits;
        let tx = self.dialog_tx.clone();
        let waker = self.waker.clone();
        let spawned = std::thread::Builder::new()
            .name("save dialog".into())
            .spawn(move || {
                let started = Instant::now();
                let dialog = rfd::FileDialog::new().set_title("Save screenshot");
                let path = if fits {
                    dialog
                        .set_file_name("haloscope.fits")
                        .add_filter("FITS (τ and image)", &["fits", "fit", "fts"])
                } else {
                    dialog
                        .set_file_name("haloscope.png")
                        .add_filter("PNG image", &["png"])
                }
                .save_file();
                let chosen = path.is_some();
                let _ = tx.send(answer_or_unavailable(
                    started,
                    chosen,
                    BrowsePurpose::SaveScreenshot,
                    DialogAnswer::SaveScreenshot(path),
                ));
                waker();
            });
        if let Err(err) = spawned {
            self.dialog_open = false;
            self.notify(Notice::Error(format!(
                "could not open the save dialog: {err}"
            )));
        }
    }

    /// Whether the window may write `path`: not when it is one of the open files (a clear error
    /// in the status bar then).
    pub fn output_allowed(&mut self, role: &str, path: &std::path::Path) -> bool {
        let open_files = self.documents.open_paths();
        match crate::output::OutputPlan::check_against_open_files(role, path, &open_files) {
            Ok(()) => true,
            Err(err) => {
                self.notify(Notice::Error(err.to_string()));
                false
            }
        }
    }

    /// Writes the halo catalogue to `path` on a worker, unless `path` is an open file.
    pub fn export_catalogue_to(&mut self, path: PathBuf) {
        if self.output_allowed("catalogue", &path) {
            let document_id = self.halos.catalogue.as_ref().map(|c| c.document_id);
            let snapshot = self
                .documents
                .snapshots
                .iter()
                .find(|d| Some(d.id) == document_id);
            self.halos.export_to(path, snapshot);
        }
    }

    /// Renders the current view at the screenshot size on a worker and saves it to `path`.
    pub fn save_screenshot_to(&mut self, path: PathBuf) {
        if !self.output_allowed("screenshot", &path) {
            return;
        }
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
            if is_fits_path(&path) {
                save_fits(&request, &path, progress)
            } else {
                save_screenshot(&factory, &request, overlay.as_ref(), &path, progress)
            }
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
                    .is_some_and(|s| s.quality == super::viewport::progressive::Quality::Full));
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
                    .map(|buffer| super::viewport::screenshot::save_png(&path, &buffer));
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
        if !self.native_dialogs {
            self.open_file_browser(BrowsePurpose::ExportCatalogue);
            return;
        }
        self.dialog_open = true;
        let tx = self.dialog_tx.clone();
        let waker = self.waker.clone();
        let spawned = std::thread::Builder::new()
            .name("export dialog".into())
            .spawn(move || {
                let started = Instant::now();
                let path = rfd::FileDialog::new()
                    .set_title("Export halo catalogue")
                    .set_file_name("halos.csv")
                    .add_filter("CSV", &["csv"])
                    .add_filter("HDF5", &["hdf5", "h5"])
                    .save_file();
                let chosen = path.is_some();
                let _ = tx.send(answer_or_unavailable(
                    started,
                    chosen,
                    BrowsePurpose::ExportCatalogue,
                    DialogAnswer::ExportCatalogue(path),
                ));
                waker();
            });
        if let Err(err) = spawned {
            self.dialog_open = false;
            self.notify(Notice::Error(format!(
                "could not open the save dialog: {err}"
            )));
        }
    }

    /// Where the next built-in save chooser starts: the folder of `path`, just chosen.
    pub(super) fn remember_save_dir(&mut self, path: &Path) {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            self.last_save_dir = Some(dir.to_path_buf());
        }
    }

    /// The folder of the newest recent file, if any.
    fn recent_dir(&self) -> Option<PathBuf> {
        self.documents
            .recent
            .first()
            .and_then(|p| p.parent())
            .map(Path::to_path_buf)
    }

    /// The system dialog for `purpose` could not be shown: say so once and use the built-in one
    /// from now on.
    pub(super) fn system_dialog_unavailable(&mut self, purpose: BrowsePurpose) {
        self.native_dialogs = false;
        self.notify(Notice::Info(
            "no system file dialog could be shown (it needs xdg-desktop-portal or zenity): \
             using Haloscope's own"
                .to_owned(),
        ));
        self.open_file_browser(purpose);
    }

    /// Opens the built-in file chooser for `purpose`: opening in the folder of the newest
    /// recent file (else the working folder); saving in the last folder saved to, else the
    /// working folder, never the data's folder (often read-only).
    pub fn open_file_browser(&mut self, purpose: BrowsePurpose) {
        let start = match purpose {
            BrowsePurpose::Open => self.recent_dir(),
            BrowsePurpose::SaveScreenshot | BrowsePurpose::ExportCatalogue => self
                .last_save_dir
                .clone()
                .filter(|d| writable(d))
                .or_else(|| std::env::current_dir().ok().filter(|d| writable(d)))
                .or_else(|| std::env::home_dir().filter(|d| writable(d))),
        };
        let dir = start
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(std::env::temp_dir);
        self.file_browser = Some(FileBrowser::new(purpose, dir, self.waker.clone()));
    }

    /// Draws the built-in file chooser, if open, and acts on the choice.
    pub(super) fn file_browser_ui(&mut self, ctx: &egui::Context) {
        let Some(browser) = &mut self.file_browser else {
            return;
        };
        let purpose = browser.purpose;
        let Some(outcome) = browser.window_ui(ctx) else {
            return;
        };
        self.file_browser = None;
        let BrowseOutcome::Chosen(paths) = outcome else {
            return;
        };
        match purpose {
            BrowsePurpose::Open => {
                for path in paths {
                    self.open_path(&path);
                }
            }
            BrowsePurpose::SaveScreenshot => {
                if let Some(path) = paths.into_iter().next() {
                    self.remember_save_dir(&path);
                    self.save_screenshot_to(path);
                }
            }
            BrowsePurpose::ExportCatalogue => {
                if let Some(path) = paths.into_iter().next() {
                    self.remember_save_dir(&path);
                    self.export_catalogue_to(path);
                }
            }
        }
    }
}

/// Whether `dir` is a folder whose permissions let someone write there (a read-only data
/// folder is not a place to offer for saving).
fn writable(dir: &Path) -> bool {
    std::fs::metadata(dir).is_ok_and(|m| m.is_dir() && !m.permissions().readonly())
}
