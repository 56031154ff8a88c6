//! The gamma fit's CDF at many trial counts at once, with the bits of statrs 0.19's
//! `Gamma::sf` (the KS walk in ks.rs evaluates it at every distinct count of a bin).
//!
//! Why: at the large shapes of high pair counts (10⁵ to 10⁷ for IC86's widest bins), statrs's
//! regularized incomplete gamma sums about √(70·shape) series or continued-fraction terms per
//! value, two divisions each, one after the other; that was nearly all of `twopoint`'s
//! statistics stage. Here [`LANES`] arguments run through the same recurrences side by side
//! (the divider pipelines them, and under AVX2 one instruction divides four), and the
//! convergence test's division is made only once a cheap product says it may pass:
//! `c > k·a` with k slightly above ε implies `fl(c/a) > ε`, since fl(a·k) ≥ a·k(1 − u) and
//! k(1 − u) > ε(1 + 2u), and rounding is monotone. Every lane performs statrs's operations on
//! its own argument in statrs's order (no fused operations; ln, exp and ln Γ are the functions
//! statrs calls), and a lane stops after the iteration at which statrs's loop breaks, so each
//! value has the same bits (tests below compare them with statrs).

use statrs::distribution::{ContinuousCDF, Gamma};
use statrs::function::gamma::ln_gamma;

/// Arguments evaluated side by side.
const LANES: usize = 4;
/// statrs's convergence threshold (`gamma_lr`, `gamma_ur`).
const EPS: f64 = 0.000000000000001;
/// statrs's rescaling bound of the continued fraction (2⁵²) and its inverse (statrs writes
/// 2.22044604925031308085e-16, which is 2⁻⁵²).
const BIG: f64 = 4503599627370496.0;
const BIG_INV: f64 = f64::EPSILON;
/// Below this log-prefactor statrs returns the limit (0 or 1) without a series (statrs writes
/// -709.78271289338399, the same f64).
const AX_MIN: f64 = -709.782_712_893_384;
/// A little above [`EPS`]: a ratio whose operands pass `num > den·NOT_YET` is surely above it.
const NOT_YET: f64 = 1.0000001e-15;
/// Smallest shape taken through the lanes; below it statrs is cheap and called as it is.
const MIN_SHAPE: f64 = 1.0;

/// `1 − P(X ≥ count + 1)` for each of `counts` under the gamma of `shape` and `scale`, where
/// P(X ≥ c) = `Gamma::new(shape, 1/scale).sf(c − ½)` as `FitKind::p_at_least` computes it:
/// `FitKind::cdf_at` for every count, with the same bits.
pub fn gamma_cdf_at(shape: f64, scale: f64, counts: &[u64]) -> Vec<f64> {
    let rate = 1.0 / scale;
    let one_by_one = |count: u64| 1.0 - statrs_sf(shape, rate, count);
    let Ok(gamma) = Gamma::new(shape, rate) else {
        return counts.iter().map(|&c| one_by_one(c)).collect();
    };
    let lanes_apply = shape >= MIN_SHAPE && shape.is_finite() && rate.is_finite();
    let ln_gamma_shape = ln_gamma(shape);
    let avx2 = has_avx2();
    let mut out = Vec::with_capacity(counts.len());
    for chunk in counts.chunks(LANES) {
        // Gamma::sf(x) is gamma_ur(shape, x·rate) for finite x > 0 and finite rate.
        let mut y = [1.0; LANES];
        for (y, &count) in y.iter_mut().zip(chunk) {
            *y = sf_argument(count) * rate;
        }
        if lanes_apply && y.iter().all(|&y| (1.0..f64::INFINITY).contains(&y)) {
            let sf = upper_lanes(shape, ln_gamma_shape, y, avx2);
            out.extend(sf[..chunk.len()].iter().map(|sf| 1.0 - sf));
        } else {
            out.extend(chunk.iter().map(|&c| 1.0 - gamma.sf(sf_argument(c))));
        }
    }
    out
}

/// The survival function's argument for P(X ≥ count + 1): count + 1 − ½ (continuity
/// correction, as `FitKind::p_at_least` forms it).
fn sf_argument(count: u64) -> f64 {
    (count + 1) as f64 - 0.5
}

/// statrs's survival function at [`sf_argument`]`(count)`, NaN where the gamma is invalid.
fn statrs_sf(shape: f64, rate: f64, count: u64) -> f64 {
    Gamma::new(shape, rate)
        .map(|g| g.sf(sf_argument(count)))
        .unwrap_or(f64::NAN)
}

#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_avx2() -> bool {
    false
}

/// [`upper_lanes_any`] compiled for AVX2 where the CPU has it (four divisions per instruction;
/// the operations, and so the bits, are the same either way).
fn upper_lanes(a: f64, ln_gamma_a: f64, y: [f64; LANES], avx2: bool) -> [f64; LANES] {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: the caller checked that this CPU has AVX2.
        return unsafe { upper_lanes_avx2(a, ln_gamma_a, y) };
    }
    let _ = avx2;
    upper_lanes_any(a, ln_gamma_a, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn upper_lanes_avx2(a: f64, ln_gamma_a: f64, y: [f64; LANES]) -> [f64; LANES] {
    upper_lanes_any(a, ln_gamma_a, y)
}

/// statrs's `gamma_ur(a, y)` (the regularized upper incomplete gamma Q) of each lane, for
/// finite a ≥ 1 and finite y ≥ 1 (so none of statrs's argument checks or its x < 1 paths
/// apply); `ln_gamma_a` = `ln_gamma(a)`.
#[inline(always)]
fn upper_lanes_any(a: f64, ln_gamma_a: f64, y: [f64; LANES]) -> [f64; LANES] {
    let mut out = [0.0; LANES];
    let mut ax = [0.0; LANES];
    let mut series = [false; LANES];
    let mut fraction = [false; LANES];
    for l in 0..LANES {
        ax[l] = a * y[l].ln() - y[l] - ln_gamma_a;
        if y[l] <= a {
            // gamma_ur = 1 − gamma_lr, whose underflowed prefactor gives gamma_lr = 0 here.
            if ax[l] < AX_MIN {
                out[l] = 1.0;
            } else {
                series[l] = true;
            }
        } else if ax[l] < AX_MIN {
            out[l] = 0.0;
        } else {
            fraction[l] = true;
        }
    }
    if series.contains(&true) {
        let sums = lower_series(a, y, series);
        for l in 0..LANES {
            if series[l] {
                out[l] = 1.0 - ax[l].exp() * sums[l] / a;
            }
        }
    }
    if fraction.contains(&true) {
        let fractions = upper_fraction(a, y, fraction);
        for l in 0..LANES {
            if fraction[l] {
                out[l] = fractions[l] * ax[l].exp();
            }
        }
    }
    out
}

/// gamma_lr's series Σ yᵏ/((a+1)…(a+k)) (from 1) of each lane in `active`, stopped as statrs
/// stops it (after the first term with term/sum ≤ ε).
#[inline(always)]
fn lower_series(a: f64, y: [f64; LANES], mut active: [bool; LANES]) -> [f64; LANES] {
    let mut r2 = a;
    let mut c2 = [1.0; LANES];
    let mut ans2 = [1.0; LANES];
    loop {
        r2 += 1.0;
        let mut term = [0.0; LANES];
        let mut sum = [0.0; LANES];
        let mut may_stop = false;
        for l in 0..LANES {
            term[l] = c2[l] * (y[l] / r2);
            sum[l] = ans2[l] + term[l];
            if active[l] {
                c2[l] = term[l];
                ans2[l] = sum[l];
            }
            let going_on = term[l] > sum[l] * NOT_YET;
            may_stop |= active[l] && !going_on;
        }
        if may_stop {
            for l in 0..LANES {
                if active[l] && term[l] / sum[l] <= EPS {
                    active[l] = false;
                }
            }
            if !active.contains(&true) {
                return ans2;
            }
        }
    }
}

/// gamma_ur's continued fraction of each lane in `active`, stopped as statrs stops it (after
/// the first convergent within relative ε of the one before).
#[inline(always)]
fn upper_fraction(a: f64, y: [f64; LANES], mut active: [bool; LANES]) -> [f64; LANES] {
    let mut yy = 1.0 - a;
    let mut c = 0.0;
    let mut z = [0.0; LANES];
    let mut pkm2 = [1.0; LANES];
    let mut qkm2 = y;
    let mut pkm1 = [0.0; LANES];
    let mut qkm1 = [0.0; LANES];
    let mut ans = [0.0; LANES];
    for l in 0..LANES {
        z[l] = y[l] + yy + 1.0;
        pkm1[l] = y[l] + 1.0;
        qkm1[l] = z[l] * y[l];
        ans[l] = pkm1[l] / qkm1[l];
    }
    loop {
        yy += 1.0;
        c += 1.0;
        let yc = yy * c;
        let mut step = [0.0; LANES];
        let mut next = [0.0; LANES];
        let mut counted = [false; LANES];
        let mut may_stop = false;
        for l in 0..LANES {
            let zl = z[l] + 2.0;
            let pk = pkm1[l] * zl - pkm2[l] * yc;
            let qk = qkm1[l] * zl - qkm2[l] * yc;
            let (mut p2, mut p1, mut q2, mut q1) = (pkm1[l], pk, qkm1[l], qk);
            if pk.abs() > BIG {
                p2 *= BIG_INV;
                p1 *= BIG_INV;
                q2 *= BIG_INV;
                q1 *= BIG_INV;
            }
            next[l] = pk / qk;
            step[l] = ans[l] - next[l];
            counted[l] = active[l] && qk != 0.0;
            if active[l] {
                z[l] = zl;
                (pkm2[l], pkm1[l], qkm2[l], qkm1[l]) = (p2, p1, q2, q1);
            }
            if counted[l] {
                ans[l] = next[l];
            }
            let going_on = step[l].abs() > next[l].abs() * NOT_YET;
            may_stop |= counted[l] && !going_on;
        }
        if may_stop {
            for l in 0..LANES {
                if counted[l] && (step[l] / next[l]).abs() <= EPS {
                    active[l] = false;
                }
            }
            if !active.contains(&true) {
                return ans;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::twopoint::FitKind;

    /// Every value equals statrs's through `FitKind::cdf_at`, bit for bit: shapes from 1 to
    /// 10⁸ (IC86's bins span 10⁻¹ to 10⁷), counts from far below the mean (prefactor
    /// underflow) through the series and the continued fraction to far above it, chunks that
    /// straddle the switch between the two.
    #[test]
    fn every_count_has_statrs_bits() {
        let mut checked = 0;
        for (mean, variance) in [
            (3.0, 2.5),
            (40.0, 55.0),
            (2_500.0, 2_300.0),
            (48_870.0, 33_926.0),
            (978_988.0, 988_699.0),
            (18_890_300.875, 25_394_313.18),
            (1.0e9, 4.0e8),
            (5.0, 80.0),
        ] {
            let (shape, scale) = (mean * mean / variance, variance / mean);
            let sigma = f64::sqrt(variance);
            let lo = (mean - 40.0 * sigma).max(0.0) as u64;
            let hi = (mean + 40.0 * sigma) as u64 + 3;
            let step = ((hi - lo) / 1_500).max(1) as usize;
            let mut counts: Vec<u64> = (lo..hi).step_by(step).collect();
            // Consecutive counts across the mean: lanes leave the series for the fraction.
            counts.extend((mean as u64).saturating_sub(5)..mean as u64 + 6);
            let fit = FitKind::Gamma { shape, scale };
            let fast = gamma_cdf_at(shape, scale, &counts);
            for (&count, value) in counts.iter().zip(&fast) {
                assert_eq!(
                    value.to_bits(),
                    fit.cdf_at(count).to_bits(),
                    "shape {shape} scale {scale} count {count}"
                );
                checked += 1;
            }
        }
        assert!(checked > 6_000, "{checked} values");
    }

    /// Without AVX2 the same lanes give the same values.
    #[test]
    fn lanes_without_avx2_give_the_same_bits() {
        let (a, y) = (70_387.263, [70_176.8, 70_387.2, 70_387.3, 70_900.1]);
        let with = upper_lanes(a, ln_gamma(a), y, has_avx2());
        let without = upper_lanes(a, ln_gamma(a), y, false);
        assert_eq!(with.map(f64::to_bits), without.map(f64::to_bits));
    }
}
