//! The application state and its frame: drain workers, handle input, draw panels.

use super::camera::{Bookmark, OrbitCamera};
use super::documents::{Documents, Notice};
use super::screenshot::{ScreenshotSettings, save_screenshot};
use super::session::{CentralView, PanelState, STORAGE_KEY, Session};
use super::sky_map::SkyMap;
use super::sky_projection::SkyProjection;
use super::viewport::{ViewTarget, Viewport};
use super::viewport_renderer::{RendererFactory, ViewRequest, ViewStyle};
use crate::jobs::{JobEvent, JobHandle, JobId, JobQueue, Waker};
use crossbeam_channel::{Receiver, Sender};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Notices kept for the status bar's history.
const MAX_NOTICES: usize = 50;

/// What a file dialog thread sends back.
enum DialogAnswer {
    /// Files to open (empty when the user cancelled).
    Open(Vec<PathBuf>),
    /// Where to save a screenshot (`None` when the user cancelled).
    SaveScreenshot(Option<PathBuf>),
}

/// The whole application.
pub struct HaloscopeApp {
    /// Open documents and loads.
    pub documents: Documents,
    /// The particle viewport.
    pub viewport: Viewport,
    /// The event sky map.
    pub sky_map: SkyMap,
    /// Render settings.
    pub style: ViewStyle,
    /// Side-panel sections.
    pub panels: PanelState,
    /// What fills the central area.
    pub central: CentralView,
    /// Sky-map projection.
    pub sky_projection: SkyProjection,
    /// Saved views.
    pub bookmarks: Vec<Bookmark>,
    /// Status-bar history, oldest first.
    pub notices: Vec<Notice>,
    /// Whether the About window is open.
    pub show_about: bool,
    /// Whether the keyboard-shortcuts window is open.
    pub show_shortcuts: bool,
    /// Whether the Screenshot window is open.
    pub show_screenshot: bool,
    /// Screenshot size.
    pub screenshot: ScreenshotSettings,
    /// Name typed for the next bookmark.
    pub bookmark_name: String,
    /// Smoothed time the UI thread spends building one frame, seconds.
    pub frame_seconds: f32,
    screenshot_jobs: JobQueue<PathBuf>,
    /// The screenshot being rendered.
    pub screenshot_job: Option<JobHandle>,
    dialog_tx: Sender<DialogAnswer>,
    dialog_rx: Receiver<DialogAnswer>,
    dialog_open: bool,
    restore_camera: Option<OrbitCamera>,
    factory: RendererFactory,
    waker: Waker,
    last_frame: Option<Instant>,
    capture: Option<(PathBuf, bool)>,
}

impl HaloscopeApp {
    /// The application on `ctx`, restoring `session`, opening `files` (or, with none, the last
    /// session's files, or the demo data on a first start); renders through `factory`.
    pub fn new(
        ctx: &egui::Context,
        session: Option<Session>,
        files: Vec<PathBuf>,
        factory: RendererFactory,
    ) -> Self {
        let repaint_ctx = ctx.clone();
        let waker: Waker = Arc::new(move || repaint_ctx.request_repaint());
        let session = session.unwrap_or_default();
        let (dialog_tx, dialog_rx) = crossbeam_channel::unbounded();
        let mut app = Self {
            documents: Documents::new(waker.clone(), session.recent_files.clone()),
            viewport: Viewport::new(&factory, waker.clone()),
            sky_map: SkyMap::default(),
            style: session.style.clone(),
            panels: session.panels,
            central: session.central,
            sky_projection: session
                .sky_projection
                .unwrap_or(SkyProjection::HammerAitoff),
            bookmarks: session.bookmarks.clone(),
            notices: Vec::new(),
            show_about: false,
            show_shortcuts: false,
            show_screenshot: false,
            screenshot: ScreenshotSettings::default(),
            bookmark_name: String::new(),
            frame_seconds: 0.0,
            screenshot_jobs: JobQueue::new(waker.clone()),
            screenshot_job: None,
            dialog_tx,
            dialog_rx,
            dialog_open: false,
            restore_camera: None,
            factory,
            waker,
            last_frame: None,
            capture: None,
        };
        if !files.is_empty() {
            for path in &files {
                app.open_path(path);
            }
        } else {
            let last: Vec<PathBuf> = session
                .open_files
                .iter()
                .filter(|p| p.exists())
                .cloned()
                .collect();
            if last.is_empty() {
                app.documents.open_demo();
            } else {
                app.restore_camera = session.camera;
                for path in &last {
                    app.open_path(path);
                }
            }
        }
        app
    }

    /// Opens `path` (snapshot or event list) on a worker: the path the menu, the recent list,
    /// drag-and-drop and the command line all take.
    pub fn open_path(&mut self, path: &Path) -> JobId {
        self.documents.open(path)
    }

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
        let factory = self.factory.clone();
        let label = format!("screenshot {}", path.display());
        self.screenshot_job = Some(self.screenshot_jobs.spawn(label, 0, move |progress| {
            save_screenshot(&factory, &request, &path, progress).map_err(|e| format!("{e:#}"))
        }));
    }

    /// Saves a PNG of the whole window to `path` once loading is over and a full render is
    /// shown, then closes the window (for the README screenshots made under Xvfb).
    pub fn capture_window_then_quit(&mut self, path: PathBuf) {
        self.capture = Some((path, false));
    }

    fn capture_window_when_ready(&mut self, ctx: &egui::Context) {
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

    /// Adds a message to the status bar.
    pub fn notify(&mut self, notice: Notice) {
        match &notice {
            Notice::Info(text) => log::info!("{text}"),
            Notice::Error(text) => log::warn!("{text}"),
        }
        self.notices.push(notice);
        if self.notices.len() > MAX_NOTICES {
            self.notices.remove(0);
        }
    }

    /// What to save for the next run.
    pub fn session(&self) -> Session {
        Session {
            recent_files: self.documents.recent.clone(),
            open_files: self.documents.open_files(),
            camera: self.documents.shown_snapshot().map(|d| d.camera),
            bookmarks: self.bookmarks.clone(),
            style: self.style.clone(),
            panels: self.panels,
            central: self.central,
            sky_projection: Some(self.sky_projection),
        }
    }

    /// The camera of the snapshot shown, if any.
    pub fn camera(&self) -> Option<OrbitCamera> {
        self.documents.shown_snapshot().map(|d| d.camera)
    }

    /// `r`: home view and automatic colour ranges.
    pub fn reset_view(&mut self) {
        for species in &mut self.style.species {
            species.color_range = None;
        }
        self.home_view();
    }

    /// `h`: the default view of the snapshot shown.
    pub fn home_view(&mut self) {
        if let Some(document) = self.documents.shown_snapshot_mut() {
            document.camera = document.home_camera();
        }
    }

    /// `f`: keep the direction, frame every particle.
    pub fn frame_all(&mut self) {
        if let Some(document) = self.documents.shown_snapshot_mut()
            && let Some((min, max)) = document.bounds
        {
            document.camera.frame_all(min, max);
        }
    }

    /// Takes in everything the workers sent since the last frame. Never blocks.
    pub fn poll_workers(&mut self, ctx: &egui::Context) {
        let had_snapshots = self.documents.snapshots.len();
        for notice in self.documents.poll() {
            self.notify(notice);
        }
        if self.documents.snapshots.len() > had_snapshots
            && let Some(camera) = self.restore_camera.take()
            && let Some(document) = self.documents.shown_snapshot_mut()
        {
            document.camera = camera;
        }
        self.viewport.receive(ctx);
        for event in self.screenshot_jobs.drain() {
            match event {
                JobEvent::Progress { .. } => {}
                JobEvent::Done { result, .. } => {
                    self.screenshot_job = None;
                    self.notify(Notice::Info(format!("saved {}", result.display())));
                }
                JobEvent::Failed { error, .. } => {
                    self.screenshot_job = None;
                    self.notify(Notice::Error(format!("screenshot: {error}")));
                }
                JobEvent::Cancelled { .. } => {
                    self.screenshot_job = None;
                    self.notify(Notice::Info("screenshot cancelled".to_owned()));
                }
            }
        }
        while let Ok(answer) = self.dialog_rx.try_recv() {
            self.dialog_open = false;
            match answer {
                DialogAnswer::Open(files) => {
                    for path in files {
                        self.open_path(&path);
                    }
                }
                DialogAnswer::SaveScreenshot(Some(path)) => self.save_screenshot_to(path),
                DialogAnswer::SaveScreenshot(None) => {}
            }
        }
    }

    /// One frame of the whole window.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        let started = Instant::now();

        self.poll_workers(&ctx);
        self.handle_dropped_files(&ctx);
        self.handle_shortcuts(&ctx);

        egui::Panel::top("menu bar").show(ui, |ui| self.menu_bar_ui(ui));
        egui::Panel::bottom("status bar").show(ui, |ui| self.status_bar_ui(ui));
        if self.panels.side_panel {
            egui::Panel::left("side panel")
                .resizable(true)
                .default_size(300.0)
                .show(ui, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| self.side_panel_ui(ui));
                });
        }
        egui::CentralPanel::no_frame().show(ui, |ui| self.central_ui(ui));
        self.windows_ui(&ctx);
        self.capture_window_when_ready(&ctx);
        // Time the UI thread spent on this frame (not the idle time between frames), smoothed.
        let spent = started.elapsed().as_secs_f32();
        self.frame_seconds = if self.last_frame.is_none() {
            spent
        } else {
            0.9 * self.frame_seconds + 0.1 * spent
        };
        self.last_frame = Some(started);
        if !self.documents.pending.is_empty() || self.screenshot_job.is_some() {
            // Keep the progress bars moving even between worker messages.
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
    }

    fn central_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.add_space(6.0);
            ui.selectable_value(&mut self.central, CentralView::Viewport, "Particles");
            ui.selectable_value(&mut self.central, CentralView::SkyMap, "Sky map");
        });
        match self.central {
            CentralView::Viewport => {
                let style = self.style.clone();
                let target = self.documents.shown_snapshot_mut().map(|d| ViewTarget {
                    document_id: d.id,
                    snapshot: &d.snapshot,
                    camera: &mut d.camera,
                });
                self.viewport.ui(ui, target, &style);
            }
            CentralView::SkyMap => match self.documents.shown_events() {
                Some(document) => {
                    let (id, events) = (document.id, document.events.clone());
                    self.sky_map.ui(ui, id, &events, self.sky_projection);
                }
                None => {
                    let empty = crate::data::EventList::default();
                    self.sky_map.ui(ui, 0, &empty, self.sky_projection);
                }
            },
        }
    }

    fn handle_dropped_files(&mut self, ctx: &egui::Context) {
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

    fn handle_shortcuts(&mut self, ctx: &egui::Context) {
        if ctx.egui_wants_keyboard_input() {
            return;
        }
        let command = egui::Modifiers::COMMAND;
        let (open, quit, reset, home, frame) = ctx.input_mut(|i| {
            (
                i.consume_key(command, egui::Key::O),
                i.consume_key(command, egui::Key::Q),
                i.consume_key(egui::Modifiers::NONE, egui::Key::R),
                i.consume_key(egui::Modifiers::NONE, egui::Key::H),
                i.consume_key(egui::Modifiers::NONE, egui::Key::F),
            )
        });
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

impl eframe::App for HaloscopeApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        HaloscopeApp::ui(self, ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, STORAGE_KEY, &self.session());
    }
}
