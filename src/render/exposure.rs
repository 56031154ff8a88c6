//! Auto exposure: the brightness that maps a high percentile of the non-zero τ to a chosen
//! display value (DESIGN §4.6).

use super::tau::TauBuffer;

/// Default percentile of the non-zero pixels (per pixel, the largest of its three channels).
pub const DEFAULT_PERCENTILE: f32 = 99.5;
/// Default display value 1 − exp(−B·τ_p) of that percentile pixel.
pub const DEFAULT_TARGET_VALUE: f32 = 0.9;

/// B such that 1 − exp(−B·τ_p) = `target_value`, where τ_p is the `percentile` (0–100, nearest
/// rank) of the pixels' largest channel over pixels with τ > 0. 1 when no pixel is lit or the
/// arguments are out of range. `scratch` is reused across frames.
pub fn auto_brightness(
    tau: &TauBuffer,
    percentile: f32,
    target_value: f32,
    scratch: &mut Vec<f32>,
) -> f32 {
    scratch.clear();
    scratch.extend(
        tau.data
            .chunks_exact(3)
            .map(|p| p[0].max(p[1]).max(p[2]))
            .filter(|v| *v > 0.0 && v.is_finite()),
    );
    if scratch.is_empty() || !arguments_valid(percentile, target_value) {
        return 1.0;
    }
    let rank = nearest_rank(percentile, scratch.len());
    let (_, tau_p, _) = scratch.select_nth_unstable_by(rank - 1, f32::total_cmp);
    brightness_for(*tau_p, target_value)
}

/// Whether `percentile` lies in 0–100 and `target_value` in (0, 1) (else the brightness is 1).
pub fn arguments_valid(percentile: f32, target_value: f32) -> bool {
    (0.0..=100.0).contains(&percentile) && target_value > 0.0 && target_value < 1.0
}

/// The 1-based nearest rank of `percentile` among `n` > 0 values: the smallest value with at
/// least p % of the values at or below it.
pub fn nearest_rank(percentile: f32, n: usize) -> usize {
    ((f64::from(percentile) / 100.0 * n as f64).ceil() as usize).clamp(1, n)
}

/// B with 1 − exp(−B·`tau_p`) = `target_value`; 1 when that is not finite and > 0.
pub fn brightness_for(tau_p: f32, target_value: f32) -> f32 {
    let wanted_tau = -(1.0 - target_value).ln();
    let brightness = wanted_tau / tau_p;
    if brightness.is_finite() && brightness > 0.0 {
        brightness
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_pixel_maps_to_the_target() {
        let mut tau = TauBuffer::new(200, 1);
        for (i, px) in tau.data.chunks_exact_mut(3).enumerate() {
            // Pixels 0..100 stay dark; 100..200 have max channel (i − 99)·0.01.
            if i >= 100 {
                px[1] = (i - 99) as f32 * 0.01;
            }
        }
        let mut scratch = Vec::new();
        // 100 lit pixels: the 90th percentile is the 90th smallest, 0.90.
        let b = auto_brightness(&tau, 90.0, 0.5, &mut scratch);
        assert!((b - 2.0f32.ln() / 0.90).abs() < 1e-6, "{b}");
        assert_eq!(
            auto_brightness(&TauBuffer::new(4, 4), 99.5, 0.9, &mut scratch),
            1.0
        );
    }
}
