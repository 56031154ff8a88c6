//! τ → image: 1 − exp(−τ), then gamma and contrast, then 8- or 16-bit RGB (DESIGN §4.6).

use super::cpu::{Isa, exp_f32};
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
            let pixels = tone8(&tau.data, tau_scale, tone);
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

/// `image`'s pixels as opaque RGBA bytes (the window's texture layout), on threads.
pub fn rgb_to_rgba(image: &image::RgbImage) -> Vec<u8> {
    let rgb = image.as_raw();
    let mut rgba = vec![255u8; rgb.len() / 3 * 4];
    rgba.par_chunks_mut(4 * 4096)
        .zip(rgb.par_chunks(3 * 4096))
        .for_each(|(out, rgb)| {
            for (o, i) in out.chunks_exact_mut(4).zip(rgb.chunks_exact(3)) {
                o[..3].copy_from_slice(i);
            }
        });
    rgba
}

/// The 8-bit value of one τ channel: round(tone_value·255).
#[inline]
fn tone8_exact(tau: f32, tau_scale: f32, tone: &ToneSettings) -> u8 {
    (tone_value(tau, tau_scale, tone) * 255.0).round() as u8
}

/// τ values per task of [`tone8`] and per block of its vector pass.
const TONE_CHUNK: usize = 1 << 14;
const TONE_BLOCK: usize = 256;

/// [`tone8_exact`] of every value, in parallel.
///
/// Why not simply that: glibc's `expf` is a call per value, so the pass never vectorises and
/// costs as much as a small-radius frame's splatting. Each value is first computed with the
/// vectorisable [`exp_f32`] (within a few ulp of `expf`); where that puts v·255 farther than
/// [`tone8_margin`] from a rounding boundary (k + ½), both exponentials round to the same byte,
/// which is taken; the others (about 0.1 %, and every argument outside [−87, 0], NaN included)
/// are computed exactly. So the bytes are those of [`tone8_exact`].
fn tone8(tau: &[f32], tau_scale: f32, tone: &ToneSettings) -> Vec<u8> {
    let mut out = vec![0u8; tau.len()];
    let isa = Isa::detect();
    out.par_chunks_mut(TONE_CHUNK)
        .zip(tau.par_chunks(TONE_CHUNK))
        .for_each(|(out, tau)| tone8_chunk_for(isa, tau, tau_scale, tone, out));
    out
}

/// How close (in units of the 8-bit scale) v·255 from [`exp_f32`] may come to a rounding
/// boundary and still be taken: 255·(|contrast| + 1)·2⁻¹⁹ bounds the difference from the exact
/// path's v·255 with up to 12 ulp of error in each exponential (they are within 2 and 1), the
/// roundings of 1 − e, of the contrast product and of the scaling included.
fn tone8_margin(contrast: f32) -> f32 {
    255.0 * (contrast.abs() + 1.0) * 2f32.powi(-19)
}

/// [`tone8_chunk`] compiled for `isa` (one the CPU has; the bytes are the same with every
/// instruction set), on this thread: also for the CPU renderer, which tone-maps τ row by row
/// as it draws it.
pub(crate) fn tone8_chunk_for(
    isa: Isa,
    tau: &[f32],
    tau_scale: f32,
    tone: &ToneSettings,
    out: &mut [u8],
) {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2Fma {
        // SAFETY: `Isa::detect` only yields Avx2Fma where the CPU has AVX2 and FMA.
        return unsafe { tone8_chunk_avx2(tau, tau_scale, tone, out) };
    }
    let _ = isa;
    tone8_chunk(tau, tau_scale, tone, out);
}

/// [`tone8_chunk`] with 8-wide vectors (no FMA contraction: Rust never fuses a·b + c).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn tone8_chunk_avx2(tau: &[f32], tau_scale: f32, tone: &ToneSettings, out: &mut [u8]) {
    tone8_chunk(tau, tau_scale, tone, out);
}

/// [`tone8`] of one chunk: a vector pass over blocks, then the exact path where it is needed.
// `&` of comparisons rather than `contains` (`&&`): the vector pass stays branch-free.
#[allow(clippy::manual_range_contains)]
#[inline(always)]
fn tone8_chunk(tau: &[f32], tau_scale: f32, tone: &ToneSettings, out: &mut [u8]) {
    if tone.gamma != 1.0 {
        for (o, &t) in out.iter_mut().zip(tau) {
            *o = tone8_exact(t, tau_scale, tone);
        }
        return;
    }
    let contrast = tone.contrast;
    let margin = tone8_margin(contrast);
    for (out, tau) in out.chunks_mut(TONE_BLOCK).zip(tau.chunks(TONE_BLOCK)) {
        let mut exact = [false; TONE_BLOCK];
        for ((o, x), &t) in out.iter_mut().zip(&mut exact).zip(tau) {
            let arg = -(t * tau_scale);
            let v = contrast * (1.0 - exp_f32(arg));
            let q = v.clamp(0.0, 1.0) * 255.0;
            let shifted = q + 0.5;
            let k = shifted as i32;
            let d = shifted - k as f32;
            let fast = (arg >= -87.0) & (arg <= 0.0) & (d >= margin) & (d <= 1.0 - margin);
            *o = k.clamp(0, 255) as u8;
            *x = !fast;
        }
        for ((o, &x), &t) in out.iter_mut().zip(&exact).zip(tau) {
            if x {
                *o = tone8_exact(t, tau_scale, tone);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rgba_keeps_each_pixels_rgb_and_adds_an_opaque_alpha() {
        // Wider than one 4096-pixel chunk, so the threads' chunks must line up.
        let image = image::RgbImage::from_fn(4099, 2, |x, y| {
            Rgb([(x % 251) as u8, (x / 251) as u8, (7 * y + x % 3) as u8])
        });
        let rgba = rgb_to_rgba(&image);
        assert_eq!(rgba.len(), 4099 * 2 * 4);
        for (four, three) in rgba.chunks_exact(4).zip(image.pixels()) {
            assert_eq!(four, [three[0], three[1], three[2], 255]);
        }
    }

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
    fn eight_bits_by_the_vector_exponential_are_the_exact_path_bytes() {
        // Every 4099th f32 in [0, 40], the edge values, and for each contrast the 600 floats
        // around each τ where v·255 is a rounding boundary k + ½ (where the vector path must
        // hand over to the exact one).
        let mut sweep: Vec<f32> = (0..40f32.to_bits())
            .step_by(4099)
            .map(f32::from_bits)
            .collect();
        sweep.extend([f32::NAN, f32::INFINITY, -1.0, -0.0, 1e30, f32::MIN_POSITIVE]);
        let mut checked = 0;
        for contrast in [1.0, 0.5, 2.5, 100.0, -1.0, f32::NAN] {
            let mut tau = sweep.clone();
            for k in 0..255 {
                let v = (k as f64 + 0.5) / 255.0 / f64::from(contrast);
                let at = (-(1.0 - v).ln()) as f32;
                if at.is_finite() && at > 0.0 {
                    let bits = at.to_bits();
                    tau.extend((bits - 300..bits + 300).map(f32::from_bits));
                }
            }
            for scale in [1.0, 0.37, 3.0, 1e-3, 0.0] {
                let tone = ToneSettings {
                    contrast,
                    ..ToneSettings::default()
                };
                let fast = tone8(&tau, scale, &tone);
                for (&t, &got) in tau.iter().zip(&fast) {
                    let want = tone8_exact(t, scale, &tone);
                    assert_eq!(got, want, "tau {t}, scale {scale}, contrast {contrast}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000_000, "{checked}");
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
