//! Auto exposure on the device: the nearest-rank percentile of the lit pixels' largest channel
//! (render/exposure.rs's rule, exact) from two 65 536-bin histograms of the f32 bits
//! (`shaders/exposure.wgsl`), so that only 2 × 256 KiB come back instead of τ.

use super::WgpuRenderer;
use super::error::WgpuError;
use super::frame::Tile;
use super::readback::{PixelPass, run_and_map};
use crate::render::exposure::{arguments_valid, brightness_for, nearest_rank};

/// Bins of each histogram.
const BINS: usize = 1 << 16;

/// The bin holding the `rank`-th value (1-based) and the count of the bins before it.
fn bin_of_rank(bins: &[u32], rank: u64) -> Option<(usize, u64)> {
    let mut before = 0u64;
    for (bin, &count) in bins.iter().enumerate() {
        let count = u64::from(count);
        if before + count >= rank {
            return Some((bin, before));
        }
        before += count;
    }
    None
}

fn histogram(
    renderer: &mut WgpuRenderer,
    pass: PixelPass,
    tile: Tile,
    fixed_exponent: i32,
) -> Result<Vec<u32>, WgpuError> {
    let bytes = 4 * BINS as u64;
    let readback = run_and_map(renderer, pass, tile, [1.0; 3], fixed_exponent, bytes)?;
    let bins = {
        let view =
            readback
                .slice(0..bytes)
                .get_mapped_range()
                .map_err(|err| WgpuError::Readback {
                    message: err.to_string(),
                })?;
        bytemuck::cast_slice::<u8, u32>(&view).to_vec()
    };
    readback.unmap();
    Ok(bins)
}

/// The auto-exposure brightness of the drawn `tile` (the whole image): as
/// [`crate::render::exposure::auto_brightness`] on the τ that `resolve` would give.
pub(crate) fn auto_brightness(
    renderer: &mut WgpuRenderer,
    tile: Tile,
    fixed_exponent: i32,
    percentile: f32,
    target_value: f32,
) -> Result<f32, WgpuError> {
    if !arguments_valid(percentile, target_value) {
        return Ok(1.0);
    }
    let high = histogram(renderer, PixelPass::HistogramHigh, tile, fixed_exponent)?;
    let lit: u64 = high.iter().map(|&c| u64::from(c)).sum();
    if lit == 0 {
        return Ok(1.0);
    }
    let rank = nearest_rank(percentile, lit as usize) as u64;
    let Some((high_bin, before)) = bin_of_rank(&high, rank) else {
        return Ok(1.0);
    };
    let pass = PixelPass::HistogramLow(high_bin as u32);
    let low = histogram(renderer, pass, tile, fixed_exponent)?;
    let Some((low_bin, _)) = bin_of_rank(&low, rank - before) else {
        return Ok(1.0);
    };
    let tau_p = f32::from_bits(((high_bin as u32) << 16) | low_bin as u32);
    Ok(brightness_for(tau_p, target_value))
}

#[cfg(test)]
mod tests {
    use super::bin_of_rank;

    #[test]
    fn the_rank_falls_in_the_first_bin_whose_running_count_reaches_it() {
        let bins = [0, 2, 0, 3, 1];
        assert_eq!(bin_of_rank(&bins, 1), Some((1, 0)));
        assert_eq!(bin_of_rank(&bins, 2), Some((1, 0)));
        assert_eq!(bin_of_rank(&bins, 3), Some((3, 2)));
        assert_eq!(bin_of_rank(&bins, 6), Some((4, 5)));
        assert_eq!(bin_of_rank(&bins, 7), None);
    }
}
