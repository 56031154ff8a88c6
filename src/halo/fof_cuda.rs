//! The CUDA friends-of-friends linker (kernels/fof.cu), twin of `fof_cpu.rs`.
//!
//! Same grid (cells of side ≤ ll/√3 whose members are all friends), same link rule (d² ≤ ll² in
//! float64 on the wrapped float32 positions, minimum image when periodic, evaluated with the same
//! operations: NVRTC compiles with `--fmad=false`), so the partition is identical to the CPU's.
//! Steps, all on the device: cell key per particle (row-major, Morton or Hilbert order of the cell
//! coordinates), stable LSD radix sort of (key, index), sorted float64 positions, cell starts by
//! scan, a hash table of the non-empty cells, one thread per cell linking its half stencil by
//! atomic union-find, compression; then either per-particle set ids ([`link_components_cuda`])
//! or, for the catalogue, the whole first catalogue step on the device ([`partition_cuda`]: set
//! sizes and smallest members by atomics, the kept sets, sorted on the host, and per-particle
//! halo labels), so that one label array comes back instead of set ids the CPU must reduce.
//! Positions go up and labels come down through pinned staging buffers. Memory O(N).

use super::FofError;
use super::catalogue::{GroupKey, Partition};
use super::fof_cuda_link::{LinkGeometry, SortedCells, link_by_blocks, link_by_cells};
use super::fof_cuda_support::Kernels;
pub use super::fof_cuda_support::half_stencil_offsets;
use super::periodic::BoxFrame;
use crate::gpu::{
    GpuDevice, StageTimer, alloc, download_pinned, fill_bytes, per_element, upload_pinned,
};
use crate::jobs::Progress;
use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use rayon::prelude::*;
use std::sync::Arc;

/// Same as `grid.rs`: cells slightly smaller than ll/√3 so rounding can never make two members
/// of one cell lie farther apart than ll.
const SIDE_SHRINK: f64 = 1.0 - 1e-6;

/// Same as `grid.rs`: at most 2^21 cells per axis, so packed coordinates fit in 63 bits.
const MAX_CELLS_PER_AXIS: u64 = 1 << 21;

/// The order in which cells (and so particles) are laid out in device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CellOrder {
    /// Row-major cell index, x fastest (the CPU's order).
    RowMajor,
    /// Z-order of the cell coordinates.
    #[default]
    Morton,
    /// Hilbert order of the cell coordinates.
    Hilbert,
}

impl CellOrder {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::RowMajor => "row-major",
            Self::Morton => "morton",
            Self::Hilbert => "hilbert",
        }
    }

    /// The code the `fof_cell_keys` kernel takes.
    fn code(self) -> i32 {
        match self {
            Self::RowMajor => 0,
            Self::Morton => 1,
            Self::Hilbert => 2,
        }
    }
}

/// What the CUDA linker returns: set ids and how the time was spent.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaLinkOutput {
    /// Per particle (input order): its set id; equal ids ⇔ same set; ids are below N.
    pub set_ids: Vec<u32>,
    /// Number of non-empty cells.
    pub n_cells: usize,
    /// Wall seconds per stage (each stage ends with a stream synchronisation), in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// The cell grid's parameters, computed on the host exactly as `grid.rs` does.
#[derive(Debug, Clone, Copy)]
struct GridSpec {
    lower: [f64; 3],
    side: f64,
    dims: [u64; 3],
}

/// Links `positions` on `device` with `linking_length` (periodic inside `frame` when given) and
/// returns the set id of every particle, the same partition as [`super::link_components`].
pub fn link_components_cuda(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    order: CellOrder,
    progress: &Progress,
) -> Result<CudaLinkOutput, FofError> {
    let n = positions.len();
    if n == 0 {
        return Ok(CudaLinkOutput {
            set_ids: Vec::new(),
            n_cells: 0,
            stage_seconds: Vec::new(),
        });
    }
    let kernels = Kernels::load(device)?;
    let stream = device.stream().clone();
    let mut timer = StageTimer::new(&stream);
    let linked = link_on_device(
        device,
        &kernels,
        &mut timer,
        positions,
        linking_length,
        frame,
        order,
        progress,
    )?;
    let n_cells32 = linked.n_cells as u32;
    let mut set_ids_dev = alloc::<u32>(&stream, n)?;
    {
        let mut launch = stream.launch_builder(&kernels.labels);
        launch
            .arg(&linked.cell_start)
            .arg(&linked.parent)
            .arg(&linked.order)
            .arg(&n_cells32)
            .arg(&mut set_ids_dev);
        // SAFETY: members of cell c are the sorted positions cell_start[c]..cell_start[c+1]
        // within 0..n, and order maps each to a particle index < n.
        unsafe { launch.launch(per_element(linked.n_cells, 0)) }?;
    }
    let set_ids = download_pinned(device, &set_ids_dev, n, |id| id)?;
    timer.stage("set ids + download")?;
    progress.report("cuda: linking", 1, 1);
    Ok(CudaLinkOutput {
        set_ids,
        n_cells: linked.n_cells,
        stage_seconds: timer.into_stages(),
    })
}

/// What [`partition_cuda`] returns: the catalogue's first step and how the time was spent.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaPartitionOutput {
    /// Labels, kept sets in catalogue order and the set count: equal to
    /// [`super::catalogue::partition`] of the CPU linker's set ids.
    pub partition: Partition,
    /// Number of non-empty cells.
    pub n_cells: usize,
    /// Wall seconds per stage (each stage ends with a stream synchronisation), in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// Links `positions` on `device` as [`link_components_cuda`], then finds the sets of at least
/// `min_members` particles and labels every particle with its halo rank (size descending, ties
/// by smallest member) on the device, so that only the labels and the kept sets come back.
#[allow(clippy::too_many_arguments)]
pub fn partition_cuda(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    order: CellOrder,
    min_members: usize,
    progress: &Progress,
) -> Result<CudaPartitionOutput, FofError> {
    let n = positions.len();
    if n == 0 {
        return Ok(CudaPartitionOutput {
            partition: Partition {
                labels: Vec::new(),
                groups: Vec::new(),
                n_sets_all_sizes: 0,
            },
            n_cells: 0,
            stage_seconds: Vec::new(),
        });
    }
    let kernels = Kernels::load(device)?;
    let stream = device.stream().clone();
    let mut timer = StageTimer::new(&stream);
    let (_, on_device) = partition_on_device(
        device,
        &kernels,
        &mut timer,
        positions,
        linking_length,
        frame,
        order,
        min_members,
        true,
        progress,
    )?;
    // The label words are i32 ranks (−1 = all ones) written as u32.
    let labels = match &on_device.labels {
        Some(labels) => download_pinned(device, labels, n, |w| w as i32)?,
        None => Vec::new(),
    };
    timer.stage("download labels")?;
    progress.report("cuda: linking", 1, 1);
    Ok(CudaPartitionOutput {
        partition: Partition {
            labels,
            groups: on_device.groups,
            n_sets_all_sizes: on_device.n_sets_all_sizes,
        },
        n_cells: on_device.n_cells,
        stage_seconds: timer.into_stages(),
    })
}

/// The catalogue's first step left on the device by [`partition_on_device`].
pub(super) struct PartitionOnDevice {
    /// Per particle (input order): halo rank, all ones when not kept; `None` when not asked
    /// for (the catalogue sums need only `rank_of_cell`).
    pub(super) labels: Option<CudaSlice<u32>>,
    /// Per cell: the halo rank of its set when the cell is a kept root, else all ones.
    pub(super) rank_of_cell: CudaSlice<u32>,
    /// Kept sets in catalogue order.
    pub(super) groups: Vec<GroupKey>,
    /// Number of sets of every size.
    pub(super) n_sets_all_sizes: usize,
    /// Number of non-empty cells.
    pub(super) n_cells: usize,
}

/// Links on the device, then set sizes, smallest members, kept sets (sorted on the host) and
/// per-particle halo labels (only when `with_labels`), all left on the device with the linked
/// cells.
#[allow(clippy::too_many_arguments)]
pub(super) fn partition_on_device(
    device: &GpuDevice,
    kernels: &Kernels,
    timer: &mut StageTimer<'_>,
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    order: CellOrder,
    min_members: usize,
    with_labels: bool,
    progress: &Progress,
) -> Result<(Linked, PartitionOnDevice), FofError> {
    let n = positions.len();
    let stream = device.stream().clone();
    let linked = link_on_device(
        device,
        kernels,
        timer,
        positions,
        linking_length,
        frame,
        order,
        progress,
    )?;
    let n_cells = linked.n_cells;
    let n_cells32 = n_cells as u32;
    // Set sizes start at 0, smallest members at u32::MAX (all one bits).
    let mut set_size = stream.alloc_zeros::<u32>(n_cells)?;
    let mut set_min = alloc::<u32>(&stream, n_cells)?;
    fill_bytes(&stream, &mut set_min, 0xff)?;
    {
        let mut launch = stream.launch_builder(&kernels.set_stats);
        launch
            .arg(&linked.cell_start)
            .arg(&linked.parent)
            .arg(&linked.order)
            .arg(&n_cells32)
            .arg(&mut set_size)
            .arg(&mut set_min);
        // SAFETY: parent[c] < n_cells indexes set_size and set_min (n_cells each); members of
        // cell c lie in 0..n of order.
        unsafe { launch.launch(per_element(n_cells, 0)) }?;
    }
    // At most n / min_members sets have min_members members or more.
    let min_members32 = u32::try_from(min_members.max(1)).unwrap_or(u32::MAX);
    let capacity = n / min_members.max(1) + 1;
    let capacity32 = capacity as u32;
    let mut counters = stream.alloc_zeros::<u32>(2)?;
    let mut kept_root = alloc::<u32>(&stream, capacity)?;
    let mut kept_size = alloc::<u32>(&stream, capacity)?;
    let mut kept_min = alloc::<u32>(&stream, capacity)?;
    {
        let mut launch = stream.launch_builder(&kernels.kept_sets);
        launch
            .arg(&linked.parent)
            .arg(&set_size)
            .arg(&set_min)
            .arg(&n_cells32)
            .arg(&min_members32)
            .arg(&capacity32)
            .arg(&mut counters)
            .arg(&mut kept_root)
            .arg(&mut kept_size)
            .arg(&mut kept_min);
        // SAFETY: arrays of n_cells entries indexed by c < n_cells; kept slots are written only
        // below capacity; counters holds 2 words.
        unsafe { launch.launch(per_element(n_cells, 0)) }?;
    }
    let counts = stream.clone_dtoh(&counters)?;
    let (n_roots, n_kept) = (counts[0] as usize, (counts[1] as usize).min(capacity));
    let mut kept: Vec<(GroupKey, u32)> = Vec::with_capacity(n_kept);
    if n_kept > 0 {
        let roots = stream.clone_dtoh(&kept_root.slice(0..n_kept))?;
        let sizes = stream.clone_dtoh(&kept_size.slice(0..n_kept))?;
        let mins = stream.clone_dtoh(&kept_min.slice(0..n_kept))?;
        for ((root, size), min_index) in roots.into_iter().zip(sizes).zip(mins) {
            kept.push((GroupKey { size, min_index }, root));
        }
    }
    // The device found the kept sets in a racy order; the catalogue order is total.
    kept.par_sort_unstable_by_key(|(g, _)| (std::cmp::Reverse(g.size), g.min_index));
    let groups: Vec<GroupKey> = kept.iter().map(|(g, _)| *g).collect();
    let mut ranked_roots: Vec<u32> = kept.iter().map(|(_, root)| *root).collect();
    ranked_roots.push(0); // never read: keeps the upload non-empty
    let ranked_roots_dev = stream.clone_htod(&ranked_roots)?;
    // Rank −1 (all one bits) for every set not kept.
    let mut rank_of_cell = alloc::<u32>(&stream, n_cells)?;
    fill_bytes(&stream, &mut rank_of_cell, 0xff)?;
    let n_kept32 = n_kept as u32;
    {
        let mut launch = stream.launch_builder(&kernels.rank_roots);
        launch
            .arg(&ranked_roots_dev)
            .arg(&n_kept32)
            .arg(&mut rank_of_cell);
        // SAFETY: ranked_roots holds n_kept (+1) roots, each < n_cells.
        unsafe { launch.launch(per_element(n_kept, 0)) }?;
    }
    let labels_dev = if with_labels {
        let mut labels_dev = alloc::<u32>(&stream, n)?;
        let mut launch = stream.launch_builder(&kernels.halo_labels);
        launch
            .arg(&linked.cell_start)
            .arg(&linked.parent)
            .arg(&linked.order)
            .arg(&rank_of_cell)
            .arg(&n_cells32)
            .arg(&mut labels_dev);
        // SAFETY: as fof_labels; rank_of_cell holds n_cells entries indexed by roots.
        unsafe { launch.launch(per_element(n_cells, 0)) }?;
        drop(launch);
        Some(labels_dev)
    } else {
        None
    };
    timer.stage(if with_labels {
        "sets + kept + labels"
    } else {
        "sets + kept"
    })?;
    Ok((
        linked,
        PartitionOnDevice {
            labels: labels_dev,
            rank_of_cell,
            groups,
            n_sets_all_sizes: n_roots,
            n_cells,
        },
    ))
}

/// The linked cells left on the device by [`link_on_device`].
pub(super) struct Linked {
    /// Cell c's members are sorted positions `cell_start[c]..cell_start[c + 1]`.
    pub(super) cell_start: CudaSlice<u32>,
    /// Sorted position → particle index.
    pub(super) order: CudaSlice<u32>,
    /// Per cell: the root cell of its set (compressed: every entry is a root).
    pub(super) parent: CudaSlice<u32>,
    /// Number of non-empty cells.
    pub(super) n_cells: usize,
    /// Wrapped float64 positions in sorted order (x, y, z).
    pub(super) sorted_positions: [CudaSlice<f64>; 3],
}

/// Steps 1–4 on the device: keys, sort, cells, hash, link and compression.
#[allow(clippy::too_many_arguments)]
fn link_on_device(
    device: &GpuDevice,
    kernels: &Kernels,
    timer: &mut StageTimer<'_>,
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    order: CellOrder,
    progress: &Progress,
) -> Result<Linked, FofError> {
    let n = positions.len();
    if n >= (i32::MAX as usize) {
        return Err(FofError::TooManyParticles(n));
    }
    progress.check()?;
    let stream: Arc<CudaStream> = device.stream().clone();
    let n32 = n as u32;
    let spec = grid_spec(positions, linking_length, frame)?;
    let stencil = half_stencil_offsets(linking_length, spec.side);
    let (periodic, box_lower, box_size) = match frame {
        Some(f) => (1i32, f.lower, f.size),
        None => (0i32, 0.0, 0.0),
    };
    let dims32 = spec.dims.map(|d| d as u32);
    let max_dim = spec.dims.iter().copied().max().unwrap_or(1);
    let bits = (64 - (max_dim - 1).leading_zeros()).max(1);
    let key_bits = match order {
        CellOrder::RowMajor => {
            let cells = spec.dims[0] * spec.dims[1] * spec.dims[2];
            (64 - (cells - 1).leading_zeros()).max(1)
        }
        CellOrder::Morton | CellOrder::Hilbert => 3 * bits,
    };

    // 1. Upload and key.
    progress.report("cuda: cell keys", 0, 1);
    let pos_dev = upload_pinned(device, positions.as_flattened())?;
    let mut keys = alloc::<u64>(&stream, n)?;
    let mut values = alloc::<u32>(&stream, n)?;
    let order_code = order.code();
    {
        let mut launch = stream.launch_builder(&kernels.cell_keys);
        launch
            .arg(&pos_dev)
            .arg(&n32)
            .arg(&periodic)
            .arg(&box_lower)
            .arg(&box_size)
            .arg(&spec.lower[0])
            .arg(&spec.lower[1])
            .arg(&spec.lower[2])
            .arg(&spec.side)
            .arg(&dims32[0])
            .arg(&dims32[1])
            .arg(&dims32[2])
            .arg(&bits)
            .arg(&order_code)
            .arg(&mut keys)
            .arg(&mut values);
        // SAFETY: pos_dev holds 3n floats; keys and values hold n elements; one thread per
        // particle, guarded by i < n in the kernel.
        unsafe { launch.launch(per_element(n, 0)) }?;
    }
    timer.stage("upload + cell keys")?;
    progress.check()?;

    // 2. Sort by cell key.
    progress.report("cuda: sort", 0, 1);
    let (keys, values) = kernels.sort.sort_pairs(keys, values, n32, key_bits)?;
    timer.stage("radix sort")?;
    progress.check()?;

    // 3. Sorted positions, cell starts and coordinates.
    progress.report("cuda: cells", 0, 1);
    let mut sx = alloc::<f64>(&stream, n)?;
    let mut sy = alloc::<f64>(&stream, n)?;
    let mut sz = alloc::<f64>(&stream, n)?;
    let mut head = alloc::<u32>(&stream, n)?;
    {
        let mut launch = stream.launch_builder(&kernels.gather);
        launch
            .arg(&pos_dev)
            .arg(&values)
            .arg(&keys)
            .arg(&n32)
            .arg(&periodic)
            .arg(&box_lower)
            .arg(&box_size)
            .arg(&mut sx)
            .arg(&mut sy)
            .arg(&mut sz)
            .arg(&mut head);
        // SAFETY: values is a permutation of 0..n (indices into pos_dev's n points); every
        // array holds n elements; one thread per sorted position, guarded by s < n.
        unsafe { launch.launch(per_element(n, 0)) }?;
    }
    drop(pos_dev);
    drop(keys);
    let head_scan = kernels.sort.scan().exclusive(&head, n)?;
    let last_scan = stream.clone_dtoh(&head_scan.slice(n - 1..n))?;
    let last_head = stream.clone_dtoh(&head.slice(n - 1..n))?;
    let n_cells = (last_scan[0] + last_head[0]) as usize;
    let mut cell_start = alloc::<u32>(&stream, n_cells + 1)?;
    let mut cell_coords = alloc::<u64>(&stream, n_cells)?;
    {
        let mut launch = stream.launch_builder(&kernels.cells);
        launch
            .arg(&head)
            .arg(&head_scan)
            .arg(&sx)
            .arg(&sy)
            .arg(&sz)
            .arg(&n32)
            .arg(&spec.lower[0])
            .arg(&spec.lower[1])
            .arg(&spec.lower[2])
            .arg(&spec.side)
            .arg(&dims32[0])
            .arg(&dims32[1])
            .arg(&dims32[2])
            .arg(&mut cell_start)
            .arg(&mut cell_coords);
        // SAFETY: head_scan[s] < n_cells for every head s, and the last thread writes index
        // n_cells of cell_start, which holds n_cells + 1 entries.
        unsafe { launch.launch(per_element(n, 0)) }?;
    }
    drop(head);
    drop(head_scan);
    timer.stage("gather + cells")?;
    progress.check()?;
    let n_cells32 = n_cells as u32;
    let stencil_dev = stream.clone_htod(&stencil)?;
    let n_stencil = (stencil.len() / 3) as u32;
    let ll2 = linking_length * linking_length;
    let mut parent = alloc::<u32>(&stream, n_cells)?;
    {
        let mut launch = stream.launch_builder(&kernels.init_parent);
        launch.arg(&mut parent).arg(&n_cells32);
        // SAFETY: parent holds n_cells entries; guarded by c < n_cells.
        unsafe { launch.launch(per_element(n_cells, 0)) }?;
    }
    let geometry = LinkGeometry {
        n_particles: n,
        n_cells,
        dims32,
        periodic,
        box_size,
        ll2,
        stencil: &stencil_dev,
        n_stencil,
    };
    let sorted = SortedCells {
        cell_start: &cell_start,
        cell_coords: &cell_coords,
        sx: &sx,
        sy: &sy,
        sz: &sz,
    };
    if order == CellOrder::Morton {
        link_by_blocks(
            &stream,
            kernels,
            timer,
            &sorted,
            &geometry,
            &stencil,
            &mut parent,
            progress,
        )?;
    } else {
        link_by_cells(
            &stream,
            kernels,
            timer,
            &sorted,
            &geometry,
            &mut parent,
            progress,
        )?;
    }
    timer.stage("link")?;
    progress.check()?;
    {
        let mut launch = stream.launch_builder(&kernels.compress);
        launch.arg(&mut parent).arg(&n_cells32);
        // SAFETY: parent holds n_cells entries, all < n_cells.
        unsafe { launch.launch(per_element(n_cells, 0)) }?;
    }
    Ok(Linked {
        cell_start,
        order: values,
        parent,
        n_cells,
        sorted_positions: [sx, sy, sz],
    })
}

/// The grid of `grid.rs` (`CellGrid::build`): periodic, n = ⌈L/side_target⌉ cells of side L/n
/// from the frame's lower corner; open, cells of side_target from the bounding box's lower
/// corner, ⌈extent/side_target + 1⌉ per axis.
fn grid_spec(
    positions: &[[f32; 3]],
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
            let (lo, hi) = positions
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
                );
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

/// `ceil(cells)` in `1..=MAX_CELLS_PER_AXIS`, as `grid.rs`.
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

#[cfg(test)]
#[path = "fof_cuda_tests.rs"]
mod tests;
