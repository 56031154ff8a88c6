//! Device plumbing of the CUDA friends-of-friends twin: the kernel table, one run's context
//! (stream, stage timer, progress) and the empty hash table. Generic scan, sort, buffers,
//! transfers and timers are in `crate::gpu`.

use crate::gpu::{GpuDevice, RadixSort, StageTimer, alloc, fill_bytes};
use crate::halo::error::FofError;
use crate::jobs::Progress;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream};
use std::sync::Arc;

/// The kernel source, compiled by NVRTC on first use.
const FOF_SOURCE: &str = concat!(
    include_str!("../../../kernels/fof.cu"),
    include_str!("../../../kernels/fof_blocks.cu"),
    include_str!("../../../kernels/fof_catalogue.cu"),
    include_str!("../../../kernels/fof_split.cu")
);

/// The kernels of kernels/fof.cu (with fof_blocks.cu, fof_catalogue.cu and fof_split.cu), and
/// the radix sort and scan they are used with.
pub(super) struct Kernels {
    pub(super) sort: RadixSort,
    pub(super) cell_keys: CudaFunction,
    pub(super) gather: CudaFunction,
    pub(super) cells: CudaFunction,
    pub(super) init_parent: CudaFunction,
    pub(super) block_count: CudaFunction,
    pub(super) block_insert: CudaFunction,
    pub(super) block_dense: CudaFunction,
    pub(super) link_blocks: CudaFunction,
    pub(super) compress: CudaFunction,
    pub(super) labels: CudaFunction,
    pub(super) set_stats: CudaFunction,
    pub(super) kept_sets: CudaFunction,
    pub(super) ghost_sets: CudaFunction,
    pub(super) boundary_members: CudaFunction,
    pub(super) rank_roots: CudaFunction,
    pub(super) halo_labels: CudaFunction,
    pub(super) sorted_ranks: CudaFunction,
    pub(super) compact_members: CudaFunction,
    pub(super) halo_sums: CudaFunction,
    pub(super) halo_radii: CudaFunction,
    pub(super) route: CudaFunction,
    pub(super) route_flags: CudaFunction,
    pub(super) route_scatter: CudaFunction,
    pub(super) gather_points: CudaFunction,
    pub(super) gather_words: CudaFunction,
}

impl Kernels {
    /// Compiles (or loads from the cache) kernels/fof.cu and kernels/sort_scan.cu on `device`.
    pub(super) fn load(device: &GpuDevice) -> Result<Self, FofError> {
        let module = device.module("fof.cu", FOF_SOURCE)?;
        let f = |name: &str| module.load_function(name);
        Ok(Self {
            sort: RadixSort::load(device)?,
            cell_keys: f("fof_cell_keys")?,
            gather: f("fof_gather")?,
            cells: f("fof_cells")?,
            init_parent: f("fof_init_parent")?,
            block_count: f("fof_block_count")?,
            block_insert: f("fof_block_insert")?,
            block_dense: f("fof_block_dense")?,
            link_blocks: f("fof_link_blocks")?,
            compress: f("fof_compress")?,
            labels: f("fof_labels")?,
            set_stats: f("fof_set_stats")?,
            kept_sets: f("fof_kept_sets")?,
            ghost_sets: f("fof_ghost_sets")?,
            boundary_members: f("fof_boundary_members")?,
            rank_roots: f("fof_rank_roots")?,
            halo_labels: f("fof_halo_labels")?,
            sorted_ranks: f("fof_sorted_ranks")?,
            compact_members: f("fof_compact_members")?,
            halo_sums: f("fof_halo_sums")?,
            halo_radii: f("fof_halo_radii")?,
            route: f("fof_route")?,
            route_flags: f("fof_route_flags")?,
            route_scatter: f("fof_route_scatter")?,
            gather_points: f("fof_gather_points")?,
            gather_words: f("fof_gather_words")?,
        })
    }
}

/// One run on the device: its kernels, stream, stage timer and progress sink, passed to every
/// pass of the linker and the catalogue.
pub(super) struct DeviceRun<'a> {
    pub(super) device: &'a GpuDevice,
    pub(super) kernels: Kernels,
    pub(super) stream: &'a Arc<CudaStream>,
    pub(super) timer: StageTimer<'a>,
    pub(super) progress: &'a Progress,
}

impl<'a> DeviceRun<'a> {
    /// Loads the kernels on `device`, then starts the first stage's clock.
    pub(super) fn start(device: &'a GpuDevice, progress: &'a Progress) -> Result<Self, FofError> {
        let kernels = Kernels::load(device)?;
        let stream = device.stream();
        Ok(Self {
            device,
            kernels,
            stream,
            timer: StageTimer::new(stream),
            progress,
        })
    }

    /// Closes the current stage as `name` (after the stream's queued work).
    pub(super) fn stage(&mut self, name: &'static str) -> Result<(), FofError> {
        Ok(self.timer.stage(name)?)
    }

    /// The stages' wall seconds, in order.
    pub(super) fn into_stages(self) -> Vec<(&'static str, f64)> {
        self.timer.into_stages()
    }
}

/// An empty open-addressing table for at least `entries` keys: its key array (every slot the
/// all-ones empty marker) and the index mask (length − 1, a power of two ≥ 2·entries).
pub(super) fn empty_hash_keys(
    stream: &Arc<CudaStream>,
    entries: usize,
) -> Result<(CudaSlice<u64>, u64), FofError> {
    let table_len = (2 * entries).next_power_of_two().max(1024);
    let mut keys = alloc::<u64>(stream, table_len)?;
    fill_bytes(stream, &mut keys, 0xff)?;
    Ok((keys, (table_len - 1) as u64))
}
