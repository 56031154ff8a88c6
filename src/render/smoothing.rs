//! Smoothing lengths for particles that have none (dark matter, AREPO gas): h = distance to the
//! k-th nearest other particle (DESIGN §2; k = 32 by default), periodic minimum image where the
//! box is periodic. A uniform cell grid (counting sort by cell) and a shell-by-shell search:
//! after the cells at Chebyshev ring s have been scanned, every particle closer than s·cell is
//! known, so the search stops once the k-th best distance is ≤ s·cell plus the query's distance
//! to its own cell's nearest face. Queries run in cell order (cache locality), on rayon threads.

use super::RenderError;
use crate::jobs::Progress;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Default neighbour count k.
pub const DEFAULT_KNN: usize = 32;
/// Mean particles per grid cell aimed at.
const CELL_OCCUPANCY: f64 = 2.0;
/// Most cells per axis.
const MAX_CELLS_PER_AXIS: usize = 1024;
/// Most cells in all (4 bytes each).
const MAX_CELLS_TOTAL: usize = 1 << 24;
/// Particles per progress/cancellation step.
const CHUNK: usize = 4096;

/// The cell grid of the valid (finite) particles (the device twin, src/render/knn/, searches
/// the same grid).
pub(crate) struct Grid {
    /// Cells per axis.
    pub(crate) n: [usize; 3],
    /// Cell edge (world units).
    pub(crate) cell: f64,
    /// Lower corner (0 when periodic).
    pub(crate) origin: [f64; 3],
    /// Periodic box side.
    pub(crate) box_size: Option<f64>,
    /// `starts[c]..starts[c + 1]` indexes `members` for cell c.
    pub(crate) starts: Vec<u32>,
    /// (original index, position) sorted by cell.
    pub(crate) members: Vec<(u32, [f32; 3])>,
}

/// One k-th-neighbour search: the particle, its cell and what bounds the cells' distances.
struct Query<'a> {
    /// The particle's index (skipped among its own cell's members).
    index: u32,
    /// Its position.
    p: &'a [f32; 3],
    /// Its cell.
    centre: [usize; 3],
    /// Cell offsets allowed per axis (see `offset_range`).
    ranges: [(i64, i64); 3],
    /// Its offset inside its cell per axis, for the cell-to-point distance bound.
    inside: [f64; 3],
    /// Neighbours sought.
    k: usize,
}

impl Grid {
    fn build(positions: &[[f32; 3]], box_size: Option<f64>, n_valid: usize, k: usize) -> Self {
        let valid = |p: &[f32; 3]| p.iter().all(|v| v.is_finite());
        let (origin, extent) = match box_size {
            Some(side) => ([0.0; 3], [side; 3]),
            None => {
                let mut lo = [f64::INFINITY; 3];
                let mut hi = [f64::NEG_INFINITY; 3];
                for p in positions.iter().filter(|p| valid(p)) {
                    for a in 0..3 {
                        lo[a] = lo[a].min(f64::from(p[a]));
                        hi[a] = hi[a].max(f64::from(p[a]));
                    }
                }
                (lo, std::array::from_fn(|a| hi[a] - lo[a]))
            }
        };
        let max_extent = extent.iter().copied().fold(0.0, f64::max);
        let volume: f64 = extent.iter().map(|e| e.max(max_extent * 1e-3)).product();
        let mut cell = (volume * CELL_OCCUPANCY / n_valid as f64).cbrt();
        if !(cell > 0.0 && cell.is_finite()) {
            cell = 1.0;
        }
        // Smallest cell the total-cell cap allows.
        let min_cell = (volume / MAX_CELLS_TOTAL as f64)
            .cbrt()
            .max(max_extent / MAX_CELLS_PER_AXIS as f64);
        // Clustered data: try cell sizes around the mean-density one and keep the one with the
        // lowest modelled search cost (dense regions scan many particles per cell, sparse ones
        // many empty cells).
        let max_cells = MAX_CELLS_TOTAL.min(64 * n_valid + 64);
        let mut best: Option<(f64, Self, Vec<u32>)> = None;
        for step in -2..=18 {
            let trial = cell * 2f64.powf(-f64::from(step) / 2.0);
            if trial < min_cell {
                break;
            }
            let mut grid = Self::empty(trial, origin, extent, box_size);
            if grid.starts.len() > max_cells + 1 {
                break;
            }
            let cells = grid.assign(positions);
            let cost = grid.search_cost(k);
            if best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
                best = Some((cost, grid, cells));
            }
        }
        let (mut grid, cells) = match best {
            Some((_, grid, cells)) => (grid, cells),
            None => {
                let mut grid = Self::empty(cell.max(min_cell), origin, extent, box_size);
                let cells = grid.assign(positions);
                (grid, cells)
            }
        };
        for c in 0..grid.starts.len() - 1 {
            grid.starts[c + 1] += grid.starts[c];
        }
        let mut cursor = grid.starts.clone();
        grid.members = vec![(0, [0.0; 3]); n_valid];
        for (i, &c) in cells.iter().enumerate() {
            if c != u32::MAX {
                let slot = &mut cursor[c as usize];
                grid.members[*slot as usize] = (i as u32, positions[i]);
                *slot += 1;
            }
        }
        grid
    }

    /// A grid of cells of about `cell` (rounded so that a periodic box holds whole cells),
    /// with no members yet.
    fn empty(cell: f64, origin: [f64; 3], extent: [f64; 3], box_size: Option<f64>) -> Self {
        let mut cell = cell;
        let n: [usize; 3] = match box_size {
            Some(side) => {
                let per_axis = ((side / cell).floor() as usize).clamp(1, MAX_CELLS_PER_AXIS);
                cell = side / per_axis as f64;
                [per_axis; 3]
            }
            None => std::array::from_fn(|a| {
                ((extent[a] / cell).floor() as usize + 1).clamp(1, MAX_CELLS_PER_AXIS)
            }),
        };
        Self {
            n,
            cell,
            origin,
            box_size,
            starts: vec![0; n[0] * n[1] * n[2] + 1],
            members: Vec::new(),
        }
    }

    /// Each particle's cell (u32::MAX for non-finite positions); counts land in `starts[c + 1]`.
    fn assign(&mut self, positions: &[[f32; 3]]) -> Vec<u32> {
        let cells: Vec<u32> = positions
            .par_iter()
            .map(|p| {
                if p.iter().all(|v| v.is_finite()) {
                    self.cell_index(self.cell_of(p)) as u32
                } else {
                    u32::MAX
                }
            })
            .collect();
        for &c in cells.iter().filter(|c| **c != u32::MAX) {
            self.starts[c as usize + 1] += 1;
        }
        cells
    }

    /// Modelled cost of all k-th-neighbour searches (before the prefix sum): a particle in a
    /// cell of n needs rings up to s ≈ (k/(4.19·n))^(1/3) + 1, i.e. (2s + 1)³ cell visits and
    /// about (2s + 1)³·n distance evaluations.
    fn search_cost(&self, k: usize) -> f64 {
        let k = k as f64;
        self.starts
            .iter()
            .filter(|&&n| n > 0)
            .map(|&n| {
                let n = f64::from(n);
                let rings = (k / (4.19 * n)).cbrt().ceil() + 1.0;
                let cells = (2.0 * rings + 1.0).powi(3);
                n * (3.0 * cells + cells * n)
            })
            .sum()
    }

    fn cell_of(&self, p: &[f32; 3]) -> [usize; 3] {
        std::array::from_fn(|a| {
            let x = f64::from(p[a]) - self.origin[a];
            let x = match self.box_size {
                Some(side) => x.rem_euclid(side),
                None => x,
            };
            ((x / self.cell).floor().max(0.0) as usize).min(self.n[a] - 1)
        })
    }

    fn cell_index(&self, c: [usize; 3]) -> usize {
        (c[2] * self.n[1] + c[1]) * self.n[0] + c[0]
    }

    /// Offsets allowed along axis `a`: all cells once, even when the periodic ring wraps.
    fn offset_range(&self, a: usize, centre: usize) -> (i64, i64) {
        let n = self.n[a] as i64;
        match self.box_size {
            Some(_) => {
                let lo = (n - 1) / 2;
                (-lo, n - 1 - lo)
            }
            None => (-(centre as i64), n - 1 - centre as i64),
        }
    }

    /// Squared distance, minimum image when periodic.
    #[inline]
    fn distance2(&self, a: &[f32; 3], b: &[f32; 3]) -> f64 {
        let mut d2 = 0.0;
        for axis in 0..3 {
            let mut d = f64::from(a[axis]) - f64::from(b[axis]);
            if let Some(side) = self.box_size {
                // Below 0.49 sides d/side rounds to 0 and d stays as it is: the division is
                // skipped, the result is the same.
                if d.abs() >= 0.49 * side {
                    d -= side * (d / side).round();
                }
            }
            d2 += d * d;
        }
        d2
    }

    /// Distance from particle `index` at `p` to its k-th nearest other particle.
    fn kth_distance(&self, index: u32, p: &[f32; 3], k: usize, best: &mut Vec<f64>) -> f32 {
        best.clear();
        let centre = self.cell_of(p);
        let ranges: [(i64, i64); 3] = std::array::from_fn(|a| self.offset_range(a, centre[a]));
        let max_ring = ranges
            .iter()
            .map(|(lo, hi)| (-lo).max(*hi))
            .max()
            .unwrap_or(0);
        // Offset of p inside its own cell, per axis, for the cell-to-point distance bound.
        let inside: [f64; 3] = std::array::from_fn(|a| {
            let x = f64::from(p[a]) - self.origin[a];
            let x = self.box_size.map_or(x, |side| x.rem_euclid(side));
            (x - centre[a] as f64 * self.cell).clamp(0.0, self.cell)
        });
        let query = Query {
            index,
            p,
            centre,
            ranges,
            inside,
            k,
        };
        // Every cell beyond ring s lies, along some axis, at least s cells plus p's distance to
        // its own cell's nearer face away: after ring s all points closer than that are known.
        let face = inside
            .iter()
            .map(|x| x.min(self.cell - x))
            .fold(f64::INFINITY, f64::min);
        for ring in 0..=max_ring {
            self.scan_ring(&query, ring, best);
            let covered = ring as f64 * self.cell + face;
            if best.len() == k && best[k - 1] <= covered * covered {
                break;
            }
        }
        best.get(k - 1).map_or(0.0, |d2| d2.sqrt() as f32)
    }

    /// Scans the cells at Chebyshev distance exactly `ring` from the query's cell.
    fn scan_ring(&self, query: &Query<'_>, ring: i64, best: &mut Vec<f64>) {
        let Query {
            index,
            p,
            centre,
            ref ranges,
            ref inside,
            k,
        } = *query;
        // Lower bound of the distance from p to any point of the cell at offset o along axis a.
        let gap = |a: usize, o: i64| -> f64 {
            match o.cmp(&0) {
                std::cmp::Ordering::Equal => 0.0,
                std::cmp::Ordering::Greater => (o - 1) as f64 * self.cell + (self.cell - inside[a]),
                std::cmp::Ordering::Less => (-o - 1) as f64 * self.cell + inside[a],
            }
        };
        let clip = |a: usize| (ranges[a].0.max(-ring), ranges[a].1.min(ring));
        let (x_lo, x_hi) = clip(0);
        let (y_lo, y_hi) = clip(1);
        let (z_lo, z_hi) = clip(2);
        for oz in z_lo..=z_hi {
            for oy in y_lo..=y_hi {
                let (gy, gz) = (gap(1, oy), gap(2, oz));
                let yz2 = gy * gy + gz * gz;
                // The row's first cell index, computed once per row.
                let row =
                    self.cell_index([0, self.wrap(1, centre[1], oy), self.wrap(2, centre[2], oz)]);
                let mut visit = |ox: i64| {
                    // Skip cells that cannot hold anything closer than the current k-th.
                    let gx = gap(0, ox);
                    if best.len() == k && gx * gx + yz2 > best[k - 1] {
                        return;
                    }
                    let cell = row + self.wrap(0, centre[0], ox);
                    self.scan_cell(index, p, cell, k, best);
                };
                if oz.abs() == ring || oy.abs() == ring {
                    (x_lo..=x_hi).for_each(&mut visit);
                } else {
                    // Inside the shell only the two x faces belong to this ring.
                    if -ring >= x_lo {
                        visit(-ring);
                    }
                    if ring <= x_hi {
                        visit(ring);
                    }
                }
            }
        }
    }

    /// Cell `centre + offset` along axis `a`, wrapped once: offsets stay within
    /// [`Grid::offset_range`], so the sum lies in (−n, 2n) and no division is needed.
    #[inline]
    fn wrap(&self, a: usize, centre: usize, offset: i64) -> usize {
        let n = self.n[a] as i64;
        let v = centre as i64 + offset;
        let v = if v < 0 {
            v + n
        } else if v >= n {
            v - n
        } else {
            v
        };
        v as usize
    }

    fn scan_cell(&self, index: u32, p: &[f32; 3], cell: usize, k: usize, best: &mut Vec<f64>) {
        let members = &self.members[self.starts[cell] as usize..self.starts[cell + 1] as usize];
        for (other, q) in members {
            if *other == index {
                continue;
            }
            let d2 = self.distance2(p, q);
            if best.len() < k {
                let at = best.partition_point(|b| *b <= d2);
                best.insert(at, d2);
            } else if d2 < best[k - 1] {
                best.pop();
                let at = best.partition_point(|b| *b <= d2);
                best.insert(at, d2);
            }
        }
    }
}

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
    let (grid, k) = build_grid(positions, k, box_size)?;
    let total = positions.len() as u64;
    let done = AtomicU64::new(0);
    // Queries in cell order, so that neighbouring queries scan the same cells while they are
    // in cache; the lengths are then put back in particle order.
    let mut by_cell = vec![0.0f32; grid.members.len()];
    by_cell
        .par_chunks_mut(CHUNK)
        .zip(grid.members.par_chunks(CHUNK))
        .try_for_each_init(
            || Vec::with_capacity(k + 1),
            |best, (out, members)| {
                progress.check().map_err(|_| RenderError::Cancelled)?;
                for (h, (index, p)) in out.iter_mut().zip(members) {
                    *h = grid.kth_distance(*index, p, k, best);
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

/// Checks the arguments and builds the search grid; returns it with k capped at the number of
/// other valid particles.
pub(crate) fn build_grid(
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
) -> Result<(Grid, usize), RenderError> {
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
    let n_valid = positions
        .iter()
        .filter(|p| p.iter().all(|v| v.is_finite()))
        .count();
    if n_valid < 2 {
        return Err(RenderError::setting(
            "kNN smoothing lengths need at least two particles with finite positions",
        ));
    }
    let k = k.min(n_valid - 1);
    Ok((Grid::build(positions, box_size, n_valid, k), k))
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
