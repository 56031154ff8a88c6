//! The link step of the CUDA linker (`link.rs`): the Morton block-table linker
//! (kernels/fof_blocks.cu).

use super::stencil::block_stencil_masks;
use super::support::{DeviceRun, empty_hash_keys};
use crate::gpu::{self, GpuError, alloc, fill_bytes, per_element, zeros};
use crate::halo::error::FofError;
use cudarc::driver::CudaSlice;

/// Dense block tables hold at most this many blocks per particle (12 bytes each, so memory
/// stays O(N): ≤ 144 bytes per particle). With a relative linking length the grid (cells of
/// side ll/√3) has 3^(3/2) / (64 b³) blocks per particle: 10.1 at b = 0.2, 3.7 at b = 0.28.
/// Measured on an H200 at 10⁸ particles (BENCHMARKS.md, FoF): at 3.7 per particle the dense
/// table halves the block-table stage (0.019 → 0.009 s); at 10.1 (a 12 GB table) it gains
/// nothing measurable over the hash (0.0195 vs 0.0206 s). 12 covers both common values of b;
/// a device too small for the dense table falls back to the hash (see [`link_by_blocks`]).
pub const DENSE_BLOCKS_PER_PARTICLE: u64 = 12;

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

crate::kernel_args! {
    /// `fof_block_count`: `cell_coords` holds `n_cells` entries, `counters` one word.
    struct BlockCountArgs<'a> {
        cell_coords: &'a CudaSlice<u64>,
        n_cells: u32,
        counters: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_block_insert`: `cell_coords` holds `n_cells` entries; the three table arrays
    /// `mask` + 1 slots (a power of two ≥ 2·blocks); one thread per cell.
    struct BlockInsertArgs<'a> {
        cell_coords: &'a CudaSlice<u64>,
        n_cells: u32,
        table_keys: &'a mut CudaSlice<u64>,
        table_first: &'a mut CudaSlice<u32>,
        table_occupied: &'a mut CudaSlice<u64>,
        mask: u64,
    }
}

crate::kernel_args! {
    /// `fof_block_dense`: `cell_coords` holds `n_cells` entries; the two tables one entry per
    /// block of the grid (`nbx` × `nby` × blocks along z); one thread per cell.
    struct BlockDenseArgs<'a> {
        cell_coords: &'a CudaSlice<u64>,
        n_cells: u32,
        nbx: u32,
        nby: u32,
        table_first: &'a mut CudaSlice<u32>,
        table_occupied: &'a mut CudaSlice<u64>,
    }
}

crate::kernel_args! {
    /// `fof_link_blocks`: cells as [`SortedCells`]; a block table (hash of `mask` + 1 slots, or
    /// dense over the grid's blocks when `dense`); 64·27 stencil masks when `use_masks`; 3·
    /// `n_stencil` stencil ints; `parent` of `n_cells`; one thread per cell.
    struct LinkBlocksArgs<'a> {
        cell_start: &'a CudaSlice<u32>,
        cell_coords: &'a CudaSlice<u64>,
        n_cells: u32,
        sx: &'a CudaSlice<f64>,
        sy: &'a CudaSlice<f64>,
        sz: &'a CudaSlice<f64>,
        table_keys: &'a CudaSlice<u64>,
        table_first: &'a CudaSlice<u32>,
        table_occupied: &'a CudaSlice<u64>,
        mask: u64,
        stencil_masks: &'a CudaSlice<u64>,
        use_masks: i32,
        stencil: &'a CudaSlice<i32>,
        n_stencil: u32,
        reach: i32,
        dim_x: u32,
        dim_y: u32,
        dim_z: u32,
        periodic: i32,
        box_size: f64,
        ll2: f64,
        dense: i32,
        parent: &'a mut CudaSlice<u32>,
    }
}

/// Whether the block table is a dense array over all ceil(dims / 4) blocks of the grid (no
/// count, no hashing, no probing) rather than a hash of the non-empty blocks: when the grid
/// has at most `limit` blocks per particle.
pub(super) fn dense_block_table(dims: [u32; 3], n_particles: usize, limit: u64) -> bool {
    let blocks: u64 = dims.iter().map(|&d| u64::from(d.div_ceil(4))).product();
    blocks <= limit.saturating_mul(n_particles as u64)
}

/// A table of the non-empty 4×4×4 blocks of the Morton order (first cell, occupancy mask), one
/// lookup per neighbour block instead of one per neighbour cell (kernels/fof_blocks.cu). The
/// table is dense (indexed by the block's row-major position) when the grid has at most
/// [`DENSE_BLOCKS_PER_PARTICLE`] blocks per particle, else a hash of the non-empty blocks.
pub(super) fn link_by_blocks(
    run: &mut DeviceRun<'_>,
    sorted: &SortedCells<'_>,
    g: &LinkGeometry<'_>,
    stencil: &[i32],
    parent: &mut CudaSlice<u32>,
) -> Result<(), FofError> {
    let stream = run.stream;
    let mut dense = dense_block_table(g.dims32, g.n_particles, DENSE_BLOCKS_PER_PARTICLE);
    let table = if dense {
        match dense_table(run, sorted, g) {
            // Too big for this device: the hash needs memory for the non-empty blocks only.
            Err(FofError::Gpu(GpuError::OutOfMemory { .. })) => {
                dense = false;
                hash_table(run, sorted, g)?
            }
            table => table?,
        }
    } else {
        hash_table(run, sorted, g)?
    };
    run.stage("block table")?;
    run.progress.check()?;
    run.progress.report("cuda: linking", 0, 1);
    let masks = block_stencil_masks(stencil);
    let use_masks = i32::from(masks.is_some());
    // Never read when use_masks is 0; a one-word placeholder keeps the argument valid.
    let masks_dev = stream.clone_htod(&masks.unwrap_or_else(|| vec![0u64]))?;
    let args = LinkBlocksArgs {
        cell_start: sorted.cell_start,
        cell_coords: sorted.cell_coords,
        n_cells: g.n_cells as u32,
        sx: sorted.sx,
        sy: sorted.sy,
        sz: sorted.sz,
        table_keys: &table.keys,
        table_first: &table.first,
        table_occupied: &table.occupied,
        mask: table.mask,
        stencil_masks: &masks_dev,
        use_masks,
        stencil: g.stencil,
        n_stencil: g.n_stencil,
        reach: stencil.iter().map(|d| d.abs()).max().unwrap_or(0),
        dim_x: g.dims32[0],
        dim_y: g.dims32[1],
        dim_z: g.dims32[2],
        periodic: g.periodic,
        box_size: g.box_size,
        ll2: g.ll2,
        dense: i32::from(dense),
        parent,
    };
    // SAFETY: block table entries hold a block's first cell and its occupancy, so every cell
    // index derived (first + popcount below the bit) is < n_cells; the dense table holds
    // every block of the grid (the kernel checks the range); masks hold 64·27 words when
    // use_masks is 1; stencil holds 3·n_stencil ints; member ranges lie in 0..n.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.link_blocks,
            per_element(g.n_cells, 0),
            args,
        )
    }?;
    Ok(())
}

/// A block table: keys (a one-word placeholder when dense), index mask, first cells and
/// occupancy masks.
struct BlockTable {
    keys: CudaSlice<u64>,
    mask: u64,
    first: CudaSlice<u32>,
    occupied: CudaSlice<u64>,
}

/// The dense table: occupancy zeroed, then every cell ORs in its bit and block heads write
/// their index (kernels/fof_blocks.cu `fof_block_dense`).
fn dense_table(
    run: &DeviceRun<'_>,
    sorted: &SortedCells<'_>,
    g: &LinkGeometry<'_>,
) -> Result<BlockTable, FofError> {
    let stream = run.stream;
    let nb = g.dims32.map(|d| d.div_ceil(4));
    let blocks = nb.iter().map(|&b| b as usize).product::<usize>();
    // A first cell is read only where the occupancy has a bit, which its head wrote.
    let mut first = alloc::<u32>(stream, blocks)?;
    let mut occupied = alloc::<u64>(stream, blocks)?;
    fill_bytes(stream, &mut occupied, 0)?;
    let args = BlockDenseArgs {
        cell_coords: sorted.cell_coords,
        n_cells: g.n_cells as u32,
        nbx: nb[0],
        nby: nb[1],
        table_first: &mut first,
        table_occupied: &mut occupied,
    };
    // SAFETY: a cell's coordinates are below dims, so its block's row-major index is below
    // the product of ceil(dims / 4), the tables' length; one thread per cell.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.block_dense,
            per_element(g.n_cells, 0),
            args,
        )
    }?;
    let keys = alloc::<u64>(stream, 1)?;
    Ok(BlockTable {
        keys,
        mask: 0,
        first,
        occupied,
    })
}

/// The hash of the non-empty blocks: count the block heads, size the table, heads insert.
fn hash_table(
    run: &DeviceRun<'_>,
    sorted: &SortedCells<'_>,
    g: &LinkGeometry<'_>,
) -> Result<BlockTable, FofError> {
    let stream = run.stream;
    let n_cells32 = g.n_cells as u32;
    let mut counters = zeros::<u32>(stream, 1)?;
    let args = BlockCountArgs {
        cell_coords: sorted.cell_coords,
        n_cells: n_cells32,
        counters: &mut counters,
    };
    // SAFETY: cell_coords holds n_cells entries; counters one word.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.block_count,
            per_element(g.n_cells, 0),
            args,
        )
    }?;
    let n_blocks = stream.clone_dtoh(&counters)?[0] as usize;
    let (mut keys, mask) = empty_hash_keys(stream, n_blocks)?;
    let mut first = alloc::<u32>(stream, keys.len())?;
    let mut occupied = alloc::<u64>(stream, keys.len())?;
    let args = BlockInsertArgs {
        cell_coords: sorted.cell_coords,
        n_cells: n_cells32,
        table_keys: &mut keys,
        table_first: &mut first,
        table_occupied: &mut occupied,
        mask,
    };
    // SAFETY: the table has at least 2·n_blocks slots (a power of two), so linear probing
    // always finds an empty slot; one thread per cell, the block heads insert.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.block_insert,
            per_element(g.n_cells, 0),
            args,
        )
    }?;
    Ok(BlockTable {
        keys,
        mask,
        first,
        occupied,
    })
}
