//! Smoothing lengths for particles that have none (dark matter, AREPO gas): h = distance to the
//! k-th nearest other particle (DESIGN §2; k = 32 by default), periodic minimum image where the
//! box is periodic. A uniform cell grid ([`grid`]: counting sort by cell, the cell size of least
//! modelled cost) and a shell-by-shell search ([`search`]). Queries run in cell order (cache
//! locality), on rayon threads. Every search is exact (the k-th smallest of the same f64
//! squared distances), so the lengths do not depend on the grid: the CUDA twin may choose its
//! own and still agree bit for bit.

pub(crate) mod grid;
pub(crate) mod search;

use super::RenderError;
use crate::jobs::Progress;
use grid::{Grid, finite_bounds};
use rayon::prelude::*;
use search::Best;
use std::sync::atomic::{AtomicU64, Ordering};

/// Default neighbour count k.
pub const DEFAULT_KNN: usize = 32;
/// Particles per progress/cancellation step.
const CHUNK: usize = 4096;

/// Refuses kNN smoothing with `k` above [`DEFAULT_KNN`] for a species without smoothing lengths
/// that has no more than `k` particles: the search would visit every particle for every
/// particle. (The default `k` is lowered to n − 1 for such tiny species instead.)
pub fn check_knn(species: &crate::data::Species, k: usize) -> Result<(), RenderError> {
    let n = species.len();
    if species.smoothing_lengths.is_none() && n > 0 && k > DEFAULT_KNN && k >= n {
        return Err(RenderError::setting(format!(
            "--knn {k}: species {} has only {n} particles (k must be below the particle count)",
            species.kind.name()
        )));
    }
    Ok(())
}

/// h for every particle: the distance to its k-th nearest other particle (fewer when there are
/// only n ≤ k particles: the farthest other one). Particles with non-finite positions get 0 (and
/// are then not drawn). `box_size` makes distances periodic (minimum image).
pub fn knn_smoothing_lengths(
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    progress: &Progress,
) -> Result<Vec<f32>, RenderError> {
    let (lo, hi, n_valid) = finite_bounds(positions);
    let k = check_arguments(k, box_size, n_valid)?;
    let grid = Grid::build(positions, box_size, (lo, hi), n_valid, k);
    let total = positions.len() as u64;
    let done = AtomicU64::new(0);
    // Queries in cell order, so that neighbouring queries scan the same cells while they are
    // in cache; the lengths are then put back in particle order.
    let mut by_cell = vec![0.0f32; grid.members.len()];
    by_cell
        .par_chunks_mut(CHUNK)
        .zip(grid.members.par_chunks(CHUNK))
        .try_for_each_init(
            || Best::new(k),
            |best, (out, members)| {
                progress.check().map_err(|_| RenderError::Cancelled)?;
                for (h, (index, p)) in out.iter_mut().zip(members) {
                    *h = grid.kth_distance(*index, p, best);
                }
                let now = done.fetch_add(out.len() as u64, Ordering::Relaxed) + out.len() as u64;
                progress.report("smoothing lengths", now, total);
                Ok::<(), RenderError>(())
            },
        )?;
    let mut lengths = vec![0.0f32; positions.len()];
    for (h, (index, _)) in by_cell.iter().zip(&grid.members) {
        lengths[*index as usize] = *h;
    }
    Ok(lengths)
}

/// Checks k, the box and the count of finite positions; returns k capped at the number of
/// other valid particles.
pub(crate) fn check_arguments(
    k: usize,
    box_size: Option<f64>,
    n_valid: usize,
) -> Result<usize, RenderError> {
    if k == 0 {
        return Err(RenderError::setting(
            "k for kNN smoothing lengths must be >= 1",
        ));
    }
    if let Some(side) = box_size
        && !(side > 0.0 && side.is_finite())
    {
        return Err(RenderError::setting(format!(
            "periodic box size {side} must be a finite number > 0"
        )));
    }
    if n_valid < 2 {
        return Err(RenderError::setting(
            "kNN smoothing lengths need at least two particles with finite positions",
        ));
    }
    Ok(k.min(n_valid - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_force(positions: &[[f32; 3]], k: usize, box_size: Option<f64>) -> Vec<f32> {
        let grid_like = |a: &[f32; 3], b: &[f32; 3]| {
            let mut d2 = 0.0;
            for axis in 0..3 {
                let mut d = f64::from(a[axis]) - f64::from(b[axis]);
                if let Some(side) = box_size {
                    d -= side * (d / side).round();
                }
                d2 += d * d;
            }
            d2
        };
        positions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut d: Vec<f64> = positions
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, q)| grid_like(p, q))
                    .collect();
                d.sort_by(f64::total_cmp);
                d[k.min(d.len()) - 1].sqrt() as f32
            })
            .collect()
    }

    fn clustered(n: usize, seed: u64) -> Vec<[f32; 3]> {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    [next(), next(), next()]
                } else {
                    // A dense clump near a corner, to stress wrapping and uneven cells.
                    [0.02 * next(), 0.97 + 0.02 * next(), 0.5 + 0.01 * next()]
                }
            })
            .collect()
    }

    #[test]
    fn grid_search_equals_brute_force_open_and_periodic() {
        let positions = clustered(1500, 7);
        for box_size in [None, Some(1.0)] {
            for k in [1, 8, 32] {
                let got =
                    knn_smoothing_lengths(&positions, k, box_size, &Progress::none()).expect("knn");
                let want = brute_force(&positions, k, box_size);
                assert_eq!(got, want, "k = {k}, box = {box_size:?}");
            }
        }
    }

    #[test]
    fn small_sets_and_bad_input() {
        let two = [[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]];
        let h = knn_smoothing_lengths(&two, 32, None, &Progress::none()).expect("two");
        assert_eq!(h, vec![5.0, 5.0]);
        // Periodic: 0.1 and 0.9 are 0.2 apart in a box of 1.
        let wrap = [[0.1, 0.5, 0.5], [0.9, 0.5, 0.5]];
        let h = knn_smoothing_lengths(&wrap, 1, Some(1.0), &Progress::none()).expect("wrap");
        assert!((h[0] - 0.2).abs() < 1e-6);
        assert!(knn_smoothing_lengths(&two[..1], 1, None, &Progress::none()).is_err());
        assert!(knn_smoothing_lengths(&two, 0, None, &Progress::none()).is_err());
        let with_nan = [[0.0, 0.0, 0.0], [f32::NAN, 0.0, 0.0], [1.0, 0.0, 0.0]];
        let h = knn_smoothing_lengths(&with_nan, 1, None, &Progress::none()).expect("nan");
        assert_eq!(h, vec![1.0, 0.0, 1.0]);
    }
}
