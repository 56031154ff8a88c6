//! The uniform cell grid of the kNN search: which cell sizes are tried, the modelled cost of a
//! search on each, and the CPU build (counting sort of the particles by cell). The CUDA twin
//! (src/render/knn/) tries the same shapes with the same cost model on the device.

use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// Mean particles per grid cell aimed at by the first guess of the cell size.
const CELL_OCCUPANCY: f64 = 2.0;
/// Most cells per axis.
pub(crate) const MAX_CELLS_PER_AXIS: usize = 1024;
/// Most cells in all (4 bytes each) on CPU threads; the device search may be given more.
pub(crate) const MAX_CELLS_TOTAL: usize = 1 << 24;
/// Half-width (cells) of the box over which the cost model averages the occupancy around a
/// cell: a lone particle in a sparse region searches as far as its region's density asks, not
/// as far as its own cell's count suggests.
pub(crate) const DENSITY_REACH: usize = 2;
/// Modelled cost of visiting one cell, in distance evaluations, on CPU threads.
pub(crate) const CPU_VISIT_COST: f64 = 8.0;
/// Elements per rayon task of the grid's passes.
const GRAIN: usize = 1 << 16;

/// A grid's cells per axis and cell edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    /// Cells per axis.
    pub(crate) n: [usize; 3],
    /// Cell edge (world units).
    pub(crate) cell: f64,
}

impl Shape {
    /// Cells in all.
    pub(crate) fn cells(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }
}

/// Where the grid lies: its lower corner, extent per axis and periodic box side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Frame {
    /// Lower corner (0 when periodic).
    pub(crate) origin: [f64; 3],
    /// Extent per axis (the side when periodic).
    pub(crate) extent: [f64; 3],
    /// Periodic box side.
    pub(crate) box_size: Option<f64>,
}

impl Frame {
    /// The frame of a periodic box, or of the box around `lo..=hi` (the valid positions'
    /// bounds, exact f32 values widened to f64).
    pub(crate) fn new(box_size: Option<f64>, lo: [f32; 3], hi: [f32; 3]) -> Self {
        match box_size {
            Some(side) => Self {
                origin: [0.0; 3],
                extent: [side; 3],
                box_size,
            },
            None => Self {
                origin: lo.map(f64::from),
                extent: std::array::from_fn(|a| f64::from(hi[a]) - f64::from(lo[a])),
                box_size: None,
            },
        }
    }

    /// The cell sizes tried, largest first: around the mean-density size in steps of √2, as far
    /// as the cell caps (at most `max_cells_total` in all) allow; the first alone when no trial
    /// fits (a fallback size).
    pub(crate) fn shapes(&self, n_valid: usize, max_cells_total: usize) -> (Shape, Vec<Shape>) {
        let max_extent = self.extent.iter().copied().fold(0.0, f64::max);
        let volume: f64 = self
            .extent
            .iter()
            .map(|e| e.max(max_extent * 1e-3))
            .product();
        let mut cell = (volume * CELL_OCCUPANCY / n_valid as f64).cbrt();
        if !(cell > 0.0 && cell.is_finite()) {
            cell = 1.0;
        }
        // Smallest cell the total-cell cap allows.
        let min_cell = (volume / max_cells_total as f64)
            .cbrt()
            .max(max_extent / MAX_CELLS_PER_AXIS as f64);
        let max_cells = max_cells_total.min(64 * n_valid + 64);
        let mut shapes = Vec::new();
        for step in -2..=18 {
            let trial = cell * 2f64.powf(-f64::from(step) / 2.0);
            if trial < min_cell {
                break;
            }
            let shape = self.shape(trial);
            if shape.cells() > max_cells {
                break;
            }
            shapes.push(shape);
        }
        if shapes.is_empty() {
            return (self.shape(cell.max(min_cell)), shapes);
        }
        let first = shapes.remove(0);
        (first, shapes)
    }

    /// Cells of about `cell` (rounded so that a periodic box holds whole cells).
    fn shape(&self, cell: f64) -> Shape {
        match self.box_size {
            Some(side) => {
                let per_axis = ((side / cell).floor() as usize).clamp(1, MAX_CELLS_PER_AXIS);
                Shape {
                    n: [per_axis; 3],
                    cell: side / per_axis as f64,
                }
            }
            None => Shape {
                n: std::array::from_fn(|a| {
                    ((self.extent[a] / cell).floor() as usize + 1).clamp(1, MAX_CELLS_PER_AXIS)
                }),
                cell,
            },
        }
    }

    /// The cell of `p` (integer coordinates); the device twin computes the same.
    pub(crate) fn cell_of(&self, shape: &Shape, p: &[f32; 3]) -> [usize; 3] {
        std::array::from_fn(|a| {
            let x = f64::from(p[a]) - self.origin[a];
            let x = match self.box_size {
                Some(side) => x.rem_euclid(side),
                None => x,
            };
            ((x / shape.cell).floor().max(0.0) as usize).min(shape.n[a] - 1)
        })
    }
}

/// Cell index of integer cell coordinates (x fastest).
pub(crate) fn cell_index(n: &[usize; 3], c: [usize; 3]) -> usize {
    (c[2] * n[1] + c[1]) * n[0] + c[0]
}

/// Modelled cost of the searches of one cell's `count` particles, where the box of
/// (2·[`DENSITY_REACH`] + 1)³ cells around it holds `around` particles: a search reaches
/// s ≈ (k / (4.19·m))^(1/3) + 1 rings at the mean occupancy m there, visiting (2s + 1)³ cells at
/// `visit` each and evaluating about (2s + 1)³·m distances.
pub(crate) fn cell_cost(count: u32, around: f64, k: usize, visit: f64) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let width = (2 * DENSITY_REACH + 1) as f64;
    let mean = around / (width * width * width);
    let rings = (k as f64 / (4.19 * mean)).cbrt().ceil() + 1.0;
    let cells = (2.0 * rings + 1.0).powi(3);
    f64::from(count) * (visit * cells + cells * mean)
}

/// The particles in a grid's cells: `starts[c]..starts[c + 1]` indexes `members` for cell c.
pub(crate) struct Grid {
    /// Where the grid lies.
    pub(crate) frame: Frame,
    /// Cells per axis and cell edge.
    pub(crate) shape: Shape,
    /// Member offsets per cell, one more than the cells.
    pub(crate) starts: Vec<u32>,
    /// (original index, position) sorted by cell, then index.
    pub(crate) members: Vec<(u32, [f32; 3])>,
}

/// The bounds of the finite positions and their count, on rayon threads (min and max are
/// exact, so the split does not matter).
pub(crate) fn finite_bounds(positions: &[[f32; 3]]) -> ([f32; 3], [f32; 3], usize) {
    positions
        .par_chunks(GRAIN)
        .map(|chunk| {
            let mut lo = [f32::INFINITY; 3];
            let mut hi = [f32::NEG_INFINITY; 3];
            let mut n = 0;
            for p in chunk.iter().filter(|p| p.iter().all(|v| v.is_finite())) {
                n += 1;
                for a in 0..3 {
                    lo[a] = lo[a].min(p[a]);
                    hi[a] = hi[a].max(p[a]);
                }
            }
            (lo, hi, n)
        })
        .reduce(
            || ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3], 0),
            |(lo_a, hi_a, n_a), (lo_b, hi_b, n_b)| {
                (
                    std::array::from_fn(|a| lo_a[a].min(lo_b[a])),
                    std::array::from_fn(|a| hi_a[a].max(hi_b[a])),
                    n_a + n_b,
                )
            },
        )
}

/// Sums of `values` over the box of ±[`DENSITY_REACH`] cells around each cell (wrapped when
/// periodic, clipped at the edges otherwise), one axis after another on rayon threads.
pub(crate) fn box_sums(values: &[u32], n: [usize; 3], periodic: bool) -> Vec<f64> {
    let mut current: Vec<f64> = values.par_iter().map(|&c| f64::from(c)).collect();
    let mut next = vec![0.0f64; current.len()];
    let reach = DENSITY_REACH as i64;
    for axis in 0..3 {
        let stride = match axis {
            0 => 1,
            1 => n[0],
            _ => n[0] * n[1],
        };
        let len = n[axis] as i64;
        let input = &current;
        next.par_chunks_mut(GRAIN)
            .enumerate()
            .for_each(|(chunk, out)| {
                for (offset, value) in out.iter_mut().enumerate() {
                    let index = chunk * GRAIN + offset;
                    let c = ((index / stride) % n[axis]) as i64;
                    let mut sum = 0.0;
                    for o in -reach..=reach {
                        let mut v = c + o;
                        if periodic {
                            v = v.rem_euclid(len);
                        } else if v < 0 || v >= len {
                            continue;
                        }
                        sum += input[(index as i64 + (v - c) * stride as i64) as usize];
                    }
                    *value = sum;
                }
            });
        std::mem::swap(&mut current, &mut next);
    }
    current
}

impl Grid {
    /// Builds the grid of the `n_valid` finite positions on CPU threads, with the tried shape of
    /// lowest modelled cost.
    pub(crate) fn build(
        positions: &[[f32; 3]],
        box_size: Option<f64>,
        bounds: ([f32; 3], [f32; 3]),
        n_valid: usize,
        k: usize,
    ) -> Self {
        let frame = Frame::new(box_size, bounds.0, bounds.1);
        let evaluate = |shape: Shape| {
            let cells = Self::assign(&frame, &shape, positions);
            let counts = count(&cells, shape.cells());
            let around = box_sums(&counts, shape.n, box_size.is_some());
            let partial: Vec<f64> = counts
                .par_chunks(GRAIN)
                .zip(around.par_chunks(GRAIN))
                .map(|(c, a)| {
                    c.iter()
                        .zip(a)
                        .map(|(&c, &a)| cell_cost(c, a, k, CPU_VISIT_COST))
                        .sum::<f64>()
                })
                .collect();
            let cost: f64 = partial.iter().sum();
            (cost, shape, cells, counts)
        };
        let (first, rest) = frame.shapes(n_valid, MAX_CELLS_TOTAL);
        let mut best = evaluate(first);
        for shape in rest {
            let trial = evaluate(shape);
            if trial.0 < best.0 {
                best = trial;
            }
        }
        let (_, shape, cells, counts) = best;
        let mut starts = Vec::with_capacity(counts.len() + 1);
        let mut total = 0u32;
        starts.push(0);
        for c in counts {
            total += c;
            starts.push(total);
        }
        let mut cursor = starts.clone();
        let mut members = vec![(0, [0.0; 3]); n_valid];
        for (i, &c) in cells.iter().enumerate() {
            if c != u32::MAX {
                let slot = &mut cursor[c as usize];
                members[*slot as usize] = (i as u32, positions[i]);
                *slot += 1;
            }
        }
        Self {
            frame,
            shape,
            starts,
            members,
        }
    }

    /// Each particle's cell index (u32::MAX for non-finite positions).
    fn assign(frame: &Frame, shape: &Shape, positions: &[[f32; 3]]) -> Vec<u32> {
        positions
            .par_iter()
            .map(|p| {
                if p.iter().all(|v| v.is_finite()) {
                    cell_index(&shape.n, frame.cell_of(shape, p)) as u32
                } else {
                    u32::MAX
                }
            })
            .collect()
    }
}

/// Particles per cell (`cells` as from `assign`), counted on rayon threads.
fn count(cells: &[u32], n_cells: usize) -> Vec<u32> {
    let counts: Vec<AtomicU32> = (0..n_cells).map(|_| AtomicU32::new(0)).collect();
    cells.par_iter().filter(|c| **c != u32::MAX).for_each(|&c| {
        counts[c as usize].fetch_add(1, Ordering::Relaxed);
    });
    counts.into_iter().map(AtomicU32::into_inner).collect()
}
