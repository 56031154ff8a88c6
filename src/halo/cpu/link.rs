//! The CPU friends-of-friends linker: cell grid + lock-free union-find over cells, rayon.
//!
//! 1. Particles are sorted into cells of side ≤ ll/√3 ([`CellGrid`]); all members of one cell are
//!    friends, so the union-find runs over cells, not particles.
//! 2. Every non-empty cell visits the cells of its half stencil (a fixed order of rows). A pair of
//!    cells already in one set is skipped; otherwise their members are tested until the first pair
//!    with d² ≤ ll² (float64, minimum image when periodic), which joins the two cells.
//!
//! A dense cluster therefore costs about one distance test per neighbouring cell pair instead of
//! one per particle pair. Cells are processed in chunks on the rayon pool; each chunk checks
//! for cancellation and reports progress.

use super::grid::CellGrid;
use super::union_find::AtomicUnionFind;
use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use crate::jobs::Progress;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Cell pairs with at most this many particle pairs are tested without asking the union-find.
const FEW_PAIRS: usize = 4;

/// Cells per rayon task: large enough to amortise the cursor set-up, small enough to balance.
const CELLS_PER_CHUNK: usize = 2048;

/// Links `positions` with `linking_length` and returns, for each particle (input order), the id
/// of its friends-of-friends set: equal ids ⇔ same set. Ids are below `positions.len()`.
pub fn link_components(
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    progress: &Progress,
) -> Result<Vec<u32>, FofError> {
    progress.report("grid", 0, 1);
    let grid = CellGrid::build(positions, linking_length, frame)?;
    progress.check()?;
    progress.report("grid", 1, 1);

    let uf = AtomicUnionFind::new(grid.n_cells());
    let linker = Linker {
        grid: &grid,
        uf: &uf,
        ll2: linking_length * linking_length,
        frame,
    };
    let n_cells = grid.n_cells();
    let n_chunks = n_cells.div_ceil(CELLS_PER_CHUNK);
    let done = AtomicU64::new(0);
    progress.report("linking", 0, n_cells as u64);
    (0..n_chunks).into_par_iter().try_for_each(|chunk| {
        progress.check()?;
        let first = chunk * CELLS_PER_CHUNK;
        let last = (first + CELLS_PER_CHUNK).min(n_cells);
        linker.link_cells(first..last);
        let finished = done.fetch_add((last - first) as u64, Ordering::Relaxed);
        progress.report("linking", finished + (last - first) as u64, n_cells as u64);
        Ok::<(), FofError>(())
    })?;

    let cell_roots = uf.roots();
    let mut ids = vec![0u32; positions.len()];
    for (c, &root) in cell_roots.iter().enumerate() {
        for s in grid.members(c) {
            ids[grid.order[s] as usize] = root;
        }
    }
    Ok(ids)
}

/// What the per-chunk linking loop reads.
struct Linker<'a> {
    grid: &'a CellGrid,
    uf: &'a AtomicUnionFind,
    ll2: f64,
    frame: Option<BoxFrame>,
}

impl Linker<'_> {
    /// Visits the stencil of every cell in `cells` and joins linked neighbours.
    fn link_cells(&self, cells: std::ops::Range<usize>) {
        let grid = self.grid;
        let keys = &grid.cell_keys;
        let [nx, ny, nz] = grid.dims.map(|n| n as i64);
        // One search cursor per stencil row: consecutive cells look at nearby keys.
        let mut cursors = vec![cells.start; grid.stencil.len()];
        let mut intervals = Vec::with_capacity(2);
        for c in cells {
            let [ix, iy, iz] = grid.coords(keys[c]).map(|v| v as i64);
            for (row, cursor) in grid.stencil.iter().zip(cursors.iter_mut()) {
                let (Some(ty), Some(tz)) = (
                    wrap_index(iy + row.dy, ny, grid.periodic),
                    wrap_index(iz + row.dz, nz, grid.periodic),
                ) else {
                    continue;
                };
                x_intervals(
                    ix + row.dx_min,
                    ix + row.dx_max,
                    nx,
                    grid.periodic,
                    &mut intervals,
                );
                let row_base = (tz * ny + ty) as u64 * nx as u64;
                for &(x_lo, x_hi) in &intervals {
                    let key_lo = row_base + x_lo as u64;
                    let key_hi = row_base + x_hi as u64;
                    let mut other = lower_bound(keys, key_lo, *cursor);
                    *cursor = other;
                    while other < keys.len() && keys[other] <= key_hi {
                        if other != c {
                            self.link_pair(c, other);
                        }
                        other += 1;
                    }
                }
            }
        }
    }

    /// Joins cells `a` and `b` when any member of one is within ll of any member of the other.
    fn link_pair(&self, a: usize, b: usize) {
        let grid = self.grid;
        let (range_a, range_b) = (grid.members(a), grid.members(b));
        // A few distance tests are cheaper than the two root look-ups (random reads of the parent
        // array); only cell pairs with many candidate pairs ask the union-find first.
        if range_a.len() * range_b.len() > FEW_PAIRS && self.uf.same_set(a as u32, b as u32) {
            return;
        }
        let members_b = &grid.positions[range_b];
        let linked = match self.frame {
            None => grid.positions[range_a.clone()]
                .iter()
                .any(|p| members_b.iter().any(|q| dist2(p, q) <= self.ll2)),
            Some(frame) => grid.positions[range_a].iter().any(|p| {
                members_b
                    .iter()
                    .any(|q| dist2_periodic(p, q, &frame) <= self.ll2)
            }),
        };
        if linked {
            self.uf.union(a as u32, b as u32);
        }
    }
}

/// Squared distance in float64.
#[inline]
pub fn dist2(p: &[f64; 3], q: &[f64; 3]) -> f64 {
    let dx = p[0] - q[0];
    let dy = p[1] - q[1];
    let dz = p[2] - q[2];
    dx * dx + dy * dy + dz * dz
}

/// Squared minimum-image distance in float64 between two points wrapped into `frame`.
#[inline]
pub fn dist2_periodic(p: &[f64; 3], q: &[f64; 3], frame: &BoxFrame) -> f64 {
    let dx = frame.min_image(p[0] - q[0]);
    let dy = frame.min_image(p[1] - q[1]);
    let dz = frame.min_image(p[2] - q[2]);
    dx * dx + dy * dy + dz * dz
}

/// A cell index moved into `0..n` (periodic) or `None` when it leaves the grid (open).
fn wrap_index(i: i64, n: i64, periodic: bool) -> Option<i64> {
    if periodic {
        Some(i.rem_euclid(n))
    } else if (0..n).contains(&i) {
        Some(i)
    } else {
        None
    }
}

/// The x-index range `lo..=hi` as at most two intervals inside `0..n`: clipped when open, split
/// at the edge when periodic (the whole row when the range covers it).
fn x_intervals(lo: i64, hi: i64, n: i64, periodic: bool, out: &mut Vec<(i64, i64)>) {
    out.clear();
    if !periodic {
        let (lo, hi) = (lo.max(0), hi.min(n - 1));
        if lo <= hi {
            out.push((lo, hi));
        }
    } else if hi - lo + 1 >= n {
        out.push((0, n - 1));
    } else {
        let (lo, hi) = (lo.rem_euclid(n), hi.rem_euclid(n));
        if lo <= hi {
            out.push((lo, hi));
        } else {
            out.push((lo, n - 1));
            out.push((0, hi));
        }
    }
}

/// The first index whose key is ≥ `target`, searched from `hint` (galloping forward when the
/// target is ahead, binary search behind it otherwise).
fn lower_bound(keys: &[u64], target: u64, hint: usize) -> usize {
    let hint = hint.min(keys.len());
    if hint > 0 && keys[hint - 1] >= target {
        return keys[..hint].partition_point(|&k| k < target);
    }
    let mut step = 1;
    let mut lo = hint;
    while lo + step <= keys.len() && keys[lo + step - 1] < target {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(keys.len());
    lo + keys[lo..hi].partition_point(|&k| k < target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_bound_agrees_with_partition_point_from_any_hint() {
        let keys: Vec<u64> = vec![1, 3, 3, 4, 9, 12, 13, 40];
        for target in 0..45 {
            let expected = keys.partition_point(|&k| k < target);
            for hint in 0..=keys.len() + 1 {
                assert_eq!(
                    lower_bound(&keys, target, hint),
                    expected,
                    "{target} {hint}"
                );
            }
        }
    }

    #[test]
    fn x_intervals_clip_or_wrap() {
        let mut out = Vec::new();
        x_intervals(-2, 2, 10, false, &mut out);
        assert_eq!(out, vec![(0, 2)]);
        x_intervals(-2, 2, 10, true, &mut out);
        assert_eq!(out, vec![(8, 9), (0, 2)]);
        x_intervals(8, 12, 10, true, &mut out);
        assert_eq!(out, vec![(8, 9), (0, 2)]);
        x_intervals(-2, 2, 4, true, &mut out);
        assert_eq!(out, vec![(0, 3)]);
        x_intervals(11, 12, 10, false, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_chain_at_exactly_ll_is_one_set_and_a_gap_breaks_it() {
        // Spacing 0.25 is exact in binary: d² = 0.0625 = ll² exactly, which must link.
        let mut points: Vec<[f32; 3]> = (0..8).map(|i| [i as f32 * 0.25, 0.0, 0.0]).collect();
        points.push([3.0, 0.0, 0.0]);
        let ids = link_components(&points, 0.25, None, &Progress::none()).expect("links");
        assert!(ids[..8].iter().all(|&id| id == ids[0]));
        assert_ne!(ids[8], ids[0]);
    }
}
