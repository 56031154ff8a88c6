//! The Kolmogorov–Smirnov distance between a bin's trial counts and a fitted distribution, the
//! test that picks the gamma or the Gaussian fit of the background (stats.rs).

use super::histogram::CountHistogram;
use super::stats::FitKind;
use rayon::prelude::*;

/// Distinct values from which [`ks_distance`] evaluates the fit's CDF on several threads: below
/// this the evaluations cost less than handing them out.
const PARALLEL_CDF_VALUES: usize = 512;

/// Kolmogorov–Smirnov distance between integer samples (as a histogram) and a fit's CDF at the
/// sample values (with continuity correction).
///
/// The CDF evaluations (a gamma CDF costs far more than the rest) are independent: they are made
/// first, on several threads for a histogram of many distinct values, and the distance is then
/// folded in value order, so the result has the same bits however many threads ran.
pub fn ks_distance(histogram: &CountHistogram, fit: &FitKind) -> f64 {
    let n = histogram.total() as f64;
    let values: Vec<(u64, u64)> = histogram.iter().collect();
    // Trial counts are mostly consecutive integers, so the model below a value is usually the
    // one at the value before it: only the CDF at each value, and below the first of each run,
    // are evaluated.
    let model_below_needed = |i: usize| {
        let value = values[i].0;
        value != 0 && (i == 0 || values[i - 1].0 + 1 != value)
    };
    let cdfs = |i: usize| {
        let value = values[i].0;
        let below = model_below_needed(i).then(|| fit.cdf_at(value - 1));
        (below, fit.cdf_at(value))
    };
    let models: Vec<(Option<f64>, f64)> = if values.len() >= PARALLEL_CDF_VALUES {
        (0..values.len())
            .into_par_iter()
            .with_min_len(64)
            .map(cdfs)
            .collect()
    } else {
        (0..values.len()).map(cdfs).collect()
    };
    let mut distance: f64 = 0.0;
    let mut seen = 0u64;
    let mut last_model = 0.0;
    for (&(value, multiplicity), &(below_model, model_at)) in values.iter().zip(&models) {
        let below = seen as f64 / n;
        seen += multiplicity;
        let at_or_below = seen as f64 / n;
        let model_below = match below_model {
            Some(model) => model,
            None if value == 0 => 0.0,
            None => last_model,
        };
        last_model = model_at;
        distance = distance
            .max((below - model_below).abs())
            .max((at_or_below - model_at).abs());
    }
    distance
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
}
