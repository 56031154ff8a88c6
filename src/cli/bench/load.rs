//! `haloscope bench load`: snapshot loading speed from a warm page cache, and peak memory.

use crate::data::gadget_hdf5::{self, GadgetWriteOptions};
use crate::data::tipsy::{self, TipsyWriteOptions};
use crate::data::{LoadOptions, Masses, Snapshot, demo, load_snapshot};
use crate::jobs::Progress;
use anyhow::Context;
use clap::Args;
use serde_json::json;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `haloscope bench load`.
#[derive(Debug, Args)]
pub struct BenchLoadArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Number of particles in the generated files.
    #[arg(long, default_value_t = 10_000_000)]
    pub n: u64,
    /// Where to write the files (a temporary directory when absent; files are kept here).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Timed loads per format (the best is reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
}

/// Runs `haloscope bench load`.
pub fn run(args: BenchLoadArgs) -> anyhow::Result<()> {
    let temp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("{}", d.display()))?;
            d.clone()
        }
        None => {
            temp = tempfile::tempdir().context("creating a temporary directory")?;
            temp.path().to_path_buf()
        }
    };
    let tipsy_path = dir.join(format!("bench_{}.tipsy", args.n));
    let hdf5_path = dir.join(format!("bench_{}.hdf5", args.n));
    let started = Instant::now();
    {
        let snapshot = demo::demo_snapshot(args.n, 1);
        let generated_s = started.elapsed().as_secs_f64();
        eprintln!("generated {} particles in {generated_s:.2} s", args.n);
        tipsy::write(&tipsy_path, &snapshot, &TipsyWriteOptions::default())?;
        gadget_hdf5::write(&hdf5_path, &snapshot, &GadgetWriteOptions::default())?;
    }
    let mut results = Vec::new();
    for (format, path) in [("tipsy", &tipsy_path), ("gadget-hdf5", &hdf5_path)] {
        results.push(measure(format, path, args.repeat.max(1))?);
    }
    if args.json {
        println!(
            "{}",
            json!({ "benchmark": "load", "n_particles": args.n, "results": results })
        );
    } else {
        for r in &results {
            eprintln!(
                "{:<12} {:>7.3} GB in {:>6.3} s = {:>5.2} GB/s (CPU {} s, load {}); peak RSS {:>7.1} MB (baseline {:.1} MB), \
                 particle data kept {:>7.1} MB, peak/kept {:.3}, (peak − baseline)/kept {:.3}",
                r["format"].as_str().unwrap_or("?"),
                r["file_bytes"].as_f64().unwrap_or(0.0) / 1e9,
                r["seconds"].as_f64().unwrap_or(0.0),
                r["gb_per_s"].as_f64().unwrap_or(0.0),
                r["cpu_seconds"],
                r["loadavg_1min"],
                r["peak_rss_bytes"].as_f64().unwrap_or(0.0) / 1e6,
                r["baseline_rss_bytes"].as_f64().unwrap_or(0.0) / 1e6,
                r["kept_bytes"].as_f64().unwrap_or(0.0) / 1e6,
                r["peak_over_kept"].as_f64().unwrap_or(0.0),
                r["peak_minus_baseline_over_kept"].as_f64().unwrap_or(0.0),
            );
        }
    }
    Ok(())
}

/// Warms the page cache, then times `repeat` loads (best kept) and records the peak RSS of one.
fn measure(format: &str, path: &Path, repeat: u32) -> anyhow::Result<serde_json::Value> {
    let file_bytes = warm_page_cache(path)?;
    let mut best = f64::INFINITY;
    let mut best_cpu = None;
    let mut peak = 0u64;
    let mut baseline = 0u64;
    let mut kept = 0u64;
    let mut n_particles = 0usize;
    for _ in 0..repeat {
        // Reset VmHWM so the peak is this load's (Linux ≥ 4.0, proc(5) clear_refs "5").
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        baseline = proc_status_bytes("VmRSS").unwrap_or(0);
        let cpu_start = process_cpu_seconds();
        let start = Instant::now();
        let snapshot = load_snapshot(path, &LoadOptions::default(), &Progress::none())?;
        let seconds = start.elapsed().as_secs_f64();
        if seconds < best {
            best = seconds;
            best_cpu = process_cpu_seconds()
                .zip(cpu_start)
                .map(|(b, a)| ((b - a) * 100.0).round() / 100.0);
        }
        peak = if reset {
            proc_status_bytes("VmHWM").unwrap_or(0)
        } else {
            0
        };
        kept = kept_bytes(&snapshot);
        n_particles = snapshot.n_particles();
        drop(snapshot);
    }
    Ok(json!({
        "format": format,
        "file": path.display().to_string(),
        "n_particles": n_particles,
        "file_bytes": file_bytes,
        "seconds": best,
        "gb_per_s": file_bytes as f64 / best / 1e9,
        // CPU time (user + system, all threads) of the fastest load: on a shared machine the
        // wall time includes waiting for a core, the CPU time does not.
        "cpu_seconds": best_cpu,
        "loadavg_1min": load_average(),
        "peak_rss_bytes": peak,
        "baseline_rss_bytes": baseline,
        "kept_bytes": kept,
        "peak_over_kept": peak as f64 / kept.max(1) as f64,
        "peak_minus_baseline_over_kept": peak.saturating_sub(baseline) as f64 / kept.max(1) as f64,
    }))
}

/// Reads the whole file once (into a small reused buffer) so the timed loads hit the page cache.
fn warm_page_cache(path: &Path) -> anyhow::Result<u64> {
    let mut file = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    let mut buf = vec![0u8; 8 << 20];
    let mut total = 0u64;
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("{}", path.display()))?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

/// User + system CPU seconds of this process, all threads (proc(5) /proc/self/stat fields 14
/// and 15, in clock ticks of 1/100 s on Linux).
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The 1-minute load average (how busy the shared machine was).
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A `kB` line of /proc/self/status, in bytes.
fn proc_status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Bytes of particle data a snapshot holds (vector lengths × element sizes).
fn kept_bytes(s: &Snapshot) -> u64 {
    s.species
        .iter()
        .map(|sp| {
            let n = sp.len() as u64;
            let masses = match &sp.masses {
                Masses::Uniform(_) => 0,
                Masses::PerParticle(_) => 4 * n,
            };
            12 * n
                + masses
                + sp.velocities.as_ref().map_or(0, |_| 12 * n)
                + sp.ids.as_ref().map_or(0, |_| 8 * n)
                + sp.smoothing_lengths.as_ref().map_or(0, |_| 4 * n)
                + 4 * n * sp.fields.len() as u64
        })
        .sum()
}
