//! τ → image: 1 − exp(−τ), then gamma and contrast, then 8- or 16-bit RGB (DESIGN §4.6).

use super::tau::TauBuffer;
use image::{DynamicImage, ImageBuffer, Rgb};
use rayon::prelude::*;

/// Bits per channel of the output image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum BitDepth {
    /// 8-bit RGB.
    #[default]
    Eight,
    /// 16-bit RGB.
    Sixteen,
}

/// Final transform after 1 − exp(−τ): v ← contrast·v^gamma (Splotch `colour_adjust`, notes
/// eq. 18, without its additive offset), clamped to [0, 1], then quantised.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToneSettings {
    /// Exponent applied to 1 − exp(−τ) (1 = none).
    pub gamma: f32,
    /// Multiplier after the gamma (1 = none).
    pub contrast: f32,
    /// 8 or 16 bits per channel.
    pub bits: BitDepth,
}

impl Default for ToneSettings {
    fn default() -> Self {
        Self {
            gamma: 1.0,
            contrast: 1.0,
            bits: BitDepth::Eight,
        }
    }
}

/// The display value of one τ channel in [0, 1]: contrast·(1 − exp(−scale·τ))^gamma, clamped.
#[inline]
pub fn tone_value(tau: f32, tau_scale: f32, tone: &ToneSettings) -> f32 {
    let v = 1.0 - (-(tau * tau_scale)).exp();
    let v = if tone.gamma == 1.0 {
        v
    } else {
        v.max(0.0).powf(tone.gamma)
    };
    let v = tone.contrast * v;
    if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) }
}

/// Tone-maps `tau` (multiplied by `tau_scale`, the auto-exposure brightness or 1) to an RGB image
/// with row 0 at the top. Quantisation rounds to nearest: round(v·255) or round(v·65535).
pub fn tone_map(tau: &TauBuffer, tau_scale: f32, tone: &ToneSettings) -> DynamicImage {
    let (width, height) = (tau.width, tau.height);
    match tone.bits {
        BitDepth::Eight => {
            let pixels: Vec<u8> = tau
                .data
                .par_iter()
                .map(|&t| (tone_value(t, tau_scale, tone) * 255.0).round() as u8)
                .collect();
            ImageBuffer::<Rgb<u8>, _>::from_raw(width, height, pixels)
                .map(DynamicImage::ImageRgb8)
                .unwrap_or_else(|| DynamicImage::new_rgb8(width, height))
        }
        BitDepth::Sixteen => {
            let pixels: Vec<u16> = tau
                .data
                .par_iter()
                .map(|&t| (tone_value(t, tau_scale, tone) * 65535.0).round() as u16)
                .collect();
            ImageBuffer::<Rgb<u16>, _>::from_raw(width, height, pixels)
                .map(DynamicImage::ImageRgb16)
                .unwrap_or_else(|| DynamicImage::new_rgb16(width, height))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_minus_exp_and_quantisation() {
        let mut tau = TauBuffer::new(2, 1);
        tau.data = vec![0.0, 1.0, 100.0, f32::NAN, 2.0_f32.ln(), 0.5];
        let image = tone_map(&tau, 1.0, &ToneSettings::default()).to_rgb8();
        assert_eq!(image.get_pixel(0, 0).0, [0, 161, 255]); // 1 − e⁻¹ = 0.632 → 161
        assert_eq!(image.get_pixel(1, 0).0[0], 0);
        assert_eq!(image.get_pixel(1, 0).0[1], 128); // 1 − ½ → 127.5 → 128
        let image16 = tone_map(
            &tau,
            2.0,
            &ToneSettings {
                bits: BitDepth::Sixteen,
                ..ToneSettings::default()
            },
        );
        let DynamicImage::ImageRgb16(image16) = image16 else {
            panic!("16-bit image expected");
        };
        // scale 2: 1 − e⁻² = 0.864665 → 56666.
        assert_eq!(image16.get_pixel(0, 0).0[1], 56666);
    }

    #[test]
    fn gamma_and_contrast() {
        let tone = ToneSettings {
            gamma: 2.0,
            contrast: 1.5,
            bits: BitDepth::Eight,
        };
        let v = 1.0 - (-1.0f32).exp();
        assert_eq!(tone_value(1.0, 1.0, &tone), (1.5 * v * v).min(1.0));
        assert_eq!(
            tone_value(0.3, 1.0, &tone),
            1.5 * (1.0 - (-0.3f32).exp()).powf(2.0)
        );
    }
}
