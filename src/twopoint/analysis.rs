//! The two-point analysis loop both faces run (`haloscope twopoint`, the window's Events panel):
//! the observed pairs of the prepared events, then scrambled trials in batches into an
//! [`Analysis`], on the back-end the face resolved.

use super::cuda::{DEFAULT_TRIALS_PER_LAUNCH, count_pairs_cuda, run_trials_cuda_devices};
use super::{Analysis, Counts, Prepared, TrialBatch, TwoPointError, count_pairs, run_trials};
use crate::backend::{Backend, BackendKind};
use crate::jobs::Progress;
use std::ops::Range;
use std::time::{Duration, Instant};

/// Trials per batch on the CPU: small enough for a responsive progress bar and cancel.
const CPU_BATCH: usize = 8;

/// Most bytes of trial counts an analysis may store (4 bytes per trial and bin, 8 where a
/// count exceeds 32 bits): 10⁷ trials of 80 bins take 3.2 GB. The post-trial p-value needs every
/// trial's row, so the rows grow with the trials and the trial count is bounded up front.
pub const MAX_STORED_TRIAL_BYTES: u64 = 8 << 30;

/// Most trials an analysis of `n_values` bins (cuts × angles) may hold, see
/// [`MAX_STORED_TRIAL_BYTES`].
pub fn max_trials(n_values: usize) -> u64 {
    MAX_STORED_TRIAL_BYTES / (4 * n_values.max(1) as u64)
}

/// Refuses `trials` trials of `n_bins` angle bins × `n_cuts` energy cuts when their counts
/// would not fit [`MAX_STORED_TRIAL_BYTES`].
pub fn check_trials(trials: u64, n_bins: usize, n_cuts: usize) -> Result<(), TwoPointError> {
    let n_values = n_bins * n_cuts;
    let max = max_trials(n_values);
    if trials > max {
        return Err(TwoPointError::Config(format!(
            "{trials} trials: storing {n_values} counts per trial ({n_bins} bins × {n_cuts} \
             cuts) allows at most {max} trials ({} GiB of trial counts)",
            MAX_STORED_TRIAL_BYTES >> 30
        )));
    }
    Ok(())
}

/// Exact cumulative counts of the observed RAs on `backend`.
pub fn count_observed(backend: &Backend, prepared: &Prepared) -> Result<Counts, TwoPointError> {
    match backend.device() {
        None => count_pairs(prepared, None),
        Some(device) => count_pairs_cuda(device, prepared),
    }
}

/// Runs trials `trials` on `backend` in batches of `batch` and hands each batch to `on_batch`
/// in trial order (the CPU's [`run_trials`], or the GPU's [`run_trials_cuda_devices`] split by
/// trial index over every device of the back-end: equal counts).
pub fn run_trials_on(
    backend: &Backend,
    prepared: &Prepared,
    seed: u64,
    trials: Range<u64>,
    batch: usize,
    progress: &Progress,
    on_batch: impl FnMut(TrialBatch),
) -> Result<(), TwoPointError> {
    match backend.devices() {
        [] => run_trials(prepared, seed, trials, batch, progress, on_batch),
        devices => {
            run_trials_cuda_devices(devices, prepared, seed, trials, batch, progress, on_batch)
        }
    }
}

/// Trials per batch unless the user says otherwise: [`CPU_BATCH`] on the CPU, one full launch
/// of the GPU counter on CUDA.
pub fn default_batch(backend: &Backend) -> usize {
    match backend.kind() {
        BackendKind::Cpu | BackendKind::Wgpu => CPU_BATCH,
        BackendKind::Cuda => DEFAULT_TRIALS_PER_LAUNCH,
    }
}

/// How a run groups its trials into batches; the callback, progress and cancellation happen
/// between batches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Batches {
    /// This many trials per batch.
    Fixed(usize),
    /// Batches sized to take about `target` each: the first of 2 trials, each next one at most
    /// 4 times the last and at most `max`, so that live plots update a few times a second.
    Paced {
        /// Wanted time per batch.
        target: Duration,
        /// Largest batch.
        max: u64,
    },
}

/// One event list under analysis: the prepared events, the back-end that counts their pairs
/// and the statistics so far.
#[derive(Debug)]
pub struct TwoPointRun {
    /// The events as counted (declination order, bins, cuts, search windows).
    pub prepared: Prepared,
    /// Observed counts and the accumulated background.
    pub analysis: Analysis,
    backend: Backend,
}

impl TwoPointRun {
    /// Counts the observed pairs of `prepared` on `backend`; trials are scrambled with `seed`
    /// and numbered from `first_trial`.
    pub fn observe(
        prepared: Prepared,
        seed: u64,
        first_trial: u64,
        backend: &Backend,
    ) -> Result<Self, TwoPointError> {
        let observed = count_observed(backend, &prepared)?;
        Ok(Self {
            prepared,
            analysis: Analysis::new(observed, seed, first_trial),
            backend: backend.clone(),
        })
    }

    /// Goes on with `analysis` (observed counts, seed and trials so far, made from the same
    /// events and configuration as `prepared`) on `backend`.
    pub fn resume(prepared: Prepared, analysis: Analysis, backend: &Backend) -> Self {
        Self {
            prepared,
            analysis,
            backend: backend.clone(),
        }
    }

    /// The back-end counting the pairs.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Runs the next trials until the analysis holds `total`, calling `on_batch` with the
    /// analysis after each batch. `Err(Cancelled)` keeps every batch done so far.
    ///
    /// The back-end counts on the calling thread while the statistics (and `on_batch`) follow on
    /// a second one, so the next launch never waits for the last batch's bookkeeping.
    pub fn run_trials(
        &mut self,
        total: u64,
        batches: Batches,
        progress: &Progress,
        on_batch: impl FnMut(&Analysis) + Send,
    ) -> Result<(), TwoPointError> {
        let observed = &self.analysis.observed;
        check_trials(total, observed.n_bins, observed.n_cuts)?;
        let Self {
            prepared,
            analysis,
            backend,
        } = self;
        let first = analysis.next_trial();
        let count = total.saturating_sub(analysis.trials());
        let trials = first..first.saturating_add(count);
        let seed = analysis.seed;
        let (sender, receiver) = crossbeam_channel::bounded::<TrialBatch>(BATCHES_IN_FLIGHT);
        std::thread::scope(|scope| {
            let statistics = scope.spawn(move || add_batches(analysis, receiver, on_batch));
            let counted = match batches {
                Batches::Fixed(batch) => {
                    run_trials_on(backend, prepared, seed, trials, batch, progress, |b| {
                        // A closed channel means the statistics failed: reported below.
                        let _ = sender.send(b);
                    })
                }
                Batches::Paced { target, max } => {
                    let pace = Pace { target, max };
                    run_paced(backend, prepared, seed, trials, pace, progress, &sender)
                }
            };
            drop(sender);
            let added = statistics.join().unwrap_or_else(|_| {
                Err(TwoPointError::BadInput(
                    "the two-point statistics thread panicked".into(),
                ))
            });
            // A refused batch is the root cause of anything the counting reports after it.
            added.and(counted)
        })
    }
}

/// Batches handed from the counting thread to the statistics thread at most at once: enough to
/// keep the GPU busy while a batch is added, few enough to bound memory.
const BATCHES_IN_FLIGHT: usize = 4;

/// Adds every received batch to `analysis` in order, calling `on_batch` after each; after a
/// refused batch it keeps draining (so the counting thread never blocks) and returns the error.
fn add_batches(
    analysis: &mut Analysis,
    batches: crossbeam_channel::Receiver<TrialBatch>,
    mut on_batch: impl FnMut(&Analysis),
) -> Result<(), TwoPointError> {
    let mut refused = None;
    for batch in batches {
        if refused.is_some() {
            continue;
        }
        match analysis.add_batch(batch) {
            Ok(()) => on_batch(analysis),
            Err(e) => refused = Some(e),
        }
    }
    refused.map_or(Ok(()), Err)
}

/// The fields of [`Batches::Paced`].
#[derive(Debug, Clone, Copy)]
struct Pace {
    target: Duration,
    max: u64,
}

/// One back-end run per batch, each batch sized from the last one's time per trial, sent to
/// `sender` in trial order.
fn run_paced(
    backend: &Backend,
    prepared: &Prepared,
    seed: u64,
    trials: Range<u64>,
    Pace { target, max }: Pace,
    progress: &Progress,
    sender: &crossbeam_channel::Sender<TrialBatch>,
) -> Result<(), TwoPointError> {
    let total = trials.end - trials.start;
    let mut next = trials.start;
    let mut batch: u64 = 2;
    while next < trials.end {
        progress.check()?;
        progress.report("trials", next - trials.start, total);
        let count = batch.min(trials.end - next);
        let batch_start = Instant::now();
        let mut batches = Vec::new();
        run_trials_on(
            backend,
            prepared,
            seed,
            next..next + count,
            count as usize,
            progress,
            |b| batches.push(b),
        )?;
        let seconds = batch_start.elapsed().as_secs_f64();
        for b in batches {
            if sender.send(b).is_err() {
                return Ok(());
            }
        }
        next += count;
        // Grow or shrink towards the target batch time.
        let per_trial = seconds / count as f64;
        let wanted = (target.as_secs_f64() / per_trial.max(1e-6)) as u64;
        batch = wanted.clamp(1, max).min(batch * 4);
    }
    progress.report("trials", total, total);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::twopoint::{TwoPointConfig, prepare};

    /// The bound follows the stored bytes: 8 GiB / (4 bytes × 80 counts).
    #[test]
    fn trials_are_bounded_by_their_stored_counts() {
        assert_eq!(max_trials(80), 26_843_545);
        assert!(check_trials(26_843_545, 20, 4).is_ok());
        let err = check_trials(26_843_546, 20, 4).expect_err("over");
        assert!(
            err.to_string()
                .starts_with("26843546 trials: storing 80 counts"),
            "{err}"
        );
        let events = crate::data::demo::demo_events(300, 3);
        let prepared = prepare(&events, &TwoPointConfig::default()).expect("prepare");
        let mut run = TwoPointRun::observe(prepared, 1, 0, &Backend::cpu()).expect("observe");
        let err = run
            .run_trials(10_000_000_000, Batches::Fixed(8), &Progress::none(), |_| {})
            .expect_err("refused before any trial");
        assert!(err.to_string().starts_with("10000000000 trials"), "{err}");
        assert_eq!(run.analysis.trials(), 0);
    }

    /// Fixed and paced batches, from scratch or resumed, give the library's statistics.
    #[test]
    fn fixed_and_paced_runs_equal_one_library_run() {
        let events = crate::data::demo::demo_events(2_000, 3);
        let config = TwoPointConfig::default();
        let cpu = Backend::cpu();
        let prepared = prepare(&events, &config).expect("prepare");
        let mut direct = Analysis::observe(&prepared, 5, 2).expect("observe");
        run_trials(&prepared, 5, 2..14, 12, &Progress::none(), |b| {
            direct.add_batch(b).expect("batch");
        })
        .expect("trials");
        let json = |a: &Analysis| serde_json::to_string(&a.summary()).expect("json");

        let mut fixed = TwoPointRun::observe(prepared.clone(), 5, 2, &cpu).expect("observe");
        let mut seen = Vec::new();
        fixed
            .run_trials(12, Batches::Fixed(5), &Progress::none(), |a| {
                seen.push(a.trials())
            })
            .expect("fixed");
        assert_eq!(seen, [5, 10, 12]);
        assert_eq!(json(&fixed.analysis), json(&direct));

        let paced = Batches::Paced {
            target: Duration::from_millis(1),
            max: 4,
        };
        let mut first = TwoPointRun::observe(prepared.clone(), 5, 2, &cpu).expect("observe");
        first
            .run_trials(7, paced, &Progress::none(), |_| {})
            .expect("paced");
        assert_eq!(first.analysis.trials(), 7);
        let mut resumed = TwoPointRun::resume(
            prepare(&events, &config).expect("prepare"),
            first.analysis,
            &cpu,
        );
        resumed
            .run_trials(12, paced, &Progress::none(), |_| {})
            .expect("resumed");
        assert_eq!(resumed.analysis.next_trial(), 14);
        assert_eq!(json(&resumed.analysis), json(&direct));
        assert_eq!(resumed.analysis.observed, direct.observed);
    }
}
