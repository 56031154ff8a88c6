//! The splat weight's exponential as straight-line f32 code, and the CPU's vector instruction set.
//!
//! glibc's `expf` is a function call, so a loop of weights never vectorises; this polynomial
//! (Cephes `expf`: Cody–Waite reduction x = n·ln 2 + r, degree-5 minimax polynomial on
//! |r| ≤ ½·ln 2, scaling by 2ⁿ through the exponent bits) is branch-free and inlines, so the
//! compiler evaluates 4 or 8 weights per instruction. Measured ≤ 2 ulp from the exact value on
//! [−87, 0] (tests below). Every CPU path (tiles, small records, the unit references) uses this
//! one function, so τ stays bit-identical between them; the CUDA kernels' `expf` differs by ulps,
//! far inside their 1e-4 tolerance.

/// log₂ e.
pub(super) const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split into an exactly representable high part and a small correction (Cephes C1, C2).
pub(super) const LN2_HI: f32 = 0.693_359_4;
/// See [`LN2_HI`].
pub(super) const LN2_LO: f32 = -2.121_944_4e-4;
/// 1.5·2²³: adding it rounds a float of magnitude < 2²² to an integer (round to nearest even).
pub(super) const ROUND_MAGIC: f32 = 12_582_912.0;
/// Below this e^x is under f32's smallest normal and is returned as 0.
pub(super) const MIN_ARG: f32 = -87.0;
/// Cephes expf coefficients (minimax for e^r − 1 − r on |r| ≤ ½·ln 2), highest degree first.
pub(super) const POLY: [f32; 5] = [
    1.987_569_2e-4,
    1.398_2e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
];
/// Above this e^x overflows; arguments are clamped here (the splatter never passes x > 0).
const MAX_ARG: f32 = 88.0;

/// e^x in f32 (≤ 2 ulp on [−87, 88]; 0 below −87; NaN gives 0). Straight-line so that loops of
/// it vectorise; `#[inline(always)]` so that it is compiled for the caller's target features.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let xc = x.clamp(MIN_ARG, MAX_ARG);
    // n = round(x·log₂e) by the magic-number trick: no SSE4.1 rounding instruction needed.
    let t = xc * LOG2E + ROUND_MAGIC;
    let n = t - ROUND_MAGIC;
    let n_int = t.to_bits() as i32 - ROUND_MAGIC.to_bits() as i32;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let r2 = r * r;
    let p = ((((POLY[0] * r + POLY[1]) * r + POLY[2]) * r + POLY[3]) * r + POLY[4]) * r + 0.5;
    let y = (p * r2 + r) + 1.0;
    // 2ⁿ from the exponent bits: n ∈ [−126, 127] after the clamp.
    let scale = f32::from_bits(((n_int + 127) << 23) as u32);
    let e = y * scale;
    // `x >= MIN_ARG` is false for NaN and for arguments below the normal range.
    if x >= MIN_ARG { e } else { 0.0 }
}

/// The vector instruction set the CPU splatter's hot loops are compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// The build's baseline (SSE2 on x86-64).
    Baseline,
    /// x86-64 AVX2 and FMA (8-wide f32; no fused operations are used, so the bits are the same).
    Avx2Fma,
}

impl Isa {
    /// The best set this CPU has (run-time feature detection).
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Self::Avx2Fma;
        }
        Self::Baseline
    }

    /// `self` where this CPU has it, else the baseline.
    pub fn or_baseline(self) -> Self {
        if self.is_supported() {
            self
        } else {
            Self::Baseline
        }
    }

    /// Whether [`Isa::Avx2Fma`] may run here (it needs the features at run time).
    pub fn is_supported(self) -> bool {
        match self {
            Self::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            Self::Avx2Fma => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Self::Avx2Fma => false,
        }
    }

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::Avx2Fma => "avx2+fma",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite non-negative floats.
    fn ulps(a: f32, b: f32) -> u32 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn within_two_ulp_of_the_exact_exponential() {
        // Dense on the splatter's range (−d²/σ² ≥ −(0.75/0.413)² ≈ −3.3) and sparse to −87.
        let mut worst = 0;
        let mut checked = 0;
        for k in 0..=400_000 {
            let x = -4.0 * k as f32 / 400_000.0;
            let want = f64::from(x).exp() as f32;
            worst = worst.max(ulps(exp_f32(x), want));
            checked += 1;
        }
        for k in 0..=87_000 {
            let x = -(k as f32) / 1000.0;
            let want = f64::from(x).exp() as f32;
            worst = worst.max(ulps(exp_f32(x), want));
            checked += 1;
        }
        assert_eq!(checked, 487_002);
        assert!(worst <= 2, "worst error {worst} ulp");
    }

    #[test]
    fn exact_at_zero_and_flushes_below_the_normal_range() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-0.0), 1.0);
        assert_eq!(exp_f32(-87.5), 0.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(f32::NAN), 0.0);
        assert_eq!(ulps(exp_f32(1.0), std::f32::consts::E), 0);
    }
}
