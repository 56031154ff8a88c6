//! `haloscope bench fof --backend cuda`: what `haloscope fof` runs (`find_halos` on the resolved
//! CUDA back-end) on synthetic clustered sets, against the CPU back-end in the same run.

use crate::backend::{Backend, BackendChoice, BackendKind};
use crate::data::Masses;
use crate::halo::{
    FofParams, FofResult, Halo, LinkingLength, SeparationFrom, find_halos, link_components,
    synthetic,
};
use crate::jobs::Progress;
use anyhow::Context;
use std::time::Instant;

/// What `haloscope bench fof --backend cuda` runs (from its command line).
pub struct CudaBenchOptions<'a> {
    /// Sizes of the synthetic clustered sets (periodic box 1).
    pub sizes: &'a [usize],
    /// Linking lengths in units of the mean separation.
    pub b: &'a [f64],
    /// Timed CUDA runs per case.
    pub repeats: usize,
    /// Timed CPU runs per case (0 skips the CPU and the partition check).
    pub cpu_repeats: usize,
    /// Print one JSON object at the end.
    pub json: bool,
}

/// Runs `haloscope bench fof --backend cuda`.
pub fn run(args: &CudaBenchOptions<'_>) -> anyhow::Result<()> {
    let backend = Backend::resolve(BackendChoice::Cuda)?;
    let device = backend
        .device()
        .map(|device| device.info().to_string())
        .context("the CUDA back-end has no device")?;
    eprintln!(
        "device: {device}; CPU threads: {}",
        rayon::current_num_threads()
    );
    let repeats = args.repeats.max(1);
    let mut cases = Vec::new();
    for &n in args.sizes {
        let start = Instant::now();
        let points = synthetic::clustered_points(n, 1.0, 1);
        eprintln!(
            "synthetic clustered n={n}: generated in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        let masses = Masses::Uniform(1.0);
        for &b in args.b {
            let case = Case {
                b,
                points: &points,
                masses: &masses,
            };
            let cpu = cpu_baseline(&case, args.cpu_repeats)?;
            cases.push(time_case(&backend, &case, repeats, &cpu)?);
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "benchmark": "fof",
                "backend": "cuda",
                "device": device,
                "cpu_threads": rayon::current_num_threads(),
                "repeats": repeats,
                "cases": cases,
            })
        );
    }
    Ok(())
}

/// One synthetic set and linking length.
struct Case<'a> {
    b: f64,
    points: &'a [[f32; 3]],
    masses: &'a Masses,
}

impl Case<'_> {
    /// What `haloscope fof` asks for on this case: periodic box 1, min members 20.
    fn params(&self, labels: bool) -> FofParams {
        FofParams {
            linking_length: LinkingLength::Relative(self.b),
            min_members: 20,
            box_size: Some(1.0),
            // One mass: the mean separation, as `bench fof` on the CPU pins it.
            separation_from: SeparationFrom::Mean,
            labels,
        }
    }

    /// `find_halos` on `backend`, timed.
    fn find(&self, backend: &Backend, labels: bool) -> anyhow::Result<(FofResult, f64)> {
        let start = Instant::now();
        let result = find_halos(
            self.points,
            self.masses,
            None,
            &self.params(labels),
            backend,
            &Progress::none(),
        )?;
        Ok((result, start.elapsed().as_secs_f64()))
    }
}

/// The CPU back-end on a case: timings, and the labelled result to check the device against
/// (none when not run).
struct CpuBaseline {
    result: Option<FofResult>,
    link_best: f64,
    link_median: f64,
    end_to_end_best: f64,
}

/// `repeats` timed runs of the CPU linker alone and of `find_halos` with labels on `case`.
fn cpu_baseline(case: &Case<'_>, repeats: usize) -> anyhow::Result<CpuBaseline> {
    let cpu = Backend::cpu();
    let mut result = None;
    let mut link = Vec::new();
    let mut full = Vec::new();
    for _ in 0..repeats {
        let (found, seconds) = case.find(&cpu, true)?;
        full.push(seconds);
        let start = Instant::now();
        link_components(
            case.points,
            found.linking_length,
            found.frame,
            &Progress::none(),
        )?;
        link.push(start.elapsed().as_secs_f64());
        result = Some(found);
    }
    let (link_best, link_median) = best_and_median(&mut link);
    let (end_to_end_best, _) = best_and_median(&mut full);
    eprintln!(
        "n={} b={}: cpu link {link_best:.4}/{link_median:.4} s (best/median), find_halos with labels {end_to_end_best:.4} s",
        case.points.len(),
        case.b
    );
    Ok(CpuBaseline {
        result,
        link_best,
        link_median,
        end_to_end_best,
    })
}

/// `find_halos` on `backend` for `case` (`repeats` timed runs after a warm-up), without and with
/// labels, each checked against `cpu`; printed, and returned as JSON.
fn time_case(
    backend: &Backend,
    case: &Case<'_>,
    repeats: usize,
    cpu: &CpuBaseline,
) -> anyhow::Result<serde_json::Value> {
    let (n, b) = (case.points.len(), case.b);
    // Warm-up: NVRTC compile or cache load, first touch of the allocator.
    let (warm, _) = case.find(backend, false)?;
    anyhow::ensure!(
        warm.backend == BackendKind::Cuda,
        "find_halos ran on {} instead of CUDA",
        warm.backend.name()
    );
    let mut runs = Vec::new();
    for labels in [false, true] {
        runs.push(end_to_end(backend, case, labels, repeats, cpu)?);
    }
    // The catalogue must not depend on whether labels were asked for.
    let same_without_labels = runs[0].last.halos == runs[1].last.halos
        && runs[0].last.n_sets_all_sizes == runs[1].last.n_sets_all_sizes;
    // Labels equal to the CPU's: the same kept sets, so the same partition of their members.
    let identical = runs[1]
        .last
        .labels
        .as_ref()
        .zip(cpu.result.as_ref())
        .map(|(labels, cpu)| Some(labels) == cpu.labels.as_ref());
    for run in &runs {
        eprintln!(
            "n={n} b={b} cuda END TO END {} {:.4}/{:.4} s; [{}]; catalogue bit-identical to cpu: {:?}, within tolerance (labels too when asked): {:?}; vs cpu link+catalogue {:.1}x",
            if run.labels {
                "catalogue + labels"
            } else {
                "catalogue only    "
            },
            run.best,
            run.median,
            stage_text(&run.stages),
            run.identical,
            run.agrees,
            cpu.end_to_end_best / run.best
        );
    }
    eprintln!(
        "n={n} b={b} cuda catalogue with labels == catalogue without: {same_without_labels}; labels identical to cpu: {identical:?}"
    );
    let stage = |runs: &EndToEnd, name: &str| {
        runs.stages
            .iter()
            .filter(|(stage, _)| *stage == name)
            .map(|(_, s)| s)
            .sum::<f64>()
    };
    Ok(serde_json::json!({
        "n_particles": n,
        "b": b,
        "linking_length": warm.linking_length,
        "order": "morton",
        "cuda_link_seconds": stage(&runs[0], "link"),
        "cpu_link_seconds_best": cpu.link_best,
        "cpu_link_seconds_median": cpu.link_median,
        "cpu_end_to_end_seconds_best": cpu.end_to_end_best,
        "n_groups_cpu": cpu.result.as_ref().map(|r| r.halos.len()),
        "identical_to_cpu": identical,
        "end_to_end_seconds_best": runs[0].best,
        "end_to_end_seconds_median": runs[0].median,
        "end_to_end_stage_seconds": stage_json(&runs[0].stages),
        "catalogue_sums_seconds_best": stage(&runs[0], "catalogue sums"),
        "catalogue_identical_to_cpu": runs[0].identical,
        "catalogue_within_tolerance_of_cpu": runs[0].agrees,
        "labelled_end_to_end_seconds_best": runs[1].best,
        "labelled_end_to_end_seconds_median": runs[1].median,
        "labelled_end_to_end_stage_seconds": stage_json(&runs[1].stages),
        "labelled_catalogue_and_labels_within_tolerance_of_cpu": runs[1].agrees,
        "catalogue_same_with_and_without_labels": same_without_labels,
        "speedup_vs_cpu": cpu.end_to_end_best / runs[0].best,
    }))
}

/// The device catalogue's contract (src/halo/cuda/catalogue.rs): labels, set count, sizes
/// and smallest members equal; masses within a relative 1e-12; centres (minimum image) and radii
/// within 1e-9 of the box size.
fn catalogues_agree(cpu: &FofResult, gpu: &FofResult) -> bool {
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol;
    let Some(frame) = cpu.frame else {
        return false;
    };
    let same_halo = |c: &Halo, g: &Halo| {
        c.size == g.size
            && c.min_index == g.min_index
            && close(c.mass, g.mass, 1e-12 * c.mass.abs())
            && (0..3).all(|a| frame.min_image(c.com[a] - g.com[a]).abs() <= 1e-9 * frame.size)
            && close(c.radius_max, g.radius_max, 1e-9 * frame.size)
            && close(c.radius_rms, g.radius_rms, 1e-9 * frame.size)
    };
    // Labels are compared when the device returned them (asked for).
    cpu.n_sets_all_sizes == gpu.n_sets_all_sizes
        && gpu
            .labels
            .as_ref()
            .is_none_or(|labels| Some(labels) == cpu.labels.as_ref())
        && cpu.halos.len() == gpu.halos.len()
        && cpu
            .halos
            .iter()
            .zip(&gpu.halos)
            .all(|(c, g)| same_halo(c, g))
}

/// Timings and checks of one end-to-end configuration.
struct EndToEnd {
    labels: bool,
    best: f64,
    median: f64,
    stages: Vec<(&'static str, f64)>,
    identical: Option<bool>,
    agrees: Option<bool>,
    last: FofResult,
}

/// `repeats` timed `find_halos` runs of `case` on `backend` (with `labels` or without), each
/// checked against the CPU's result.
fn end_to_end(
    backend: &Backend,
    case: &Case<'_>,
    labels: bool,
    repeats: usize,
    cpu: &CpuBaseline,
) -> anyhow::Result<EndToEnd> {
    let mut full = Vec::new();
    let mut stages = Vec::new();
    let mut identical = None;
    let mut agrees: Option<bool> = None;
    let mut last = None;
    for _ in 0..repeats {
        let (result, seconds) = case.find(backend, labels)?;
        if full.iter().all(|&t| seconds < t) {
            stages = result.stage_seconds.clone();
        }
        full.push(seconds);
        if let Some(cpu) = &cpu.result {
            // Bit identity is judged on the halos (labels are compared for tolerance below).
            identical = Some(cpu.halos == result.halos);
            let ok = catalogues_agree(cpu, &result) && result.labels.is_some() == labels;
            agrees = Some(agrees.unwrap_or(true) && ok);
        }
        last = Some(result);
    }
    let (best, median) = best_and_median(&mut full);
    Ok(EndToEnd {
        labels,
        best,
        median,
        stages,
        identical,
        agrees,
        last: last.context("no end-to-end run")?,
    })
}

/// `name seconds` pairs, comma-separated.
fn stage_text(stages: &[(&'static str, f64)]) -> String {
    let text: Vec<String> = stages
        .iter()
        .map(|(name, s)| format!("{name} {s:.4}"))
        .collect();
    text.join(", ")
}

/// Stages as a JSON array of `{stage, seconds}`.
fn stage_json(stages: &[(&'static str, f64)]) -> Vec<serde_json::Value> {
    stages
        .iter()
        .map(|(name, s)| serde_json::json!({"stage": name, "seconds": s}))
        .collect()
}

/// Sorts `times` and returns the smallest and the median.
pub fn best_and_median(times: &mut [f64]) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let best = times.first().copied().unwrap_or(f64::NAN);
    let median = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
    (best, median)
}
