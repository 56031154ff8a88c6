//! Smoothing lengths that arrive after the snapshot: a loaded snapshot whose species have none
//! opens at once with a provisional length per species (the radius that holds k neighbours at
//! the species' mean density), and a worker computes the k-th-neighbour lengths beside the
//! window; when they arrive the document's snapshot (and preview) is replaced, so the next
//! frame draws the refined particles.

use crate::data::Snapshot;
use crate::jobs::{JobEvent, JobHandle, JobQueue, Progress, Waker};
use crate::render::knn;
use crate::render::smoothing::DEFAULT_KNN;
use std::sync::Arc;

/// Gives every non-empty species without smoothing lengths one provisional length for all its
/// particles: the radius of the sphere that holds k neighbours at the species' mean density
/// over its bounding box (or the periodic box). Returns the indices of those species.
pub fn provisional_smoothing(snapshot: &mut Snapshot) -> Vec<usize> {
    let box_size = snapshot.header.periodic_box();
    let mut provisional = Vec::new();
    for (index, species) in snapshot.species.iter_mut().enumerate() {
        if species.smoothing_lengths.is_some() || species.is_empty() {
            continue;
        }
        let h = mean_density_radius(&species.positions, box_size);
        species.smoothing_lengths = Some(vec![h; species.len()]);
        provisional.push(index);
    }
    provisional
}

/// The radius holding [`DEFAULT_KNN`] particles at the mean density of the finite `positions`
/// (0 when none is finite).
fn mean_density_radius(positions: &[[f32; 3]], box_size: Option<f64>) -> f32 {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    let mut n = 0usize;
    for p in positions.iter().filter(|p| p.iter().all(|v| v.is_finite())) {
        n += 1;
        for a in 0..3 {
            lo[a] = lo[a].min(f64::from(p[a]));
            hi[a] = hi[a].max(f64::from(p[a]));
        }
    }
    if n == 0 {
        return 0.0;
    }
    let extent: [f64; 3] = match box_size {
        Some(side) => [side; 3],
        None => std::array::from_fn(|a| hi[a] - lo[a]),
    };
    let largest = extent.iter().copied().fold(0.0, f64::max);
    if largest <= 0.0 {
        // Every particle at one point: any positive radius draws them.
        return 1.0;
    }
    // A flat or thin set still gets a volume (its thickness floored at 1e-3 of its size).
    let volume: f64 = extent.iter().map(|e| e.max(largest * 1e-3)).product();
    let k = DEFAULT_KNN.min(n.saturating_sub(1)).max(1) as f64;
    (3.0 * k * volume / (4.0 * std::f64::consts::PI * n as f64)).cbrt() as f32
}

/// Refined lengths for one document: (species index, lengths) per provisional species.
#[derive(Debug)]
pub struct Refined {
    /// The document they belong to.
    pub document: u64,
    /// The snapshot with the k-th-neighbour lengths in place of the provisional ones.
    pub snapshot: Snapshot,
    /// Its preview subsample, remade from those lengths.
    pub preview: Option<Snapshot>,
    /// Where the kNN search ran: "CUDA", "GPU (wgpu)" or "CPU" (the last species' search).
    pub computed_on: &'static str,
}

/// The smoothing-length jobs of the open documents.
pub struct Refinements {
    queue: JobQueue<Refined>,
    /// (job, document id) of the jobs running.
    pub running: Vec<(JobHandle, u64)>,
}

impl Refinements {
    /// No job yet; finished jobs wake the UI through `waker`.
    pub fn new(waker: Waker) -> Self {
        Self {
            queue: JobQueue::new(waker),
            running: Vec::new(),
        }
    }

    /// Starts computing the k-th-neighbour lengths of `species` of `snapshot` (document
    /// `document`) on a worker.
    pub fn start(&mut self, document: u64, snapshot: Arc<Snapshot>, species: Vec<usize>) {
        let handle = self
            .queue
            .spawn("smoothing lengths", 0, move |progress: &Progress| {
                let box_size = snapshot.header.periodic_box();
                let mut refined = (*snapshot).clone();
                let mut computed_on = "CPU";
                for index in species {
                    let Some(target) = refined.species.get_mut(index) else {
                        continue;
                    };
                    // On the window's GPU where it has one (the same bits as the CPU's).
                    let (h, on) = knn::smoothing_lengths_on(
                        &crate::app::window_backend(),
                        &target.positions,
                        DEFAULT_KNN,
                        box_size,
                        progress,
                    )
                    .map_err(|e| format!("{} smoothing lengths: {e}", target.kind))?;
                    target.smoothing_lengths = Some(h);
                    computed_on = on;
                }
                let preview = crate::app::viewport::preview::preview_subsample(&refined);
                Ok::<_, String>(Refined {
                    document,
                    snapshot: refined,
                    preview,
                    computed_on,
                })
            });
        self.running.push((handle, document));
    }

    /// Stops the job of `document`, if any (its file was closed).
    pub fn cancel(&mut self, document: u64) {
        self.running.retain(|(handle, id)| {
            if *id == document {
                handle.cancel();
            }
            *id != document
        });
    }

    /// Whether lengths are still coming for `document`.
    pub fn is_refining(&self, document: u64) -> bool {
        self.running.iter().any(|(_, id)| *id == document)
    }

    /// The finished jobs' results, and the errors of failed ones, without waiting.
    pub fn poll(&mut self) -> (Vec<Refined>, Vec<String>) {
        let mut done = Vec::new();
        let mut errors = Vec::new();
        for event in self.queue.drain() {
            let id = event.id();
            match event {
                JobEvent::Progress { .. } => continue,
                JobEvent::Done { result, .. } => done.push(result),
                JobEvent::Failed { error, .. } => errors.push(error),
                JobEvent::Cancelled { .. } => {}
            }
            self.running.retain(|(handle, _)| handle.id != id);
        }
        (done, errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provisional_radius_holds_k_neighbours_at_the_mean_density() {
        // 1000 particles in a unit cube: h³·4π/3 = 32/1000.
        let positions: Vec<[f32; 3]> = (0..1000)
            .map(|i| {
                let (x, y, z) = (i % 10, (i / 10) % 10, i / 100);
                [x as f32 / 9.0, y as f32 / 9.0, z as f32 / 9.0]
            })
            .collect();
        let h = mean_density_radius(&positions, None);
        let want = (3.0 * 32.0 / (4.0 * std::f64::consts::PI * 1000.0)).cbrt() as f32;
        assert_eq!(h, want);
        assert_eq!(mean_density_radius(&[[f32::NAN; 3]], None), 0.0);
        assert_eq!(mean_density_radius(&[[1.0; 3], [1.0; 3]], None), 1.0);
    }
}
