//! Device plumbing of the CUDA friends-of-friends linker (`fof_cuda.rs`): the kernel table, the
//! radix sort and scan drivers, allocation, stage timing and pinned-memory transfers.

use super::FofError;
use crate::gpu::{GpuDevice, GpuError};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DeviceRepr, DriverError,
    LaunchConfig, PinnedHostSlice, PushKernelArg, ValidAsZeroBits, sys,
};
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// The kernel source, compiled by NVRTC on first use.
const FOF_SOURCE: &str = concat!(
    include_str!("../../kernels/fof.cu"),
    include_str!("../../kernels/fof_blocks.cu"),
    include_str!("../../kernels/fof_catalogue.cu")
);

/// Threads per block of every kernel (the scan and sort tiles assume 256).
pub(super) const BLOCK: u32 = 256;

/// Elements per scan or sort tile (`BLOCK` threads × 8 items, as in kernels/fof.cu).
const TILE: usize = 2048;

/// Bits per radix-sort pass (16 buckets, as in kernels/fof.cu).
const RADIX_BITS: u32 = 4;

/// Elements per pinned staging buffer (8 MiB of 4-byte words); two buffers alternate so that
/// the parallel host copy of one chunk overlaps the DMA of the other.
const STAGING_LEN: usize = 1 << 21;

/// Elements per rayon task of the host-side staging copies.
const COPY_GRAIN: usize = 1 << 15;

/// The kernels of kernels/fof.cu.
pub(super) struct Kernels {
    pub(super) cell_keys: CudaFunction,
    pub(super) scan_tiles: CudaFunction,
    pub(super) scan_add: CudaFunction,
    pub(super) radix_count: CudaFunction,
    pub(super) radix_scatter: CudaFunction,
    pub(super) gather: CudaFunction,
    pub(super) cells: CudaFunction,
    pub(super) hash_insert: CudaFunction,
    pub(super) init_parent: CudaFunction,
    pub(super) link: CudaFunction,
    pub(super) block_count: CudaFunction,
    pub(super) block_insert: CudaFunction,
    pub(super) block_dense: CudaFunction,
    pub(super) link_blocks: CudaFunction,
    pub(super) compress: CudaFunction,
    pub(super) labels: CudaFunction,
    pub(super) set_stats: CudaFunction,
    pub(super) kept_sets: CudaFunction,
    pub(super) rank_roots: CudaFunction,
    pub(super) halo_labels: CudaFunction,
    pub(super) sorted_ranks: CudaFunction,
    pub(super) compact_members: CudaFunction,
    pub(super) halo_sums: CudaFunction,
    pub(super) halo_radii: CudaFunction,
}

impl Kernels {
    /// Compiles (or loads from the cache) kernels/fof.cu on `device`.
    pub(super) fn load(device: &GpuDevice) -> Result<Self, FofError> {
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
            block_count: f("fof_block_count")?,
            block_insert: f("fof_block_insert")?,
            block_dense: f("fof_block_dense")?,
            link_blocks: f("fof_link_blocks")?,
            compress: f("fof_compress")?,
            labels: f("fof_labels")?,
            set_stats: f("fof_set_stats")?,
            kept_sets: f("fof_kept_sets")?,
            rank_roots: f("fof_rank_roots")?,
            halo_labels: f("fof_halo_labels")?,
            sorted_ranks: f("fof_sorted_ranks")?,
            compact_members: f("fof_compact_members")?,
            halo_sums: f("fof_halo_sums")?,
            halo_radii: f("fof_halo_radii")?,
        })
    }
}

/// Stable LSD radix sort of `n` (key, value) pairs on their low `key_bits` bits.
pub(super) fn radix_sort(
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
pub(super) fn exclusive_scan(
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
pub(super) fn per_element(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(BLOCK as usize).max(1) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Device memory for `len` elements; running out is a recoverable error naming the size.
pub(super) fn alloc<T: DeviceRepr + ValidAsZeroBits>(
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

/// Sets every byte of `buffer` to `value`.
pub(super) fn fill_bytes<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    buffer: &mut CudaSlice<T>,
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
pub(super) fn gpu<T>(result: Result<T, DriverError>) -> Result<T, FofError> {
    result.map_err(|e| FofError::Gpu(GpuError::Driver(e)))
}

/// Wall time per stage, each closed by a stream synchronisation.
pub(super) struct StageTimer<'a> {
    stream: &'a Arc<CudaStream>,
    start: Instant,
    pub(super) stages: Vec<(&'static str, f64)>,
}

impl<'a> StageTimer<'a> {
    pub(super) fn new(stream: &'a Arc<CudaStream>) -> Self {
        Self {
            stream,
            start: Instant::now(),
            stages: Vec::new(),
        }
    }

    pub(super) fn stage(&mut self, name: &'static str) -> Result<(), FofError> {
        gpu(self.stream.synchronize())?;
        let now = Instant::now();
        self.stages
            .push((name, now.duration_since(self.start).as_secs_f64()));
        self.start = now;
        Ok(())
    }
}

/// Uploads `values` to a new device buffer through two alternating pinned staging buffers:
/// rayon copies one chunk into pinned memory while the DMA engine sends the other (a pageable
/// copy goes through the driver's single-threaded staging instead). Small inputs go directly.
pub(super) fn upload_pinned(
    context: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    values: &[f32],
) -> Result<CudaSlice<f32>, FofError> {
    let staging_len = STAGING_LEN;
    let n = values.len();
    let full_chunks = n / staging_len;
    if full_chunks < 2 {
        return gpu(stream.clone_htod(values));
    }
    let mut dst = alloc::<f32>(stream, n)?;
    let mut staging = [
        pinned::<f32>(context, staging_len)?,
        pinned::<f32>(context, staging_len)?,
    ];
    // cudarc records a pinned buffer's own event only when it manages several streams, so each
    // copy's completion is tracked here with an explicit event per buffer.
    let mut copied: [Option<CudaEvent>; 2] = [None, None];
    for chunk in 0..full_chunks {
        let range = chunk * staging_len..(chunk + 1) * staging_len;
        let slot = chunk % 2;
        if let Some(event) = copied[slot].take() {
            // This buffer's previous DMA must finish before the host overwrites it.
            gpu(event.synchronize())?;
        }
        let buffer = &mut staging[slot];
        let host = gpu(buffer.as_mut_slice())?;
        host.par_chunks_mut(COPY_GRAIN)
            .zip(values[range.clone()].par_chunks(COPY_GRAIN))
            .for_each(|(to, from)| to.copy_from_slice(from));
        gpu(stream.memcpy_htod(&*buffer, &mut dst.slice_mut(range)))?;
        copied[slot] = Some(gpu(stream.record_event(None))?);
    }
    let rest = full_chunks * staging_len;
    if rest < n {
        gpu(stream.memcpy_htod(&values[rest..], &mut dst.slice_mut(rest..n)))?;
    }
    // The staging buffers are freed below: their last DMAs must have finished.
    for event in copied.into_iter().flatten() {
        gpu(event.synchronize())?;
    }
    Ok(dst)
}

/// Downloads `src` into a new host vector, each word converted by `convert`, through two
/// alternating pinned staging buffers (the DMA of one chunk overlaps the parallel copy-out of
/// the other; the output's pages are first touched by many threads).
pub(super) fn download_pinned<R: Copy + Default + Send + Sync>(
    context: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    src: &CudaSlice<u32>,
    n: usize,
    convert: impl Fn(u32) -> R + Sync,
) -> Result<Vec<R>, FofError> {
    let staging_len = STAGING_LEN;
    let copy_out = |to: &mut [R], from: &[u32]| {
        to.par_chunks_mut(COPY_GRAIN)
            .zip(from.par_chunks(COPY_GRAIN))
            .for_each(|(to, from)| {
                for (t, &f) in to.iter_mut().zip(from) {
                    *t = convert(f);
                }
            });
    };
    let mut out = vec![R::default(); n];
    let full_chunks = n / staging_len;
    if full_chunks < 2 {
        let host = gpu(stream.clone_dtoh(&src.slice(0..n)))?;
        copy_out(&mut out, &host);
        return Ok(out);
    }
    let mut staging = [
        pinned::<u32>(context, staging_len)?,
        pinned::<u32>(context, staging_len)?,
    ];
    let chunk_view = |chunk: usize| src.slice(chunk * staging_len..(chunk + 1) * staging_len);
    // As in `upload_pinned`: an explicit event per buffer marks its DMA's completion.
    let mut copied: [Option<CudaEvent>; 2] = [None, None];
    for (chunk, buffer) in staging.iter_mut().enumerate() {
        gpu(stream.memcpy_dtoh(&chunk_view(chunk), buffer))?;
        copied[chunk] = Some(gpu(stream.record_event(None))?);
    }
    for chunk in 0..full_chunks {
        let slot = chunk % 2;
        if let Some(event) = copied[slot].take() {
            // The host reads this buffer only once its DMA has finished.
            gpu(event.synchronize())?;
        }
        let buffer = &mut staging[slot];
        {
            let host = gpu(buffer.as_slice())?;
            copy_out(
                &mut out[chunk * staging_len..(chunk + 1) * staging_len],
                host,
            );
        }
        if chunk + 2 < full_chunks {
            gpu(stream.memcpy_dtoh(&chunk_view(chunk + 2), buffer))?;
            copied[slot] = Some(gpu(stream.record_event(None))?);
        }
    }
    let rest = full_chunks * staging_len;
    if rest < n {
        let host = gpu(stream.clone_dtoh(&src.slice(rest..n)))?;
        copy_out(&mut out[rest..], &host);
    }
    Ok(out)
}

/// One page-locked staging buffer of `len` elements (cached, not write-combined: the host
/// both writes and reads them).
fn pinned<T: DeviceRepr + ValidAsZeroBits>(
    context: &Arc<CudaContext>,
    len: usize,
) -> Result<PinnedHostSlice<T>, FofError> {
    // SAFETY: the buffer is written (host copy or DMA) before it is read, and only through
    // `as_mut_slice`/`as_slice`, which wait for the buffer's pending copies.
    gpu(unsafe { context.alloc_pinned_with_flags::<T>(len, 0) })
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

/// Morton-local index (0..63) of a cell at local coordinates (0..4 each) inside its 4×4×4
/// block: the low 6 bits of its Morton key (as `morton_local` in kernels/fof_blocks.cu).
fn morton_local(x: i32, y: i32, z: i32) -> u32 {
    (crate::order::morton_key([x as u32, y as u32, z as u32]) & 63) as u32
}

/// For `fof_link_blocks`: per Morton-local cell position (64) and neighbour block offset (27,
/// index (bdx+1) + 3(bdy+1) + 9(bdz+1)), the mask of Morton-local cells of that block reached
/// by the half stencil `offsets` (flattened dx, dy, dz). `None` when the reach exceeds 4 cells
/// (one block side), where a cell's stencil could span more than the 3 blocks per axis.
pub fn block_stencil_masks(offsets: &[i32]) -> Option<Vec<u64>> {
    if offsets.iter().any(|d| d.abs() > 4) {
        return None;
    }
    let mut masks = vec![0u64; 64 * 27];
    for lz in 0..4 {
        for ly in 0..4 {
            for lx in 0..4 {
                let local = morton_local(lx, ly, lz) as usize;
                for d in offsets.chunks_exact(3) {
                    let t = [lx + d[0], ly + d[1], lz + d[2]];
                    let block = t.map(|v| v.div_euclid(4) + 1);
                    let inner = t.map(|v| v.rem_euclid(4));
                    let bo = (block[0] + 3 * block[1] + 9 * block[2]) as usize;
                    masks[local * 27 + bo] |= 1u64 << morton_local(inner[0], inner[1], inner[2]);
                }
            }
        }
    }
    Some(masks)
}
