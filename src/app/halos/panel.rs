//! The Halos panel: friends-of-friends as a job (progress, cancel), the catalogue table (sortable,
//! click to select and fly), the overlay markers and the catalogue export.

use crate::app::files::documents::{Notice, SnapshotDocument};
use crate::app::viewport::overlay::HaloMarker;
use crate::data::SpeciesKind;
use crate::halo::{self, FofParams, FofResult, LinkingLength, SeparationFrom};
use crate::jobs::{JobEvent, JobHandle, JobId, JobQueue, ProgressUpdate, Waker};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Which catalogue radius the circles show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloRadius {
    /// Root-mean-square member distance from the centre.
    Rms,
    /// Largest member distance from the centre.
    Max,
}

/// Table column to sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Member count.
    Size,
    /// Total mass.
    Mass,
    /// Centre coordinate 0, 1 or 2.
    Position(usize),
}

/// A finished run, tied to the snapshot it was run on.
#[derive(Debug, Clone)]
pub struct HaloCatalogue {
    /// The snapshot document.
    pub document_id: u64,
    /// FoF result (catalogue and labels).
    pub result: Arc<FofResult>,
    /// Species linked.
    pub species: Vec<SpeciesKind>,
    /// Wall time of the run in seconds.
    pub seconds: f64,
}

/// A run in progress.
#[derive(Debug, Clone)]
pub struct RunningFof {
    /// The job.
    pub handle: JobHandle,
    /// The snapshot document.
    pub document_id: u64,
    /// Species linked.
    pub species: Vec<SpeciesKind>,
    /// Latest progress.
    pub progress: Option<ProgressUpdate>,
    started: Instant,
}

/// What the panel asks the application to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalosAction {
    /// Nothing.
    None,
    /// Select halo `index` and fly the camera to it.
    FlyTo(usize),
    /// Ask where to save the catalogue.
    Export,
    /// Load the particles around halo `index` from the snapshot's file.
    LoadRegion(usize),
}

/// State of the Halos panel.
pub struct HalosPanel {
    /// Linking length in mean separations.
    pub b: f64,
    /// Smallest group kept.
    pub min_members: usize,
    /// Species linked (by `SpeciesKind::ALL` order).
    pub species: [bool; 4],
    /// Which particles' separation `b` multiplies.
    pub separation_from: SeparationFrom,
    /// Periodic boundaries.
    pub periodic: bool,
    /// The periodic unit box was ticked because the particles fill it (the file records none).
    pub periodic_proposed: bool,
    /// Periodic box side.
    pub box_size: f64,
    /// Circle radius.
    pub radius: HaloRadius,
    /// Draw circles.
    pub show_circles: bool,
    /// Draw labels.
    pub show_labels: bool,
    /// The run in progress.
    pub running: Option<RunningFof>,
    /// The latest catalogue.
    pub catalogue: Option<HaloCatalogue>,
    /// Sort column.
    pub sort: SortKey,
    /// Largest first.
    pub descending: bool,
    /// Selected halo (catalogue index).
    pub selected: Option<usize>,
    /// The export in progress.
    pub export_job: Option<JobHandle>,
    queue: JobQueue<FofResult>,
    export_queue: JobQueue<PathBuf>,
    order: Vec<usize>,
    defaults_for: Option<u64>,
}

impl HalosPanel {
    /// An idle panel whose jobs wake the UI through `waker`.
    pub fn new(waker: Waker) -> Self {
        Self {
            b: 0.2,
            min_members: 20,
            species: [false, true, false, false],
            separation_from: SeparationFrom::Auto,
            periodic: false,
            periodic_proposed: false,
            box_size: 1.0,
            radius: HaloRadius::Rms,
            show_circles: true,
            show_labels: true,
            running: None,
            catalogue: None,
            sort: SortKey::Size,
            descending: true,
            selected: None,
            export_job: None,
            queue: JobQueue::new(waker.clone()),
            export_queue: JobQueue::new(waker),
            order: Vec::new(),
            defaults_for: None,
        }
    }

    /// Sets species and box from `document` the first time it is seen: dark matter where there
    /// is some (else everything), periodic in the file's box, or in the unit box when the file
    /// records none and the particles fill it ([`fills_unit_box`]).
    pub fn adopt_defaults(&mut self, document: &SnapshotDocument) {
        if self.defaults_for == Some(document.id) {
            return;
        }
        self.defaults_for = Some(document.id);
        let snapshot = &document.snapshot;
        let has_dark = snapshot
            .species(SpeciesKind::Dark)
            .is_some_and(|s| !s.is_empty());
        self.species = SpeciesKind::ALL.map(|kind| {
            let present = snapshot.species(kind).is_some_and(|s| !s.is_empty());
            present && (!has_dark || kind == SpeciesKind::Dark)
        });
        match halo::snapshot_box_size(snapshot) {
            Some(side) => {
                self.periodic = true;
                self.periodic_proposed = false;
                self.box_size = side;
            }
            None => {
                // A tipsy cosmological volume records no box; linking it as isolated cuts every
                // halo that crosses a face.
                let fills = fills_unit_box(document.bounds);
                self.periodic = fills;
                self.periodic_proposed = fills;
                self.box_size = suggested_box_side(document.bounds);
            }
        }
    }

    /// The species ticked.
    pub fn species_selected(&self) -> Vec<SpeciesKind> {
        SpeciesKind::ALL
            .into_iter()
            .zip(self.species)
            .filter_map(|(kind, on)| on.then_some(kind))
            .collect()
    }

    /// Starts friends-of-friends on `document` (cancelling a run in progress).
    pub fn start(&mut self, document: &SnapshotDocument) {
        if let Some(running) = self.running.take() {
            running.handle.cancel();
        }
        let species = self.species_selected();
        let params = FofParams {
            linking_length: LinkingLength::Relative(self.b),
            separation_from: self.separation_from,
            min_members: self.min_members.max(1),
            box_size: self.periodic.then_some(self.box_size),
            // The overlay draws halos only; per-particle labels would cost a 4 B/particle download.
            labels: false,
        };
        let snapshot = document.snapshot.clone();
        let kinds = species.clone();
        let handle = self.queue.spawn(
            format!("friends-of-friends on {}", document.name),
            document.id,
            move |progress| {
                // The window's one back-end, resolved once per process.
                let backend = crate::app::window_backend();
                halo::fof_snapshot(&snapshot, &kinds, &params, &backend, progress)
            },
        );
        self.running = Some(RunningFof {
            handle,
            document_id: document.id,
            species,
            progress: None,
            started: Instant::now(),
        });
    }

    /// Reads another finder's catalogue (SUBFIND groups, Rockstar, AHF: `halo::finders`) on a
    /// worker and shows it over `document` like a friends-of-friends result, lengths placed in
    /// the snapshot's unit (an error when that cannot be decided).
    pub fn open_catalogue(&mut self, path: PathBuf, document: &SnapshotDocument) -> JobId {
        if let Some(running) = self.running.take() {
            running.handle.cancel();
        }
        let header = document.snapshot.header.clone();
        let handle = self.queue.spawn(
            format!("reading {}", path.display()),
            document.id,
            move |_| {
                let catalogue =
                    halo::finders::read_catalogue(&path, halo::finders::SubfindTable::Groups)?;
                let factor = catalogue.length_factor(&header)?;
                Ok::<_, crate::data::ReadError>(catalogue.to_fof_result(factor, None))
            },
        );
        let id = handle.id;
        self.running = Some(RunningFof {
            handle,
            document_id: document.id,
            species: Vec::new(),
            progress: None,
            started: Instant::now(),
        });
        id
    }

    /// Takes in job messages without waiting; returns what the user should read.
    pub fn poll(&mut self) -> Vec<Notice> {
        let mut notices = Vec::new();
        for event in self.queue.drain() {
            let Some(running) = self.running.as_mut().filter(|r| r.handle.id == event.id()) else {
                continue;
            };
            match event {
                JobEvent::Progress { update, .. } => running.progress = Some(update),
                JobEvent::Done { result, .. } => {
                    let seconds = running.started.elapsed().as_secs_f64();
                    let done = self.running.take();
                    // Another finder's catalogue links nothing: no linking length to report.
                    notices.push(Notice::Info(if result.linking_length > 0.0 {
                        format!(
                            "friends-of-friends: {} halos (linking length {:.4}) in {seconds:.1} s",
                            result.halos.len(),
                            result.linking_length
                        )
                    } else {
                        format!("halo catalogue: {} halos", result.halos.len())
                    }));
                    self.catalogue = done.map(|r| HaloCatalogue {
                        document_id: r.document_id,
                        result: Arc::new(result),
                        species: r.species,
                        seconds,
                    });
                    self.selected = None;
                    self.resort();
                }
                JobEvent::Failed { error, .. } => {
                    self.running = None;
                    notices.push(Notice::Error(format!("friends-of-friends: {error}")));
                }
                JobEvent::Cancelled { .. } => {
                    self.running = None;
                    notices.push(Notice::Info("friends-of-friends cancelled".to_owned()));
                }
            }
        }
        for event in self.export_queue.drain() {
            match event {
                JobEvent::Progress { .. } => {}
                JobEvent::Done { result, .. } => {
                    self.export_job = None;
                    notices.push(Notice::Info(format!("saved {}", result.display())));
                }
                JobEvent::Failed { error, .. } => {
                    self.export_job = None;
                    notices.push(Notice::Error(format!("halo export: {error}")));
                }
                JobEvent::Cancelled { .. } => self.export_job = None,
            }
        }
        notices
    }

    /// Writes the catalogue to `path` (CSV or HDF5 by extension) on a worker.
    pub fn export_to(&mut self, path: PathBuf, snapshot: Option<&SnapshotDocument>) {
        let Some(catalogue) = &self.catalogue else {
            return;
        };
        let result = catalogue.result.clone();
        // Halos found here carry the snapshot's source, time and units; another finder's
        // catalogue keeps its masses in that finder's unit, so it gets no unit lines.
        let meta = match snapshot {
            Some(document) if !catalogue.species.is_empty() => {
                let source = document
                    .path
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("demo snapshot"));
                halo::export::CatalogueMeta::of_snapshot(&source, &document.snapshot)
            }
            _ => halo::export::CatalogueMeta::default(),
        };
        self.export_job = Some(self.export_queue.spawn(
            format!("exporting {}", path.display()),
            0,
            move |_| halo::export::write_catalogue_with_meta(&path, &result, &meta).map(|()| path),
        ));
    }

    /// The catalogue of the document `document_id`, if the latest run was on it.
    pub fn catalogue_of(&self, document_id: u64) -> Option<&HaloCatalogue> {
        self.catalogue
            .as_ref()
            .filter(|c| c.document_id == document_id)
    }

    /// Markers for the overlay of document `document_id` (empty when circles are off).
    pub fn markers(&self, document_id: u64) -> Vec<HaloMarker> {
        let Some(catalogue) = self.catalogue_of(document_id).filter(|_| self.show_circles) else {
            return Vec::new();
        };
        catalogue
            .result
            .halos
            .iter()
            .enumerate()
            .map(|(index, h)| HaloMarker {
                index,
                centre_world: h.com,
                radius_world: match self.radius {
                    HaloRadius::Rms => h.radius_rms,
                    HaloRadius::Max => h.radius_max,
                },
            })
            .collect()
    }

    /// Catalogue indices in table order.
    pub fn table_order(&self) -> &[usize] {
        &self.order
    }

    /// Re-sorts the table after the catalogue or the sort column changed.
    pub fn resort(&mut self) {
        let Some(catalogue) = &self.catalogue else {
            self.order.clear();
            return;
        };
        let halos = &catalogue.result.halos;
        let key = |i: usize| -> f64 {
            let h = &halos[i];
            match self.sort {
                SortKey::Size => h.size as f64,
                SortKey::Mass => h.mass,
                SortKey::Position(axis) => h.com[axis.min(2)],
            }
        };
        let mut order: Vec<usize> = (0..halos.len()).collect();
        // Stable sort: equal keys stay in catalogue order (size, then smallest member index).
        order.sort_by(|&a, &b| {
            let ordering = key(a).total_cmp(&key(b));
            if self.descending {
                ordering.reverse()
            } else {
                ordering
            }
        });
        self.order = order;
    }

    /// Clicking a column header: sort by it, or flip the direction when it already is.
    pub fn sort_by(&mut self, key: SortKey) {
        if self.sort == key {
            self.descending = !self.descending;
        } else {
            self.sort = key;
            self.descending = true;
        }
        self.resort();
    }
}

/// The camera distance that frames a halo of radius `radius_world` with a field of view of
/// `fov_y_deg`: its sphere, with margin, fills about a third of the view height.
pub fn framing_distance(radius_world: f64, fov_y_deg: f32) -> f32 {
    let half = (0.5 * fov_y_deg.clamp(1.0, 170.0)).to_radians();
    (3.0 * radius_world as f32 / half.sin()).max(1e-6)
}

/// Coordinates within this of ±0.5 count as tipsy's unit box (cube300.tbin's initial
/// conditions stray up to ~1e-3 outside it before wrapping).
const UNIT_BOX_SLACK: f32 = 0.01;

/// A particle extent of at least this fraction of the side on every axis fills the box.
const FILL_FRACTION: f32 = 0.9;

/// Whether the particles fill tipsy's unit box centred on 0: every coordinate within
/// [`UNIT_BOX_SLACK`] of ±0.5 and every axis's extent at least [`FILL_FRACTION`] of the side.
pub fn fills_unit_box(bounds: Option<([f32; 3], [f32; 3])>) -> bool {
    let Some((lo, hi)) = bounds else {
        return false;
    };
    let limit = 0.5 + UNIT_BOX_SLACK;
    lo.iter().chain(&hi).all(|v| v.abs() <= limit) && (0..3).all(|a| hi[a] - lo[a] >= FILL_FRACTION)
}

/// The box side offered for a file that records none: 1 when every coordinate lies in tipsy's
/// convention of a unit box centred on 0 ([-0.5, 0.5), data/README.md), else the largest
/// extent of the particles (1 without any).
pub fn suggested_box_side(bounds: Option<([f32; 3], [f32; 3])>) -> f64 {
    let Some((lo, hi)) = bounds else {
        return 1.0;
    };
    let limit = 0.5 + UNIT_BOX_SLACK;
    if lo.iter().chain(&hi).all(|v| v.abs() <= limit) {
        return 1.0;
    }
    Some((0..3).map(|a| f64::from(hi[a] - lo[a])).fold(0.0, f64::max))
        .filter(|s| *s > 0.0 && s.is_finite())
        .unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::worker::no_waker;

    #[test]
    fn table_sorts_by_each_column_both_ways() {
        let mut panel = HalosPanel::new(no_waker());
        let halo = |size: usize, mass: f64, x: f64| halo::Halo {
            size,
            min_index: size,
            mass,
            com: [x, 0.0, 0.0],
            velocity: None,
            radius_max: 0.1,
            radius_rms: 0.05,
        };
        let result = FofResult {
            labels: None,
            halos: vec![halo(30, 1.0, 0.5), halo(25, 3.0, 0.1), halo(25, 2.0, 0.9)],
            n_particles: 80,
            n_sets_all_sizes: 3,
            b: Some(0.2),
            mean_separation: 0.1,
            linking_length: 0.02,
            linking_length_from: halo::LinkingLengthSource::Mean { n: 80 },
            min_members: 20,
            frame: None,
            backend: crate::backend::BackendKind::Cpu,
            stage_seconds: Vec::new(),
        };
        panel.catalogue = Some(HaloCatalogue {
            document_id: 7,
            result: Arc::new(result),
            species: vec![SpeciesKind::Dark],
            seconds: 0.0,
        });
        panel.resort();
        assert_eq!(panel.table_order(), &[0, 1, 2]);
        panel.sort_by(SortKey::Mass);
        assert_eq!(panel.table_order(), &[1, 2, 0]);
        panel.sort_by(SortKey::Mass);
        assert_eq!(panel.table_order(), &[0, 2, 1]);
        panel.sort_by(SortKey::Position(0));
        assert_eq!(panel.table_order(), &[2, 0, 1]);
        let markers = panel.markers(7);
        assert_eq!(markers.len(), 3);
        assert_eq!(markers[1].radius_world, 0.05);
        assert!(
            panel.markers(8).is_empty(),
            "another document has no circles"
        );
        panel.radius = HaloRadius::Max;
        assert_eq!(panel.markers(7)[1].radius_world, 0.1);
        // r / sin(22.5°) · 3 for a 45° field of view.
        let d = framing_distance(0.1, 45.0);
        assert!((d - 0.3 / 22.5f32.to_radians().sin()).abs() < 1e-5);
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;
    use crate::jobs::worker::no_waker;
    use std::time::Duration;

    #[test]
    fn a_run_from_the_panel_finds_the_library_halos() {
        let snapshot = crate::render::synthetic::clustered_snapshot(50_000, 1);
        let bounds = crate::app::files::documents::bounds_of(&snapshot);
        let document = SnapshotDocument {
            id: 1,
            name: "clustered".to_owned(),
            path: None,
            snapshot: Arc::new(snapshot),
            bounds,
            camera: Default::default(),
            preview: None,
        };
        let mut panel = HalosPanel::new(no_waker());
        panel.adopt_defaults(&document);
        assert_eq!(panel.species_selected(), vec![SpeciesKind::Dark]);
        panel.start(&document);
        let deadline = Instant::now() + Duration::from_secs(60);
        while panel.running.is_some() {
            panel.poll();
            assert!(Instant::now() < deadline, "FoF did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
        let found = panel.catalogue_of(1).expect("catalogue");
        let params = FofParams {
            box_size: panel.periodic.then_some(panel.box_size),
            ..FofParams::default()
        };
        let direct = halo::fof_snapshot(
            &document.snapshot,
            &[SpeciesKind::Dark],
            &params,
            &crate::backend::Backend::resolve(crate::backend::BackendChoice::Auto).expect("auto"),
            &crate::jobs::Progress::none(),
        )
        .expect("fof");
        assert_eq!(found.result.halos, direct.halos);
        assert!(!direct.halos.is_empty());
    }
}

#[cfg(test)]
mod box_side_tests {
    use super::{fills_unit_box, suggested_box_side};

    #[test]
    fn tipsy_unit_boxes_are_offered_side_one_and_other_files_their_extent() {
        // test4.tbin-like: inside [-0.5, 0.5); cube300-like: a little outside.
        assert_eq!(
            suggested_box_side(Some(([-0.49, -0.3, -0.5], [0.2, 0.499, 0.1]))),
            1.0
        );
        assert_eq!(
            suggested_box_side(Some(([-0.5008, -0.5, -0.5], [0.5003, 0.5, 0.5]))),
            1.0
        );
        // Gadget-like coordinates in [0, 50000): the largest extent.
        assert_eq!(
            suggested_box_side(Some(([0.0, 10.0, 0.0], [40000.0, 49990.0, 100.0]))),
            49980.0
        );
        assert_eq!(suggested_box_side(None), 1.0);
    }

    #[test]
    fn only_particles_filling_the_unit_box_propose_it() {
        // cube300's initial conditions stray just outside ±0.5.
        assert!(fills_unit_box(Some((
            [-0.5008, -0.5, -0.5],
            [0.5003, 0.5, 0.5]
        ))));
        assert!(fills_unit_box(Some((
            [-0.45, -0.45, -0.45],
            [0.45, 0.45, 0.45]
        ))));
        // A galaxy inside the unit box fills it on no axis; a slab on one axis is not a cube.
        assert!(!fills_unit_box(Some(([-0.2, -0.2, -0.2], [0.2, 0.2, 0.2]))));
        assert!(!fills_unit_box(Some(([-0.5, -0.5, -0.1], [0.5, 0.5, 0.1]))));
        assert!(!fills_unit_box(Some(([0.0, 0.0, 0.0], [40.0, 40.0, 40.0]))));
        assert!(!fills_unit_box(None));
    }
}
