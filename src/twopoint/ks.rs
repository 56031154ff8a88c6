//! The Kolmogorov–Smirnov distance between a bin's trial counts and a fitted distribution, the
//! test that picks the gamma or the Gaussian fit of the background (stats.rs).

use super::histogram::CountHistogram;
use super::stats::FitKind;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
    /// surely does).
    ///
    /// Most terms need not be evaluated. Between two points a < b, the empirical CDF and the
    /// model's both rise, so every term between them is at most max(e_b − m_a, m_b − e_a). So
    /// the model is evaluated at every [`BOUND_STRIDES`]`[0]`-th point, and a stretch between
    /// two of them is looked into (at the next stride, then point by point) only when its
    /// bound, plus the model's rounding ([`rounding_margin`]), exceeds the largest term found
    /// so far: the others cannot hold the maximum. The distance is the maximum of the terms
    /// evaluated, which is the maximum of all of them: the same bits as evaluating every term.
    ///
    /// A fit farther from the samples than `cap` is usually found out by its first terms: the
    /// chunks of points where `hint` (another fit's terms, from [`Self::terms`]) is largest are
    /// evaluated first, one per thread.
    pub fn distance_within(&self, fit: &FitKind, cap: f64, hint: &[f64]) -> Option<f64> {
        let n = self.counts.len();
        let Some(&last_count) = self.counts.last() else {
            return Some(0.0);
        };
        let search = BoundedSearch {
            points: self,
            fit,
            cap,
            margin: rounding_margin(fit, last_count),
            largest: AtomicU64::new(0.0f64.to_bits()),
            exceeded: AtomicBool::new(false),
        };
        let chunks = n.div_ceil(CDF_CHUNK);
        let chunk_max = |c: usize| {
            let range = c * CDF_CHUNK..((c + 1) * CDF_CHUNK).min(n);
            max_term(hint.get(range).unwrap_or(&[]))
        };
        let mut order: Vec<usize> = (0..chunks).collect();
        order.sort_by(|&a, &b| chunk_max(b).total_cmp(&chunk_max(a)));
        order.truncate(rayon::current_num_threads().max(1));
        order.par_iter().for_each(|&c| {
            let range = c * CDF_CHUNK..((c + 1) * CDF_CHUNK).min(n);
            let models = fit.cdfs_at(&self.counts[range.clone()]);
            search.record(range.zip(models));
        });
        let ends = [0, n - 1];
        let models = fit.cdfs_at(&[self.counts[0], last_count]);
        search.record(ends.into_iter().zip(models.iter().copied()));
        search.stretch((0, models[0]), (n - 1, models[1]), 0);
        (!search.exceeded.into_inner()).then(|| f64::from_bits(search.largest.into_inner()))
    }
}

/// Strides at which [`KsPoints::distance_within`] evaluates the model before it evaluates a
/// stretch point by point.
const BOUND_STRIDES: [usize; 3] = [256, 16, 4];

/// The state of one [`KsPoints::distance_within`].
struct BoundedSearch<'a> {
    points: &'a KsPoints,
    fit: &'a FitKind,
    cap: f64,
    margin: f64,
    /// The largest term so far, as bits (non-negative f64s order as their bits do).
    largest: AtomicU64,
    exceeded: AtomicBool,
}

impl BoundedSearch<'_> {
    /// Takes the terms of `(point, model)` pairs into the largest one.
    fn record(&self, models: impl Iterator<Item = (usize, f64)>) {
        let points = self.points;
        let distance = models.fold(0.0f64, |d, (i, m)| d.max((points.empirical[i] - m).abs()));
        if distance > self.cap {
            self.exceeded.store(true, Ordering::Relaxed);
        }
        self.largest
            .fetch_max(distance.to_bits(), Ordering::Relaxed);
    }

    /// The upper bound of the terms strictly between points `a` and `b` (models `ma`, `mb`),
    /// rounding included; infinite when a model is NaN.
    fn bound(&self, (a, ma): (usize, f64), (b, mb): (usize, f64)) -> f64 {
        let e = &self.points.empirical;
        let bound = (e[b] - ma).max(mb - e[a]);
        if bound.is_nan() {
            f64::INFINITY
        } else {
            bound + self.margin
        }
    }

    /// Looks into the points strictly between `a` and `b`, whose models are known, at the
    /// stride of `level` (one by one past the last): sub-stretches whose bound exceeds the
    /// largest term are looked into further, largest bound first (on the thread pool at the
    /// first level).
    fn stretch(&self, a: (usize, f64), b: (usize, f64), level: usize) {
        if b.0 <= a.0 + 1 || self.exceeded.load(Ordering::Relaxed) {
            return;
        }
        if self.bound(a, b) <= f64::from_bits(self.largest.load(Ordering::Relaxed)) {
            return;
        }
        let counts = &self.points.counts;
        let Some(&stride) = BOUND_STRIDES.get(level).filter(|&&s| b.0 - a.0 > s) else {
            let models = self.fit.cdfs_at(&counts[a.0 + 1..b.0]);
            self.record((a.0 + 1..b.0).zip(models));
            return;
        };
        let inner: Vec<usize> = (a.0 + stride..b.0).step_by(stride).collect();
        let inner_counts: Vec<u64> = inner.iter().map(|&i| counts[i]).collect();
        let models: Vec<f64> = if level == 0 {
            inner_counts
                .par_chunks(CDF_CHUNK)
                .flat_map_iter(|c| self.fit.cdfs_at(c))
                .collect()
        } else {
            self.fit.cdfs_at(&inner_counts)
        };
        let mut known = Vec::with_capacity(inner.len() + 2);
        known.push(a);
        known.extend(inner.into_iter().zip(models));
        known.push(b);
        self.record(known[1..known.len() - 1].iter().copied());
        let mut pairs: Vec<((usize, f64), (usize, f64))> =
            known.windows(2).map(|w| (w[0], w[1])).collect();
        if level == 0 {
            pairs.sort_by(|x, y| self.bound(y.0, y.1).total_cmp(&self.bound(x.0, x.1)));
            pairs
                .par_iter()
                .for_each(|&(a, b)| self.stretch(a, b, level + 1));
        } else {
            for (a, b) in pairs {
                self.stretch(a, b, level + 1);
            }
        }
    }
}

/// How far a computed model CDF may stray from monotone, with room to spare.
///
/// A gamma CDF is exp(a·ln y − y − ln Γ(a)) times a series. The exponent's terms are of size
/// E = a·|ln y| + y + |ln Γ(a)| and cancel to a small number, so the exponent carries an
/// absolute error of a few ε·E and the CDF a relative one as large: by this estimate about
/// 10⁻⁷ at a = 1.5·10⁷, IC86-2011's largest shapes (a test checks the falls between
/// consecutive counts against the margin). The margin is 64 ε·E,
/// with |ln Γ(a)| ≤ a·(|ln a| + 1), at the largest count. The Gaussian's CDF (an erfc) is good
/// to a few ε.
fn rounding_margin(fit: &FitKind, largest_count: u64) -> f64 {
    let size = match *fit {
        FitKind::Gamma { shape, scale } => {
            let y = (largest_count as f64 + 1.5) / scale;
            shape * (y.ln().abs() + shape.ln().abs() + 1.0) + y
        }
        FitKind::Gaussian { .. } => 1.0,
    };
    1e-12 + 64.0 * f64::EPSILON * size
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

    /// A cap at or above the distance gives it with the same bits; a cap below it gives `None`.
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
        let exact = ks_distance(&histogram, &gamma);
        assert_eq!(exact.to_bits(), sequential(&histogram, &gamma).to_bits());
        for cap in [exact, exact * 1.5, f64::INFINITY] {
            let got = points.distance_within(&gamma, cap, &[]);
            assert_eq!(got.map(f64::to_bits), Some(exact.to_bits()), "cap {cap}");
        }
        for cap in [exact * 0.999, 0.0] {
            assert_eq!(points.distance_within(&gamma, cap, &[]), None, "cap {cap}");
        }
    }

    /// Samples drawn near a gamma at IC86-2011's shapes (a distance of about 1/√n, so that most
    /// stretches are skipped) and far from it (the maximum in the tails): the bounded distance
    /// has the bits of every term's maximum.
    #[test]
    fn skipping_stretches_keeps_the_bits_of_every_term() {
        for (mean, sd, shift) in [
            (1.37e7, 3537.0, 0.0),
            (61_776.0, 252.0, 40.0),
            (48.0, 7.1, 0.0),
        ] {
            let mut histogram = CountHistogram::default();
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..100_000 {
                // A sum of 12 uniforms: close to a Gaussian.
                let z: f64 = (0..12)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1);
                        (state >> 11) as f64 / (1u64 << 53) as f64
                    })
                    .sum::<f64>()
                    - 6.0;
                histogram.add((mean + shift + sd * z).round().max(0.0) as u64);
            }
            let gamma = FitKind::Gamma {
                shape: mean * mean / (sd * sd),
                scale: sd * sd / mean,
            };
            let want = ks_distance(&histogram, &gamma);
            let got = KsPoints::of(&histogram).distance_within(&gamma, f64::INFINITY, &[]);
            assert_eq!(got.map(f64::to_bits), Some(want.to_bits()), "mean {mean}");
        }
    }

    /// The computed gamma CDF at consecutive counts never falls by more than a small part of
    /// the margin `distance_within` allows for its rounding (a fall shows at least the sum of
    /// two points' errors).
    #[test]
    fn gamma_cdf_strays_from_monotone_within_the_margin() {
        for (mean, sd) in [(1.37e7, 3537.0), (61_776.0, 252.0), (48.0, 7.1)] {
            let gamma = FitKind::Gamma {
                shape: mean * mean / (sd * sd),
                scale: sd * sd / mean,
            };
            // The body, where a fall would show: ±2.5σ, at most 20 000 counts.
            let half = (2.5 * sd).min(10_000.0);
            let lo = (mean - half).max(0.0) as u64;
            let counts: Vec<u64> = (lo..(mean + half) as u64).collect();
            let cdf = gamma.cdfs_at(&counts);
            let fall = cdf.windows(2).fold(0.0f64, |f, w| f.max(w[0] - w[1]));
            let margin = rounding_margin(&gamma, *counts.last().expect("counts"));
            assert!(
                fall * 8.0 < margin,
                "mean {mean}: fall {fall:e}, margin {margin:e}"
            );
        }
    }
}
