//! Open snapshots and event lists, the loads in progress, and the recent-files list.
//!
//! Every load runs as a job on a worker ([`crate::jobs::JobQueue`]); the UI polls it each frame.

use super::refine::{Refinements, provisional_smoothing};
use crate::app::startup_log;
use crate::app::viewport::camera::OrbitCamera;
use crate::data::{self, EventList, LoadOptions, Loaded, Snapshot};
use crate::jobs::{JobEvent, JobHandle, JobId, JobQueue, Progress, ProgressUpdate, Waker};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Particles in the built-in demo snapshot.
pub const DEMO_PARTICLES: u64 = 200_000;
/// Events in the built-in demo event list.
pub const DEMO_EVENTS: usize = 20_000;
/// Seed of the demo data.
pub const DEMO_SEED: u64 = 42;
/// Length of the recent-files list.
pub const MAX_RECENT: usize = 10;

/// Where a load reads from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadSource {
    /// A file on disk.
    File(PathBuf),
    /// The built-in demo snapshot and event list.
    Demo,
}

impl LoadSource {
    /// Short name for the UI.
    pub fn label(&self) -> String {
        match self {
            Self::File(path) => file_name(path),
            Self::Demo => "demo data".to_owned(),
        }
    }
}

/// What a load produced (the snapshot's bounds are computed on the worker too).
#[derive(Debug)]
pub enum LoadedDocument {
    /// A snapshot, the box around its finite positions, its preview subsample and the indices
    /// of the species whose smoothing lengths are provisional (refined after it opens).
    Snapshot(
        Snapshot,
        Option<([f32; 3], [f32; 3])>,
        Option<Snapshot>,
        Vec<usize>,
    ),
    /// An event list.
    Events(EventList),
    /// The demo: both.
    Demo(Snapshot, Option<([f32; 3], [f32; 3])>, EventList),
}

/// An open snapshot.
#[derive(Debug, Clone)]
pub struct SnapshotDocument {
    /// Unique within the session.
    pub id: u64,
    /// Name shown in the selector.
    pub name: String,
    /// The file, `None` for the demo.
    pub path: Option<PathBuf>,
    /// The particles.
    pub snapshot: Arc<Snapshot>,
    /// Box around the finite positions, `None` when there are none.
    pub bounds: Option<([f32; 3], [f32; 3])>,
    /// The current view of it.
    pub camera: OrbitCamera,
    /// A subsample drawn while the camera moves (big snapshots only).
    pub preview: Option<Arc<Snapshot>>,
}

impl SnapshotDocument {
    /// The default view: everything framed, looking down −z.
    pub fn home_camera(&self) -> OrbitCamera {
        match self.bounds {
            Some((min, max)) => OrbitCamera::home(min, max),
            None => OrbitCamera::default(),
        }
    }
}

/// An open event list.
#[derive(Debug, Clone)]
pub struct EventsDocument {
    /// Unique within the session.
    pub id: u64,
    /// Name shown in the selector.
    pub name: String,
    /// The file, `None` for the demo.
    pub path: Option<PathBuf>,
    /// The events.
    pub events: Arc<EventList>,
}

/// A load in progress.
#[derive(Debug, Clone)]
pub struct PendingLoad {
    /// The job.
    pub handle: JobHandle,
    /// What it reads.
    pub source: LoadSource,
    /// The latest progress report.
    pub progress: Option<ProgressUpdate>,
}

/// Something the user should read in the status bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Good news.
    Info(String),
    /// A failure, in readable form.
    Error(String),
}

/// All open documents and loads.
pub struct Documents {
    queue: JobQueue<LoadedDocument>,
    /// Loads in progress.
    pub pending: Vec<PendingLoad>,
    /// Open snapshots.
    pub snapshots: Vec<SnapshotDocument>,
    /// Open event lists.
    pub events: Vec<EventsDocument>,
    /// Index of the snapshot shown.
    pub shown_snapshot: Option<usize>,
    /// Index of the event list shown.
    pub shown_events: Option<usize>,
    /// Recently opened files, newest first.
    pub recent: Vec<PathBuf>,
    /// Smoothing lengths still being computed for open snapshots.
    pub refining: Refinements,
    next_id: u64,
}

impl Documents {
    /// The files of the open snapshots and event lists (for refusing to save over one).
    pub fn open_paths(&self) -> Vec<PathBuf> {
        let snapshots = self.snapshots.iter().filter_map(|d| d.path.clone());
        snapshots
            .chain(self.events.iter().filter_map(|d| d.path.clone()))
            .collect()
    }

    /// Nothing open; loads wake the UI through `waker`.
    pub fn new(waker: Waker, recent: Vec<PathBuf>) -> Self {
        Self {
            queue: JobQueue::new(waker.clone()),
            pending: Vec::new(),
            snapshots: Vec::new(),
            events: Vec::new(),
            shown_snapshot: None,
            shown_events: None,
            recent,
            refining: Refinements::new(waker),
            next_id: 0,
        }
    }

    /// Starts loading `path` (snapshot or event list, whichever it is) on a worker.
    pub fn open(&mut self, path: &Path) -> JobId {
        let owned = path.to_path_buf();
        let handle = self
            .queue
            .spawn(format!("loading {}", file_name(path)), 0, move |progress| {
                let loaded = data::load_any(&owned, &LoadOptions::default(), progress)
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(match loaded {
                    Loaded::Snapshot(mut snapshot) => {
                        let provisional = provisional_smoothing(&mut snapshot);
                        let bounds = bounds_of(&snapshot);
                        let preview = crate::app::viewport::preview::preview_subsample(&snapshot);
                        LoadedDocument::Snapshot(snapshot, bounds, preview, provisional)
                    }
                    Loaded::Events(events) => LoadedDocument::Events(events),
                })
            });
        let id = handle.id;
        self.pending.push(PendingLoad {
            handle,
            source: LoadSource::File(path.to_path_buf()),
            progress: None,
        });
        id
    }

    /// Starts loading only the particles of `path` inside `region` (wrapped by `period`, see
    /// `data::region`) on a worker; the part opens as a snapshot of its own.
    pub fn open_region(
        &mut self,
        path: &Path,
        region: data::region::Region,
        period: Option<f64>,
    ) -> JobId {
        let owned = path.to_path_buf();
        let handle = self.queue.spawn(
            format!("loading a region of {}", file_name(path)),
            0,
            move |progress| {
                let mut snapshot = data::region::read_region(&owned, &region, period, progress)
                    .map_err(|e| e.to_string())?;
                if snapshot.n_particles() == 0 {
                    return Err(format!(
                        "{}: no particle inside the region",
                        file_name(&owned)
                    ));
                }
                let provisional = provisional_smoothing(&mut snapshot);
                let bounds = bounds_of(&snapshot);
                let preview = crate::app::viewport::preview::preview_subsample(&snapshot);
                Ok::<_, String>(LoadedDocument::Snapshot(
                    snapshot,
                    bounds,
                    preview,
                    provisional,
                ))
            },
        );
        let id = handle.id;
        self.pending.push(PendingLoad {
            handle,
            source: LoadSource::File(path.to_path_buf()),
            progress: None,
        });
        id
    }

    /// Starts making the demo snapshot and event list on a worker.
    pub fn open_demo(&mut self) -> JobId {
        let handle = self.queue.spawn("making demo data", 0, |progress| {
            progress.report("demo snapshot", 0, 2);
            let started = std::time::Instant::now();
            let mut snapshot = data::demo::demo_snapshot(DEMO_PARTICLES, DEMO_SEED);
            startup_log::duration("demo snapshot", started.elapsed().as_secs_f64());
            progress.check().map_err(|e| e.to_string())?;
            let started = std::time::Instant::now();
            fill_missing_smoothing(&mut snapshot, progress).map_err(|e| e.to_string())?;
            startup_log::duration("demo smoothing lengths", started.elapsed().as_secs_f64());
            progress.report("demo events", 1, 2);
            let started = std::time::Instant::now();
            let events = data::demo::demo_events(DEMO_EVENTS, DEMO_SEED);
            startup_log::duration("demo events", started.elapsed().as_secs_f64());
            progress.report("demo events", 2, 2);
            let bounds = bounds_of(&snapshot);
            Ok::<_, String>(LoadedDocument::Demo(snapshot, bounds, events))
        });
        let id = handle.id;
        self.pending.push(PendingLoad {
            handle,
            source: LoadSource::Demo,
            progress: None,
        });
        id
    }

    /// Asks the load `id` to stop.
    pub fn cancel(&self, id: JobId) {
        if let Some(load) = self.pending.iter().find(|l| l.handle.id == id) {
            load.handle.cancel();
        }
    }

    /// Takes in progress and finished loads without waiting; returns what the user should read.
    pub fn poll(&mut self) -> Vec<Notice> {
        let mut notices = self.take_refined();
        for event in self.queue.drain() {
            let id = event.id();
            let Some(index) = self.pending.iter().position(|l| l.handle.id == id) else {
                continue;
            };
            match event {
                JobEvent::Progress { update, .. } => self.pending[index].progress = Some(update),
                JobEvent::Done { result, .. } => {
                    let load = self.pending.remove(index);
                    notices.push(self.add(load.source, result));
                }
                JobEvent::Failed { error, .. } => {
                    let load = self.pending.remove(index);
                    notices.push(Notice::Error(match load.source {
                        // Reader errors already start with the file name.
                        LoadSource::File(_) => error,
                        LoadSource::Demo => format!("demo data: {error}"),
                    }));
                }
                JobEvent::Cancelled { .. } => {
                    let load = self.pending.remove(index);
                    notices.push(Notice::Info(format!(
                        "{}: loading cancelled",
                        load.source.label()
                    )));
                }
            }
        }
        notices
    }

    /// Puts the smoothing lengths that arrived in place of the provisional ones (a new
    /// snapshot `Arc`, so every cache keyed by it is redrawn); reports failures.
    fn take_refined(&mut self) -> Vec<Notice> {
        let (done, errors) = self.refining.poll();
        let mut notices: Vec<Notice> = errors.into_iter().map(Notice::Error).collect();
        for refined in done {
            if let Some(document) = self.snapshots.iter_mut().find(|d| d.id == refined.document) {
                document.snapshot = Arc::new(refined.snapshot);
                document.preview = refined.preview.map(Arc::new);
                notices.push(Notice::Info(format!(
                    "{}: smoothing lengths ready (kNN on the {})",
                    document.name, refined.computed_on
                )));
            }
        }
        notices
    }

    /// The snapshot shown, if any.
    pub fn shown_snapshot(&self) -> Option<&SnapshotDocument> {
        self.snapshots.get(self.shown_snapshot?)
    }

    /// The snapshot shown, mutable.
    pub fn shown_snapshot_mut(&mut self) -> Option<&mut SnapshotDocument> {
        self.snapshots.get_mut(self.shown_snapshot?)
    }

    /// The event list shown, if any.
    pub fn shown_events(&self) -> Option<&EventsDocument> {
        self.events.get(self.shown_events?)
    }

    /// Closes snapshot `index`, showing a neighbour.
    pub fn close_snapshot(&mut self, index: usize) {
        if index < self.snapshots.len() {
            let document = self.snapshots.remove(index);
            self.refining.cancel(document.id);
            self.shown_snapshot = fix_shown(self.shown_snapshot, index, self.snapshots.len());
        }
    }

    /// Closes event list `index`, showing a neighbour.
    pub fn close_events(&mut self, index: usize) {
        if index < self.events.len() {
            self.events.remove(index);
            self.shown_events = fix_shown(self.shown_events, index, self.events.len());
        }
    }

    /// The files of every open document, snapshots first (for the saved session).
    pub fn open_files(&self) -> Vec<PathBuf> {
        let snapshots = self.snapshots.iter().filter_map(|d| d.path.clone());
        let events = self.events.iter().filter_map(|d| d.path.clone());
        snapshots.chain(events).collect()
    }

    fn add(&mut self, source: LoadSource, loaded: LoadedDocument) -> Notice {
        let path = match &source {
            LoadSource::File(path) => Some(path.clone()),
            LoadSource::Demo => None,
        };
        if let Some(path) = &path {
            self.remember_recent(path);
        }
        let name = source.label();
        match loaded {
            LoadedDocument::Snapshot(snapshot, bounds, preview, provisional) => {
                let n = snapshot.n_particles();
                self.add_snapshot(name.clone(), path, snapshot, bounds);
                let Some(document) = self.snapshots.last_mut() else {
                    return Notice::Info(format!("{name}: {n} particles"));
                };
                document.preview = preview.map(Arc::new);
                if provisional.is_empty() {
                    return Notice::Info(format!("{name}: {n} particles"));
                }
                // Shown now with provisional lengths; the k-th-neighbour ones follow.
                self.refining
                    .start(document.id, document.snapshot.clone(), provisional);
                Notice::Info(format!(
                    "{name}: {n} particles (smoothing lengths on the way)"
                ))
            }
            LoadedDocument::Events(events) => {
                let n = events.len();
                self.add_events(name.clone(), path, events);
                Notice::Info(format!("{name}: {n} events"))
            }
            LoadedDocument::Demo(snapshot, bounds, events) => {
                startup_log::step("demo data open");
                let (n, m) = (snapshot.n_particles(), events.len());
                self.add_snapshot("demo snapshot".to_owned(), None, snapshot, bounds);
                self.add_events("demo events".to_owned(), None, events);
                Notice::Info(format!("demo data: {n} particles, {m} events"))
            }
        }
    }

    /// Opens an in-memory snapshot (benchmarks, scripts) as if it had been loaded, and shows it.
    pub fn insert_snapshot(&mut self, name: &str, snapshot: Snapshot) -> u64 {
        let bounds = bounds_of(&snapshot);
        let preview = crate::app::viewport::preview::preview_subsample(&snapshot).map(Arc::new);
        self.add_snapshot(name.to_owned(), None, snapshot, bounds);
        if let Some(document) = self.snapshots.last_mut() {
            document.preview = preview;
        }
        self.next_id
    }

    /// Opens an in-memory event list as if it had been loaded, and shows it.
    pub fn insert_events(&mut self, name: &str, events: EventList) -> u64 {
        self.add_events(name.to_owned(), None, events);
        self.next_id
    }

    fn add_snapshot(
        &mut self,
        name: String,
        path: Option<PathBuf>,
        snapshot: Snapshot,
        bounds: Option<([f32; 3], [f32; 3])>,
    ) {
        self.next_id += 1;
        let mut document = SnapshotDocument {
            id: self.next_id,
            name,
            path,
            snapshot: Arc::new(snapshot),
            bounds,
            camera: OrbitCamera::default(),
            preview: None,
        };
        document.camera = document.home_camera();
        self.snapshots.push(document);
        self.shown_snapshot = Some(self.snapshots.len() - 1);
    }

    /// How many open event lists were read from files (what [`Self::combine_event_lists`]
    /// combines).
    pub fn event_files_open(&self) -> usize {
        self.events.iter().filter(|d| d.path.is_some()).count()
    }

    /// Opens one more event list holding every list read from a file, in the order shown (as
    /// the CLI concatenates several files), and shows it; nothing when fewer than two are open.
    pub fn combine_event_lists(&mut self) {
        let files: Vec<&EventsDocument> = self.events.iter().filter(|d| d.path.is_some()).collect();
        if files.len() < 2 {
            return;
        }
        let lists: Vec<&EventList> = files.iter().map(|d| d.events.as_ref()).collect();
        let combined = EventList::concatenated(&lists);
        let name = files
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>()
            .join(" + ");
        self.add_events(name, None, combined);
    }

    fn add_events(&mut self, name: String, path: Option<PathBuf>, events: EventList) {
        self.next_id += 1;
        self.events.push(EventsDocument {
            id: self.next_id,
            name,
            path,
            events: Arc::new(events),
        });
        self.shown_events = Some(self.events.len() - 1);
    }

    fn remember_recent(&mut self, path: &Path) {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.recent.retain(|p| *p != path);
        self.recent.insert(0, path);
        self.recent.truncate(MAX_RECENT);
    }
}

fn fix_shown(shown: Option<usize>, removed: usize, len: usize) -> Option<usize> {
    let shown = shown?;
    if len == 0 {
        return None;
    }
    Some(if shown > removed {
        shown - 1
    } else {
        shown.min(len - 1)
    })
}

/// The file name of `path` for display.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Gives every species without smoothing lengths the distance to its 32nd nearest neighbour
/// (DESIGN §2: computed once and kept in memory, so every frame does not pay for it). Periodic
/// where the snapshot's box is.
pub fn fill_missing_smoothing(
    snapshot: &mut Snapshot,
    progress: &Progress,
) -> Result<(), crate::render::RenderError> {
    let box_size = snapshot.header.periodic_box();
    for species in &mut snapshot.species {
        if species.smoothing_lengths.is_none() && !species.is_empty() {
            progress.report(&format!("{} smoothing lengths", species.kind), 0, 1);
            let h = crate::render::smoothing::knn_smoothing_lengths(
                &species.positions,
                crate::render::smoothing::DEFAULT_KNN,
                box_size,
                progress,
            )?;
            species.smoothing_lengths = Some(h);
            progress.report(&format!("{} smoothing lengths", species.kind), 1, 1);
        }
    }
    Ok(())
}

/// The box around every finite particle position, `None` when there is none.
pub fn bounds_of(snapshot: &Snapshot) -> Option<([f32; 3], [f32; 3])> {
    let mut min = [f32::INFINITY; 3];
    let mut max = [f32::NEG_INFINITY; 3];
    for species in &snapshot.species {
        for p in &species.positions {
            if p.iter().all(|v| v.is_finite()) {
                for axis in 0..3 {
                    min[axis] = min[axis].min(p[axis]);
                    max[axis] = max[axis].max(p[axis]);
                }
            }
        }
    }
    (min[0] <= max[0]).then_some((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_keeps_a_sensible_selection() {
        // Showing 2 of 3, close 0 → the same document, now at 1.
        assert_eq!(fix_shown(Some(2), 0, 2), Some(1));
        // Showing 1 of 3, close 1 → its next neighbour, now at 1.
        assert_eq!(fix_shown(Some(1), 1, 2), Some(1));
        // Showing the last of 3, close it → the new last.
        assert_eq!(fix_shown(Some(2), 2, 2), Some(1));
        // Showing 0, close 0 of 2 → the new 0.
        assert_eq!(fix_shown(Some(0), 0, 1), Some(0));
        // Showing 0 of 2, close 1 → still 0.
        assert_eq!(fix_shown(Some(0), 1, 1), Some(0));
        assert_eq!(fix_shown(Some(0), 0, 0), None);
    }

    #[test]
    fn combining_event_lists_concatenates_them_in_order_and_shows_the_result() {
        let mut documents = Documents::new(Arc::new(|| {}), Vec::new());
        documents.combine_event_lists();
        assert!(documents.events.is_empty(), "nothing to combine");
        let a = crate::data::demo::demo_events(30, 1);
        let b = crate::data::demo::demo_events(20, 2);
        documents.add_events("a.txt".into(), Some("a.txt".into()), a.clone());
        documents.combine_event_lists();
        assert_eq!(documents.events.len(), 1, "one list is not combined");
        documents.add_events("b.txt".into(), Some("b.txt".into()), b.clone());
        documents.combine_event_lists();
        assert_eq!(documents.events.len(), 3);
        assert_eq!(
            documents.event_files_open(),
            2,
            "the combined list is not a file"
        );
        let shown = documents
            .shown_events()
            .expect("the combined list is shown");
        assert_eq!(shown.name, "a.txt + b.txt");
        assert_eq!(*shown.events, EventList::concatenated(&[&a, &b]));
        assert_eq!(shown.events.len(), 50);
        assert_eq!(shown.events.ra[30..], b.ra[..]);
        // Combining again gives the same two files, not the combination twice.
        documents.combine_event_lists();
        assert_eq!(documents.events.len(), 4);
        assert_eq!(documents.events[3].events.len(), 50);
    }

    #[test]
    fn bounds_skip_nonfinite_positions() {
        let mut snapshot = Snapshot {
            header: data::Header::default(),
            species: Vec::new(),
            source: data::SourceInfo {
                paths: Vec::new(),
                format: data::SnapshotFormat::Demo,
                byte_order: None,
                header_bytes: None,
                particles_in_file: 0,
            },
        };
        assert_eq!(bounds_of(&snapshot), None);
        let mut dark = data::Species::empty(data::SpeciesKind::Dark);
        dark.positions = vec![[1.0, -2.0, 3.0], [f32::NAN, 0.0, 0.0], [-1.0, 4.0, 0.5]];
        snapshot.species.push(dark);
        assert_eq!(
            bounds_of(&snapshot),
            Some(([-1.0, -2.0, 0.5], [1.0, 4.0, 3.0]))
        );
    }
}
