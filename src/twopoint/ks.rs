//! The Kolmogorov–Smirnov distance between a bin's trial counts and a fitted distribution, the
//! test that picks the gamma or the Gaussian fit of the background (stats.rs).

use super::histogram::CountHistogram;
use super::stats::FitKind;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Points from which the fit's CDF is evaluated on several threads: below this the
/// evaluations cost less than handing them out.
const PARALLEL_CDF_VALUES: usize = 512;
/// Points per task of the threaded evaluation (a gamma CDF at large shapes costs tens of µs).
const CDF_CHUNK: usize = 64;

/// Where a bin's KS distance compares the fit with the samples: the counts at which the fit's
/// CDF is evaluated, each with the samples' CDF it is compared with.
///
/// The distance is the largest |empirical − model| at each distinct value (samples ≤ it) and
/// just below it (samples < it, model at value − 1). Trial counts are mostly consecutive
/// integers, so the comparison below a value is usually the one at the value before it (the
/// same empirical fraction, `seen / n`, against the same model value) and adds nothing to the
/// maximum; at 0 it is 0 − 0. Only the first value of each run needs the model below it.
/// A maximum does not depend on the order of its terms (NaN terms are skipped, as `f64::max`
/// skips them), so the terms can be evaluated in any order and on any thread.
#[derive(Debug, Clone, Default)]
pub struct KsPoints {
    counts: Vec<u64>,
    empirical: Vec<f64>,
}

impl KsPoints {
    /// The points of `histogram`, in value order.
    pub fn of(histogram: &CountHistogram) -> Self {
        let n = histogram.total() as f64;
        let mut points = Self::default();
        let mut seen = 0u64;
        let mut previous: Option<u64> = None;
        for (value, multiplicity) in histogram.iter() {
            let below = seen as f64 / n;
            seen += multiplicity;
            if value != 0 && previous.is_none_or(|p| p + 1 != value) {
                points.counts.push(value - 1);
                points.empirical.push(below);
            }
            points.counts.push(value);
            points.empirical.push(seen as f64 / n);
            previous = Some(value);
        }
        points
    }

    /// |empirical − model| at each point, in point order.
    pub fn terms(&self, fit: &FitKind) -> Vec<f64> {
        let terms_of = |(counts, empirical): (&[u64], &[f64])| -> Vec<f64> {
            let models = fit.cdfs_at(counts);
            empirical
                .iter()
                .zip(models)
                .map(|(e, m)| (e - m).abs())
                .collect()
        };
        if self.counts.len() >= PARALLEL_CDF_VALUES {
            self.counts
                .par_chunks(CDF_CHUNK)
                .zip(self.empirical.par_chunks(CDF_CHUNK))
                .flat_map_iter(terms_of)
                .collect()
        } else {
            terms_of((&self.counts, &self.empirical))
        }
    }

    /// The KS distance of `fit`, or `None` once some term exceeds `cap` (the distance then
    /// surely does). Chunks whose `hint` terms (another fit's, from [`Self::terms`]) are
    /// largest go first, so that a fit farther from the samples than that one is usually found
    /// out after a few chunks; a fit that stays within `cap` costs every evaluation.
    pub fn distance_within(&self, fit: &FitKind, cap: f64, hint: &[f64]) -> Option<f64> {
        let chunks = self.counts.len().div_ceil(CDF_CHUNK);
        let chunk_max = |c: usize| {
            let range = c * CDF_CHUNK..((c + 1) * CDF_CHUNK).min(self.counts.len());
            max_term(hint.get(range).unwrap_or(&[]))
        };
        let mut order: Vec<usize> = (0..chunks).collect();
        order.sort_by(|&a, &b| chunk_max(b).total_cmp(&chunk_max(a)));
        let exceeded = AtomicBool::new(false);
        let chunk_distance = |&c: &usize| -> f64 {
            if exceeded.load(Ordering::Relaxed) {
                return 0.0;
            }
            let range = c * CDF_CHUNK..((c + 1) * CDF_CHUNK).min(self.counts.len());
            let models = fit.cdfs_at(&self.counts[range.clone()]);
            let distance = self.empirical[range]
                .iter()
                .zip(models)
                .fold(0.0f64, |d, (e, m)| d.max((e - m).abs()));
            if distance > cap {
                exceeded.store(true, Ordering::Relaxed);
            }
            distance
        };
        // One chunk per thread first: if the fit is out, this usually shows it.
        let first = order.len().min(rayon::current_num_threads().max(1));
        let (leading, rest) = order.split_at(first);
        let fold = |a: f64, b: f64| a.max(b);
        let mut distance = leading.par_iter().map(chunk_distance).reduce(|| 0.0, fold);
        if !exceeded.load(Ordering::Relaxed) {
            let rest = rest.par_iter().map(chunk_distance).reduce(|| 0.0, fold);
            distance = distance.max(rest);
        }
        (!exceeded.load(Ordering::Relaxed)).then_some(distance)
    }
}

/// The largest of `terms` (0 for none; NaN terms skipped): a KS distance from its terms.
pub fn max_term(terms: &[f64]) -> f64 {
    terms.iter().fold(0.0f64, |d, &t| d.max(t))
}

/// Kolmogorov–Smirnov distance between integer samples (as a histogram) and a fit's CDF at the
/// sample values (with continuity correction), as the largest of [`KsPoints::terms`].
///
/// The CDF evaluations (a gamma CDF costs far more than the rest) are independent: they are made
/// several at once ([`FitKind::cdfs_at`]) and on several threads for a histogram of many
/// distinct values; a maximum does not depend on their order, so the result has the same bits
/// however many threads ran.
pub fn ks_distance(histogram: &CountHistogram, fit: &FitKind) -> f64 {
    max_term(&KsPoints::of(histogram).terms(fit))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one value after the other (the CDF below a value reused from the value
    /// before it when they are consecutive).
    fn sequential(histogram: &CountHistogram, fit: &FitKind) -> f64 {
        let n = histogram.total() as f64;
        let (mut distance, mut seen, mut last): (f64, u64, Option<(u64, f64)>) = (0.0, 0, None);
        for (value, multiplicity) in histogram.iter() {
            let below = seen as f64 / n;
            seen += multiplicity;
            let at_or_below = seen as f64 / n;
            let model_below = match (value, last) {
                (0, _) => 0.0,
                (_, Some((previous, cdf))) if previous + 1 == value => cdf,
                _ => fit.cdf_at(value - 1),
            };
            let model_at = fit.cdf_at(value);
            last = Some((value, model_at));
            distance = distance
                .max((below - model_below).abs())
                .max((at_or_below - model_at).abs());
        }
        distance
    }

    #[test]
    fn threaded_distance_has_the_bits_of_the_sequential_one() {
        let fits = [
            FitKind::Gamma {
                shape: 900.0,
                scale: 2.0,
            },
            FitKind::Gaussian {
                mean: 1800.0,
                sigma: 60.0,
            },
        ];
        // Dense runs with gaps (over the threshold and under it), from 0, and a sparse spread.
        let mut dense = CountHistogram::default();
        for v in (1500..2100u64).filter(|v| v % 7 != 3) {
            dense.add_many(v, 1 + v % 5);
        }
        let mut small = CountHistogram::default();
        (0..40u64).for_each(|v| small.add_many(v, v + 1));
        let mut sparse = CountHistogram::default();
        (0..900u64).for_each(|i| sparse.add(1000 + i * i * 3));
        assert!(matches!(sparse, CountHistogram::Sparse { .. }));
        for histogram in [&dense, &small, &sparse] {
            for fit in &fits {
                let want = sequential(histogram, fit);
                assert!(want > 0.0);
                assert_eq!(
                    ks_distance(histogram, fit).to_bits(),
                    want.to_bits(),
                    "{fit:?}"
                );
            }
        }
    }

    /// A cap at or above the distance gives it with the same bits; a cap below it gives `None`,
    /// whatever the hint's order.
    #[test]
    fn a_capped_distance_is_exact_or_none() {
        let mut histogram = CountHistogram::default();
        for v in (40_000..52_000u64).filter(|v| v % 11 != 4) {
            histogram.add_many(v, 1 + (v * 7919) % 13);
        }
        let points = KsPoints::of(&histogram);
        let gamma = FitKind::Gamma {
            shape: 46_000.0 * 46_000.0 / 4.1e6,
            scale: 4.1e6 / 46_000.0,
        };
        let gaussian = FitKind::Gaussian {
            mean: 46_000.0,
            sigma: 4.1e6f64.sqrt(),
        };
        let hint = points.terms(&gaussian);
        let exact = ks_distance(&histogram, &gamma);
        assert_eq!(exact.to_bits(), sequential(&histogram, &gamma).to_bits());
        for hint in [&hint[..], &[][..]] {
            for cap in [exact, exact * 1.5, f64::INFINITY] {
                let got = points.distance_within(&gamma, cap, hint);
                assert_eq!(got.map(f64::to_bits), Some(exact.to_bits()), "cap {cap}");
            }
            for cap in [exact * 0.999, 0.0] {
                assert_eq!(points.distance_within(&gamma, cap, hint), None, "cap {cap}");
            }
        }
    }
}
