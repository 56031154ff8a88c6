//! Launch sizes of the CUDA frame: the tile passes' kernel and shared memory, the wide border,
//! and the fixed-point exponent.

use crate::render::RenderError;
use cudarc::driver::CudaFunction;

/// Largest dynamic shared memory the tile kernel may ask for (Hopper allows 227 KiB).
pub(super) const MAX_TILE_SHARED_BYTES: usize = 200 * 1024;
/// Threads per block of the wide-border tile pass (one block per SM fits its shared memory).
pub(super) const WIDE_BLOCK: u32 = 1024;

/// The wide border actually used: at most what lets the region of `channels` sums a pixel
/// take the three-part sums (12 bytes a value; see [`tile_pass`]), so that an RGB frame's wide
/// pass adds with native 32-bit shared atomics, as a grey frame's does, rather than with the
/// 64-bit fallback (a compare-and-swap loop on Hopper); 0 when not above the medium border
/// (then every large splat takes the large path).
pub(super) fn wide_border_px(wanted: f32, tile_px: usize, border_px: f32, channels: usize) -> f32 {
    let per_pixel = 12 * channels.max(1);
    let max_side = ((MAX_TILE_SHARED_BYTES / per_pixel) as f64).sqrt().floor() as usize;
    let max_border = (max_side.saturating_sub(tile_px) / 2).saturating_sub(2) as f32;
    let border = wanted.min(max_border);
    if border > border_px { border } else { 0.0 }
}

/// The tile-pass kernel for a region of `values` sums and its shared bytes: the three-part
/// sums (12 bytes a value) where the region fits, else the 64-bit sums (8 bytes). Both are
/// exact for the segments used (tuning.rs: at most 2048 splats a block).
pub(super) fn tile_pass<'a>(
    plain: &'a CudaFunction,
    red: &'a CudaFunction,
    values: usize,
) -> (&'a CudaFunction, usize) {
    match region_bytes(values) {
        (true, bytes) => (red, bytes),
        (false, bytes) => (plain, bytes),
    }
}

/// Whether a region of `values` sums takes the three-part sums, and its shared bytes.
fn region_bytes(values: usize) -> (bool, usize) {
    if values * 12 <= MAX_TILE_SHARED_BYTES {
        (true, values * 12)
    } else {
        (false, values * 8)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_region_takes_the_three_part_sums_in_grey_and_in_colour() {
        for (channels, expected) in [(1usize, 32.0f32), (3, 27.0)] {
            let border = wide_border_px(32.0, 16, 8.0, channels);
            assert_eq!(border, expected, "{channels} channels");
            let side = 16 + 2 * (border.ceil() as usize + 2);
            let values = side * side * channels;
            assert_eq!(
                region_bytes(values),
                (true, values * 12),
                "{channels} channels"
            );
        }
        assert_eq!(wide_border_px(32.0, 16, 30.0, 3), 0.0);
    }
}
