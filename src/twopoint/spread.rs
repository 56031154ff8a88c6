//! Trials spread over several workers, each on its own thread (on CUDA, `COUNTERS_PER_DEVICE`
//! of cuda/trials.rs: two counters per device, each on its own stream, or one for a short run):
//! chunks of consecutive trial indices are handed out in index order to whichever worker is
//! free, and the counts are put back in trial order before anyone sees them. Philox is keyed by
//! (seed, trial, event), so the batches equal one worker's, count for count.

use super::{Counts, TrialBatch, TwoPointError};
use crate::jobs::Progress;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a worker sends back: the index of its chunk and that chunk's counts.
type ChunkResult = (u64, Result<Vec<Counts>, TwoPointError>);

/// Runs `trials` on `workers` threads. Thread `i` builds its worker with `make_worker(i)` (on
/// CUDA, a counter on device `i` modulo the device count), then counts chunks of `chunk`
/// consecutive trials, taken in index order while any are left. The counts come back to the
/// calling thread, which regroups them into batches of `batch` trials and hands those to
/// `on_batch` in trial order (the last may be shorter), exactly as one worker counting `trials`
/// in batches of `batch` would.
///
/// The first error (a worker that could not be built, a failed chunk, cancellation) stops the
/// handing out of chunks and is returned once every thread has finished; the batches already
/// handed over stay valid.
pub fn spread_trials<W, M>(
    workers: usize,
    make_worker: M,
    trials: Range<u64>,
    chunk: u64,
    batch: usize,
    progress: &Progress,
    mut on_batch: impl FnMut(TrialBatch),
) -> Result<(), TwoPointError>
where
    M: Fn(usize) -> Result<W, TwoPointError> + Sync,
    W: FnMut(Range<u64>) -> Result<Vec<Counts>, TwoPointError>,
{
    let workers = workers.max(1);
    let chunk = chunk.max(1);
    let total = trials.end.saturating_sub(trials.start);
    progress.report("trials", 0, total);
    if total == 0 {
        return Ok(());
    }
    let n_chunks = total.div_ceil(chunk);
    let next_chunk = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    // Bounded: a worker that runs ahead of the merge waits rather than piling up counts.
    let (sender, receiver) = crossbeam_channel::bounded::<ChunkResult>(2 * workers);
    let chunk_range = |index: u64| {
        let first = trials.start + index * chunk;
        first..(first + chunk).min(trials.end)
    };
    std::thread::scope(|scope| {
        for w in 0..workers {
            let sender = sender.clone();
            let (next_chunk, stop, make_worker) = (&next_chunk, &stop, &make_worker);
            scope.spawn(move || {
                let mut worker = match make_worker(w) {
                    Ok(worker) => worker,
                    Err(err) => {
                        stop.store(true, Ordering::Relaxed);
                        let _ = sender.send((0, Err(err)));
                        return;
                    }
                };
                while !stop.load(Ordering::Relaxed) {
                    let index = next_chunk.fetch_add(1, Ordering::Relaxed);
                    if index >= n_chunks {
                        break;
                    }
                    let counted = if progress.is_cancelled() {
                        Err(TwoPointError::Cancelled)
                    } else {
                        worker(chunk_range(index))
                    };
                    let failed = counted.is_err();
                    if failed {
                        stop.store(true, Ordering::Relaxed);
                    }
                    // A closed channel cannot happen: the merge below drains until every
                    // thread has finished.
                    if sender.send((index, counted)).is_err() || failed {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut merge = Merge::new(trials.start, batch);
        let mut first_error = None;
        for (index, counted) in receiver {
            match counted {
                Err(err) => {
                    stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(err);
                }
                Ok(counts) if first_error.is_none() => {
                    let expected = chunk_range(index);
                    if counts.len() as u64 != expected.end - expected.start {
                        stop.store(true, Ordering::Relaxed);
                        first_error = Some(TwoPointError::Gpu(format!(
                            "trials {}..{}: a device returned {} counts",
                            expected.start,
                            expected.end,
                            counts.len()
                        )));
                        continue;
                    }
                    merge.insert(index, counts, &mut |b| {
                        let done = b.trials().end - trials.start;
                        on_batch(b);
                        progress.report("trials", done, total);
                    });
                }
                Ok(_) => {}
            }
        }
        match first_error {
            Some(err) => Err(err),
            None => {
                merge.finish(&mut on_batch);
                progress.report("trials", total, total);
                Ok(())
            }
        }
    })
}

/// Chunks back in index order, regrouped into batches of a fixed size.
struct Merge {
    /// Chunks that arrived before an earlier one, by index.
    waiting: BTreeMap<u64, Vec<Counts>>,
    /// Index of the next chunk in order.
    next_index: u64,
    /// Counts in trial order not yet handed over, the first of them trial `first_trial`.
    ready: Vec<Counts>,
    first_trial: u64,
    batch: usize,
}

impl Merge {
    fn new(first_trial: u64, batch: usize) -> Self {
        Self {
            waiting: BTreeMap::new(),
            next_index: 0,
            ready: Vec::new(),
            first_trial,
            batch: batch.max(1),
        }
    }

    /// Takes chunk `index`; hands every full batch now in order to `on_batch`.
    fn insert(&mut self, index: u64, counts: Vec<Counts>, on_batch: &mut impl FnMut(TrialBatch)) {
        self.waiting.insert(index, counts);
        while let Some(counts) = self.waiting.remove(&self.next_index) {
            self.ready.extend(counts);
            self.next_index += 1;
        }
        while self.ready.len() >= self.batch {
            let rest = self.ready.split_off(self.batch);
            let counts = std::mem::replace(&mut self.ready, rest);
            self.hand_over(counts, on_batch);
        }
    }

    /// Hands the last, shorter batch over (every chunk has arrived).
    fn finish(mut self, on_batch: &mut impl FnMut(TrialBatch)) {
        if !self.ready.is_empty() {
            let counts = std::mem::take(&mut self.ready);
            self.hand_over(counts, on_batch);
        }
    }

    fn hand_over(&mut self, counts: Vec<Counts>, on_batch: &mut impl FnMut(TrialBatch)) {
        let first_trial = self.first_trial;
        self.first_trial += counts.len() as u64;
        on_batch(TrialBatch {
            first_trial,
            counts,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::CancelToken;
    use std::time::Duration;

    /// A stand-in count for trial `t`: one cut, one bin, the value `t * 7 + 1`.
    fn fake(trial: u64) -> Counts {
        Counts {
            n_bins: 1,
            n_cuts: 1,
            values: vec![trial * 7 + 1],
        }
    }

    /// Worker `w` sleeps a little per chunk (worker 0 the longest), so chunks finish out of
    /// order and the merge must put them back.
    fn worker(w: usize) -> impl FnMut(Range<u64>) -> Result<Vec<Counts>, TwoPointError> {
        move |range: Range<u64>| {
            std::thread::sleep(Duration::from_millis(if w == 0 { 3 } else { 1 }));
            Ok(range.map(fake).collect())
        }
    }

    fn run(workers: usize, trials: Range<u64>, chunk: u64, batch: usize) -> Vec<TrialBatch> {
        let mut got = Vec::new();
        spread_trials(
            workers,
            |w| Ok(worker(w)),
            trials,
            chunk,
            batch,
            &Progress::none(),
            |b| got.push(b),
        )
        .expect("spread");
        got
    }

    #[test]
    fn batches_come_back_in_trial_order_as_one_worker_would_give_them() {
        for (workers, chunk, batch) in [(1, 4, 4), (2, 4, 4), (3, 5, 4), (4, 1, 7), (2, 9, 2)] {
            let got = run(workers, 10..47, chunk, batch);
            let firsts: Vec<u64> = got.iter().map(|b| b.first_trial).collect();
            let want: Vec<u64> = (10..47).step_by(batch).collect();
            assert_eq!(
                firsts, want,
                "workers {workers} chunk {chunk} batch {batch}"
            );
            let counts: Vec<Counts> = got.into_iter().flat_map(|b| b.counts).collect();
            assert_eq!(counts, (10..47).map(fake).collect::<Vec<_>>());
        }
        assert!(run(2, 5..5, 4, 4).is_empty());
    }

    #[test]
    fn a_failing_worker_stops_the_run_with_its_error_and_nothing_after_it_is_handed_over() {
        let mut got = Vec::new();
        // The chunk from trial 8 fails on whichever worker takes it (one worker may take every
        // chunk before the other starts, so the failure must not depend on which one).
        let err = spread_trials(
            2,
            |_| {
                Ok(move |range: Range<u64>| {
                    if range.start == 8 {
                        Err(TwoPointError::Gpu("device lost".into()))
                    } else {
                        Ok(range.map(fake).collect())
                    }
                })
            },
            0..100,
            4,
            4,
            &Progress::none(),
            |b| got.push(b),
        )
        .expect_err("the chunk from trial 8 fails");
        assert_eq!(err, TwoPointError::Gpu("device lost".into()));
        let handed: Vec<u64> = got.iter().flat_map(|b| b.trials()).collect();
        assert!(handed.len() <= 8, "handed over {} trials", handed.len());
        assert_eq!(handed, (0..handed.len() as u64).collect::<Vec<_>>());

        let err = spread_trials(
            3,
            |w| match w {
                2 => Err(TwoPointError::Gpu("device 2 did not open".into())),
                _ => Ok(worker(w)),
            },
            0..10,
            2,
            2,
            &Progress::none(),
            |_| {},
        )
        .expect_err("worker 2 cannot be built");
        assert_eq!(err, TwoPointError::Gpu("device 2 did not open".into()));
    }

    /// Real CPU counts of the demo events, spread over three workers, equal one run.
    #[test]
    fn spread_cpu_counts_equal_one_run_of_the_same_trials() {
        use crate::twopoint::{TwoPointConfig, prepare, run_trials};
        let events = crate::data::demo::demo_events(500, 9);
        let prepared = prepare(&events, &TwoPointConfig::default()).expect("prepare");
        let mut one = Vec::new();
        run_trials(&prepared, 3, 4..23, 5, &Progress::none(), |b| one.push(b)).expect("one");
        let mut spread = Vec::new();
        let make = |_| {
            Ok(|range: Range<u64>| {
                let mut counts = Vec::new();
                run_trials(&prepared, 3, range, 64, &Progress::none(), |b| {
                    counts.extend(b.counts)
                })?;
                Ok(counts)
            })
        };
        spread_trials(3, make, 4..23, 2, 5, &Progress::none(), |b| spread.push(b)).expect("spread");
        assert_eq!(spread, one);
    }

    #[test]
    fn cancellation_ends_every_worker() {
        let token = CancelToken::new();
        token.cancel();
        let progress = Progress::with_cancel(token);
        let err = spread_trials(2, |w| Ok(worker(w)), 0..1000, 4, 4, &progress, |_| {})
            .expect_err("cancelled");
        assert_eq!(err, TwoPointError::Cancelled);
    }
}
