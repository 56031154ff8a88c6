//! The application state and its frame: drain workers, handle input, draw panels.

use super::files::documents::{Documents, Notice};
use super::files::file_browser::{BrowsePurpose, FileBrowser};
use super::halos::panel::{HalosAction, HalosPanel, framing_distance};
use super::movie::panel::MoviePanel;
use super::session::{CentralView, PanelState, STORAGE_KEY, Session};
use super::twopoint::panel::TwoPointPanel;
use super::twopoint::sky_map::SkyMap;
use super::twopoint::sky_projection::SkyProjection;
use super::viewport::camera::{Bookmark, OrbitCamera};
use super::viewport::glide::{Glide, looking_at};
use super::viewport::overlay::OverlayOptions;
use super::viewport::pick::{PickRequest, pick_point};
use super::viewport::screenshot::ScreenshotSettings;
use super::viewport::viewport_renderer::{RendererFactory, ViewStyle};
use super::viewport::widget::{OverlayInput, ViewTarget, Viewport};
use crate::backend::Backend;
use crate::jobs::{JobEvent, JobHandle, JobId, JobQueue, Waker};
use crossbeam_channel::{Receiver, Sender};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Notices kept for the status bar's history.
const MAX_NOTICES: usize = 50;
/// Width of the side panel on a first start, points.
const SIDE_PANEL_DEFAULT: f32 = 300.0;
/// Narrowest the side panel may be dragged, points (less in a very small window).
const SIDE_PANEL_MIN: f32 = 200.0;
/// Widest the side panel may be dragged, points.
const SIDE_PANEL_MAX: f32 = 520.0;
/// Share of the window's width the side panel may take at most: the rest is the viewport's.
const SIDE_PANEL_SHARE: f32 = 0.45;

/// The widest the side panel may be in a window `window_width` points wide.
fn side_panel_max(window_width: f32) -> f32 {
    (window_width * SIDE_PANEL_SHARE).clamp(1.0, SIDE_PANEL_MAX)
}

/// What a file dialog thread sends back.
pub(super) enum DialogAnswer {
    /// Files to open (empty when the user cancelled).
    Open(Vec<PathBuf>),
    /// Where to save a screenshot (`None` when the user cancelled).
    SaveScreenshot(Option<PathBuf>),
    /// Where to export the halo catalogue (`None` when the user cancelled).
    ExportCatalogue(Option<PathBuf>),
    /// No system dialog could be shown: use the built-in one.
    Unavailable(BrowsePurpose),
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
    /// Time the UI thread spent on the latest frame, seconds.
    pub last_frame_seconds: f32,
    /// The Halos panel (FoF runs, catalogue, table).
    pub halos: HalosPanel,
    /// The two-point analysis.
    pub twopoint: TwoPointPanel,
    /// The Movie panel (keyframes, timeline, Render movie window).
    pub movie: MoviePanel,
    /// The camera flight in progress.
    pub glide: Option<Glide>,
    /// The back-end chosen at start and why.
    pub backend: Backend,
    /// The built-in file chooser, when open.
    pub file_browser: Option<FileBrowser>,
    /// Whether the system file dialog works (false once it failed to appear).
    pub native_dialogs: bool,
    pub(super) pick_jobs: JobQueue<Option<[f64; 3]>>,
    pub(super) pick_job: Option<(JobHandle, u64)>,
    pub(super) screenshot_jobs: JobQueue<PathBuf>,
    /// The screenshot being rendered.
    pub screenshot_job: Option<JobHandle>,
    pub(super) dialog_tx: Sender<DialogAnswer>,
    pub(super) dialog_rx: Receiver<DialogAnswer>,
    pub(super) dialog_open: bool,
    pub(super) restore_camera: Option<OrbitCamera>,
    pub(super) factory: RendererFactory,
    pub(super) waker: Waker,
    pub(super) last_frame: Option<Instant>,
    pub(super) capture: Option<(PathBuf, bool)>,
    pub(super) document_styles: super::document_style::DocumentStyles,
    pub(super) reloading: bool,
    pub(super) last_save_dir: Option<PathBuf>,
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
        super::startup_log::step("window open, application starting");
        let session = session.unwrap_or_default();
        let mut app = Self::empty(ctx, &session, factory);
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
                app.reloading = true;
                for path in &last {
                    app.open_path(path);
                }
            }
        }
        app
    }

    /// The application with `session`'s settings and nothing open (benchmarks and scripts add
    /// documents with `documents.insert_snapshot`).
    pub fn empty(ctx: &egui::Context, session: &Session, factory: RendererFactory) -> Self {
        let repaint_ctx = ctx.clone();
        let waker: Waker = Arc::new(move || repaint_ctx.request_repaint());
        let (dialog_tx, dialog_rx) = crossbeam_channel::unbounded();
        let app = Self {
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
            last_frame_seconds: 0.0,
            halos: HalosPanel::new(waker.clone()),
            twopoint: TwoPointPanel::new(waker.clone()),
            movie: MoviePanel::new(&session.movie, waker.clone()),
            glide: None,
            backend: super::window_backend(),
            file_browser: None,
            native_dialogs: true,
            pick_jobs: JobQueue::new(waker.clone()),
            pick_job: None,
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
            document_styles: Default::default(),
            reloading: false,
            last_save_dir: None,
        };
        if let Some(reason) = app.backend.fallback_reason() {
            log::info!("rendering on the CPU: {reason}");
        }
        app
    }

    /// Opens `path` (snapshot or event list) on a worker: the path the menu, the recent list,
    /// drag-and-drop and the command line all take.
    pub fn open_path(&mut self, path: &Path) -> JobId {
        // Another finder's halo catalogue opens over the snapshot shown, like a FoF result.
        if crate::halo::finders::looks_like_catalogue(path).unwrap_or(false) {
            let Some(document) = self.documents.shown_snapshot() else {
                self.notify(Notice::Error(format!(
                    "{}: a halo catalogue is shown over a snapshot: open the snapshot first",
                    path.display()
                )));
                // No job started: ids count from 1.
                return JobId(0);
            };
            let document = document.clone();
            self.central = CentralView::Viewport;
            return self.halos.open_catalogue(path.to_path_buf(), &document);
        }
        self.documents.open(path)
    }

    /// Opens the particles within 3 radii of halo `index` as a snapshot of their own.
    fn load_halo_region(&mut self, index: usize) {
        let Some(document) = self.documents.shown_snapshot() else {
            return;
        };
        let Some(path) = document.path.clone() else {
            self.notify(Notice::Error(
                "the demo snapshot has no file to load a region from".to_owned(),
            ));
            return;
        };
        let period = crate::halo::snapshot_box_size(&document.snapshot);
        let Some(halo) = self
            .halos
            .catalogue_of(document.id)
            .and_then(|c| c.result.halos.get(index))
        else {
            return;
        };
        let radius = 3.0 * halo.radius_max.max(halo.radius_rms);
        let region = crate::data::region::Region::around(halo.com, radius);
        self.documents.open_region(&path, region, period);
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
            movie: self.movie.saved(),
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
        for notice in self.halos.poll() {
            self.notify(notice);
        }
        for notice in self.twopoint.poll() {
            self.notify(notice);
        }
        self.poll_pick();
        self.poll_movie(ctx);
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
                DialogAnswer::SaveScreenshot(Some(path)) => {
                    self.remember_save_dir(&path);
                    self.save_screenshot_to(path);
                }
                DialogAnswer::ExportCatalogue(Some(path)) => {
                    self.remember_save_dir(&path);
                    self.export_catalogue_to(path);
                }
                DialogAnswer::SaveScreenshot(None) | DialogAnswer::ExportCatalogue(None) => {}
                DialogAnswer::Unavailable(purpose) => self.system_dialog_unavailable(purpose),
            }
        }
    }

    /// One frame of the whole window.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        let started = Instant::now();

        self.poll_workers(&ctx);
        if self.documents.pending.is_empty() {
            self.reloading = false;
        }
        self.sync_document_style();
        self.handle_dropped_files(&ctx);
        self.handle_shortcuts(&ctx);

        egui::Panel::top("menu bar").show(ui, |ui| self.menu_bar_ui(ui));
        egui::Panel::bottom("status bar").show(ui, |ui| self.status_bar_ui(ui));
        if self.panels.side_panel {
            let window_width = ui.available_width();
            egui::Panel::left("side panel")
                .resizable(true)
                .default_size(SIDE_PANEL_DEFAULT.min(side_panel_max(window_width)))
                .size_range(
                    SIDE_PANEL_MIN.min(side_panel_max(window_width))..=side_panel_max(window_width),
                )
                .show(ui, |ui| {
                    // Fill the panel's width, and scroll content wider than the panel (the
                    // halo table) rather than widen it: the panel keeps the width the user
                    // gave it (egui remembers it), and the viewport never jumps.
                    egui::ScrollArea::both()
                        .auto_shrink([false, true])
                        .show(ui, |ui| self.side_panel_ui(ui));
                });
        }
        egui::CentralPanel::no_frame().show(ui, |ui| self.central_ui(ui));
        self.windows_ui(&ctx);
        self.file_browser_ui(&ctx);
        self.capture_window_when_ready(&ctx);
        // Time the UI thread spent on this frame (not the idle time between frames), smoothed.
        let spent = started.elapsed().as_secs_f32();
        self.last_frame_seconds = spent;
        self.frame_seconds = if self.last_frame.is_none() {
            spent
        } else {
            0.9 * self.frame_seconds + 0.1 * spent
        };
        self.last_frame = Some(started);
        if !self.documents.pending.is_empty()
            || self.screenshot_job.is_some()
            || self.halos.running.is_some()
            || self.twopoint.is_running()
            || self.movie.render.is_running()
        {
            // Keep the progress bars moving even between worker messages.
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
    }

    fn central_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.add_space(6.0);
            ui.selectable_value(&mut self.central, CentralView::Viewport, "Particles");
            ui.selectable_value(&mut self.central, CentralView::SkyMap, "Sky map");
            ui.selectable_value(&mut self.central, CentralView::TwoPoint, "Two-point");
        });
        match self.central {
            CentralView::Viewport => self.viewport_ui(ui),
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
            CentralView::TwoPoint => {
                let document = self.documents.shown_events().cloned();
                let id = document.as_ref().map(|d| d.id);
                if id.and_then(|id| self.twopoint.state_of(id)).is_none() {
                    // Nothing to plot yet: offer the controls here, not only in the side panel.
                    ui.vertical_centered(|ui| {
                        ui.add_space(ui.available_height() / 3.0);
                        ui.set_max_width(320.0);
                        if let Some(document) = &document {
                            ui.label(format!(
                                "Event list: {} ({} events)",
                                document.name,
                                document.events.len()
                            ));
                        }
                        if self.documents.event_files_open() >= 2
                            && ui.button("Combine the open event lists first").clicked()
                        {
                            self.documents.combine_event_lists();
                        }
                        self.twopoint.controls_ui(ui, document.as_ref());
                    });
                } else {
                    self.twopoint.plots_ui(ui, id);
                }
            }
        }
    }

    fn viewport_ui(&mut self, ui: &mut egui::Ui) {
        // The side panel may have shown another snapshot this frame.
        self.sync_document_style();
        if self.documents.shown_snapshot().is_none() && !self.documents.pending.is_empty() {
            self.loading_ui(ui);
            return;
        }
        let now = Instant::now();
        if let Some(glide) = self.glide
            && let Some(document) = self.documents.shown_snapshot_mut()
        {
            let (camera, done) = glide.at(now);
            document.camera = camera;
            if done {
                self.glide = None;
            } else {
                ui.ctx().request_repaint();
            }
        }
        let style = self.style.clone();
        let input = match self.documents.shown_snapshot() {
            Some(document) => OverlayInput {
                halos: self.halos.markers(document.id),
                selected: self.halos.selected,
                options: Some(OverlayOptions {
                    halos: self.halos.show_circles,
                    labels: self.halos.show_labels,
                    color_bar: style.show_color_bar,
                    scale_bar: style.show_scale_bar,
                }),
            },
            None => OverlayInput::default(),
        };
        let target = self.documents.shown_snapshot_mut().map(|d| ViewTarget {
            document_id: d.id,
            snapshot: &d.snapshot,
            preview: d.preview.as_ref(),
            camera: &mut d.camera,
        });
        let output = self.viewport.ui(ui, target, &style, &input);
        if output.camera_moved {
            self.glide = None;
            self.movie.timeline.pause();
        }
        if let Some(index) = output.clicked_halo {
            self.fly_to_halo(index);
        }
        if let Some(at) = output.double_clicked {
            self.start_pick(at, output.response.rect.size());
        }
    }

    /// Selects halo `index` of the catalogue shown and flies the camera to it.
    pub fn fly_to_halo(&mut self, index: usize) {
        let Some(document) = self.documents.shown_snapshot() else {
            return;
        };
        let Some(halo) = self
            .halos
            .catalogue_of(document.id)
            .and_then(|c| c.result.halos.get(index))
            .cloned()
        else {
            return;
        };
        self.halos.selected = Some(index);
        let from = document.camera;
        let to = looking_at(
            &from,
            halo.com,
            framing_distance(halo.radius_max, from.fov_y_deg),
        );
        self.glide = Some(Glide::new(from, to, Instant::now()));
    }

    /// Double-click: finds the depth of the brightest point `at` (points from the viewport's
    /// corner) on a worker, then glides there.
    fn start_pick(&mut self, at: egui::Pos2, size_points: egui::Vec2) {
        let Some(document) = self.documents.shown_snapshot() else {
            return;
        };
        if let Some((job, _)) = self.pick_job.take() {
            job.cancel();
        }
        let request = PickRequest {
            snapshot: document.snapshot.clone(),
            style: self.style.clone(),
            camera: document.camera,
            size_points,
            at,
            image: self.viewport.shown_image().cloned(),
        };
        let handle = self
            .pick_jobs
            .spawn("re-centring", document.id, move |progress| {
                pick_point(&request, progress)
            });
        self.pick_job = Some((handle, document.id));
    }

    fn poll_pick(&mut self) {
        for event in self.pick_jobs.drain() {
            let Some((job, document_id)) = &self.pick_job else {
                continue;
            };
            if job.id != event.id() {
                continue;
            }
            let document_id = *document_id;
            match event {
                JobEvent::Progress { .. } => continue,
                JobEvent::Done {
                    result: Some(point),
                    ..
                } => {
                    if let Some(document) = self
                        .documents
                        .shown_snapshot()
                        .filter(|d| d.id == document_id)
                    {
                        let from = document.camera;
                        let to = looking_at(&from, point, from.distance());
                        self.glide = Some(Glide::new(from, to, Instant::now()));
                    }
                }
                JobEvent::Done { result: None, .. } => {
                    self.notify(Notice::Info(
                        "nothing drawn under the cursor to centre on".to_owned(),
                    ));
                }
                JobEvent::Failed { error, .. } => {
                    self.notify(Notice::Error(format!("re-centring: {error}")));
                }
                JobEvent::Cancelled { .. } => {}
            }
            self.pick_job = None;
        }
    }

    /// Acts on what the Halos panel asked for.
    pub(super) fn halos_action(&mut self, action: HalosAction) {
        match action {
            HalosAction::None => {}
            HalosAction::FlyTo(index) => {
                self.central = CentralView::Viewport;
                self.fly_to_halo(index);
            }
            HalosAction::Export => self.export_dialog(),
            HalosAction::LoadRegion(index) => self.load_halo_region(index),
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
