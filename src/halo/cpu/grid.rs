//! The sparse cell grid the CPU linker walks: particles sorted by cell, the non-empty cells, and
//! the half stencil of neighbour cells that can hold a linked partner.
//!
//! Cells have side at most ll/√3, so their diagonal is shorter than the linking length and all
//! particles of one cell are friends without any distance test (the trick of grid FoF codes such
//! as P. Creasey's hfof, Astronomy and Computing 2018). Two neighbouring cells then need one
//! linked pair between them, not all of them: the test stops at the first friend.
//! Cells are stored sparsely (sorted keys), so memory stays O(N) however small ll is.

use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use rayon::prelude::*;

/// Cells are this much smaller than ll/√3, so rounding in the cell index or in the distance can
/// never make two particles of one cell lie farther apart than ll (errors are ~1e-10 cell sides).
const SIDE_SHRINK: f64 = 1.0 - 1e-6;

/// At most this many cells per axis, so that a cell key fits in 63 bits.
const MAX_CELLS_PER_AXIS: u64 = 1 << 21;

/// One row of the stencil: a (dy, dz) offset and the x offsets to visit in that row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StencilRow {
    /// Offset in y, cells.
    pub dy: i64,
    /// Offset in z, cells.
    pub dz: i64,
    /// First x offset, cells.
    pub dx_min: i64,
    /// Last x offset, cells.
    pub dx_max: i64,
}

/// Particles sorted by cell (row-major key: x fastest), and the non-empty cells.
#[derive(Debug)]
pub struct CellGrid {
    /// Cells per axis.
    pub dims: [u64; 3],
    /// Whether indices wrap around (periodic box).
    pub periodic: bool,
    /// Key of each non-empty cell, ascending.
    pub cell_keys: Vec<u64>,
    /// Where each cell's particles start in the sorted arrays; one more entry than cells.
    pub cell_starts: Vec<u32>,
    /// Original particle index at each sorted position.
    pub order: Vec<u32>,
    /// Positions (wrapped into the frame when periodic) at each sorted position, float64.
    pub positions: Vec<[f64; 3]>,
    /// Half of the neighbour stencil: with it, every unordered pair of cells that may hold a
    /// linked pair is visited once from one of its two cells.
    pub stencil: Vec<StencilRow>,
}

impl CellGrid {
    /// Sorts `positions` into cells of side ≤ ll/√3; `frame` makes the grid periodic.
    pub fn build(
        positions: &[[f32; 3]],
        linking_length: f64,
        frame: Option<BoxFrame>,
    ) -> Result<Self, FofError> {
        let side_target = linking_length / 3f64.sqrt() * SIDE_SHRINK;
        let wrapped: Vec<[f64; 3]> = match frame {
            Some(frame) => positions.par_iter().map(|p| frame.wrap_point(p)).collect(),
            None => positions.par_iter().map(|p| p.map(f64::from)).collect(),
        };
        let (lower, side, dims) = match frame {
            Some(frame) => {
                let n = cells_per_axis(frame.size / side_target)?;
                ([frame.lower; 3], frame.size / n as f64, [n; 3])
            }
            None => {
                let (lo, hi) = bounds(&wrapped);
                let mut dims = [1u64; 3];
                for axis in 0..3 {
                    dims[axis] = cells_per_axis((hi[axis] - lo[axis]) / side_target + 1.0)?;
                }
                (lo, side_target, dims)
            }
        };
        let cell_of = |p: &[f64; 3]| -> u64 {
            let mut idx = [0u64; 3];
            for axis in 0..3 {
                let t = ((p[axis] - lower[axis]) / side).floor();
                // Rounding can put a point on the excluded upper edge: clamp into the grid.
                idx[axis] = if t <= 0.0 {
                    0
                } else {
                    (t as u64).min(dims[axis] - 1)
                };
            }
            (idx[2] * dims[1] + idx[1]) * dims[0] + idx[0]
        };
        let mut keyed: Vec<(u64, u32)> = wrapped
            .par_iter()
            .enumerate()
            .map(|(i, p)| (cell_of(p), i as u32))
            .collect();
        keyed.par_sort_unstable();

        let mut cell_keys = Vec::new();
        let mut cell_starts = Vec::new();
        for (s, &(key, _)) in keyed.iter().enumerate() {
            if cell_keys.last() != Some(&key) {
                cell_keys.push(key);
                cell_starts.push(s as u32);
            }
        }
        cell_starts.push(keyed.len() as u32);
        let order: Vec<u32> = keyed.par_iter().map(|&(_, i)| i).collect();
        drop(keyed);
        let sorted_positions: Vec<[f64; 3]> =
            order.par_iter().map(|&i| wrapped[i as usize]).collect();

        Ok(Self {
            dims,
            periodic: frame.is_some(),
            cell_keys,
            cell_starts,
            order,
            positions: sorted_positions,
            stencil: half_stencil(linking_length, side),
        })
    }

    /// Number of non-empty cells.
    pub fn n_cells(&self) -> usize {
        self.cell_keys.len()
    }

    /// Cell coordinates (x, y, z) of a key.
    pub fn coords(&self, key: u64) -> [u64; 3] {
        let x = key % self.dims[0];
        let yz = key / self.dims[0];
        [x, yz % self.dims[1], yz / self.dims[1]]
    }

    /// The sorted-position range of cell `c`.
    pub fn members(&self, c: usize) -> std::ops::Range<usize> {
        self.cell_starts[c] as usize..self.cell_starts[c + 1] as usize
    }
}

/// `ceil(cells)` as a count in `1..=MAX_CELLS_PER_AXIS`, or an error when the grid would be finer.
fn cells_per_axis(cells: f64) -> Result<u64, FofError> {
    let n = cells.ceil().max(1.0);
    if !n.is_finite() || n > MAX_CELLS_PER_AXIS as f64 {
        return Err(FofError::GridTooFine {
            cells_per_axis: n,
            max: MAX_CELLS_PER_AXIS,
        });
    }
    Ok(n as u64)
}

/// Per-axis minimum and maximum.
fn bounds(points: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in points {
        for axis in 0..3 {
            lo[axis] = lo[axis].min(p[axis]);
            hi[axis] = hi[axis].max(p[axis]);
        }
    }
    (lo, hi)
}

/// The cell offsets (dx, dy, dz) with (dz, dy, dx) lexicographically positive whose cells can
/// hold two points at distance ≤ ll: the gap between cells `d` apart on one axis is
/// `(|d| − 1)·side`, and the offset is kept when the gaps' squared sum is ≤ ll² (with slack, as
/// an extra cell pair costs only time).
fn half_stencil(linking_length: f64, side: f64) -> Vec<StencilRow> {
    let reach = (linking_length / side * (1.0 + 1e-9)).floor() as i64 + 1;
    let limit = linking_length * linking_length * (1.0 + 1e-9);
    let gap = |d: i64| ((d.abs() - 1).max(0) as f64) * side;
    let mut rows = Vec::new();
    for dz in 0..=reach {
        for dy in -reach..=reach {
            if dz == 0 && dy < 0 {
                continue;
            }
            let yz = gap(dy).powi(2) + gap(dz).powi(2);
            if yz > limit {
                continue;
            }
            let dx_max = (0..=reach)
                .take_while(|&dx| yz + gap(dx).powi(2) <= limit)
                .last()
                .unwrap_or(0);
            let dx_min = if dz == 0 && dy == 0 { 1 } else { -dx_max };
            if dx_min <= dx_max {
                rows.push(StencilRow {
                    dy,
                    dz,
                    dx_min,
                    dx_max,
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stencil_for_cells_of_side_ll_over_sqrt3_reaches_two_cells() {
        let ll = 1.0;
        let rows = half_stencil(ll, ll / 3f64.sqrt() * SIDE_SHRINK);
        // Own row: dx = 1, 2; then 2 rows at dz = 0 and 10 at dz = 1, 2, each dx = −2..=2.
        assert_eq!(rows.len(), 13);
        assert_eq!(
            rows[0],
            StencilRow {
                dy: 0,
                dz: 0,
                dx_min: 1,
                dx_max: 2
            }
        );
        let offsets: usize = rows
            .iter()
            .map(|r| (r.dx_max - r.dx_min + 1) as usize)
            .sum();
        assert_eq!(offsets, (125 - 1) / 2);
    }

    #[test]
    fn cells_hold_sorted_particles_and_wrap_in_a_periodic_box() {
        let frame = BoxFrame {
            lower: 0.0,
            size: 1.0,
        };
        let points = [[0.95f32, 0.5, 0.5], [-0.02, 0.5, 0.5], [0.1, 0.1, 0.1]];
        let grid = CellGrid::build(&points, 0.2, Some(frame)).expect("grid");
        // side target 0.2/√3 → 9 cells of side 1/9.
        assert_eq!(grid.dims, [9, 9, 9]);
        assert_eq!(grid.n_cells(), 2);
        assert_eq!(grid.cell_starts, vec![0, 1, 3]);
        // The wrapped point −0.02 → 0.98 shares cell x = 8 with 0.95.
        let wrapped = grid
            .order
            .iter()
            .position(|&i| i == 1)
            .expect("particle 1 is sorted somewhere");
        assert_eq!(grid.positions[wrapped][0], 1.0 - 0.019999999552965164);
    }
}
