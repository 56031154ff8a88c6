//! Launch sizes of the CUDA frame: the tile passes' kernel and shared memory, the wide border,
//! and the fixed-point exponent.

use crate::render::RenderError;
use cudarc::driver::CudaFunction;

/// Largest dynamic shared memory the tile kernel may ask for (Hopper allows 227 KiB).
pub(super) const MAX_TILE_SHARED_BYTES: usize = 200 * 1024;
/// Threads per block of the wide-border tile pass (one block per SM fits its shared memory).
pub(super) const WIDE_BLOCK: u32 = 1024;

/// Shared bytes of one pixel in the three-part region (kernels/render_medium.cu PIXEL_BYTES):
/// a grey pixel's three words, or an RGB pixel's two words per channel and a spare one (its
/// third parts go straight to the global τ).
pub(super) fn red_pixel_bytes(channels: usize) -> usize {
    if channels > 1 { 8 * channels + 4 } else { 12 }
}

/// The wide border actually used: at most what lets the region of `channels` sums a pixel
/// take the three-part sums (see [`tile_pass`]), so that the wide pass adds with native 32-bit
/// shared atomics rather than with the 64-bit fallback (a compare-and-swap loop on Hopper); 0
/// when not above the medium border (then every large splat takes the large path).
pub(super) fn wide_border_px(wanted: f32, tile_px: usize, border_px: f32, channels: usize) -> f32 {
    let per_pixel = red_pixel_bytes(channels);
    let max_side = ((MAX_TILE_SHARED_BYTES / per_pixel) as f64).sqrt().floor() as usize;
    let max_border = (max_side.saturating_sub(tile_px) / 2).saturating_sub(2) as f32;
    let border = wanted.min(max_border);
    if border > border_px { border } else { 0.0 }
}

/// The tile-pass kernel for a region of `pixels` pixels of `channels` sums and its shared
/// bytes: the three-part sums where the region fits, else the 64-bit sums (8 bytes a value).
/// Both are exact for the segments used (tuning.rs: at most 2048 splats a block).
pub(super) fn tile_pass<'a>(
    plain: &'a CudaFunction,
    red: &'a CudaFunction,
    pixels: usize,
    channels: usize,
) -> (&'a CudaFunction, usize) {
    match region_bytes(pixels, channels) {
        (true, bytes) => (red, bytes),
        (false, bytes) => (plain, bytes),
    }
}

/// The wide-border pass's kernel and shared bytes: as [`tile_pass`], plus `spare_px` pixels
/// past the three-part region where its kernel asks for them (kernels/render_wide.cu: the adds
/// of lanes outside a disc go to their lane's spare pixel).
pub(super) fn wide_pass<'a>(
    plain: &'a CudaFunction,
    red: &'a CudaFunction,
    spare_px: usize,
    pixels: usize,
    channels: usize,
) -> (&'a CudaFunction, usize) {
    match region_bytes(pixels, channels) {
        (true, bytes) => (red, bytes + spare_px * red_pixel_bytes(channels)),
        (false, bytes) => (plain, bytes),
    }
}

/// Whether a region of `pixels` pixels of `channels` sums takes the three-part sums, and its
/// shared bytes.
fn region_bytes(pixels: usize, channels: usize) -> (bool, usize) {
    let red = pixels * red_pixel_bytes(channels);
    if red <= MAX_TILE_SHARED_BYTES {
        (true, red)
    } else {
        (false, pixels * channels * 8)
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
        for (channels, pixel_bytes) in [(1usize, 12usize), (3, 28)] {
            let border = wide_border_px(32.0, 16, 8.0, channels);
            assert_eq!(border, 32.0, "{channels} channels");
            let side = 16 + 2 * (border.ceil() as usize + 2);
            assert_eq!(
                region_bytes(side * side, channels),
                (true, side * side * pixel_bytes),
                "{channels} channels"
            );
        }
        // An RGB region too wide for the three-part sums falls back to 64-bit words.
        assert_eq!(region_bytes(90 * 90, 3), (false, 90 * 90 * 24));
        assert_eq!(wide_border_px(32.0, 16, 32.0, 3), 0.0);
        assert_eq!(wide_border_px(40.0, 16, 8.0, 3), 32.0);
    }
}
