//! Scrambled-RA trials on the CPU in batches, reproducible from (seed, trial range).

use super::count::count_pairs;
use crate::jobs::Progress;
use crate::twopoint::{Counts, Prepared, Scramble, TrialBatch, TwoPointError};
use rayon::prelude::*;
use std::ops::Range;

/// The continuously scrambled RAs of trial `trial`, one per prepared event (declination-sorted
/// order).
pub fn scrambled_ra(n_events: usize, seed: u64, trial: u64) -> Vec<f64> {
    scrambled_ra_on(Scramble::Continuous, n_events, seed, trial)
}

/// The RAs `scramble` draws in trial `trial`, one per prepared event (declination-sorted order).
pub fn scrambled_ra_on(scramble: Scramble, n_events: usize, seed: u64, trial: u64) -> Vec<f64> {
    (0..n_events as u32)
        .into_par_iter()
        .with_min_len(4096)
        .map(|e| scramble.ra_of(seed, trial, e))
        .collect()
}

/// Runs trials `trials` in batches of `batch` and hands each batch to `on_batch` in trial order.
/// Checks for cancellation between trials; `Err(Cancelled)` leaves the batches already handed
/// over valid.
pub fn run_trials(
    prepared: &Prepared,
    seed: u64,
    trials: Range<u64>,
    batch: usize,
    progress: &Progress,
    mut on_batch: impl FnMut(TrialBatch),
) -> Result<(), TwoPointError> {
    let batch = batch.max(1) as u64;
    let total = trials.end.saturating_sub(trials.start);
    let mut first = trials.start;
    progress.report("trials", 0, total);
    while first < trials.end {
        progress.check()?;
        let end = (first + batch).min(trials.end);
        let counts = (first..end)
            .into_par_iter()
            .map(|trial| {
                if progress.is_cancelled() {
                    return Err(TwoPointError::Cancelled);
                }
                let ra = scrambled_ra_on(prepared.scramble, prepared.len(), seed, trial);
                count_pairs(prepared, Some(&ra))
            })
            .collect::<Result<Vec<Counts>, TwoPointError>>()?;
        on_batch(TrialBatch {
            first_trial: first,
            counts,
        });
        first = end;
        progress.report("trials", first - trials.start, total);
    }
    Ok(())
}
