//! Scrambled trials: reproducible from (seed, trial), independent of batching, cancellable,
//! and for an isotropic sky their mean matches the analytic expectation.

use haloscope::data::EventList;
use haloscope::jobs::{CancelToken, Progress};
use haloscope::twopoint::{
    Analysis, TrialBatch, TwoPointConfig, TwoPointError, count_pairs, prepare, run_trials,
    scrambled_ra,
};
use std::f64::consts::{PI, TAU};

/// `n` events uniform on the sphere from a fixed-seed SplitMix64 stream.
fn isotropic(n: usize, seed: u64) -> EventList {
    let mut state = seed;
    let mut uniform = move || {
        // SplitMix64 (Steele, Lea & Flood 2014).
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut list = EventList::default();
    for _ in 0..n {
        list.ra.push(uniform() * TAU);
        list.dec.push((2.0 * uniform() - 1.0).asin());
        list.energy.push(uniform() * 4.0);
    }
    list
}

fn collect_trials(
    prepared: &haloscope::twopoint::Prepared,
    seed: u64,
    trials: std::ops::Range<u64>,
    batch: usize,
) -> Vec<TrialBatch> {
    let mut batches = Vec::new();
    run_trials(prepared, seed, trials, batch, &Progress::none(), |b| {
        batches.push(b)
    })
    .expect("trials");
    batches
}

#[test]
fn same_seed_and_trial_give_same_counts_whatever_the_batching() {
    let list = isotropic(3000, 5);
    let prepared = prepare(&list, &TwoPointConfig::default()).expect("prepare");
    let whole: Vec<_> = collect_trials(&prepared, 42, 0..6, 6)
        .into_iter()
        .flat_map(|b| b.counts)
        .collect();
    let pieces = collect_trials(&prepared, 42, 2..6, 3);
    assert_eq!(pieces[0].first_trial, 2);
    let pieces: Vec<_> = pieces.into_iter().flat_map(|b| b.counts).collect();
    assert_eq!(&whole[2..], &pieces[..]);
    let direct = count_pairs(&prepared, Some(&scrambled_ra(prepared.len(), 42, 4))).expect("count");
    assert_eq!(whole[4], direct);
    let other_seed = collect_trials(&prepared, 43, 4..5, 1);
    assert_ne!(other_seed[0].counts[0], whole[4]);
    assert_ne!(whole[0], whole[1]);
}

#[test]
fn isotropic_background_matches_the_analytic_expectation() {
    let n = 4000;
    let list = isotropic(n, 11);
    let config = TwoPointConfig {
        bin_step_deg: 2.0,
        bin_count: 5,
        cut_fractions: vec![1.0],
    };
    let prepared = prepare(&list, &config).expect("prepare");
    let mut analysis = Analysis::observe(&prepared, 9, 0).expect("observe");
    let trials = 60;
    run_trials(&prepared, 9, 0..trials, 16, &Progress::none(), |b| {
        analysis.add_batch(b).expect("in order")
    })
    .expect("trials");
    let summary = analysis.summary();
    let sin_cos: Vec<(f64, f64)> = prepared.dec.iter().map(|d| d.sin_cos()).collect();
    for (bin, theta_deg) in prepared.bins.edges_deg.iter().enumerate() {
        let theta = theta_deg.to_radians();
        // Isotropic sky: each pair is within θ with probability (1 − cos θ)/2.
        let isotropic_mean = (n * (n - 1) / 2) as f64 * (1.0 - theta.cos()) / 2.0;
        // Given the declinations, a pair is within θ for cos Δα ≥ (cos θ − sin δi sin δj)/
        // (cos δi cos δj), i.e. with probability acos(x)/π for uniform Δα.
        let mut conditional_mean = 0.0;
        for i in 0..n {
            for j in i + 1..n {
                let ((si, ci), (sj, cj)) = (sin_cos[i], sin_cos[j]);
                let x = (theta.cos() - si * sj) / (ci * cj);
                conditional_mean += x.clamp(-1.0, 1.0).acos() / PI;
            }
        }
        let stats = summary.get(0, bin);
        let standard_error = (stats.background_variance / trials as f64).sqrt();
        assert!(standard_error > 0.0);
        let pull = (stats.background_mean - conditional_mean) / standard_error;
        assert!(pull.abs() < 5.0, "bin {bin}: pull {pull}");
        // The declinations of one isotropic sample fluctuate, so the isotropic value is met
        // only to the Poisson scale of the count.
        let relative = (stats.background_mean - isotropic_mean).abs() / isotropic_mean;
        assert!(
            relative < 5.0 / isotropic_mean.sqrt(),
            "bin {bin}: {relative}"
        );
    }
    let p = analysis.post_trial_p().expect("post-trial p");
    assert!(p > 0.0 && p <= 1.0);
}

#[test]
fn cancelled_trials_stop_with_cancelled() {
    let list = isotropic(500, 1);
    let prepared = prepare(&list, &TwoPointConfig::default()).expect("prepare");
    let token = CancelToken::new();
    token.cancel();
    let mut seen = 0;
    let result = run_trials(
        &prepared,
        1,
        0..100,
        4,
        &Progress::with_cancel(token),
        |_| seen += 1,
    );
    assert_eq!(result, Err(TwoPointError::Cancelled));
    assert_eq!(seen, 0);
}
