//! `haloscope bench twopoint`: one scrambled trial on the IC86-2011 events (138,322), timed,
//! beside Corrfunc's `DDtheta_mocks` run by scripts/bench/twopoint_corrfunc.py with the same threads.

use crate::data::events;
use crate::jobs::Progress;
use crate::twopoint::{
    Prepared, TwoPointConfig, bins::chord2, bins::unit_vector, count_pairs, prepare,
    scrambled_ra_on,
};
use anyhow::Context;
use clap::Args;
use rayon::prelude::*;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `haloscope bench twopoint`.
#[derive(Debug, Args)]
pub struct BenchTwopointArgs {
    /// Event files (default: the shared IC86-2011 upgoing and downgoing lists).
    pub files: Vec<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Timed repeats; the minimum is reported.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Also run the O(N²) brute force over all pairs, check it equals the fast counts, and
    /// measure how close the nearest non-tie pairs come to a bin edge.
    #[arg(long)]
    pub brute_force: bool,
    /// With --brute-force: write pairs whose c² is within 1e-6 (relative) of an edge to this
    /// file as `i j bin relative_gap` (input-order indices), for the exact-decimal check.
    #[arg(long)]
    pub dump_edges: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// `--backend cuda` and its options.
    #[command(flatten)]
    pub cuda: super::twopoint_cuda::CudaBenchArgs,
}

/// Default benchmark input: the shared IC86-2011 release, upgoing then downgoing.
fn default_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/events/IC86-2011");
    vec![
        dir.join("upgoing_events.txt"),
        dir.join("downgoing_events.txt"),
    ]
}

/// Runs `haloscope bench twopoint`.
pub fn run(args: BenchTwopointArgs) -> anyhow::Result<()> {
    let files = if args.files.is_empty() {
        default_files()
    } else {
        args.files.clone()
    };
    if args.cuda.backend == crate::backend::BackendChoice::Cuda {
        return super::twopoint_cuda::run(&args.cuda, &files, args.threads, args.json);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.max(1))
        .build()
        .context("building the thread pool")?;
    pool.install(|| bench(&args, &files))
}

/// CPU seconds (user + system, all threads) used by this process so far, from /proc/self/stat
/// (Linux; clock ticks of 1/100 s); `None` elsewhere.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Timing of repeated runs: the fastest wall time, and the mean CPU time per run (all threads;
/// robust when other processes load the machine).
#[derive(Debug, Clone, Copy)]
struct Timing {
    wall_min: f64,
    cpu_mean: Option<f64>,
}

fn timed(repeats: usize, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Timing> {
    let mut wall_min = f64::INFINITY;
    let cpu_start = process_cpu_seconds();
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        f()?;
        wall_min = wall_min.min(start.elapsed().as_secs_f64());
    }
    let cpu_mean = match (cpu_start, process_cpu_seconds()) {
        (Some(a), Some(b)) => Some((b - a) / repeats.max(1) as f64),
        _ => None,
    };
    Ok(Timing { wall_min, cpu_mean })
}

fn bench(args: &BenchTwopointArgs, files: &[PathBuf]) -> anyhow::Result<()> {
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let start = Instant::now();
    let list = events::read(&paths, &Progress::none())?;
    let read_s = start.elapsed().as_secs_f64();
    let config = TwoPointConfig::default();
    let mut prepared = None;
    let prepare_t = timed(args.repeats, || {
        prepared = Some(prepare(&list, &config)?);
        Ok(())
    })?;
    let prepared = prepared.context("no repeats ran")?;
    let mut observed = None;
    let observed_t = timed(args.repeats, || {
        observed = Some(count_pairs(&prepared, None)?);
        Ok(())
    })?;
    let observed = observed.context("no repeats ran")?;
    let mut trial = 0u64;
    let trial_t = timed(args.repeats, || {
        let ra = scrambled_ra_on(prepared.scramble, prepared.len(), 1, trial);
        count_pairs(&prepared, Some(&ra))?;
        trial += 1;
        Ok(())
    })?;
    let mut report = json!({
        "n_events": prepared.len(),
        "threads": args.threads,
        "repeats": args.repeats,
        "read_seconds": read_s,
        "prepare_seconds": prepare_t.wall_min,
        "observed_count_seconds": observed_t.wall_min,
        "observed_count_cpu_seconds": observed_t.cpu_mean,
        "scrambled_trial_seconds": trial_t.wall_min,
        "scrambled_trial_cpu_seconds": trial_t.cpu_mean,
        "observed_all": observed.cut(0),
        "backend": "cpu",
    });
    if args.brute_force {
        let start = Instant::now();
        let (agrees, closest) =
            brute_force_check(&prepared, &observed, args.dump_edges.as_deref())?;
        report["brute_force_seconds"] = json!(start.elapsed().as_secs_f64());
        report["brute_force_agrees"] = json!(agrees);
        report["edge_gaps"] = closest;
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        eprintln!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}

/// Counts every pair by brute force, compares with `observed`, and summarises how close pairs
/// come to an edge in relative c² (ties are within ~1e-12; non-ties should be far away).
fn brute_force_check(
    prepared: &Prepared,
    observed: &crate::twopoint::Counts,
    dump: Option<&Path>,
) -> anyhow::Result<(bool, serde_json::Value)> {
    let brute = crate::twopoint::count_pairs_dec_sweep(prepared);
    let agrees = &brute == observed;
    let pos: Vec<[f64; 3]> = prepared
        .ra
        .iter()
        .zip(&prepared.dec)
        .map(|(&a, &d)| unit_vector(a, d))
        .collect();
    let edges: Vec<f64> = prepared
        .bins
        .chord2_max
        .iter()
        .map(|t| t / (1.0 + crate::twopoint::bins::EDGE_TOLERANCE))
        .collect();
    let limit = prepared.bins.chord2_limit() * (1.0 + 1e-6);
    let near: Vec<(u32, u32, usize, f64)> = (0..pos.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let pos = &pos;
            let edges = &edges;
            // Sorted by declination: stop past θ_max (5°) plus margin.
            (i + 1..pos.len())
                .take_while(move |&j| prepared.dec[j] - prepared.dec[i] <= 0.1)
                .filter_map(move |j| {
                    let c2 = chord2(&pos[i], &pos[j]);
                    if c2 > limit {
                        return None;
                    }
                    edges.iter().enumerate().find_map(|(b, &e)| {
                        let gap = c2 / e - 1.0;
                        (gap.abs() < 1e-6).then_some((i as u32, j as u32, b, gap))
                    })
                })
        })
        .collect();
    let ties = near.iter().filter(|n| n.3.abs() < 1e-11).count();
    let tie_max = near
        .iter()
        .filter(|n| n.3.abs() < 1e-11)
        .map(|n| n.3.abs())
        .fold(0.0, f64::max);
    let non_tie_min = near
        .iter()
        .filter(|n| n.3.abs() >= 1e-11)
        .map(|n| n.3.abs())
        .fold(f64::INFINITY, f64::min);
    if let Some(path) = dump {
        crate::output::write_atomically_io(path, |out| {
            for &(i, j, b, gap) in &near {
                writeln!(
                    out,
                    "{} {} {} {:e}",
                    prepared.original_index[i as usize],
                    prepared.original_index[j as usize],
                    b,
                    gap
                )?;
            }
            Ok(())
        })?;
    }
    Ok((
        agrees,
        json!({
            "pairs_within_1e-6": near.len(),
            "ties_within_1e-11": ties,
            "largest_tie_gap": tie_max,
            "smallest_non_tie_gap": non_tie_min,
        }),
    ))
}
