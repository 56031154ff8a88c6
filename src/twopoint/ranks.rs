//! Trials over the ranks of a job (`mpirun -n K haloscope twopoint …`): the trial indices are cut
//! into K consecutive shares, each rank counts its share on its own back-end (every device of
//! it), and rank 0 gathers the per-trial counts and adds them in trial order. Philox is keyed by
//! trial, so rank 0's analysis equals one process's, count for count and statistic for
//! statistic.

use super::{Counts, TrialBatch, TwoPointError, TwoPointRun, analysis::check_trials};
use crate::cluster::{Collective, even_share};
use crate::jobs::Progress;
use std::ops::Range;

/// Rank `rank`'s share of `trials` among `size` ranks: consecutive indices, the shares
/// differing by at most one trial, in rank order.
pub fn share_of(trials: &Range<u64>, rank: usize, size: usize) -> Range<u64> {
    let share = even_share(trials.end.saturating_sub(trials.start), rank, size);
    trials.start + share.start..trials.start + share.end
}

/// The counts of consecutive trials as little-endian u64 words, trial after trial.
pub fn encode_counts(counts: &[Counts]) -> Vec<u8> {
    counts
        .iter()
        .flat_map(|c| c.values.iter().flat_map(|v| v.to_le_bytes()))
        .collect()
}

/// The inverse of [`encode_counts`] for counts of `n_cuts` × `n_bins`, which must hold exactly
/// `trials` trials.
pub fn decode_counts(
    bytes: &[u8],
    n_cuts: usize,
    n_bins: usize,
    trials: u64,
) -> Result<Vec<Counts>, TwoPointError> {
    let per_trial = 8 * n_cuts * n_bins;
    if per_trial == 0 || bytes.len() as u64 != trials * per_trial as u64 {
        return Err(TwoPointError::BadInput(format!(
            "a rank sent {} bytes of trial counts for {trials} trials of {n_cuts} cuts × \
             {n_bins} bins (expected {} bytes)",
            bytes.len(),
            trials * per_trial as u64
        )));
    }
    Ok(bytes
        .chunks_exact(per_trial)
        .map(|trial| Counts {
            n_bins,
            n_cuts,
            values: trial
                .chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
                .collect(),
        })
        .collect())
}

/// [`TwoPointRun::run_trials`] over the ranks of `collective`: until the analysis holds `total`
/// trials, each rank counting its [`share_of`] the remaining trials in batches of `batch`.
/// Every rank calls it; rank 0's analysis then holds every trial, the others' are unchanged. A
/// rank that fails ends every rank: that rank returns its error, the others
/// [`TwoPointError::OtherRank`].
pub fn run_trials_across(
    run: &mut TwoPointRun,
    collective: &dyn Collective,
    total: u64,
    batch: usize,
    progress: &Progress,
) -> Result<(), TwoPointError> {
    let (n_cuts, n_bins) = (run.analysis.observed.n_cuts, run.analysis.observed.n_bins);
    let first = run.analysis.next_trial();
    let count = total.saturating_sub(run.analysis.trials());
    let trials = first..first.saturating_add(count);
    let mine = share_of(&trials, collective.rank(), collective.size());
    let mut counts = Vec::with_capacity((mine.end - mine.start) as usize);
    let counted = check_trials(total, n_bins, n_cuts).and_then(|()| {
        super::run_trials_on(
            run.backend(),
            &run.prepared,
            run.analysis.seed,
            mine.clone(),
            batch,
            progress,
            |b| counts.extend(b.counts),
        )
    });
    if collective.any_failed(counted.is_err()) {
        return Err(counted.err().unwrap_or(TwoPointError::OtherRank));
    }
    let gathered = collective.gather_bytes(0, &encode_counts(&counts));
    if !collective.is_root() {
        return Ok(());
    }
    for (rank, bytes) in gathered.iter().enumerate() {
        let share = share_of(&trials, rank, collective.size());
        let counts = decode_counts(bytes, n_cuts, n_bins, share.end - share.start)?;
        if !counts.is_empty() {
            run.analysis.add_batch(TrialBatch {
                first_trial: share.start,
                counts,
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::cluster::Solo;
    use crate::twopoint::{Batches, TwoPointConfig, prepare};

    #[test]
    fn shares_cover_the_trials_in_rank_order_and_differ_by_at_most_one() {
        for size in 1..6 {
            for trials in [0..0, 3..4, 10..47, 0..5] {
                let shares: Vec<_> = (0..size).map(|r| share_of(&trials, r, size)).collect();
                assert_eq!(shares[0].start, trials.start);
                assert_eq!(shares[size - 1].end, trials.end);
                for pair in shares.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                }
                let lens: Vec<u64> = shares.iter().map(|s| s.end - s.start).collect();
                let (lo, hi) = (lens.iter().min(), lens.iter().max());
                assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1), "{lens:?}");
            }
        }
        assert_eq!(
            share_of(&(u64::MAX - 4..u64::MAX), 1, 2),
            u64::MAX - 2..u64::MAX
        );
    }

    #[test]
    fn counts_survive_encoding_and_a_wrong_length_is_refused() {
        let counts = vec![
            Counts {
                n_bins: 2,
                n_cuts: 1,
                values: vec![1, u64::MAX],
            },
            Counts {
                n_bins: 2,
                n_cuts: 1,
                values: vec![7, 0],
            },
        ];
        let bytes = encode_counts(&counts);
        assert_eq!(bytes.len(), 32);
        assert_eq!(decode_counts(&bytes, 1, 2, 2), Ok(counts));
        let err = decode_counts(&bytes[..24], 1, 2, 2).expect_err("short");
        assert!(err.to_string().contains("24 bytes"), "{err}");
        assert!(decode_counts(&bytes, 1, 2, 3).is_err());
    }

    /// One rank through the ranked path equals the plain run, from scratch and resumed.
    #[test]
    fn one_rank_equals_the_plain_run() {
        let events = crate::data::demo::demo_events(800, 4);
        let prepared = prepare(&events, &TwoPointConfig::default()).expect("prepare");
        let cpu = Backend::cpu();
        let mut plain = TwoPointRun::observe(prepared.clone(), 9, 3, &cpu).expect("observe");
        plain
            .run_trials(20, Batches::Fixed(6), &Progress::none(), |_| {})
            .expect("plain");
        let mut ranked = TwoPointRun::observe(prepared, 9, 3, &cpu).expect("observe");
        run_trials_across(&mut ranked, &Solo, 8, 6, &Progress::none()).expect("first part");
        run_trials_across(&mut ranked, &Solo, 20, 6, &Progress::none()).expect("the rest");
        let json = |r: &TwoPointRun| serde_json::to_string(&r.analysis.summary()).expect("json");
        assert_eq!(ranked.analysis.trials(), 20);
        assert_eq!(json(&ranked), json(&plain));
    }
}
