//! The link step of the CUDA friends-of-friends linker (`fof_cuda.rs`): the per-cell hash
//! linker (any cell order) and the Morton block-table linker (kernels/fof_blocks.cu).

use super::FofError;
use super::fof_cuda_support::{Kernels, block_stencil_masks, empty_hash_keys};
use crate::gpu::{GpuError, StageTimer, alloc, fill_bytes, per_element};
use crate::jobs::Progress;
use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use std::sync::Arc;

/// The sorted cells that the link kernels read.
pub(super) struct SortedCells<'a> {
    pub(super) cell_start: &'a CudaSlice<u32>,
    pub(super) cell_coords: &'a CudaSlice<u64>,
    pub(super) sx: &'a CudaSlice<f64>,
    pub(super) sy: &'a CudaSlice<f64>,
    pub(super) sz: &'a CudaSlice<f64>,
}

/// The grid and link rule that the link kernels take.
pub(super) struct LinkGeometry<'a> {
    pub(super) n_particles: usize,
    pub(super) n_cells: usize,
    pub(super) dims32: [u32; 3],
    pub(super) periodic: i32,
    pub(super) box_size: f64,
    pub(super) ll2: f64,
    pub(super) stencil: &'a CudaSlice<i32>,
    pub(super) n_stencil: u32,
}

/// Any cell order: a hash table of the non-empty cells, one probe per half-stencil offset.
pub(super) fn link_by_cells(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    timer: &mut StageTimer<'_>,
    sorted: &SortedCells<'_>,
    g: &LinkGeometry<'_>,
    parent: &mut CudaSlice<u32>,
    progress: &Progress,
) -> Result<(), FofError> {
    let n_cells32 = g.n_cells as u32;
    let (mut table_keys, mask) = empty_hash_keys(stream, g.n_cells)?;
    let mut table_values = alloc::<u32>(stream, table_keys.len())?;
    {
        let mut launch = stream.launch_builder(&kernels.hash_insert);
        launch
            .arg(sorted.cell_coords)
            .arg(&n_cells32)
            .arg(&mut table_keys)
            .arg(&mut table_values)
            .arg(&mask);
        // SAFETY: the table has at least 2·n_cells slots (mask = len − 1, a power of two), so
        // linear probing always finds an empty slot; one thread per cell.
        unsafe { launch.launch(per_element(g.n_cells, 0)) }?;
    }
    timer.stage("cell hash")?;
    progress.check()?;
    progress.report("cuda: linking", 0, 1);
    let mut launch = stream.launch_builder(&kernels.link);
    launch
        .arg(sorted.cell_start)
        .arg(sorted.cell_coords)
        .arg(&n_cells32)
        .arg(sorted.sx)
        .arg(sorted.sy)
        .arg(sorted.sz)
        .arg(&table_keys)
        .arg(&table_values)
        .arg(&mask)
        .arg(g.stencil)
        .arg(&g.n_stencil)
        .arg(&g.dims32[0])
        .arg(&g.dims32[1])
        .arg(&g.dims32[2])
        .arg(&g.periodic)
        .arg(&g.box_size)
        .arg(&g.ll2)
        .arg(parent);
    // SAFETY: cell indices from the table are < n_cells; member ranges from cell_start lie in
    // 0..n (the sorted arrays' length); stencil holds 3·n_stencil ints.
    unsafe { launch.launch(per_element(g.n_cells, 0)) }?;
    Ok(())
}

/// Dense block tables hold at most this many blocks per particle (12 bytes each, so memory
/// stays O(N): ≤ 144 bytes per particle). With a relative linking length the grid (cells of
/// side ll/√3) has 3^(3/2) / (64 b³) blocks per particle: 10.1 at b = 0.2, 3.7 at b = 0.28.
/// Measured on an H200 at 10⁸ (BENCHMARKS.md, FoF Session 4): at 3.7 per particle the dense
/// table halves the block-table stage (0.019 → 0.009 s); at 10.1 (a 12 GB table) it gained
/// nothing measurable over the hash (0.0195 vs 0.0206 s). A limit of 8 would spare that
/// memory at b = 0.2; it stays at 12, the value the device tests ran with.
pub const DENSE_BLOCKS_PER_PARTICLE: u64 = 12;

/// Environment variable overriding [`DENSE_BLOCKS_PER_PARTICLE`] (0: always the hash), to
/// measure both tables on the same data.
pub const DENSE_BLOCKS_ENV: &str = "HALOSCOPE_FOF_DENSE_BLOCKS_PER_PARTICLE";

/// The dense-table limit in force: the environment's, else the default.
fn dense_blocks_limit() -> u64 {
    std::env::var(DENSE_BLOCKS_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DENSE_BLOCKS_PER_PARTICLE)
}

/// Whether the block table is a dense array over all ceil(dims / 4) blocks of the grid (no
/// count, no hashing, no probing) rather than a hash of the non-empty blocks: when the grid
/// has at most `limit` blocks per particle.
pub(super) fn dense_block_table(dims: [u32; 3], n_particles: usize, limit: u64) -> bool {
    let blocks: u64 = dims.iter().map(|&d| u64::from(d.div_ceil(4))).product();
    blocks <= limit.saturating_mul(n_particles as u64)
}

/// Morton order: a table of the non-empty 4×4×4 blocks (first cell, occupancy mask), one
/// lookup per neighbour block instead of one per neighbour cell (kernels/fof_blocks.cu). The
/// table is dense (indexed by the block's row-major position) when the grid has at most
/// `DENSE_BLOCKS_PER_PARTICLE` blocks per particle, else a hash of the non-empty blocks.
#[allow(clippy::too_many_arguments)]
pub(super) fn link_by_blocks(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    timer: &mut StageTimer<'_>,
    sorted: &SortedCells<'_>,
    g: &LinkGeometry<'_>,
    stencil: &[i32],
    parent: &mut CudaSlice<u32>,
    progress: &Progress,
) -> Result<(), FofError> {
    let n_cells32 = g.n_cells as u32;
    let mut dense = dense_block_table(g.dims32, g.n_particles, dense_blocks_limit());
    let (table_keys, mask, table_first, table_occupied) = if dense {
        match dense_table(stream, kernels, sorted, g) {
            // Too big for this device: the hash needs memory for the non-empty blocks only.
            Err(FofError::Gpu(GpuError::OutOfMemory { .. })) => {
                dense = false;
                hash_table(stream, kernels, sorted, g)?
            }
            table => table?,
        }
    } else {
        hash_table(stream, kernels, sorted, g)?
    };
    timer.stage("block table")?;
    progress.check()?;
    progress.report("cuda: linking", 0, 1);
    let dense32 = i32::from(dense);
    let masks = block_stencil_masks(stencil);
    let use_masks = i32::from(masks.is_some());
    // Never read when use_masks is 0; a one-word placeholder keeps the argument valid.
    let masks_dev = stream.clone_htod(&masks.unwrap_or_else(|| vec![0u64]))?;
    let reach = stencil.iter().map(|d| d.abs()).max().unwrap_or(0);
    let mut launch = stream.launch_builder(&kernels.link_blocks);
    launch
        .arg(sorted.cell_start)
        .arg(sorted.cell_coords)
        .arg(&n_cells32)
        .arg(sorted.sx)
        .arg(sorted.sy)
        .arg(sorted.sz)
        .arg(&table_keys)
        .arg(&table_first)
        .arg(&table_occupied)
        .arg(&mask)
        .arg(&masks_dev)
        .arg(&use_masks)
        .arg(g.stencil)
        .arg(&g.n_stencil)
        .arg(&reach)
        .arg(&g.dims32[0])
        .arg(&g.dims32[1])
        .arg(&g.dims32[2])
        .arg(&g.periodic)
        .arg(&g.box_size)
        .arg(&g.ll2)
        .arg(&dense32)
        .arg(parent);
    // SAFETY: block table entries hold a block's first cell and its occupancy, so every cell
    // index derived (first + popcount below the bit) is < n_cells; the dense table holds
    // every block of the grid (the kernel checks the range); masks hold 64·27 words when
    // use_masks is 1; stencil holds 3·n_stencil ints; member ranges lie in 0..n.
    unsafe { launch.launch(per_element(g.n_cells, 0)) }?;
    Ok(())
}

/// A block table's keys (a one-word placeholder when dense), index mask, first cells and
/// occupancy masks.
type BlockTable = (CudaSlice<u64>, u64, CudaSlice<u32>, CudaSlice<u64>);

/// The dense table: occupancy zeroed, then every cell ORs in its bit and block heads write
/// their index (kernels/fof_blocks.cu `fof_block_dense`).
fn dense_table(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    sorted: &SortedCells<'_>,
    g: &LinkGeometry<'_>,
) -> Result<BlockTable, FofError> {
    let n_cells32 = g.n_cells as u32;
    let nb = g.dims32.map(|d| d.div_ceil(4));
    let blocks = nb.iter().map(|&b| b as usize).product::<usize>();
    // A first cell is read only where the occupancy has a bit, which its head wrote.
    let mut table_first = alloc::<u32>(stream, blocks)?;
    let mut table_occupied = alloc::<u64>(stream, blocks)?;
    fill_bytes(stream, &mut table_occupied, 0)?;
    {
        let mut launch = stream.launch_builder(&kernels.block_dense);
        launch
            .arg(sorted.cell_coords)
            .arg(&n_cells32)
            .arg(&nb[0])
            .arg(&nb[1])
            .arg(&mut table_first)
            .arg(&mut table_occupied);
        // SAFETY: a cell's coordinates are below dims, so its block's row-major index is below
        // the product of ceil(dims / 4), the tables' length; one thread per cell.
        unsafe { launch.launch(per_element(g.n_cells, 0)) }?;
    }
    let placeholder = alloc::<u64>(stream, 1)?;
    Ok((placeholder, 0, table_first, table_occupied))
}

/// The hash of the non-empty blocks: count the block heads, size the table, heads insert.
fn hash_table(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    sorted: &SortedCells<'_>,
    g: &LinkGeometry<'_>,
) -> Result<BlockTable, FofError> {
    let n_cells32 = g.n_cells as u32;
    let mut counters = stream.alloc_zeros::<u32>(1)?;
    {
        let mut launch = stream.launch_builder(&kernels.block_count);
        launch
            .arg(sorted.cell_coords)
            .arg(&n_cells32)
            .arg(&mut counters);
        // SAFETY: cell_coords holds n_cells entries; counters one word.
        unsafe { launch.launch(per_element(g.n_cells, 0)) }?;
    }
    let n_blocks = stream.clone_dtoh(&counters)?[0] as usize;
    let (mut table_keys, mask) = empty_hash_keys(stream, n_blocks)?;
    let mut table_first = alloc::<u32>(stream, table_keys.len())?;
    let mut table_occupied = alloc::<u64>(stream, table_keys.len())?;
    {
        let mut launch = stream.launch_builder(&kernels.block_insert);
        launch
            .arg(sorted.cell_coords)
            .arg(&n_cells32)
            .arg(&mut table_keys)
            .arg(&mut table_first)
            .arg(&mut table_occupied)
            .arg(&mask);
        // SAFETY: the table has at least 2·n_blocks slots (a power of two), so linear probing
        // always finds an empty slot; one thread per cell, the block heads insert.
        unsafe { launch.launch(per_element(g.n_cells, 0)) }?;
    }
    Ok((table_keys, mask, table_first, table_occupied))
}
