//! The CUDA friends-of-friends linker (kernels/fof.cu), twin of `fof_cpu.rs`.
//!
//! Same grid (cells of side ≤ ll/√3 whose members are all friends), same link rule (d² ≤ ll² in
//! float64 on the wrapped float32 positions, minimum image when periodic, evaluated with the same
//! operations: NVRTC compiles with `--fmad=false`), so the partition is identical to the CPU's.
//! Steps, all on the device: cell key per particle (row-major, Morton or Hilbert order of the cell
//! coordinates), stable LSD radix sort of (key, index), sorted float64 positions, cell starts by
//! scan, a hash table of the non-empty cells, one thread per cell linking its half stencil by
//! atomic union-find, compression, and per-particle set ids. Memory O(N); the catalogue is
//! built from the set ids by `catalogue.rs`, as for the CPU.

use super::FofError;
use super::periodic::BoxFrame;
use crate::gpu::{GpuDevice, GpuError};
use crate::jobs::Progress;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, DriverError, LaunchConfig, PushKernelArg,
    ValidAsZeroBits, sys,
};
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// The kernel source, compiled by NVRTC on first use.
const FOF_SOURCE: &str = include_str!("../../kernels/fof.cu");

/// Threads per block of every kernel (the scan and sort tiles assume 256).
const BLOCK: u32 = 256;

/// Elements per scan or sort tile (`BLOCK` threads × 8 items, as in kernels/fof.cu).
const TILE: usize = 2048;

/// Bits per radix-sort pass (16 buckets, as in kernels/fof.cu).
const RADIX_BITS: u32 = 4;

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
    if n >= (i32::MAX as usize) {
        return Err(FofError::TooManyParticles(n));
    }
    progress.check()?;
    let n32 = n as u32;
    let spec = grid_spec(positions, linking_length, frame)?;
    let stencil = half_stencil_offsets(linking_length, spec.side);
    let kernels = Kernels::load(device)?;
    let stream = device.stream().clone();
    let mut timer = StageTimer::new(&stream);
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
    let pos_dev = gpu(stream.clone_htod(positions.as_flattened()))?;
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
        gpu(unsafe { launch.launch(per_element(n)) })?;
    }
    timer.stage("upload + cell keys")?;
    progress.check()?;

    // 2. Sort by cell key.
    progress.report("cuda: sort", 0, 1);
    let (keys, values) = radix_sort(&stream, &kernels, keys, values, n32, key_bits)?;
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
        gpu(unsafe { launch.launch(per_element(n)) })?;
    }
    drop(pos_dev);
    drop(keys);
    let head_scan = exclusive_scan(&stream, &kernels, &head, n)?;
    let last_scan = gpu(stream.clone_dtoh(&head_scan.slice(n - 1..n)))?;
    let last_head = gpu(stream.clone_dtoh(&head.slice(n - 1..n)))?;
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
        gpu(unsafe { launch.launch(per_element(n)) })?;
    }
    drop(head);
    drop(head_scan);
    let n_cells32 = n_cells as u32;
    let table_len = (2 * n_cells).next_power_of_two().max(1024);
    let mask = (table_len - 1) as u64;
    let mut table_keys = alloc::<u64>(&stream, table_len)?;
    // The empty-slot marker is all ones.
    fill_bytes(&stream, &mut table_keys, 0xff)?;
    let mut table_values = alloc::<u32>(&stream, table_len)?;
    {
        let mut launch = stream.launch_builder(&kernels.hash_insert);
        launch
            .arg(&cell_coords)
            .arg(&n_cells32)
            .arg(&mut table_keys)
            .arg(&mut table_values)
            .arg(&mask);
        // SAFETY: the table has at least 2·n_cells slots (mask = len − 1, a power of two), so
        // linear probing always finds an empty slot; one thread per cell.
        gpu(unsafe { launch.launch(per_element(n_cells)) })?;
    }
    timer.stage("gather + cells + hash")?;
    progress.check()?;

    // 4. Link, compress, label.
    progress.report("cuda: linking", 0, 1);
    let stencil_dev = gpu(stream.clone_htod(&stencil))?;
    let n_stencil = (stencil.len() / 3) as u32;
    let mut parent = alloc::<u32>(&stream, n_cells)?;
    {
        let mut launch = stream.launch_builder(&kernels.init_parent);
        launch.arg(&mut parent).arg(&n_cells32);
        // SAFETY: parent holds n_cells entries; guarded by c < n_cells.
        gpu(unsafe { launch.launch(per_element(n_cells)) })?;
    }
    let ll2 = linking_length * linking_length;
    {
        let mut launch = stream.launch_builder(&kernels.link);
        launch
            .arg(&cell_start)
            .arg(&cell_coords)
            .arg(&n_cells32)
            .arg(&sx)
            .arg(&sy)
            .arg(&sz)
            .arg(&table_keys)
            .arg(&table_values)
            .arg(&mask)
            .arg(&stencil_dev)
            .arg(&n_stencil)
            .arg(&dims32[0])
            .arg(&dims32[1])
            .arg(&dims32[2])
            .arg(&periodic)
            .arg(&box_size)
            .arg(&ll2)
            .arg(&mut parent);
        // SAFETY: cell indices from the table are < n_cells; member ranges from cell_start lie
        // in 0..n (the sorted arrays' length); stencil holds 3·n_stencil ints.
        gpu(unsafe { launch.launch(per_element(n_cells)) })?;
    }
    timer.stage("link")?;
    progress.check()?;
    {
        let mut launch = stream.launch_builder(&kernels.compress);
        launch.arg(&mut parent).arg(&n_cells32);
        // SAFETY: parent holds n_cells entries, all < n_cells.
        gpu(unsafe { launch.launch(per_element(n_cells)) })?;
    }
    let mut set_ids_dev = alloc::<u32>(&stream, n)?;
    {
        let mut launch = stream.launch_builder(&kernels.labels);
        launch
            .arg(&cell_start)
            .arg(&parent)
            .arg(&values)
            .arg(&n_cells32)
            .arg(&mut set_ids_dev);
        // SAFETY: members of cell c are the sorted positions cell_start[c]..cell_start[c+1]
        // within 0..n, and values maps each to a particle index < n.
        gpu(unsafe { launch.launch(per_element(n_cells)) })?;
    }
    let set_ids = gpu(stream.clone_dtoh(&set_ids_dev))?;
    timer.stage("compress + labels + download")?;
    progress.report("cuda: linking", 1, 1);
    Ok(CudaLinkOutput {
        set_ids,
        n_cells,
        stage_seconds: timer.stages,
    })
}

/// The kernels of kernels/fof.cu.
struct Kernels {
    cell_keys: CudaFunction,
    scan_tiles: CudaFunction,
    scan_add: CudaFunction,
    radix_count: CudaFunction,
    radix_scatter: CudaFunction,
    gather: CudaFunction,
    cells: CudaFunction,
    hash_insert: CudaFunction,
    init_parent: CudaFunction,
    link: CudaFunction,
    compress: CudaFunction,
    labels: CudaFunction,
}

impl Kernels {
    fn load(device: &GpuDevice) -> Result<Self, FofError> {
        let module = device.module("fof.cu", FOF_SOURCE)?;
        let f = |name: &str| gpu(module.load_function(name));
        Ok(Self {
            cell_keys: f("fof_cell_keys")?,
            scan_tiles: f("scan_tiles")?,
            scan_add: f("scan_add")?,
            radix_count: f("radix_count")?,
            radix_scatter: f("radix_scatter")?,
            gather: f("fof_gather")?,
            cells: f("fof_cells")?,
            hash_insert: f("fof_hash_insert")?,
            init_parent: f("fof_init_parent")?,
            link: f("fof_link")?,
            compress: f("fof_compress")?,
            labels: f("fof_labels")?,
        })
    }
}

/// Stable LSD radix sort of `n` (key, value) pairs on their low `key_bits` bits.
fn radix_sort(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    mut keys: CudaSlice<u64>,
    mut values: CudaSlice<u32>,
    n: u32,
    key_bits: u32,
) -> Result<(CudaSlice<u64>, CudaSlice<u32>), FofError> {
    let len = n as usize;
    let n_tiles = len.div_ceil(TILE);
    let n_tiles32 = n_tiles as u32;
    let buckets = 1usize << RADIX_BITS;
    let mut keys_alt = alloc::<u64>(stream, len)?;
    let mut values_alt = alloc::<u32>(stream, len)?;
    let mut counts = alloc::<u32>(stream, buckets * n_tiles)?;
    let tiles = LaunchConfig {
        grid_dim: (n_tiles32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut shift = 0u32;
    while shift < key_bits {
        {
            let mut launch = stream.launch_builder(&kernels.radix_count);
            launch
                .arg(&keys)
                .arg(&n)
                .arg(&shift)
                .arg(&mut counts)
                .arg(&n_tiles32);
            // SAFETY: one block per tile of keys (guarded by i < n); counts holds 16·n_tiles.
            gpu(unsafe { launch.launch(tiles) })?;
        }
        let offsets = exclusive_scan(stream, kernels, &counts, buckets * n_tiles)?;
        {
            let mut launch = stream.launch_builder(&kernels.radix_scatter);
            launch
                .arg(&keys)
                .arg(&values)
                .arg(&mut keys_alt)
                .arg(&mut values_alt)
                .arg(&n)
                .arg(&shift)
                .arg(&offsets)
                .arg(&n_tiles32);
            // SAFETY: offsets are the exclusive scan of the tile digit counts, so every element
            // lands on a distinct index below n of the output arrays.
            gpu(unsafe { launch.launch(tiles) })?;
        }
        std::mem::swap(&mut keys, &mut keys_alt);
        std::mem::swap(&mut values, &mut values_alt);
        shift += RADIX_BITS;
    }
    Ok((keys, values))
}

/// Exclusive prefix sum of the first `n` values of `input` (tiles, then their totals, scanned
/// recursively).
fn exclusive_scan(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    input: &CudaSlice<u32>,
    n: usize,
) -> Result<CudaSlice<u32>, FofError> {
    let n_tiles = n.div_ceil(TILE).max(1);
    let mut out = alloc::<u32>(stream, n.max(1))?;
    let mut tile_sums = alloc::<u32>(stream, n_tiles)?;
    let n32 = n as u32;
    {
        let mut launch = stream.launch_builder(&kernels.scan_tiles);
        launch
            .arg(input)
            .arg(&mut out)
            .arg(&mut tile_sums)
            .arg(&n32);
        let config = LaunchConfig {
            grid_dim: (n_tiles as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: one block per tile, elements guarded by i < n; tile_sums holds n_tiles.
        gpu(unsafe { launch.launch(config) })?;
    }
    if n_tiles > 1 {
        let tile_offsets = exclusive_scan(stream, kernels, &tile_sums, n_tiles)?;
        let mut launch = stream.launch_builder(&kernels.scan_add);
        launch.arg(&mut out).arg(&tile_offsets).arg(&n32);
        // SAFETY: element i reads tile_offsets[i / TILE] < n_tiles; guarded by i < n.
        gpu(unsafe { launch.launch(per_element(n)) })?;
    }
    Ok(out)
}

/// One thread per element, `BLOCK` threads a block.
fn per_element(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(BLOCK as usize).max(1) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Device memory for `len` elements; running out is a recoverable error naming the size.
fn alloc<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, FofError> {
    let bytes = len.max(1) * std::mem::size_of::<T>();
    // SAFETY: every buffer allocated here is fully written by a kernel before it is read.
    unsafe { stream.alloc::<T>(len.max(1)) }.map_err(|e| match e.0 {
        sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => FofError::Gpu(GpuError::OutOfMemory {
            requested_bytes: bytes,
        }),
        _ => FofError::Gpu(GpuError::Driver(e)),
    })
}

/// Sets every byte of `buffer` to `value`.
fn fill_bytes(
    stream: &Arc<CudaStream>,
    buffer: &mut CudaSlice<u64>,
    value: u8,
) -> Result<(), FofError> {
    use cudarc::driver::DevicePtrMut;
    let bytes = buffer.num_bytes();
    let (ptr, _record) = buffer.device_ptr_mut(stream);
    // SAFETY: ptr points at `bytes` bytes of device memory owned by `buffer`, which outlives the
    // asynchronous memset on `stream` (the guard records the use on the stream).
    gpu(unsafe { cudarc::driver::result::memset_d8_async(ptr, value, bytes, stream.cu_stream()) })
}

/// A driver result as a friends-of-friends result.
fn gpu<T>(result: Result<T, DriverError>) -> Result<T, FofError> {
    result.map_err(|e| FofError::Gpu(GpuError::Driver(e)))
}

/// Wall time per stage, each closed by a stream synchronisation.
struct StageTimer<'a> {
    stream: &'a Arc<CudaStream>,
    start: Instant,
    stages: Vec<(&'static str, f64)>,
}

impl<'a> StageTimer<'a> {
    fn new(stream: &'a Arc<CudaStream>) -> Self {
        Self {
            stream,
            start: Instant::now(),
            stages: Vec::new(),
        }
    }

    fn stage(&mut self, name: &'static str) -> Result<(), FofError> {
        gpu(self.stream.synchronize())?;
        let now = Instant::now();
        self.stages
            .push((name, now.duration_since(self.start).as_secs_f64()));
        self.start = now;
        Ok(())
    }
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

/// Cell offsets (dx, dy, dz), flattened, with (dz, dy, dx) lexicographically positive, whose
/// cells can hold two points within ll: the gap between cells `d` apart on one axis is
/// `(|d| − 1)·side`; kept when the squared gaps sum to ≤ ll² (with the same slack as `grid.rs`).
pub fn half_stencil_offsets(linking_length: f64, side: f64) -> Vec<i32> {
    let reach = (linking_length / side * (1.0 + 1e-9)).floor() as i32 + 1;
    let limit = linking_length * linking_length * (1.0 + 1e-9);
    let gap = |d: i32| f64::from((d.abs() - 1).max(0)) * side;
    let mut offsets = Vec::new();
    for dz in 0..=reach {
        for dy in -reach..=reach {
            for dx in -reach..=reach {
                if (dz, dy, dx) <= (0, 0, 0) {
                    continue;
                }
                if gap(dx).powi(2) + gap(dy).powi(2) + gap(dz).powi(2) <= limit {
                    offsets.extend([dx, dy, dz]);
                }
            }
        }
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_stencil_covers_each_neighbour_pair_once() {
        let ll = 1.0;
        let offsets = half_stencil_offsets(ll, ll / 3f64.sqrt() * SIDE_SHRINK);
        // Reach 2: all 5³ − 1 offsets qualify, half of them in the stencil.
        assert_eq!(offsets.len() / 3, 62);
        let set: std::collections::HashSet<[i32; 3]> = offsets
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        assert_eq!(set.len(), 62);
        for d in &set {
            assert!(
                !set.contains(&[-d[0], -d[1], -d[2]]),
                "{d:?} and its negation"
            );
        }
    }

    #[test]
    fn grid_matches_the_cpu_rule() {
        let frame = BoxFrame {
            lower: 0.0,
            size: 1.0,
        };
        let spec = grid_spec(&[[0.5, 0.5, 0.5]], 0.2, Some(frame)).expect("grid");
        // As grid.rs: side target 0.2/√3 → 9 cells of side 1/9.
        assert_eq!(spec.dims, [9, 9, 9]);
        assert_eq!(spec.side, 1.0 / 9.0);
        let open = grid_spec(&[[0.0, 0.0, 0.0], [1.0, 0.5, 0.0]], 0.2, None).expect("grid");
        assert_eq!(open.lower, [0.0; 3]);
        assert_eq!(open.dims, [10, 6, 1]);
    }
}
