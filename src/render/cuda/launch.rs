//! Launch helpers of the CUDA frame: grid sizes, CUDA-event stage timers, the fixed-point
//! exponent, and the tile passes' kernel and shared-memory choice.

use crate::gpu::GpuError;
use crate::render::RenderError;
use cudarc::driver::{CudaEvent, CudaFunction, LaunchConfig, sys};
use std::rc::Rc;

/// Threads per block of the per-particle and per-pixel kernels.
pub(super) const BLOCK: u32 = 256;
/// Largest dynamic shared memory the tile kernel may ask for (Hopper allows 227 KiB).
pub(super) const MAX_TILE_SHARED_BYTES: usize = 200 * 1024;
/// Threads per block of the wide-border tile pass (one block per SM fits its shared memory).
pub(super) const WIDE_BLOCK: u32 = 1024;

/// The wide border actually used: at most what fits in shared memory, 0 when not above the
/// medium border (then every large splat takes the large path).
pub(super) fn wide_border_px(wanted: f32, tile_px: usize, border_px: f32) -> f32 {
    let max_side = ((MAX_TILE_SHARED_BYTES / 24) as f64).sqrt().floor() as usize;
    let max_border = (max_side.saturating_sub(tile_px) / 2).saturating_sub(2) as f32;
    let border = wanted.min(max_border);
    if border > border_px { border } else { 0.0 }
}

/// The tile-pass kernel for a region of `values` sums and its shared bytes: the three-part
/// sums (12 bytes a value) where compiled, exact (segment ≤ 2048 = 2^11 splats keeps every
/// 21-bit part's sum below 2^32) and small enough, else the 64-bit sums (8 bytes).
pub(super) fn tile_pass<'a>(
    plain: &'a CudaFunction,
    red: Option<&'a CudaFunction>,
    values: usize,
    segment: u32,
) -> (&'a CudaFunction, usize) {
    match red {
        Some(f) if segment <= 2048 && values * 12 <= MAX_TILE_SHARED_BYTES => (f, values * 12),
        _ => (plain, values * 8),
    }
}

pub(super) fn grid(n: usize, per_block: usize) -> u32 {
    n.div_ceil(per_block).max(1) as u32
}

pub(super) fn launch_config(blocks: u32, shared: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: shared as u32,
    }
}

/// Records (stage, start, end) event pairs on the compute stream.
pub(super) struct Timer {
    pub(super) marks: Vec<(&'static str, Rc<CudaEvent>, Rc<CudaEvent>)>,
}

impl Timer {
    pub(super) fn event(stream: &cudarc::driver::CudaStream) -> Result<Rc<CudaEvent>, GpuError> {
        Ok(Rc::new(stream.record_event(Some(
            sys::CUevent_flags::CU_EVENT_DEFAULT,
        ))?))
    }

    pub(super) fn times(&self) -> Result<Vec<(&'static str, f64)>, GpuError> {
        let mut out: Vec<(&'static str, f64)> = Vec::new();
        for (stage, a, b) in &self.marks {
            let ms = f64::from(a.elapsed_ms(b)?);
            match out.iter_mut().find(|(s, _)| s == stage) {
                Some(entry) => entry.1 += ms,
                None => out.push((stage, ms)),
            }
        }
        Ok(out)
    }
}

/// The fixed-point exponent k for a frame whose every pixel has τ ≤ `bound`: bound·2^k ≤ 2^62.
pub(super) fn fixed_exponent(bound: f64) -> Result<i32, RenderError> {
    if !bound.is_finite() {
        return Err(RenderError::setting(
            "the tau bound K_A*brightness*sum(1/h) is not finite (smoothing lengths too small)",
        ));
    }
    if bound <= 0.0 {
        return Ok(0);
    }
    let e = bound.log2().floor() as i32 + 1;
    Ok((62 - e).clamp(-1000, 1000))
}
