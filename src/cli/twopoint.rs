//! `haloscope twopoint`.

use crate::backend::{Backend, BackendChoice, DeviceSelection};
use crate::cluster::Collective;
use crate::data::events;
use crate::jobs::Progress;
use crate::twopoint::analysis::check_trials;
use crate::twopoint::cuda::load_kernels;
use crate::twopoint::ranks::run_trials_across;
use crate::twopoint::{
    Analysis, Batches, PostTrialSignificance, Prepared, ScrambleChoice, Summary, TwoPointConfig,
    TwoPointError, TwoPointRun, bin_edges_on_grid, default_batch, edges_on_grid_note, prepare,
    scramble_note,
};
use anyhow::Context;
use clap::Args;
use rayon::prelude::*;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `haloscope twopoint`.
#[derive(Debug, Args)]
pub struct TwopointArgs {
    /// Event files, concatenated in the order given.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Scrambled-RA trials (0: observed counts only).
    #[arg(long, default_value_t = 100)]
    pub trials: u64,
    /// RNG seed of the trials.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Index of the first trial (to split a long run into reproducible pieces).
    #[arg(long, default_value_t = 0)]
    pub first_trial: u64,
    /// Trials per batch (progress and cancellation happen between batches); default 8 on the
    /// CPU and one full launch (the GPU counter's trials per launch) on CUDA.
    #[arg(long)]
    pub batch: Option<usize>,
    /// Angle-bin step in degrees.
    #[arg(long, default_value_t = 0.25)]
    pub bin_step: f64,
    /// Number of angle bins.
    #[arg(long, default_value_t = 20)]
    pub bins: usize,
    /// Energy-cut fractions (1 = all events).
    #[arg(long, value_delimiter = ',', default_value = "1,0.1,0.01,0.001")]
    pub cuts: Vec<f64>,
    /// How trials draw RA: auto = on the coordinates' grid when RA and Dec lie on one (rounded
    /// catalogues), else on the continuum.
    #[arg(long, value_enum, default_value_t = ScrambleChoice::Auto)]
    pub scramble: ScrambleChoice,
    /// Pair-counting back-end.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// CUDA devices: trials are split by index across them.
    #[command(flatten)]
    pub devices: super::devices_args::DevicesArgs,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Most trials per batch: a batch's counts are held until it is handed over.
const MAX_BATCH: usize = 1 << 20;

/// Runs `haloscope twopoint`: in one process, or as one rank of `mpirun -n K haloscope
/// twopoint …` (the ranks split the trials; rank 0 merges them and writes the report).
pub fn run(args: TwopointArgs, collective: &dyn Collective) -> anyhow::Result<()> {
    let mut stages = StageSeconds::start();
    let progress = if collective.is_root() {
        super::progress_bar::terminal_progress()
    } else {
        Progress::none()
    };
    // Every rank reads and prepares alike; one that fails ends them all, before the trials.
    let ready = observe(&args, collective, &mut stages, &progress);
    if collective.any_failed(ready.is_err()) {
        return Err(ready
            .err()
            .unwrap_or_else(|| TwoPointError::OtherRank.into()));
    }
    let (mut run, batch) = ready?;
    if collective.size() > 1 {
        stages.time("trials", || {
            run_trials_across(&mut run, collective, args.trials, batch, &progress)
        })?;
        if !collective.is_root() {
            return Ok(());
        }
    } else {
        stages.time("trials", || {
            run.run_trials(args.trials, Batches::Fixed(batch), &progress, |_| {})
        })?;
    }
    report(&args, &run, &mut stages)
}

/// Reads and prepares the events, checks the options and counts the observed pairs on this
/// rank's devices; the run and its trials per batch.
fn observe(
    args: &TwopointArgs,
    collective: &dyn Collective,
    stages: &mut StageSeconds,
    progress: &Progress,
) -> anyhow::Result<(TwoPointRun, usize)> {
    // Event lists must be regular files: a FIFO would block the read forever.
    let mut plan = crate::output::OutputPlan::new();
    for file in &args.files {
        plan.input("FILE", file)?;
    }
    // Opening the devices (driver contexts, the kernels' compile or cache load) overlaps the
    // read and preparation of the events; its error, if any, is reported first, as when it ran
    // before them.
    let (opened, prepared) = std::thread::scope(|scope| {
        let reading = scope.spawn(|| read_and_prepare(args, stages, progress));
        let opened = open_backend(args, collective);
        let prepared = reading
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("reading the events panicked")));
        (opened, prepared)
    });
    let (backend, open_seconds) = opened?;
    // Beside "read" and "prepare", not after them: they overlap.
    stages.record("open", open_seconds.open);
    stages.record("kernels", open_seconds.kernels);
    let prepared = prepared?;
    check_trials(args.trials, prepared.bins.len(), prepared.cuts.len())
        .map_err(|err| anyhow::anyhow!("--trials: {err}"))?;
    if let Some(batch) = args.batch
        && !(1..=MAX_BATCH).contains(&batch)
    {
        anyhow::bail!("--batch {batch}: a batch has 1 to {MAX_BATCH} trials");
    }
    let run = stages.time("observe", || {
        TwoPointRun::observe(prepared, args.seed, args.first_trial, &backend)
    })?;
    let batch = args.batch.unwrap_or_else(|| default_batch(&backend));
    Ok((run, batch))
}

/// Wall-clock seconds of [`open_backend`]'s two steps.
struct OpenSeconds {
    /// Resolving the back-end: the driver and each device's context.
    open: f64,
    /// The counting kernels' compile or cache load on every device.
    kernels: f64,
}

/// This rank's back-end, with the CUDA counting kernels loaded on each of its devices.
fn open_backend(
    args: &TwopointArgs,
    collective: &dyn Collective,
) -> anyhow::Result<(Backend, OpenSeconds)> {
    let start = Instant::now();
    let backend = args
        .devices
        .resolve_for_rank(args.backend, collective, DeviceSelection::All)
        .context("--backend cuda")?;
    let opened = Instant::now();
    // Every device's kernels at once. A failure here is reported by the first count on that
    // device, with its context.
    backend.devices().par_iter().for_each(|device| {
        let _ = load_kernels(device);
    });
    let seconds = OpenSeconds {
        open: (opened - start).as_secs_f64(),
        kernels: opened.elapsed().as_secs_f64(),
    };
    Ok((backend, seconds))
}

/// The events of `args.files`, read and prepared for counting.
fn read_and_prepare(
    args: &TwopointArgs,
    stages: &mut StageSeconds,
    progress: &Progress,
) -> anyhow::Result<Prepared> {
    let paths: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    let list = stages.time("read", || events::read(&paths, progress))?;
    let config = TwoPointConfig {
        bin_step_deg: args.bin_step,
        bin_count: args.bins,
        cut_fractions: args.cuts.clone(),
    };
    stages.time("prepare", || -> anyhow::Result<_> {
        let mut prepared = prepare(&list, &config).context("two-point configuration")?;
        prepared.set_scramble(args.scramble).context("--scramble")?;
        Ok(prepared)
    })
}

/// The statistics of `run`, as JSON on stdout or a table on stderr.
fn report(args: &TwopointArgs, run: &TwoPointRun, stages: &mut StageSeconds) -> anyhow::Result<()> {
    let (prepared, analysis) = (&run.prepared, &run.analysis);
    let backend = run.backend().kind().name();
    let (summary, post_trial) = stages.time("statistics", || analysis.statistics());
    let seconds = stages.total();
    let report = report_json(
        args, prepared, analysis, &summary, post_trial, backend, stages,
    );
    if args.json {
        let report = crate::cli::with_lossy_note(report, args.files.iter().map(PathBuf::as_path));
        println!("{}", serde_json::to_string(&report)?);
    } else {
        eprint!(
            "{}",
            human_report(prepared, analysis, &summary, post_trial, seconds)
        );
    }
    Ok(())
}

/// Per-cut arrays of one statistic, keyed by cut name.
fn per_cut(prepared: &Prepared, n_bins: usize, value: impl Fn(usize, usize) -> Value) -> Value {
    let mut map = Map::new();
    for (c, cut) in prepared.cuts.iter().enumerate() {
        map.insert(
            cut.name.clone(),
            Value::Array((0..n_bins).map(|b| value(c, b)).collect()),
        );
    }
    Value::Object(map)
}

/// The `--json` object (field names follow ../shared/reference/twopoint where they overlap).
fn report_json(
    args: &TwopointArgs,
    prepared: &Prepared,
    analysis: &Analysis,
    summary: &Summary,
    post_trial: PostTrialSignificance,
    backend: &str,
    stages: &StageSeconds,
) -> Value {
    let seconds = stages.total();
    let n_bins = prepared.bins.len();
    let mut cuts = Map::new();
    for cut in &prepared.cuts {
        cuts.insert(
            cut.name.clone(),
            json!({
                "fraction": cut.fraction,
                "k": cut.k,
                "threshold": cut.threshold,
                "n_pass": cut.n_pass,
                "threshold_log10_e": cut.threshold,
                "n_events": cut.n_pass,
                "ties_at_threshold": cut.ties_at_threshold(),
                "description": cut.description(),
            }),
        );
    }
    let stat = |f: fn(&crate::twopoint::BinStats) -> Value| {
        per_cut(prepared, n_bins, |c, b| f(summary.get(c, b)))
    };
    json!({
        "n_events": prepared.len(),
        "files": args.files.iter().map(|f| crate::cli::json_path(f)).collect::<Vec<_>>(),
        "bins_deg": prepared.bins.edges_deg,
        "energy_cuts": cuts,
        "coordinate_grid_deg": prepared.coordinate_grid.map(|g| g.step_deg()),
        "scramble": prepared.scramble.name(),
        "bin_edges_on_grid_deg": bin_edges_on_grid(&prepared.bins.edges_deg, prepared.coordinate_grid),
        "observed": {
            "counts": per_cut(prepared, n_bins, |c, b| json!(analysis.observed.get(c, b))),
        },
        "trials": analysis.trials(),
        "first_trial": analysis.first_trial,
        "seed": analysis.seed,
        "background_mean": stat(|s| json!(s.background_mean)),
        "background_variance": stat(|s| json!(s.background_variance)),
        "ts": stat(|s| json!(s.ts)),
        "p_value": stat(|s| json!(s.p_value)),
        "significance_sigma": stat(|s| json!(s.significance_sigma)),
        "background_fit": stat(|s| json!(s.fit)),
        "p_value_fit": stat(|s| json!(s.p_value_fit)),
        "significance_sigma_fit": stat(|s| json!(s.significance_sigma_fit)),
        // The one significance every face shows; fitted values only as marked extrapolations.
        "significance": per_cut(prepared, n_bins, |c, b| summary.significance(c, b).to_json()),
        // Kept for older readers: (as extreme + 1)/(trials + 1), the bound itself when no trial
        // was as extreme ("post_trial" says which).
        "post_trial_p": match post_trial {
            PostTrialSignificance::NoTrials => None,
            PostTrialSignificance::Resolved { p, .. } => Some(p),
            PostTrialSignificance::BeyondAllTrials { p_bound, .. } => Some(p_bound),
        },
        "post_trial": post_trial.to_json(),
        "backend": backend,
        "seconds": seconds,
        // Where the time went, so the end-to-end time per trial can be set beside the kernel's.
        "stage_seconds": stages.to_json(),
        "seconds_per_trial": (analysis.trials() > 0).then(|| seconds / analysis.trials() as f64),
    })
}

/// A short table per energy cut, for stderr.
fn human_report(
    prepared: &Prepared,
    analysis: &Analysis,
    summary: &Summary,
    post_trial: PostTrialSignificance,
    seconds: f64,
) -> String {
    let mut out = format!(
        "{} events, {} trials (seed {}), {:.2} s\n",
        prepared.len(),
        analysis.trials(),
        analysis.seed,
        seconds
    );
    out += &scramble_note(prepared.coordinate_grid, prepared.scramble);
    out.push('\n');
    if let Some(note) = edges_on_grid_note(&prepared.bins.edges_deg, prepared.coordinate_grid) {
        out += &note;
        out.push('\n');
    }
    for (c, cut) in prepared.cuts.iter().enumerate() {
        out += &format!(
            "{} [{}]\n  θ[deg]   observed   background        TS  significance\n",
            cut.description(),
            cut.name
        );
        for (b, theta) in prepared.bins.edges_deg.iter().enumerate() {
            let s = summary.get(c, b);
            out += &format!(
                "  {theta:6.2} {:10} {:12.1} {:9.4}  {}\n",
                s.observed,
                s.background_mean,
                s.ts,
                summary.significance(c, b).text()
            );
        }
    }
    if let Some((c, b)) = summary.most_significant() {
        out += &format!(
            "most significant bin: {} <= {:.2} deg, {}\n",
            prepared.cuts[c].name,
            prepared.bins.edges_deg[b],
            summary.significance(c, b).text()
        );
    }
    out += &format!("{} of the most significant bin\n", post_trial.text());
    out
}

/// Wall-clock seconds of the named stages of one run, in order, and of the whole run.
#[derive(Debug)]
struct StageSeconds {
    started: Instant,
    stages: Vec<(&'static str, f64)>,
}

impl StageSeconds {
    /// Starts the run's clock.
    fn start() -> Self {
        Self {
            started: Instant::now(),
            stages: Vec::new(),
        }
    }

    /// Seconds since [`Self::start`].
    fn total(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Runs `stage` and records its time under `name`.
    fn time<T>(&mut self, name: &'static str, stage: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = stage();
        self.stages.push((name, start.elapsed().as_secs_f64()));
        out
    }

    /// Records `seconds` under `name` for a stage timed elsewhere (on another thread).
    fn record(&mut self, name: &'static str, seconds: f64) {
        self.stages.push((name, seconds));
    }

    fn to_json(&self) -> Value {
        Value::Object(
            self.stages
                .iter()
                .map(|(name, s)| ((*name).to_owned(), json!(s)))
                .collect(),
        )
    }
}
