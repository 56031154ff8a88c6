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
    values.par_chunks(LIMIT_CHUNK).map(chunk_log_limits).reduce(
        || (f32::INFINITY, f32::NEG_INFINITY),
        |a, b| (a.0.min(b.0), a.1.max(b.1)),
    )
}

/// [`log_limits`] of one chunk, in two passes over it while it is in cache (one pass over
/// the field from memory in all). The whole field's limits are the extremes of the chunks':
/// a value within the factor of the field's extreme is within it of its chunk's extreme too
/// (the field's minimum is at most the chunk's, its maximum at least the chunk's).
fn chunk_log_limits(values: &[f32]) -> (f32, f32) {
    let (v_min, v_max) = usable_extremes(values);
    if v_min > v_max {
        return (f32::INFINITY, f32::NEG_INFINITY);
    }
    let low_end = v_min * (1.0 + LOG_CANDIDATE);
    let high_end = v_max * (1.0 - LOG_CANDIDATE);
    candidate_log_extremes(values, low_end, high_end)
}

/// Values per block of the limit passes' vector loops.
const LIMIT_LANES: usize = 8;

/// Whether `v` counts for the limits of a log-scaled field (finite and > 0; NaN is not).
#[inline(always)]
fn usable(v: f32) -> bool {
    v > 0.0 && v < f32::INFINITY
}

/// The least and greatest usable value of `values` ((∞, 0) when none).
///
/// Why lanes: a fold with `f32::min`, whose NaN rule keeps it scalar, took several ns a value
/// (the two log fields of a colour frame of 10⁷ particles, both passes: 0.24 s on one thread
/// of the 2-core box, 11 ms of a 16-thread frame). Here each of
/// [`LIMIT_LANES`] lanes keeps its own extremes by compare-and-select, which the compiler
/// turns into vector operations; usable values are positive and finite, so their minimum and
/// maximum do not depend on the order in which they are compared: the same bits.
fn usable_extremes(values: &[f32]) -> (f32, f32) {
    let mut lo = [f32::INFINITY; LIMIT_LANES];
    let mut hi = [0.0f32; LIMIT_LANES];
    let blocks = values.chunks_exact(LIMIT_LANES);
    let tail = blocks.remainder();
    for block in blocks {
        for l in 0..LIMIT_LANES {
            let v = block[l];
            // `&` rather than `&&`: no branch per lane.
            let ok = (v > 0.0) & (v < f32::INFINITY);
            lo[l] = if ok & (v < lo[l]) { v } else { lo[l] };
            hi[l] = if ok & (v > hi[l]) { v } else { hi[l] };
        }
    }
    let mut extremes = (f32::INFINITY, 0.0f32);
    for l in 0..LIMIT_LANES {
        extremes = (extremes.0.min(lo[l]), extremes.1.max(hi[l]));
    }
    for &v in tail {
        if usable(v) {
            extremes = (extremes.0.min(v), extremes.1.max(v));
        }
    }
    extremes
}

/// The least and greatest log10 v over the usable v of `values` outside (low_end, high_end)
/// ((∞, −∞) when none). Most blocks of [`LIMIT_LANES`] values hold no such v: one vector test
/// skips them.
fn candidate_log_extremes(values: &[f32], low_end: f32, high_end: f32) -> (f32, f32) {
    let mut extremes = (f32::INFINITY, f32::NEG_INFINITY);
    let mut take = |v: f32| {
        if usable(v) && (v <= low_end || v >= high_end) {
            let t = v.log10();
            extremes = (extremes.0.min(t), extremes.1.max(t));
        }
    };
    let blocks = values.chunks_exact(LIMIT_LANES);
    let tail = blocks.remainder();
    for block in blocks {
        let mut any = false;
        for &v in block {
            any |= (v <= low_end) | (v >= high_end);
        }
        if any {
            block.iter().for_each(|&v| take(v));
        }
    }
    tail.iter().for_each(|&v| take(v));
    extremes
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
        // Several chunks, each with its own extremes: the field's are among the chunks'.
        let mut values: Vec<f32> = (0..3 * LIMIT_CHUNK + 5)
            .map(|k| 1.0 + (k % 7919) as f32 * 0.37 * (1 + k / LIMIT_CHUNK) as f32)
            .collect();
        values.extend((0..5000).map(|_| f32::from_bits(next() as u32)));
        let got = log_limits(&values);
        let want = every_log10(&values);
        assert_eq!(
            (got.0.to_bits(), got.1.to_bits()),
            (want.0.to_bits(), want.1.to_bits()),
            "several chunks"
        );
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
