//! The cell grid of the CUDA linker, computed on the host exactly as the CPU's `cpu/grid.rs`
//! builds it; cells are laid out in device memory in Morton order of their coordinates.

use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use rayon::prelude::*;

/// Same as `cpu/grid.rs`: cells slightly smaller than ll/√3 so rounding can never make two
/// members of one cell lie farther apart than ll.
pub(super) const SIDE_SHRINK: f64 = 1.0 - 1e-6;

/// Same as `cpu/grid.rs`: at most 2^21 cells per axis, so packed coordinates fit in 63 bits.
const MAX_CELLS_PER_AXIS: u64 = 1 << 21;

/// The cell grid's parameters.
#[derive(Debug, Clone, Copy)]
pub(super) struct GridSpec {
    /// Lower corner of cell (0, 0, 0).
    pub(super) lower: [f64; 3],
    /// Cell side.
    pub(super) side: f64,
    /// Cells per axis.
    pub(super) dims: [u64; 3],
}

impl GridSpec {
    /// Cells per axis as the kernels take them (at most 2^21 each).
    pub(super) fn dims32(&self) -> [u32; 3] {
        self.dims.map(|d| d as u32)
    }

    /// Bits per cell coordinate of the Morton key (at least one).
    pub(super) fn coordinate_bits(&self) -> u32 {
        let max_dim = self.dims.iter().copied().max().unwrap_or(1);
        (64 - (max_dim - 1).leading_zeros()).max(1)
    }

    /// Significant bits of a cell's Morton key: what the radix sort must sort on.
    pub(super) fn key_bits(&self) -> u32 {
        3 * self.coordinate_bits()
    }
}

/// The grid of `cpu/grid.rs` (`CellGrid::build`): periodic, n = ⌈L/side_target⌉ cells of side
/// L/n from the frame's lower corner; open, cells of side_target from the lower corner of
/// `bounds` (the positions' bounding box, [`point_bounds`], or any box holding them),
/// ⌈extent/side_target + 1⌉ per axis.
pub(super) fn grid_spec(
    bounds: Option<([f32; 3], [f32; 3])>,
    linking_length: f64,
    frame: Option<BoxFrame>,
) -> Result<GridSpec, FofError> {
    let side_target = linking_length / 3f64.sqrt() * SIDE_SHRINK;
    match frame {
        Some(frame) => {
            let n = cells_per_axis(frame.size / side_target)?;
            Ok(GridSpec {
                lower: [frame.lower; 3],
                side: frame.size / n as f64,
                dims: [n; 3],
            })
        }
        None => {
            let (lo, hi) = bounds.unwrap_or(([0.0; 3], [0.0; 3]));
            let lower = lo.map(f64::from);
            let mut dims = [1u64; 3];
            for a in 0..3 {
                dims[a] = cells_per_axis((f64::from(hi[a]) - lower[a]) / side_target + 1.0)?;
            }
            Ok(GridSpec {
                lower,
                side: side_target,
                dims,
            })
        }
    }
}

/// The bounding box of `positions` (lower and upper corner; infinite when there are none).
pub(crate) fn point_bounds(positions: &[[f32; 3]]) -> ([f32; 3], [f32; 3]) {
    positions
        .par_iter()
        .fold(
            || ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
            |(mut lo, mut hi), p| {
                for a in 0..3 {
                    lo[a] = lo[a].min(p[a]);
                    hi[a] = hi[a].max(p[a]);
                }
                (lo, hi)
            },
        )
        .reduce(
            || ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
            |(lo1, hi1), (lo2, hi2)| {
                (
                    [0, 1, 2].map(|a| lo1[a].min(lo2[a])),
                    [0, 1, 2].map(|a| hi1[a].max(hi2[a])),
                )
            },
        )
}

/// `ceil(cells)` in `1..=MAX_CELLS_PER_AXIS`, as `cpu/grid.rs`.
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
