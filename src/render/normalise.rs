//! Per-species normalisation of intensity and colour values to [0, 1] (DESIGN §4.1; Splotch
//! `particle_normalize`, notes §5 eq. 1).

use rayon::prelude::*;

/// Maps a raw value to n ∈ [0, 1]: optional log10, then n = (clamp(v, lo, hi) − lo)/(hi − lo),
/// n = 1 when hi = lo. All arithmetic is f32, in the order written (the CUDA twin mirrors it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normaliser {
    /// Take log10 of the value first; values ≤ 0 (and NaN) are then mapped to `lo`.
    pub log: bool,
    /// Lower limit (in log10 units when `log`).
    pub lo: f32,
    /// Upper limit (in log10 units when `log`).
    pub hi: f32,
}

impl Normaliser {
    /// Limits from the data: min/max of the finite (log10) values, values ≤ 0 excluded under
    /// log. With no such value the limits are 0 and 0 (every particle gets n = 1).
    pub fn from_values(values: &[f32], log: bool) -> Self {
        let (lo, hi) = if log {
            log_limits(values)
        } else {
            linear_limits(values)
        };
        if lo <= hi {
            Self { log, lo, hi }
        } else {
            Self {
                log,
                lo: 0.0,
                hi: 0.0,
            }
        }
    }

    /// Fixed limits (in log10 units when `log`).
    pub fn fixed(log: bool, lo: f32, hi: f32) -> Self {
        Self { log, lo, hi }
    }

    /// n ∈ [0, 1] for the raw value `v`.
    #[inline]
    pub fn apply(&self, v: f32) -> f32 {
        let t = match transformed(v, self.log) {
            Some(t) if !t.is_nan() => t,
            // Excluded from the range and mapped to the minimum (DESIGN §4, step 1).
            _ => self.lo,
        };
        if self.hi == self.lo {
            return 1.0;
        }
        (t.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo)
    }
}

/// Values per rayon task of the limit passes.
const LIMIT_CHUNK: usize = 1 << 14;

/// Relative distance from the extreme values within which a value's log10 is taken to find
/// the limits (see [`log_limits`]).
const LOG_CANDIDATE: f32 = 1.0 / 1024.0;

/// The finite minimum and maximum of `values` (infinity, minus infinity when none).
fn linear_limits(values: &[f32]) -> (f32, f32) {
    values
        .par_iter()
        .fold(
            || (f32::INFINITY, f32::NEG_INFINITY),
            |(lo, hi), &t| {
                if t.is_finite() {
                    (lo.min(t), hi.max(t))
                } else {
                    (lo, hi)
                }
            },
        )
        .reduce(
            || (f32::INFINITY, f32::NEG_INFINITY),
            |a, b| (a.0.min(b.0), a.1.max(b.1)),
        )
}

/// The minimum and maximum of log10 v over the finite v > 0 of `values` (infinity, minus
/// infinity when none), the bits a log10 of every value would find, with the log10 of only a
/// few values.
///
/// Why: log10 is a libm call per value (tens of ns), and a frame already takes it once per
/// particle while projecting; a second pass of it over every value was a quarter of a colour
/// frame. The extreme values v_min and v_max are found first, with no log10; only values within
/// a factor 1 ± 2⁻¹⁰ of them can have the extreme logarithms: log10 of any other value differs
/// from log10 of the extreme by more than log10(1 + 2⁻¹⁰) ≈ 4.2·10⁻⁴, while `f32::log10` is
/// within a few ulp of the exact value (55 ulp would still be safe: an ulp is at most 2⁻¹⁸ for
/// |log10 v| < 64), so it cannot reorder them.
fn log_limits(values: &[f32]) -> (f32, f32) {
    let usable = |v: f32| v > 0.0 && v < f32::INFINITY;
    let (v_min, v_max) = values
        .par_iter()
        .with_min_len(LIMIT_CHUNK)
        .fold(
            || (f32::INFINITY, 0.0f32),
            |(lo, hi), &v| {
                if usable(v) {
                    (lo.min(v), hi.max(v))
                } else {
                    (lo, hi)
                }
            },
        )
        .reduce(|| (f32::INFINITY, 0.0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    if v_min > v_max {
        return (f32::INFINITY, f32::NEG_INFINITY);
    }
    let low_end = v_min * (1.0 + LOG_CANDIDATE);
    let high_end = v_max * (1.0 - LOG_CANDIDATE);
    values
        .par_iter()
        .with_min_len(LIMIT_CHUNK)
        .fold(
            || (f32::INFINITY, f32::NEG_INFINITY),
            |(lo, hi), &v| {
                if usable(v) && (v <= low_end || v >= high_end) {
                    let t = v.log10();
                    (lo.min(t), hi.max(t))
                } else {
                    (lo, hi)
                }
            },
        )
        .reduce(
            || (f32::INFINITY, f32::NEG_INFINITY),
            |a, b| (a.0.min(b.0), a.1.max(b.1)),
        )
}

/// log10 v under `log` (None for v ≤ 0 or NaN), else v.
#[inline]
fn transformed(v: f32, log: bool) -> Option<f32> {
    if log {
        (v > 0.0).then(|| v.log10())
    } else {
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_range_from_data_and_clamp() {
        let norm = Normaliser::from_values(&[2.0, 4.0, 10.0], false);
        assert_eq!((norm.lo, norm.hi), (2.0, 10.0));
        assert_eq!(norm.apply(2.0), 0.0);
        assert_eq!(norm.apply(4.0), 0.25);
        assert_eq!(norm.apply(10.0), 1.0);
        let fixed = Normaliser::fixed(false, 4.0, 8.0);
        assert_eq!(fixed.apply(2.0), 0.0);
        assert_eq!(fixed.apply(6.0), 0.5);
        assert_eq!(fixed.apply(100.0), 1.0);
    }

    #[test]
    fn log_excludes_non_positive_values_and_maps_them_to_the_minimum() {
        let norm = Normaliser::from_values(&[-5.0, 0.0, 1.0, 10.0, 1000.0], true);
        assert_eq!((norm.lo, norm.hi), (0.0, 3.0));
        assert_eq!(norm.apply(-5.0), 0.0);
        assert_eq!(norm.apply(0.0), 0.0);
        assert_eq!(norm.apply(10.0), 1.0 / 3.0);
        assert_eq!(norm.apply(1000.0), 1.0);
        assert_eq!(norm.apply(f32::NAN), 0.0);
    }

    /// The limits by a log10 of every value (the definition).
    fn every_log10(values: &[f32]) -> (f32, f32) {
        values
            .iter()
            .filter(|&&v| v > 0.0)
            .map(|v| v.log10())
            .filter(|t| t.is_finite())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), t| {
                (lo.min(t), hi.max(t))
            })
    }

    #[test]
    fn log_limits_from_a_few_log10s_are_those_of_every_value() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..200 {
            // Random bit patterns (every exponent, subnormals, NaN, infinities, negatives),
            // then dense runs of neighbouring floats at the ends, where log10 is flat.
            let n = 1 + (next() % 3000) as usize;
            let mut values: Vec<f32> = (0..n).map(|_| f32::from_bits(next() as u32)).collect();
            let base = f32::from_bits((next() as u32 % 0x7f00_0000) + 0x0080_0000);
            values.extend((0..400).map(|k| f32::from_bits(base.to_bits() + k)));
            if case % 2 == 0 {
                values.extend((0..400).map(|k| f32::from_bits(0x7f7f_ffff - k)));
                values.extend((1..400).map(f32::from_bits));
            }
            let got = log_limits(&values);
            let want = every_log10(&values);
            assert_eq!(
                (got.0.to_bits(), got.1.to_bits()),
                (want.0.to_bits(), want.1.to_bits()),
                "case {case}"
            );
        }
        let none = [0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
        assert_eq!(log_limits(&none), (f32::INFINITY, f32::NEG_INFINITY));
        assert_eq!(
            Normaliser::from_values(&none, true),
            Normaliser::fixed(true, 0.0, 0.0)
        );
    }

    #[test]
    fn equal_limits_give_one() {
        let norm = Normaliser::from_values(&[7.0, 7.0], false);
        assert_eq!(norm.apply(7.0), 1.0);
        assert_eq!(norm.apply(3.0), 1.0);
        let empty = Normaliser::from_values(&[-1.0], true);
        assert_eq!(empty.apply(-1.0), 1.0);
    }
}
