//! Observed counts against the scrambled background: TS, p-values, significance, fits, and the
//! post-trial p-value (DESIGN §6).
//!
//! Per bin (cut × angle): TS = observed / background mean;
//! p = (trials with count ≥ observed + 1)/(trials + 1); significance = Φ⁻¹(1 − p) (one-sided). To reach below 1/trials the
//! background is fitted by moments with a gamma and with a Gaussian, and the one closer to the
//! trials in Kolmogorov–Smirnov distance is kept (gamma wins at low, skewed counts, the Gaussian
//! at high counts); its survival function at observed − ½ (continuity correction) gives the
//! fitted p. The post-trial p-value treats the observation as one more sample: each trial's
//! best local p over all bins is compared with the observed best (same trials, no fit).

use super::histogram::{CountHistogram, TrialRows};
use super::ks::{KsPoints, max_term};
use super::significance::{BinSignificance, PostTrialSignificance};
use super::{Counts, Prepared, TrialBatch, TwoPointError};
use rayon::prelude::*;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Gamma, Normal};
use std::sync::Arc;

/// Which distribution fits a bin's background.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum FitKind {
    /// Gamma with this shape and scale (moments: shape = mean²/var, scale = var/mean).
    Gamma {
        /// Shape k.
        shape: f64,
        /// Scale θ.
        scale: f64,
    },
    /// Normal with the background mean and standard deviation.
    Gaussian {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sigma: f64,
    },
}

impl FitKind {
    /// P(X ≥ count) under the fit, with continuity correction.
    pub fn p_at_least(&self, count: u64) -> f64 {
        let x = count as f64 - 0.5;
        match *self {
            Self::Gamma { shape, scale } => Gamma::new(shape, 1.0 / scale)
                .map(|g| if x <= 0.0 { 1.0 } else { g.sf(x) })
                .unwrap_or(f64::NAN),
            Self::Gaussian { mean, sigma } => Normal::new(mean, sigma)
                .map(|g| g.sf(x))
                .unwrap_or(f64::NAN),
        }
    }

    /// P(X ≤ x + ½) under the fit (the CDF the KS distance compares with).
    pub fn cdf_at(&self, count: u64) -> f64 {
        1.0 - self.p_at_least(count + 1)
    }

    /// [`Self::cdf_at`] of each count, with the same bits (a gamma's several at once: see
    /// gamma_lanes.rs).
    pub fn cdfs_at(&self, counts: &[u64]) -> Vec<f64> {
        match *self {
            Self::Gamma { shape, scale } => super::gamma_lanes::gamma_cdf_at(shape, scale, counts),
            Self::Gaussian { .. } => counts.iter().map(|&c| self.cdf_at(c)).collect(),
        }
    }
}

/// Statistics of one bin (one energy cut, one angle).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinStats {
    /// Observed cumulative count.
    pub observed: u64,
    /// Mean background count over the trials.
    pub background_mean: f64,
    /// Variance of the background count (unbiased).
    pub background_variance: f64,
    /// observed / background mean.
    pub ts: f64,
    /// Trials with count ≥ observed.
    pub trials_at_least_observed: u64,
    /// (trials ≥ observed + 1)/(trials + 1).
    pub p_value: f64,
    /// One-sided significance Φ⁻¹(1 − p) in σ.
    pub significance_sigma: f64,
    /// Background fit chosen by KS distance; `None` with < 2 trials or a constant background.
    pub fit: Option<FitKind>,
    /// KS distance of the chosen fit to the trials.
    pub fit_ks_distance: Option<f64>,
    /// p-value from the fit (can go below 1/trials).
    pub p_value_fit: Option<f64>,
    /// Significance from the fitted p-value.
    pub significance_sigma_fit: Option<f64>,
}

/// Per-bin statistics of an [`Analysis`] at one moment: small, cheap to clone and plot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Trials so far.
    pub trials: u64,
    /// Number of angle bins.
    pub n_bins: usize,
    /// Number of energy cuts.
    pub n_cuts: usize,
    /// Row-major `[cut][bin]`.
    pub bins: Vec<BinStats>,
}

impl Summary {
    /// One bin's statistics.
    pub fn get(&self, cut: usize, bin: usize) -> &BinStats {
        &self.bins[cut * self.n_bins + bin]
    }

    /// One bin's significance as every face shows it.
    pub fn significance(&self, cut: usize, bin: usize) -> BinSignificance {
        BinSignificance::of(self.get(cut, bin), self.trials)
    }

    /// The most significant bin `(cut, bin)` by [`BinSignificance::rank_key`] (the first of
    /// equals); `None` before the first trial.
    pub fn most_significant(&self) -> Option<(usize, usize)> {
        if self.trials == 0 {
            return None;
        }
        (0..self.bins.len())
            .map(|i| {
                (
                    i,
                    BinSignificance::of(&self.bins[i], self.trials).rank_key(),
                )
            })
            .min_by(|a, b| a.1.0.cmp(&b.1.0).then(a.1.1.total_cmp(&b.1.1)))
            .map(|(i, _)| (i / self.n_bins, i % self.n_bins))
    }
}

/// Observed counts and the accumulating scrambled background. Cloning copies a few small
/// vectors and shares the stored trials and histograms (`Arc`), so a GUI can snapshot it after
/// every batch. Memory: about 4 bytes per trial and bin (u32 counts, bounded up front by
/// [`super::analysis::check_trials`]) plus one exact histogram per bin, dense over a narrow
/// range of trial counts and sparse over a wide one.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Observed counts.
    pub observed: Counts,
    /// RNG seed of the trials.
    pub seed: u64,
    /// The first trial index; batches must follow on without gaps.
    pub first_trial: u64,
    batches: Vec<Arc<TrialRows>>,
    histograms: Arc<Vec<CountHistogram>>,
    trials: u64,
    at_least_observed: Vec<u64>,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl Analysis {
    /// An analysis with no trials yet.
    pub fn new(observed: Counts, seed: u64, first_trial: u64) -> Self {
        let n = observed.values.len();
        Self {
            observed,
            seed,
            first_trial,
            batches: Vec::new(),
            histograms: Arc::new(vec![CountHistogram::default(); n]),
            trials: 0,
            at_least_observed: vec![0; n],
            mean: vec![0.0; n],
            m2: vec![0.0; n],
        }
    }

    /// Observed counts of `prepared` and no trials yet.
    pub fn observe(
        prepared: &Prepared,
        seed: u64,
        first_trial: u64,
    ) -> Result<Self, TwoPointError> {
        Ok(Self::new(
            super::count_pairs(prepared, None)?,
            seed,
            first_trial,
        ))
    }

    /// Number of trials accumulated.
    pub fn trials(&self) -> u64 {
        self.trials
    }

    /// The next trial index expected.
    pub fn next_trial(&self) -> u64 {
        self.first_trial + self.trials
    }

    /// Adds a batch; it must start at [`Self::next_trial`] and have the observed shape.
    pub fn add_batch(&mut self, batch: TrialBatch) -> Result<(), TwoPointError> {
        if batch.first_trial != self.next_trial() {
            return Err(TwoPointError::BadInput(format!(
                "batch starts at trial {}, expected {}",
                batch.first_trial,
                self.next_trial()
            )));
        }
        if batch
            .counts
            .iter()
            .any(|c| c.values.len() != self.observed.values.len())
        {
            return Err(TwoPointError::BadInput(
                "batch counts have another shape".into(),
            ));
        }
        let histograms = Arc::make_mut(&mut self.histograms);
        for counts in &batch.counts {
            self.trials += 1;
            // Welford's running mean and sum of squared deviations (Knuth TAOCP 2, 4.2.2).
            let n = self.trials as f64;
            for (i, &c) in counts.values.iter().enumerate() {
                let x = c as f64;
                let delta = x - self.mean[i];
                self.mean[i] += delta / n;
                self.m2[i] += delta * (x - self.mean[i]);
                if c >= self.observed.values[i] {
                    self.at_least_observed[i] += 1;
                }
                histograms[i].add(c);
            }
        }
        if !batch.counts.is_empty() {
            let rows = batch.counts.iter().map(|c| c.values.as_slice());
            self.batches.push(Arc::new(TrialRows::pack(rows)));
        }
        Ok(())
    }

    /// The background counts of one bin, in trial order.
    pub fn background(&self, cut: usize, bin: usize) -> Vec<u64> {
        let index = cut * self.observed.n_bins + bin;
        let width = self.observed.values.len();
        self.batches
            .iter()
            .flat_map(|rows| rows.column(width, index))
            .collect()
    }

    /// The exact histogram of one bin's background counts (for plots and fits).
    pub fn background_histogram(&self, cut: usize, bin: usize) -> &CountHistogram {
        &self.histograms[cut * self.observed.n_bins + bin]
    }

    /// Bytes held by the stored trial counts.
    pub fn stored_bytes(&self) -> usize {
        self.batches.iter().map(|rows| rows.bytes()).sum()
    }

    /// Per-bin statistics now (fits included: O(trials·log trials) per bin).
    pub fn summary(&self) -> Summary {
        let n_bins = self.observed.n_bins;
        // Bins are independent and each fit walks its whole histogram: one bin per thread.
        let bins = (0..self.observed.values.len())
            .into_par_iter()
            .map(|i| self.bin_stats(i / n_bins, i % n_bins))
            .collect();
        Summary {
            trials: self.trials,
            n_bins,
            n_cuts: self.observed.n_cuts,
            bins,
        }
    }

    fn bin_stats(&self, cut: usize, bin: usize) -> BinStats {
        let i = cut * self.observed.n_bins + bin;
        let observed = self.observed.values[i];
        let trials = self.trials;
        let (mean, variance) = if trials == 0 {
            (f64::NAN, f64::NAN)
        } else if trials == 1 {
            (self.mean[i], f64::NAN)
        } else {
            (self.mean[i], self.m2[i] / (trials - 1) as f64)
        };
        let p_value = if trials == 0 {
            f64::NAN
        } else {
            (self.at_least_observed[i] + 1) as f64 / (trials + 1) as f64
        };
        let mut stats = BinStats {
            observed,
            background_mean: mean,
            background_variance: variance,
            ts: observed as f64 / mean,
            trials_at_least_observed: self.at_least_observed[i],
            p_value,
            significance_sigma: sigma_of_p(p_value),
            fit: None,
            fit_ks_distance: None,
            p_value_fit: None,
            significance_sigma_fit: None,
        };
        if trials >= 2 && variance > 0.0 && mean > 0.0 {
            let gamma = FitKind::Gamma {
                shape: mean * mean / variance,
                scale: variance / mean,
            };
            let gaussian = FitKind::Gaussian {
                mean,
                sigma: variance.sqrt(),
            };
            let best = closest_fit(&KsPoints::of(&self.histograms[i]), gamma, gaussian);
            if let Some((fit, distance)) = best {
                let p = fit.p_at_least(observed);
                stats.fit = Some(fit);
                stats.fit_ks_distance = Some(distance);
                stats.p_value_fit = Some(p);
                stats.significance_sigma_fit = Some(sigma_of_p(p));
            }
        }
        stats
    }

    /// [`Self::summary`] and [`Self::post_trial`], computed side by side on the thread pool.
    pub fn statistics(&self) -> (Summary, PostTrialSignificance) {
        rayon::join(|| self.summary(), || self.post_trial())
    }

    /// Post-trial p-value of the most significant bin: with the observation as sample 0 and the
    /// trials as samples 1..=T, local p of a sample in a bin = (samples with count ≥ its count)
    /// /(T + 1); post-trial p = (trials whose best local p ≤ the observed best + 1)/(T + 1).
    /// `None` before the first trial.
    pub fn post_trial_p(&self) -> Option<f64> {
        let as_extreme = self.post_trial_as_extreme()?;
        Some((as_extreme + 1) as f64 / (self.trials + 1) as f64)
    }

    /// The post-trial p-value classified: a measurement, or a bound when no trial's best bin
    /// reached the observed best.
    pub fn post_trial(&self) -> PostTrialSignificance {
        PostTrialSignificance::of(self.post_trial_as_extreme(), self.trials)
    }

    /// Trials whose best local p is ≤ the observed best (see [`Self::post_trial_p`]).
    fn post_trial_as_extreme(&self) -> Option<u64> {
        if self.trials == 0 {
            return None;
        }
        let width = self.observed.values.len();
        // Each bin's samples: its trials plus the observation, which adds one sample ≥ c for
        // every c ≤ the observed count (counted here rather than added to a copy of the
        // histogram, whose range would then stretch up to the observed count).
        let at_least: Vec<_> = self.histograms.iter().map(|h| h.at_least_table()).collect();
        let observed = &self.observed.values;
        let best_of = |values: &[u64]| {
            values
                .iter()
                .zip(&at_least)
                .zip(observed)
                .map(|((&c, table), &o)| table.count(c) + u64::from(o >= c))
                .min()
                .unwrap_or(0)
        };
        // Compared as counts of samples: p = count/samples for every bin alike.
        let observed_best = best_of(&self.observed.values);
        // Batches are independent and the tally is an integer sum: one batch per task.
        let as_extreme = self
            .batches
            .par_iter()
            .map(|rows| {
                let mut as_extreme = 0u64;
                rows.for_each_row(width, |row| {
                    if best_of(row) <= observed_best {
                        as_extreme += 1;
                    }
                });
                as_extreme
            })
            .sum();
        Some(as_extreme)
    }
}

/// Of `gamma` and `gaussian`, the fit closer to the samples at `points` in KS distance, with
/// that distance (the gamma on a tie; `None` when neither distance is finite).
///
/// The Gaussian's CDF is cheap and the gamma's dear (see gamma_lanes.rs): the Gaussian's
/// distance comes first, then the gamma's only while it can still be the closer one. A single
/// gamma term above the Gaussian's distance makes the gamma's distance larger, so the choice
/// and the distance kept are those of comparing both full distances. The gamma's distance
/// skips the stretches of points that cannot hold its maximum (`KsPoints::distance_within`).
fn closest_fit(points: &KsPoints, gamma: FitKind, gaussian: FitKind) -> Option<(FitKind, f64)> {
    let gaussian_terms = points.terms(&gaussian);
    let gaussian_distance = max_term(&gaussian_terms);
    let cap = if gaussian_distance.is_finite() {
        gaussian_distance
    } else {
        f64::INFINITY
    };
    match points.distance_within(&gamma, cap, &gaussian_terms) {
        None => Some((gaussian, gaussian_distance)),
        Some(gamma_distance) => [(gamma, gamma_distance), (gaussian, gaussian_distance)]
            .into_iter()
            .filter(|(_, d)| d.is_finite())
            .min_by(|a, b| a.1.total_cmp(&b.1)),
    }
}

/// One-sided significance of a p-value: Φ⁻¹(1 − p), computed as −Φ⁻¹(p) for accuracy at tiny p.
pub fn sigma_of_p(p: f64) -> f64 {
    if !(p > 0.0 && p <= 1.0) {
        return f64::NAN;
    }
    -Normal::standard().inverse_cdf(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigma_matches_known_quantiles() {
        assert!((sigma_of_p(0.5)).abs() < 1e-12);
        assert!((sigma_of_p(0.022_750_131_948_179_2) - 2.0).abs() < 1e-9);
        assert!((sigma_of_p(2.866_515_718_791_94e-7) - 5.0).abs() < 1e-6);
        assert!(sigma_of_p(0.0).is_nan());
    }

    #[test]
    fn welford_p_values_and_post_trial() {
        let observed = Counts {
            n_bins: 2,
            n_cuts: 1,
            values: vec![5, 10],
        };
        let mut analysis = Analysis::new(observed, 1, 0);
        let batch = |first, rows: &[[u64; 2]]| TrialBatch {
            first_trial: first,
            counts: rows
                .iter()
                .map(|r| Counts {
                    n_bins: 2,
                    n_cuts: 1,
                    values: r.to_vec(),
                })
                .collect(),
        };
        analysis
            .add_batch(batch(0, &[[1, 10], [6, 3]]))
            .expect("batch");
        assert!(analysis.add_batch(batch(5, &[[1, 1]])).is_err());
        analysis.add_batch(batch(2, &[[2, 4]])).expect("batch");
        let summary = analysis.summary();
        let first = summary.get(0, 0);
        assert_eq!(first.trials_at_least_observed, 1);
        assert_eq!(first.p_value, 0.5);
        assert!((first.background_mean - 3.0).abs() < 1e-12);
        assert!((first.background_variance - 7.0).abs() < 1e-12);
        assert!((first.ts - 5.0 / 3.0).abs() < 1e-12);
        let second = summary.get(0, 1);
        assert_eq!(second.p_value, 0.5);
        // Samples (obs first): bin0 [5,1,6,2], bin1 [10,10,3,4]. Local p of obs: bin0 2/4,
        // bin1 2/4 → best 0.5. Trials: [1,10] → min(4/4, 2/4) = 0.5 ≤ 0.5; [6,3] → 1/4;
        // [2,4] → min(3/4, 3/4). So 2 trials as extreme: (2 + 1)/4.
        assert_eq!(analysis.post_trial_p(), Some(0.75));
        assert_eq!(
            analysis.post_trial(),
            crate::twopoint::PostTrialSignificance::Resolved {
                p: 0.75,
                as_extreme: 2,
                trials: 3
            }
        );
        // Bin 0: one trial (6) ≥ 5 → resolved; the summary's best bin ranks resolved by p.
        assert_eq!(summary.most_significant(), Some((0, 0)));
        assert_eq!(analysis.background(0, 1), vec![10, 3, 4]);
    }

    /// The post-trial p-value from sorted columns and float local p (the definition, directly).
    fn post_trial_reference(observed: &[u64], trials: &[Vec<u64>]) -> f64 {
        let samples = (trials.len() + 1) as f64;
        let column = |i: usize| {
            let mut c: Vec<u64> = trials.iter().map(|t| t[i]).collect();
            c.push(observed[i]);
            c
        };
        let local_p =
            |i: usize, v: u64| column(i).iter().filter(|&&c| c >= v).count() as f64 / samples;
        let best = |row: &[u64]| {
            (0..row.len())
                .map(|i| local_p(i, row[i]))
                .fold(f64::INFINITY, f64::min)
        };
        let observed_best = best(observed);
        let extreme = trials.iter().filter(|t| best(t) <= observed_best).count();
        (extreme + 1) as f64 / samples
    }

    #[test]
    fn histogram_storage_matches_the_direct_definitions_with_ties() {
        // A small LCG, so the test is deterministic without a dependency.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % m
        };
        for round in 0..20 {
            let width = 1 + (round % 6) as usize;
            let observed: Vec<u64> = (0..width).map(|_| 20 + next(15)).collect();
            let trials: Vec<Vec<u64>> = (0..(5 + round * 7))
                .map(|_| (0..width).map(|_| 18 + next(18)).collect())
                .collect();
            let mut analysis = Analysis::new(
                Counts {
                    n_bins: width,
                    n_cuts: 1,
                    values: observed.clone(),
                },
                0,
                0,
            );
            let mut first = 0;
            for chunk in trials.chunks(3) {
                let counts = chunk
                    .iter()
                    .map(|t| Counts {
                        n_bins: width,
                        n_cuts: 1,
                        values: t.clone(),
                    })
                    .collect();
                analysis
                    .add_batch(TrialBatch {
                        first_trial: first,
                        counts,
                    })
                    .expect("batch");
                first += chunk.len() as u64;
            }
            assert_eq!(
                analysis.post_trial_p(),
                Some(post_trial_reference(&observed, &trials)),
                "round {round}"
            );
            assert_eq!(analysis.stored_bytes(), trials.len() * width * 4);
            for bin in 0..width {
                let column: Vec<u64> = trials.iter().map(|t| t[bin]).collect();
                assert_eq!(analysis.background(0, bin), column);
                let mut sorted = column.clone();
                sorted.sort_unstable();
                let expanded: Vec<u64> = analysis
                    .background_histogram(0, bin)
                    .iter()
                    .flat_map(|(v, m)| std::iter::repeat_n(v, m as usize))
                    .collect();
                assert_eq!(expanded, sorted);
            }
        }
    }

    /// An observed count of 5·10⁹ (coincident events) beside trials of a few pairs: the
    /// post-trial p-value must not allocate over the gap between them.
    #[test]
    fn post_trial_with_an_observed_count_far_above_the_trials() {
        let observed = vec![5_000_000_000u64, 3];
        let trials = vec![vec![1u64, 3], vec![2, 4], vec![0, 2]];
        let mut analysis = Analysis::new(
            Counts {
                n_bins: 2,
                n_cuts: 1,
                values: observed.clone(),
            },
            0,
            0,
        );
        let counts = trials
            .iter()
            .map(|t| Counts {
                n_bins: 2,
                n_cuts: 1,
                values: t.clone(),
            })
            .collect();
        analysis
            .add_batch(TrialBatch {
                first_trial: 0,
                counts,
            })
            .expect("batch");
        // Observed best: bin 0, 1 sample ≥ 5·10⁹; only the trial [2, 4] (bin 1: 1 sample ≥ 4)
        // is as extreme: (1 + 1)/4.
        assert_eq!(analysis.post_trial_p(), Some(0.5));
        assert_eq!(
            analysis.post_trial_p(),
            Some(post_trial_reference(&observed, &trials))
        );
    }

    /// The fit and distance `closest_fit` keeps equal comparing both full KS distances (the
    /// gamma on a tie), over backgrounds where either fit wins.
    #[test]
    fn the_closest_fit_is_the_one_of_both_full_distances() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut uniform = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut wins = [0, 0];
        for (mean, sigma, skew) in [
            (3.0, 1.8, 0.8),
            (40.0, 7.0, 0.3),
            (2_500.0, 50.0, 0.05),
            (48_870.0, 184.0, 0.0),
            (48_870.0, 184.0, 0.02),
            (978_988.0, 994.0, 0.01),
            (18_890_300.0, 5_039.0, 0.0),
            (65.0, 10.0, -0.2),
        ] {
            for round in 0..3 {
                let mut histogram = CountHistogram::default();
                for _ in 0..(3_000 + round * 4_000) {
                    // Box–Muller, bent by `skew`: symmetric or skewed backgrounds.
                    let z =
                        (-2.0 * uniform().ln()).sqrt() * (std::f64::consts::TAU * uniform()).cos();
                    let x = mean + sigma * (z + skew * (z * z - 1.0));
                    histogram.add(x.round().max(0.0) as u64);
                }
                let n = histogram.total() as f64;
                let m = histogram
                    .iter()
                    .map(|(v, k)| v as f64 * k as f64)
                    .sum::<f64>()
                    / n;
                let var = histogram
                    .iter()
                    .map(|(v, k)| (v as f64 - m).powi(2) * k as f64)
                    .sum::<f64>()
                    / (n - 1.0);
                let gamma = FitKind::Gamma {
                    shape: m * m / var,
                    scale: var / m,
                };
                let gaussian = FitKind::Gaussian {
                    mean: m,
                    sigma: var.sqrt(),
                };
                let want = [gamma, gaussian]
                    .iter()
                    .map(|fit| (*fit, super::super::ks::ks_distance(&histogram, fit)))
                    .filter(|(_, d)| d.is_finite())
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .expect("a fit");
                let got = closest_fit(&KsPoints::of(&histogram), gamma, gaussian).expect("a fit");
                assert_eq!(got.0, want.0, "mean {mean} round {round}");
                assert_eq!(
                    got.1.to_bits(),
                    want.1.to_bits(),
                    "mean {mean} round {round}"
                );
                wins[usize::from(matches!(want.0, FitKind::Gaussian { .. }))] += 1;
            }
        }
        assert!(wins[0] > 0 && wins[1] > 0, "gamma, Gaussian wins: {wins:?}");
    }

    #[test]
    fn gaussian_wins_for_symmetric_and_gamma_for_skewed_background() {
        let normal = Normal::new(40.0, 12.0).expect("normal");
        let high: Vec<u64> = (1..2000)
            .map(|i| normal.inverse_cdf(i as f64 / 2000.0).round() as u64)
            .collect();
        let gamma = Gamma::new(1.5, 1.0).expect("gamma");
        let low: Vec<u64> = (1..2000)
            .map(|i| gamma.inverse_cdf(i as f64 / 2000.0).round() as u64)
            .collect();
        for (sample, want_gamma) in [(high, false), (low, true)] {
            let mut analysis = Analysis::new(
                Counts {
                    n_bins: 1,
                    n_cuts: 1,
                    values: vec![0],
                },
                0,
                0,
            );
            let counts = sample
                .iter()
                .map(|&v| Counts {
                    n_bins: 1,
                    n_cuts: 1,
                    values: vec![v],
                })
                .collect();
            analysis
                .add_batch(TrialBatch {
                    first_trial: 0,
                    counts,
                })
                .expect("batch");
            let fit = analysis.summary().bins[0].fit.expect("fit");
            assert_eq!(matches!(fit, FitKind::Gamma { .. }), want_gamma, "{fit:?}");
        }
    }
}
