//! `haloscope bench fof`: friends-of-friends timings on snapshots and a synthetic clustered set.

use super::fof_cuda::{CudaBenchOptions, best_and_median};
use crate::backend::{Backend, BackendChoice};
use crate::data::{LoadOptions, SpeciesKind, load_snapshot};
use crate::halo::{
    FofParams, LinkingLength, SeparationFrom, export, find_halos, link_components,
    select_particles, synthetic,
};
use crate::jobs::Progress;
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `haloscope bench fof`.
#[derive(Debug, Args)]
pub struct BenchFofArgs {
    /// Snapshots to time (dark matter and stars are linked together).
    #[arg(long = "file", default_values = ["../shared/data/snapshots/test4.tbin"])]
    pub files: Vec<PathBuf>,
    /// Linking lengths in units of the mean separation.
    #[arg(long, num_args = 1.., default_values_t = [0.2, 0.28])]
    pub b: Vec<f64>,
    /// Periodic box side of the snapshots.
    #[arg(long = "box", default_value_t = 1.0)]
    pub box_size: f64,
    /// Particles in the synthetic clustered set (periodic box 1); 0 skips it.
    #[arg(long, default_value_t = 1_000_000)]
    pub synthetic: usize,
    /// Write the synthetic positions to this .npy (for scripts/bench/fof_python.py).
    #[arg(long)]
    pub save_synthetic: Option<PathBuf>,
    /// Timed runs per case; the best and the median are reported.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Which back-end to time; `cuda` times `find_halos` on the CUDA back-end on synthetic sets
    /// of `--n` particles and the CPU back-end on the same sets for the ratio.
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// Sizes of the synthetic clustered sets for `--backend cuda` (periodic box 1).
    #[arg(long = "n", num_args = 1.., default_values_t = [10_000_000usize])]
    pub sizes: Vec<usize>,
    /// With `--backend cuda`: time one device (sub-boxes when the set does not fit) against
    /// every device of `--devices` (spatial domains), instead of the CUDA/CPU comparison.
    #[arg(long)]
    pub spread: bool,
    /// CUDA devices of `--spread`: all, or a list such as 0,1.
    #[arg(long, default_value = "all")]
    pub devices: crate::backend::DeviceSelection,
    /// With `--spread`: check one domain's partition against the CPU linker when it has at
    /// most this many particles (0 skips).
    #[arg(long, default_value_t = 100_000_000)]
    pub check_up_to: usize,
    /// Timed CPU runs per case with `--backend cuda` (0 skips the CPU and the partition check).
    #[arg(long, default_value_t = 2)]
    pub cpu_repeats: usize,
}

/// Runs `haloscope bench fof`.
pub fn run(args: BenchFofArgs) -> anyhow::Result<()> {
    if args.backend != BackendChoice::Cpu && args.spread {
        return super::fof_domains::run(&super::fof_domains::SpreadOptions {
            sizes: &args.sizes,
            b: args.b.first().copied().unwrap_or(0.2),
            repeats: args.repeats,
            devices: &args.devices,
            check_up_to: args.check_up_to,
        });
    }
    if args.backend != BackendChoice::Cpu {
        return super::fof_cuda::run(&CudaBenchOptions {
            sizes: &args.sizes,
            b: &args.b,
            repeats: args.repeats,
            cpu_repeats: args.cpu_repeats,
            json: args.json,
        });
    }
    let mut sets: Vec<(String, Vec<[f32; 3]>)> = Vec::new();
    for file in &args.files {
        let snapshot = load_snapshot(file, &LoadOptions::default(), &Progress::none())?;
        let selected = select_particles(&snapshot, &[SpeciesKind::Dark, SpeciesKind::Star])
            .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        let name = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        sets.push((name, selected.positions.into_owned()));
    }
    if args.synthetic > 0 {
        let points = synthetic::clustered_points(args.synthetic, args.box_size, 1);
        if let Some(path) = &args.save_synthetic {
            export::write_positions_npy(path, &points)?;
        }
        sets.push((format!("synthetic-clustered-{}", args.synthetic), points));
    }

    let repeats = args.repeats.max(1);
    let threads = rayon::current_num_threads();
    let mut rows = Vec::new();
    eprintln!("threads: {threads}, repeats: {repeats} (best / median seconds)");
    for (name, positions) in &sets {
        for &b in &args.b {
            let params = FofParams {
                linking_length: LinkingLength::Relative(b),
                // The mean separation on every file, so that timings stay comparable across
                // versions (test4.tbin is a zoom-in: its own rule would link far fewer pairs).
                separation_from: SeparationFrom::Mean,
                min_members: 20,
                box_size: Some(args.box_size),
                // Catalogue only, as the GUI asks (the CPU computes the labels either way).
                labels: false,
            };
            let mut full = Vec::new();
            let mut linking = Vec::new();
            let mut summary = None;
            for _ in 0..repeats {
                let start = Instant::now();
                let result = find_halos(
                    positions,
                    &crate::data::Masses::Uniform(1.0),
                    None,
                    &params,
                    &Backend::cpu(),
                    &Progress::none(),
                )?;
                full.push(start.elapsed().as_secs_f64());
                let start = Instant::now();
                link_components(
                    positions,
                    result.linking_length,
                    result.frame,
                    &Progress::none(),
                )?;
                linking.push(start.elapsed().as_secs_f64());
                summary = Some((
                    result.halos.len(),
                    result.halos.first().map_or(0, |h| h.size),
                ));
            }
            let (n_groups, largest) = summary.unwrap_or_default();
            let (full_best, full_median) = best_and_median(&mut full);
            let (link_best, link_median) = best_and_median(&mut linking);
            eprintln!(
                "{name:<30} n={:<9} b={b:<5} full {full_best:.4}/{full_median:.4}  linking {link_best:.4}/{link_median:.4}  groups {n_groups} largest {largest}",
                positions.len()
            );
            rows.push(serde_json::json!({
                "set": name,
                "n_particles": positions.len(),
                "b": b,
                "periodic": true,
                "n_groups": n_groups,
                "largest_group": largest,
                "seconds_best": full_best,
                "seconds_median": full_median,
                "linking_seconds_best": link_best,
                "linking_seconds_median": link_median,
            }));
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "benchmark": "fof", "backend": "cpu", "threads": threads, "repeats": repeats, "cases": rows })
        );
    }
    Ok(())
}
