//! The two-point analysis loop both faces run (`haloscope twopoint`, the window's Events panel):
//! the observed pairs of the prepared events, then scrambled trials in batches into an
//! [`Analysis`], on the back-end the face resolved.

use super::cuda::{DEFAULT_TRIALS_PER_LAUNCH, count_pairs_cuda, run_trials_cuda};
use super::{Analysis, Counts, Prepared, TrialBatch, TwoPointError, count_pairs, run_trials};
use crate::backend::{Backend, BackendKind};
use crate::jobs::Progress;
use std::ops::Range;
use std::time::{Duration, Instant};

/// Trials per batch on the CPU: small enough for a responsive progress bar and cancel.
const CPU_BATCH: usize = 8;

/// Exact cumulative counts of the observed RAs on `backend`.
pub fn count_observed(backend: &Backend, prepared: &Prepared) -> Result<Counts, TwoPointError> {
    match backend.device() {
        None => count_pairs(prepared, None),
        Some(device) => count_pairs_cuda(device, prepared),
    }
}

/// Runs trials `trials` on `backend` in batches of `batch` and hands each batch to `on_batch`
/// in trial order (the CPU's [`run_trials`] or the GPU's [`run_trials_cuda`]: equal counts).
pub fn run_trials_on(
    backend: &Backend,
    prepared: &Prepared,
    seed: u64,
    trials: Range<u64>,
    batch: usize,
    progress: &Progress,
    on_batch: impl FnMut(TrialBatch),
) -> Result<(), TwoPointError> {
    match backend.device() {
        None => run_trials(prepared, seed, trials, batch, progress, on_batch),
        Some(device) => run_trials_cuda(device, prepared, seed, trials, batch, progress, on_batch),
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
    pub fn run_trials(
        &mut self,
        total: u64,
        batches: Batches,
        progress: &Progress,
        on_batch: impl FnMut(&Analysis),
    ) -> Result<(), TwoPointError> {
        match batches {
            Batches::Fixed(batch) => self.run_fixed(total, batch, progress, on_batch),
            Batches::Paced { target, max } => {
                self.run_paced(total, target, max, progress, on_batch)
            }
        }
    }

    /// All remaining trials in one back-end run of `batch`-sized batches; a batch the
    /// analysis refuses is reported after the run.
    fn run_fixed(
        &mut self,
        total: u64,
        batch: usize,
        progress: &Progress,
        mut on_batch: impl FnMut(&Analysis),
    ) -> Result<(), TwoPointError> {
        let first = self.analysis.next_trial();
        let count = total.saturating_sub(self.analysis.trials());
        let trials = first..first.saturating_add(count);
        let analysis = &mut self.analysis;
        let mut batch_error = None;
        run_trials_on(
            &self.backend,
            &self.prepared,
            analysis.seed,
            trials,
            batch,
            progress,
            |batch| match analysis.add_batch(batch) {
                Ok(()) => on_batch(analysis),
                Err(e) => {
                    batch_error.get_or_insert(e);
                }
            },
        )?;
        batch_error.map_or(Ok(()), Err)
    }

    /// One back-end run per batch, each batch sized from the last one's time per trial.
    fn run_paced(
        &mut self,
        total: u64,
        target: Duration,
        max: u64,
        progress: &Progress,
        mut on_batch: impl FnMut(&Analysis),
    ) -> Result<(), TwoPointError> {
        let analysis = &mut self.analysis;
        let mut batch: u64 = 2;
        while analysis.trials() < total {
            progress.check()?;
            progress.report("trials", analysis.trials(), total);
            let next = analysis.next_trial();
            let count = batch.min(total - analysis.trials());
            let batch_start = Instant::now();
            let mut batches = Vec::new();
            run_trials_on(
                &self.backend,
                &self.prepared,
                analysis.seed,
                next..next + count,
                count as usize,
                progress,
                |b| batches.push(b),
            )?;
            for b in batches {
                analysis.add_batch(b)?;
            }
            let seconds = batch_start.elapsed().as_secs_f64();
            on_batch(analysis);
            // Grow or shrink towards the target batch time.
            let per_trial = seconds / count as f64;
            let wanted = (target.as_secs_f64() / per_trial.max(1e-6)) as u64;
            batch = wanted.clamp(1, max).min(batch * 4);
        }
        progress.report("trials", analysis.trials(), total);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::twopoint::{TwoPointConfig, prepare};

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
