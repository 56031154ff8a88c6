//! The resident copy reordered on the device right after its upload (kernels/render_order.cu):
//! a counting sort of the particles by a coarse 3-D Morton cell of their bounding box, O(N) and
//! all on the GPU, so the first frame pays milliseconds (a host-side sort of 10⁸ particles
//! takes over a second).

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

/// Reorders `arrays` (n particles) in place on `stream` and returns the permutation (device
/// particle k = file particle `perm[k]`). Returns `Ok(None)` and leaves `arrays` untouched when
/// the second copy does not fit in device memory.
pub(super) fn morton_reorder(
    kernels: &OrderKernels,
    stream: &Arc<CudaStream>,
    arrays: &mut DeviceArrays,
    n: usize,
) -> Result<Option<CudaSlice<u32>>, GpuError> {
    match reorder(kernels, stream, arrays, n) {
        Ok(perm) => Ok(Some(perm)),
        Err(e) if e.is_out_of_memory() => Ok(None),
        Err(e) => Err(e),
    }
}

fn reorder(
    kernels: &OrderKernels,
    stream: &Arc<CudaStream>,
    arrays: &mut DeviceArrays,
    n: usize,
) -> Result<CudaSlice<u32>, GpuError> {
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
    // SAFETY: order_scatter writes every one of the n slots (a permutation).
    let mut perm = unsafe { stream.alloc::<u32>(n) }?;
    let mut out = alloc_arrays(
        stream,
        n,
        arrays.intensity.is_some(),
        arrays.colour.is_some(),
    )?;

    let args = OrderBoundsArgs {
        pos: &arrays.pos,
        n: n_u32,
        bounds: &mut bounds,
    };
    let cfg = gpu::blocks(gpu::grid(n, 256).min(BOUNDS_BLOCKS), 0);
    // SAFETY: pos holds 3·n floats; bounds 6 words; grid-stride loop over i < n.
    unsafe { gpu::launch(stream, &kernels.bounds, cfg, args) }?;
    let args = OrderKeysArgs {
        pos: &arrays.pos,
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
