//! The resident copy reordered on the device right after its upload (kernels/render_order.cu):
//! a counting sort of the particles by a coarse 3-D Morton cell of their bounding box, O(N) and
//! all on the GPU, so the first frame pays milliseconds (a host-side sort of 10⁸ particles
//! takes over a second). [`start`] queues the bounds, keys and scan, which read only the
//! positions (the upload of the other arrays goes on meanwhile); [`finish`] scatters.

use super::args::{OrderBoundsArgs, OrderKeysArgs, OrderScanArgs, OrderScatterArgs};
use super::data::{DeviceArrays, alloc_arrays};
use super::kernels::OrderKernels;
use crate::gpu::{self, GpuError};
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use std::sync::Arc;

/// Morton bits per axis of the cell key: 2^7 cells across the bounding cube project to about one
/// 16 px tile at 2048² (the default framing spans the image), and 2^21 counters keep the
/// one-block scan well under a millisecond. Finer cells gain nothing: the order inside a cell
/// does not matter to the fixed-point sums, only that a warp's particles share a tile.
const CELL_BITS: u32 = 7;

/// Blocks of the grid-stride bounds kernel (a few per SM).
const BOUNDS_BLOCKS: u32 = 1024;

/// The cell keys and cell cursors of a reorder whose bounds, keys and scan are queued.
#[derive(Debug)]
pub(super) struct CellKeys {
    n: usize,
    keys: CudaSlice<u32>,
    cursor: CudaSlice<u32>,
}

/// Queues the first half of the Morton reorder of `n` particles on `stream`: the bounds, each
/// particle's cell key and the cells' starts. It reads only the positions, so the other arrays
/// may still be uploading on another stream. `Ok(None)`: the keys do not fit in device memory
/// (or n is too large to index), and file order is kept.
pub(super) fn start(
    kernels: &OrderKernels,
    stream: &Arc<CudaStream>,
    pos: &CudaSlice<f32>,
    n: usize,
) -> Result<Option<CellKeys>, GpuError> {
    match cell_keys(kernels, stream, pos, n) {
        Ok(keys) => Ok(Some(keys)),
        Err(e) if e.is_out_of_memory() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Moves the particles of `arrays` to their cells' slots on `stream` (the second half of the
/// reorder `keys` started) and returns the permutation (device particle k = file particle
/// `perm[k]`). Returns `Ok(None)` and leaves `arrays` untouched when the second copy does not
/// fit in device memory.
pub(super) fn finish(
    kernels: &OrderKernels,
    stream: &Arc<CudaStream>,
    keys: CellKeys,
    arrays: &mut DeviceArrays,
) -> Result<Option<CudaSlice<u32>>, GpuError> {
    match scatter(kernels, stream, keys, arrays) {
        Ok(perm) => Ok(Some(perm)),
        Err(e) if e.is_out_of_memory() => Ok(None),
        Err(e) => Err(e),
    }
}

fn cell_keys(
    kernels: &OrderKernels,
    stream: &Arc<CudaStream>,
    pos: &CudaSlice<f32>,
    n: usize,
) -> Result<CellKeys, GpuError> {
    // More than 2^32 particles cannot be indexed by the kernels: keep file order.
    let n_u32 = u32::try_from(n).map_err(|_| GpuError::OutOfMemory {
        requested_bytes: n.saturating_mul(16),
    })?;
    let cells = 1usize << (3 * CELL_BITS);
    let cells_u32 = cells as u32;
    let bits = CELL_BITS as i32;
    // Ordered-bit encodings of +inf (min start) and -inf (max start): every finite value wins.
    let mut bounds = stream.clone_htod(&[u32::MAX, u32::MAX, u32::MAX, 0, 0, 0])?;
    let mut counts: CudaSlice<u32> = stream.alloc_zeros(cells)?;
    // SAFETY: every entry is written (keys: by order_keys for i < n; cursor: by order_scan).
    let mut keys = unsafe { stream.alloc::<u32>(n) }?;
    // SAFETY: as above.
    let mut cursor = unsafe { stream.alloc::<u32>(cells) }?;

    let args = OrderBoundsArgs {
        pos,
        n: n_u32,
        bounds: &mut bounds,
    };
    let cfg = gpu::blocks(gpu::grid(n, 256).min(BOUNDS_BLOCKS), 0);
    // SAFETY: pos holds 3·n floats; bounds 6 words; grid-stride loop over i < n.
    unsafe { gpu::launch(stream, &kernels.bounds, cfg, args) }?;
    let args = OrderKeysArgs {
        pos,
        n: n_u32,
        bounds: &bounds,
        bits,
        keys: &mut keys,
        counts: &mut counts,
    };
    // SAFETY: keys hold n entries; every key < 2^(3·CELL_BITS) = cells counters.
    unsafe { gpu::launch(stream, &kernels.keys, gpu::per_element(n, 0), args) }?;
    let args = OrderScanArgs {
        counts: &counts,
        n: cells_u32,
        cursor: &mut cursor,
    };
    let one_block = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1024, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: one block of 1024 threads over `cells` entries of both arrays.
    unsafe { gpu::launch(stream, &kernels.scan, one_block, args) }?;
    Ok(CellKeys { n, keys, cursor })
}

fn scatter(
    kernels: &OrderKernels,
    stream: &Arc<CudaStream>,
    keys: CellKeys,
    arrays: &mut DeviceArrays,
) -> Result<CudaSlice<u32>, GpuError> {
    let CellKeys {
        n,
        keys,
        mut cursor,
    } = keys;
    // cell_keys checked that n fits in u32.
    let n_u32 = n as u32;
    // SAFETY: order_scatter writes every one of the n slots (a permutation).
    let mut perm = unsafe { stream.alloc::<u32>(n) }?;
    let mut out = alloc_arrays(
        stream,
        n,
        arrays.intensity.is_some(),
        arrays.colour.is_some(),
    )?;
    let dummy_in: CudaSlice<f32> = stream.alloc_zeros(1)?;
    let mut dummy_a: CudaSlice<f32> = stream.alloc_zeros(1)?;
    let mut dummy_b: CudaSlice<f32> = stream.alloc_zeros(1)?;
    {
        let extra: Vec<&CudaSlice<f32>> = [arrays.intensity.as_ref(), arrays.colour.as_ref()]
            .into_iter()
            .flatten()
            .collect();
        let n_extra = extra.len() as i32;
        let extra0 = extra.first().copied().unwrap_or(&dummy_in);
        let extra1 = extra.get(1).copied().unwrap_or(&dummy_in);
        let mut outs = [out.intensity.as_mut(), out.colour.as_mut()]
            .into_iter()
            .flatten();
        let out0 = outs.next().unwrap_or(&mut dummy_a);
        let out1 = outs.next().unwrap_or(&mut dummy_b);
        let args = OrderScatterArgs {
            pos: &arrays.pos,
            h: &arrays.h,
            extra0,
            extra1,
            n_extra,
            n: n_u32,
            keys: &keys,
            cursor: &mut cursor,
            out_pos: &mut out.pos,
            out_h: &mut out.h,
            out_extra0: out0,
            out_extra1: out1,
            perm: &mut perm,
        };
        // SAFETY: the cursors are the exclusive prefix sums of the cell counts of the same
        // keys, so the slots are a permutation of 0..n; the extra arrays (n_extra of them) hold
        // n floats and their outputs were allocated for the same fields.
        unsafe { gpu::launch(stream, &kernels.scatter, gpu::per_element(n, 0), args) }?;
    }
    // Frees the file-order copy once the scatter has read it (stream-ordered frees).
    drop(std::mem::replace(arrays, out));
    Ok(perm)
}
