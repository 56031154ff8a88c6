//! The two-point analysis behind the Events panel: observed counts, then scrambled trials in
//! batches on a worker; every batch sends the accumulated analysis and its statistics to the UI,
//! which plots them live (`ui.rs`). Stop keeps what was done; Start resumes from there.

use crate::app::files::documents::{EventsDocument, Notice};
use crate::jobs::{JobEvent, JobHandle, JobQueue, Progress, ProgressUpdate, Waker};
use crate::twopoint::{
    self, Analysis, Batches, CoordinateGrid, EnergyCut, PostTrialSignificance, Scramble,
    ScrambleChoice, Summary, TwoPointConfig, TwoPointError, TwoPointRun,
};
use crossbeam_channel::{Receiver, Sender};
use std::time::{Duration, Instant};

/// A batch should take about this long, so plots update a few times a second.
const BATCH_TARGET: Duration = Duration::from_millis(300);
/// Largest batch.
const MAX_BATCH: u64 = 512;

/// Results so far of one analysis.
#[derive(Debug, Clone)]
pub struct TwoPointState {
    /// The event list analysed.
    pub document_id: u64,
    /// Energy-cut names ("all", "top10", ...).
    pub cut_names: Vec<String>,
    /// Events passing each cut.
    pub cut_passing: Vec<usize>,
    /// The cuts as applied (threshold, events passing, ties).
    pub cuts: Vec<EnergyCut>,
    /// Bin edges θ_k in degrees.
    pub bins_deg: Vec<f64>,
    /// Observed counts and the accumulated background.
    pub analysis: Analysis,
    /// Per-bin statistics of `analysis`.
    pub summary: Summary,
    /// Post-trial p-value of the most significant bin, a bound when no trial was as extreme.
    pub post_trial: PostTrialSignificance,
    /// Trials per second of the latest run.
    pub trials_per_second: f64,
    /// Back-end counting the pairs ("cpu", "cuda").
    pub backend: String,
    /// The grid every RA and Dec lies on, if any.
    pub coordinate_grid: Option<CoordinateGrid>,
    /// The scramble asked for (trials of different choices are never mixed).
    pub scramble_choice: ScrambleChoice,
    /// How the trials draw RA.
    pub scramble: Scramble,
}

/// What the worker sends.
#[derive(Debug)]
enum Update {
    /// Observed counts (or the resumed state) before any new trial.
    Started(Box<TwoPointState>),
    /// After a batch.
    Batch {
        analysis: Box<Analysis>,
        summary: Summary,
        post_trial: PostTrialSignificance,
        trials_per_second: f64,
    },
}

/// A run in progress.
#[derive(Debug)]
pub struct TrialsRun {
    /// The job.
    pub handle: JobHandle,
    /// The event list analysed.
    pub document_id: u64,
    /// Latest progress ("counting", "trials").
    pub progress: Option<ProgressUpdate>,
    updates: Receiver<Update>,
}

/// State of the two-point controls and results.
pub struct TwoPointPanel {
    /// Trials to reach in total.
    pub trials: u64,
    /// Seed of the scrambling.
    pub seed: u64,
    /// The run in progress.
    pub run: Option<TrialsRun>,
    /// Results so far.
    pub state: Option<TwoPointState>,
    /// Energy cut of the histogram.
    pub chosen_cut: usize,
    /// Angle bin of the histogram.
    pub chosen_bin: usize,
    /// Scramble RA on the continuum even when the coordinates lie on a grid.
    pub scramble_continuous: bool,
    /// The detected grid of the latest event list asked about (document id, grid).
    grid_of_document: Option<(u64, Option<CoordinateGrid>)>,
    queue: JobQueue<()>,
    waker: Waker,
}

impl TwoPointPanel {
    /// Idle; jobs wake the UI through `waker`.
    pub fn new(waker: Waker) -> Self {
        Self {
            trials: 1000,
            seed: 1,
            run: None,
            state: None,
            chosen_cut: 0,
            chosen_bin: 19,
            scramble_continuous: false,
            grid_of_document: None,
            queue: JobQueue::new(waker.clone()),
            waker,
        }
    }

    /// The scramble the controls ask for.
    pub fn scramble_choice(&self) -> ScrambleChoice {
        if self.scramble_continuous {
            ScrambleChoice::Continuous
        } else {
            ScrambleChoice::Auto
        }
    }

    /// The grid the RA and Dec of `document` lie on (detected once per list).
    pub fn coordinate_grid_of(&mut self, document: &EventsDocument) -> Option<CoordinateGrid> {
        match self.grid_of_document {
            Some((id, grid)) if id == document.id => grid,
            _ => {
                let grid = twopoint::detect_grid(&document.events.ra, &document.events.dec);
                self.grid_of_document = Some((document.id, grid));
                grid
            }
        }
    }

    /// Whether the results of `document_id` can be continued with the current seed and scramble.
    pub fn resumable(&self, document_id: u64) -> bool {
        self.state_of(document_id).is_some_and(|s| {
            s.analysis.seed == self.seed
                && s.scramble_choice == self.scramble_choice()
                && s.analysis.trials() > 0
        })
    }

    /// Whether trials are running.
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// The results for the event list `document_id`, if the latest analysis was of it.
    pub fn state_of(&self, document_id: u64) -> Option<&TwoPointState> {
        self.state.as_ref().filter(|s| s.document_id == document_id)
    }

    /// Counts the observed pairs of `document` and runs trials up to [`Self::trials`], resuming
    /// the analysis of the same list and seed where one exists.
    pub fn start(&mut self, document: &EventsDocument) {
        if let Some(run) = self.run.take() {
            run.handle.cancel();
        }
        let resume = self
            .state
            .as_ref()
            .filter(|s| {
                s.document_id == document.id
                    && s.analysis.seed == self.seed
                    && s.scramble_choice == self.scramble_choice()
            })
            .map(|s| s.analysis.clone());
        let (tx, rx) = crossbeam_channel::unbounded();
        let events = document.events.clone();
        let (document_id, seed, target) = (document.id, self.seed, self.trials);
        let scramble = self.scramble_choice();
        let waker = self.waker.clone();
        let handle = self.queue.spawn(
            format!("two-point trials on {}", document.name),
            document.id,
            move |progress| {
                let job = AnalysisJob {
                    document_id,
                    seed,
                    scramble,
                    target,
                    tx: &tx,
                    waker: &waker,
                };
                job.run(&events, resume, progress)
            },
        );
        self.run = Some(TrialsRun {
            handle,
            document_id: document.id,
            progress: None,
            updates: rx,
        });
    }

    /// Asks the run to stop after the trial in progress; results so far stay.
    pub fn stop(&mut self) {
        if let Some(run) = &self.run {
            run.handle.cancel();
        }
    }

    /// The event list `document_id` was closed: cancels its trials (returning their job's
    /// label) and forgets its results, so nothing runs or shows under another list's name.
    pub fn forget(&mut self, document_id: u64) -> Option<String> {
        if self
            .state
            .as_ref()
            .is_some_and(|s| s.document_id == document_id)
        {
            self.state = None;
        }
        let run = self.run.take_if(|r| r.document_id == document_id)?;
        run.handle.cancel();
        Some(run.handle.label)
    }

    /// Forgets the results.
    pub fn reset(&mut self) {
        self.stop();
        self.state = None;
    }

    /// Takes in the worker's messages without waiting.
    pub fn poll(&mut self) -> Vec<Notice> {
        let mut notices = Vec::new();
        if let Some(run) = &self.run {
            while let Ok(update) = run.updates.try_recv() {
                match update {
                    Update::Started(state) => {
                        self.chosen_cut = self.chosen_cut.min(state.cut_names.len() - 1);
                        self.chosen_bin = self.chosen_bin.min(state.bins_deg.len() - 1);
                        self.state = Some(*state);
                    }
                    Update::Batch {
                        analysis,
                        summary,
                        post_trial,
                        trials_per_second,
                    } => {
                        if let Some(state) = &mut self.state {
                            state.analysis = *analysis;
                            state.summary = summary;
                            state.post_trial = post_trial;
                            state.trials_per_second = trials_per_second;
                        }
                    }
                }
            }
        }
        for event in self.queue.drain() {
            let Some(run) = self.run.as_mut().filter(|r| r.handle.id == event.id()) else {
                continue;
            };
            match event {
                JobEvent::Progress { update, .. } => run.progress = Some(update),
                JobEvent::Done { .. } => {
                    self.run = None;
                    if let Some(state) = &self.state {
                        notices.push(Notice::Info(format!(
                            "two-point: {} trials done",
                            state.analysis.trials()
                        )));
                    }
                }
                JobEvent::Failed { error, .. } => {
                    self.run = None;
                    notices.push(Notice::Error(format!("two-point analysis: {error}")));
                }
                JobEvent::Cancelled { .. } => {
                    self.run = None;
                    notices.push(Notice::Info("two-point trials stopped".to_owned()));
                }
            }
        }
        notices
    }
}

/// What the worker needs besides the events: whose analysis it is, what to reach, and where
/// to send the results.
struct AnalysisJob<'a> {
    document_id: u64,
    seed: u64,
    scramble: ScrambleChoice,
    target: u64,
    tx: &'a Sender<Update>,
    waker: &'a Waker,
}

impl AnalysisJob<'_> {
    /// The worker: prepare, observe (or resume), then batches of trials until `target`, each
    /// sized to take about [`BATCH_TARGET`], every one sent to the UI.
    fn run(
        &self,
        events: &crate::data::EventList,
        resume: Option<Analysis>,
        progress: &Progress,
    ) -> Result<(), TwoPointError> {
        progress.report("counting pairs", 0, 1);
        // The window's one back-end (counts are identical on CUDA and the CPU).
        let backend = crate::app::window_backend();
        let mut prepared = twopoint::prepare(events, &TwoPointConfig::default())?;
        prepared.set_scramble(self.scramble)?;
        let mut run = match resume {
            Some(analysis) => TwoPointRun::resume(prepared, analysis, &backend),
            None => TwoPointRun::observe(prepared, self.seed, 0, &backend)?,
        };
        progress.report("counting pairs", 1, 1);
        let (prepared, analysis) = (&run.prepared, &run.analysis);
        let state = TwoPointState {
            document_id: self.document_id,
            cut_names: prepared.cuts.iter().map(|c| c.name.clone()).collect(),
            cut_passing: prepared.cuts.iter().map(|c| c.n_pass).collect(),
            cuts: prepared.cuts.clone(),
            bins_deg: prepared.bins.edges_deg.clone(),
            summary: analysis.summary(),
            post_trial: analysis.post_trial(),
            analysis: analysis.clone(),
            trials_per_second: 0.0,
            backend: backend.kind().name().to_owned(),
            coordinate_grid: prepared.coordinate_grid,
            scramble_choice: self.scramble,
            scramble: prepared.scramble,
        };
        let _ = self.tx.send(Update::Started(Box::new(state)));
        (self.waker)();
        let started = Instant::now();
        let first = run.analysis.trials();
        let batches = Batches::Paced {
            target: BATCH_TARGET,
            max: MAX_BATCH,
        };
        run.run_trials(self.target, batches, progress, |analysis| {
            let done = (analysis.trials() - first) as f64;
            let _ = self.tx.send(Update::Batch {
                summary: analysis.summary(),
                post_trial: analysis.post_trial(),
                analysis: Box::new(analysis.clone()),
                trials_per_second: done / started.elapsed().as_secs_f64().max(1e-9),
            });
            (self.waker)();
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::worker::no_waker;
    use std::sync::Arc;

    fn wait_idle(panel: &mut TwoPointPanel) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while panel.is_running() {
            panel.poll();
            assert!(Instant::now() < deadline, "trials did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
        panel.poll();
    }

    #[test]
    fn trials_stream_in_and_resume_to_the_same_result_as_one_library_run() {
        let events = crate::data::demo::demo_events(3_000, 5);
        let document = EventsDocument {
            id: 3,
            name: "demo".to_owned(),
            path: None,
            events: Arc::new(events.clone()),
        };
        let mut panel = TwoPointPanel::new(no_waker());
        panel.seed = 9;
        panel.trials = 12;
        panel.start(&document);
        wait_idle(&mut panel);
        panel.trials = 20;
        panel.start(&document);
        wait_idle(&mut panel);
        let state = panel.state_of(3).expect("results");
        assert_eq!(state.analysis.trials(), 20);
        // The library in one go: same observed counts and the same statistics.
        let prepared = twopoint::prepare(&events, &TwoPointConfig::default()).expect("prepare");
        let mut direct = Analysis::observe(&prepared, 9, 0).expect("observe");
        twopoint::run_trials(&prepared, 9, 0..20, 20, &Progress::none(), |b| {
            direct.add_batch(b).expect("batch");
        })
        .expect("trials");
        assert_eq!(state.analysis.observed, direct.observed);
        // NaN (0/0 TS of empty cuts) compares unequal: compare the JSON, where NaN is null.
        let json = |s: &Summary| serde_json::to_string(s).expect("json");
        assert_eq!(json(&state.summary), json(&direct.summary()));
        assert_eq!(state.post_trial, direct.post_trial());
        assert_eq!(state.cut_names, vec!["all", "top10", "top1", "top0.1"]);
        assert!(panel.state_of(4).is_none());
    }

    /// A list rounded to 0.1° runs grid trials by default; the continuum choice starts afresh
    /// (no mixing of scrambles) and gives the library's continuous trials.
    #[test]
    fn rounded_lists_scramble_on_their_grid_unless_asked_otherwise() {
        let mut events = crate::data::demo::demo_events(2_000, 5);
        let round =
            |x: &mut f64| *x = ((x.to_degrees() * 10.0).round() / 10.0 % 360.0).to_radians();
        events.ra.iter_mut().for_each(round);
        events.dec.iter_mut().for_each(round);
        let document = EventsDocument {
            id: 8,
            name: "rounded".to_owned(),
            path: None,
            events: Arc::new(events.clone()),
        };
        let mut panel = TwoPointPanel::new(no_waker());
        let grid = panel.coordinate_grid_of(&document).expect("grid");
        assert_eq!(grid.step_deg(), 0.1);
        panel.trials = 4;
        panel.start(&document);
        wait_idle(&mut panel);
        let state = panel.state_of(8).expect("results");
        assert_eq!(state.coordinate_grid, Some(grid));
        assert_eq!(state.scramble, Scramble::Grid(grid));
        assert!(panel.resumable(8));

        panel.scramble_continuous = true;
        assert!(!panel.resumable(8));
        panel.start(&document);
        wait_idle(&mut panel);
        let state = panel.state_of(8).expect("results");
        assert_eq!(state.scramble, Scramble::Continuous);
        assert_eq!(state.analysis.trials(), 4);
        let mut prepared = twopoint::prepare(&events, &TwoPointConfig::default()).expect("prepare");
        prepared
            .set_scramble(ScrambleChoice::Continuous)
            .expect("continuous");
        let mut direct = Analysis::observe(&prepared, 1, 0).expect("observe");
        twopoint::run_trials(&prepared, 1, 0..4, 4, &Progress::none(), |b| {
            direct.add_batch(b).expect("batch");
        })
        .expect("trials");
        let json = |s: &Summary| serde_json::to_string(s).expect("json");
        assert_eq!(json(&state.summary), json(&direct.summary()));
    }
}
