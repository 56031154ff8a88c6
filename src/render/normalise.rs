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
        let (lo, hi) = values
            .par_iter()
            .fold(
                || (f32::INFINITY, f32::NEG_INFINITY),
                |(lo, hi), &v| match transformed(v, log) {
                    Some(t) if t.is_finite() => (lo.min(t), hi.max(t)),
                    _ => (lo, hi),
                },
            )
            .reduce(
                || (f32::INFINITY, f32::NEG_INFINITY),
                |a, b| (a.0.min(b.0), a.1.max(b.1)),
            );
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

    #[test]
    fn equal_limits_give_one() {
        let norm = Normaliser::from_values(&[7.0, 7.0], false);
        assert_eq!(norm.apply(7.0), 1.0);
        assert_eq!(norm.apply(3.0), 1.0);
        let empty = Normaliser::from_values(&[-1.0], true);
        assert_eq!(empty.apply(-1.0), 1.0);
    }
}
