//! Auto exposure on the device: the nearest-rank percentile of the pixels' largest channel found
//! by two 2^16-bin histograms of its bits (kernels/render_compose.cu, `exposure_hist`), so that
//! only 2 × 256 KiB come back instead of τ. Equal to [`crate::render::exposure::auto_brightness`]
//! bit for bit: the same values, rank and arithmetic.

use super::CudaRenderer;
use super::args::ExposureHistArgs;
use crate::gpu::{self, GpuError};
use crate::render::RenderError;
use crate::render::exposure::{arguments_valid, brightness_for, nearest_rank};

/// The auto-exposure brightness of the last frame's τ (see the module docs).
pub(super) fn device_auto_brightness(
    r: &mut CudaRenderer,
    percentile: f32,
    target_value: f32,
) -> Result<f32, RenderError> {
    let Some(image) = r.image.as_mut() else {
        return Err(RenderError::setting("no frame rendered yet"));
    };
    let stream = &r.compute;
    let pixels = image.width as u64 * image.height as u64;
    let cfg = gpu::per_element(pixels as usize, 0);
    let mut pass = |low_pass: bool, high: u32| -> Result<Vec<u32>, GpuError> {
        stream.memset_zeros(&mut image.hist)?;
        let args = ExposureHistArgs {
            tau: &image.tau,
            pixels,
            low_pass: i32::from(low_pass),
            high,
            hist: &mut image.hist,
        };
        // SAFETY: tau holds 3·pixels values and hist 2^16 counts (ensure_image).
        unsafe { gpu::launch(stream, &r.kernels.exposure_hist, cfg, args) }?;
        Ok(stream.clone_dtoh(&image.hist)?)
    };
    let high_counts = pass(false, 0)?;
    let lit: u64 = high_counts.iter().map(|&c| u64::from(c)).sum();
    if lit == 0 || !arguments_valid(percentile, target_value) {
        return Ok(1.0);
    }
    let rank = nearest_rank(percentile, lit as usize) as u64;
    let (high, rank_in_bin) = find_rank(&high_counts, rank);
    let low_counts = pass(true, high)?;
    let (low, _) = find_rank(&low_counts, rank_in_bin);
    Ok(brightness_for(
        f32::from_bits(high << 16 | low),
        target_value,
    ))
}

/// The bin holding the `rank`-th (1-based) counted value, and that value's rank inside it.
fn find_rank(counts: &[u32], rank: u64) -> (u32, u64) {
    let mut below = 0u64;
    for (bin, &count) in counts.iter().enumerate() {
        let count = u64::from(count);
        if below + count >= rank {
            return (bin as u32, rank - below);
        }
        below += count;
    }
    (counts.len().saturating_sub(1) as u32, 1)
}

#[cfg(test)]
mod tests {
    use super::find_rank;

    #[test]
    fn ranks_land_in_their_bins() {
        let counts = [0, 2, 0, 3, 1];
        assert_eq!(find_rank(&counts, 1), (1, 1));
        assert_eq!(find_rank(&counts, 2), (1, 2));
        assert_eq!(find_rank(&counts, 3), (3, 1));
        assert_eq!(find_rank(&counts, 5), (3, 3));
        assert_eq!(find_rank(&counts, 6), (4, 1));
    }
}
