//! `haloscope bench twopoint --backend cuda`: per-trial time of batched scrambled trials on the
//! GPU for several trials-per-launch (the counter and kernels `haloscope twopoint` runs, which
//! launches 128 at a time), beside one CPU trial on the same host, with the counts of the first
//! trial checked equal.

use crate::backend::{Backend, BackendChoice, DeviceSelection};
use crate::data::events;
use crate::jobs::Progress;
use crate::twopoint::cuda::{CudaPairCounter, DEFAULT_TRIALS_PER_LAUNCH};
use crate::twopoint::{
    Batches, Prepared, TwoPointConfig, TwoPointRun, count_pairs, default_batch, prepare,
    scrambled_ra_on,
};
use anyhow::Context;
use clap::Args;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The CUDA options of `haloscope bench twopoint`.
#[derive(Debug, Args)]
pub struct CudaBenchArgs {
    /// Back-end to benchmark (`cuda`: GPU trials beside one CPU trial on the same host).
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// CUDA devices of the end-to-end run (trials split by index across them); the per-launch
    /// timings use the first.
    #[command(flatten)]
    pub devices: crate::cli::devices_args::DevicesArgs,
    /// Trials per launch to time on the GPU.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32,128,256")]
    pub launch_sizes: Vec<usize>,
    /// Trials timed per launch size (rounded up to whole launches).
    #[arg(long, default_value_t = 512)]
    pub gpu_trials: u64,
    /// Trials of the end-to-end run (what `haloscope twopoint --backend cuda` does after
    /// reading: observed counts, trials with their statistics, summary and post-trial p);
    /// 0 = skip it.
    #[arg(long, default_value_t = 20_000)]
    pub end_to_end_trials: u64,
}

/// Runs the CUDA benchmark; one JSON object on stdout with `--json`, else a table on stderr.
/// `files` are concatenated; the CPU trial runs on `threads` threads (0: all cores).
pub fn run(
    args: &CudaBenchArgs,
    files: &[PathBuf],
    threads: usize,
    json_out: bool,
) -> anyhow::Result<()> {
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let list = events::read(&paths, &Progress::none())?;
    let prepared = prepare(&list, &TwoPointConfig::default()).context("two-point configuration")?;
    let backend = args
        .devices
        .resolve(BackendChoice::Cuda, DeviceSelection::All)
        .context("--backend cuda")?;
    let device = backend.device().context("--backend cuda: no device")?;
    let seed = 2011u64;

    let start = Instant::now();
    let mut counter = CudaPairCounter::with_trials_per_launch(device, &prepared, 1)?;
    let observed_gpu = counter.observed()?;
    let first_call_s = start.elapsed().as_secs_f64();
    let observed_gpu_s = min_seconds(3, || counter.observed().map(drop))?;
    let first_trial_gpu = counter.trials(seed, 0..1)?;

    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("building the thread pool")?;
    let ra = scrambled_ra_on(prepared.scramble, prepared.len(), seed, 0);
    let (cpu_trial, cpu_trial_s, observed_cpu, observed_cpu_s) = pool.install(|| {
        let cpu_trial = count_pairs(&prepared, Some(&ra))?;
        let cpu_trial_s = min_seconds(3, || count_pairs(&prepared, Some(&ra)).map(drop))?;
        let observed_cpu = count_pairs(&prepared, None)?;
        let observed_cpu_s = min_seconds(3, || count_pairs(&prepared, None).map(drop))?;
        anyhow::Ok((cpu_trial, cpu_trial_s, observed_cpu, observed_cpu_s))
    })?;
    anyhow::ensure!(
        observed_cpu == observed_gpu,
        "observed counts differ between CPU and GPU"
    );
    anyhow::ensure!(
        first_trial_gpu.first() == Some(&cpu_trial),
        "trial 0 counts differ between CPU and GPU"
    );

    let mut rows = Vec::new();
    for &size in &args.launch_sizes {
        let mut counter = CudaPairCounter::with_trials_per_launch(device, &prepared, size)?;
        let size = counter.trials_per_launch() as u64;
        counter.trials(seed, 0..size)?; // warm-up launch
        let trials = args.gpu_trials.div_ceil(size).max(1) * size;
        let start = Instant::now();
        let counts = counter.trials(seed, 1000..1000 + trials)?;
        let seconds = start.elapsed().as_secs_f64();
        anyhow::ensure!(counts.len() as u64 == trials, "missing trials");
        let per_trial_ms = seconds * 1e3 / trials as f64;
        rows.push(json!({
            "trials_per_launch": size,
            "trials": trials,
            "seconds": seconds,
            "per_trial_ms": per_trial_ms,
            "trials_per_second": trials as f64 / seconds,
            "minutes_for_1e7_trials": per_trial_ms * 1e7 / 6e4,
            "speedup_vs_cpu_trial": cpu_trial_s * 1e3 / per_trial_ms,
            "pairs_left_to_host": counter.pairs_left_to_host(),
        }));
    }
    let kernel_ms = rows
        .iter()
        .find(|row| row["trials_per_launch"] == json!(DEFAULT_TRIALS_PER_LAUNCH))
        .and_then(|row| row["per_trial_ms"].as_f64());
    let end_to_end = (args.end_to_end_trials > 0)
        .then(|| end_to_end(&backend, &prepared, seed, args.end_to_end_trials, kernel_ms))
        .transpose()?;
    let report = json!({
        "device": device.info().to_string(),
        "count_kernel": counter.kernel().function_name(),
        "files": files.iter().map(|f| crate::cli::json_path(f)).collect::<Vec<_>>(),
        "n_events": prepared.len(),
        "pairs_within_max_angle_trial0": cpu_trial.get(0, prepared.bins.len() - 1),
        "first_gpu_call_incl_compile_s": first_call_s,
        "observed_gpu_ms": observed_gpu_s * 1e3,
        "observed_cpu_ms": observed_cpu_s * 1e3,
        "cpu_threads": threads,
        "cpu_trial_ms": cpu_trial_s * 1e3,
        "gpu": rows,
        "end_to_end": end_to_end,
        "counts_equal_cpu": true,
    });
    if json_out {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        eprintln!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}

/// The CLI's path after reading, timed by stage: [`TwoPointRun`] observed counts, `trials`
/// trials in the CLI's default batches (split by index over every `--devices` device) with the
/// statistics beside them, then the summary and post-trial p; per trial next to the kernel's
/// (`kernel_ms`, the launches the CLI uses, on the first device).
fn end_to_end(
    backend: &Backend,
    prepared: &Prepared,
    seed: u64,
    trials: u64,
    kernel_ms: Option<f64>,
) -> anyhow::Result<serde_json::Value> {
    let start = Instant::now();
    let mut run = TwoPointRun::observe(prepared.clone(), seed, 0, backend)?;
    let observe_s = start.elapsed().as_secs_f64();
    let batches = Batches::Fixed(default_batch(backend));
    let trials_start = Instant::now();
    run.run_trials(trials, batches, &Progress::none(), |_| {})?;
    let trials_s = trials_start.elapsed().as_secs_f64();
    let statistics_start = Instant::now();
    let (summary, post_trial) = run.analysis.statistics();
    let statistics_s = statistics_start.elapsed().as_secs_f64();
    let seconds = start.elapsed().as_secs_f64();
    let per_trial_ms = seconds * 1e3 / trials as f64;
    Ok(json!({
        "devices": backend.devices().iter().map(|d| d.info().to_string()).collect::<Vec<_>>(),
        "trials": trials,
        "seconds": seconds,
        "observe_s": observe_s,
        "trials_s": trials_s,
        "statistics_s": statistics_s,
        "per_trial_ms": per_trial_ms,
        "kernel_per_trial_ms": kernel_ms,
        "end_to_end_over_kernel": kernel_ms.map(|k| per_trial_ms / k),
        "bins": summary.bins.len(),
        "post_trial": post_trial.to_json(),
    }))
}

fn min_seconds(
    repeats: usize,
    mut f: impl FnMut() -> Result<(), crate::twopoint::TwoPointError>,
) -> anyhow::Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}
