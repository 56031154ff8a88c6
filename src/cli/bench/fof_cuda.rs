//! `haloscope bench fof --backend cuda`: the CUDA linker on synthetic clustered sets against the
//! CPU linker in the same run.

use crate::data::Masses;
use crate::gpu::GpuDevice;
use crate::halo::{
    BoxFrame, CatalogueRequest, CellOrder, catalogue, catalogue_cuda, link_components,
    link_components_cuda, mean_separation, synthetic,
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
    /// Cell orders to compare.
    pub orders: &'a [CellOrder],
    /// Timed CUDA runs per case.
    pub repeats: usize,
    /// Timed CPU runs per case (0 skips the CPU and the partition check).
    pub cpu_repeats: usize,
    /// Print one JSON object at the end.
    pub json: bool,
}

/// Runs `haloscope bench fof --backend cuda`.
pub fn run(args: &CudaBenchOptions<'_>) -> anyhow::Result<()> {
    let device = GpuDevice::open(0)?;
    eprintln!(
        "device: {}; CPU threads: {}",
        device.info(),
        rayon::current_num_threads()
    );
    let frame = BoxFrame {
        lower: 0.0,
        size: 1.0,
    };
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
                linking_length: b * mean_separation(&points, Some(frame)),
                frame,
            };
            let cpu = cpu_baseline(&case, args.cpu_repeats)?;
            for &order in args.orders {
                cases.push(time_order(&device, &case, order, repeats, &cpu)?);
            }
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "benchmark": "fof",
                "backend": "cuda",
                "device": device.info().to_string(),
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
    linking_length: f64,
    frame: BoxFrame,
}

/// The CPU linker and catalogue on a case: timings, and the partition and catalogue to check
/// the device against (none when not run).
struct CpuBaseline {
    /// Canonical set ids and the number of halos.
    ids: Option<(Vec<u32>, usize)>,
    catalogue: Option<catalogue::Catalogue>,
    link_best: f64,
    link_median: f64,
    catalogue_best: f64,
}

/// `repeats` timed runs of the CPU linker and catalogue on `case`.
fn cpu_baseline(case: &Case<'_>, repeats: usize) -> anyhow::Result<CpuBaseline> {
    let (points, ll, frame) = (case.points, case.linking_length, case.frame);
    let mut ids_and_groups = None;
    let mut cpu_cat = None;
    let mut cpu_link = Vec::new();
    let mut cpu_catalogue = Vec::new();
    for _ in 0..repeats {
        let start = Instant::now();
        let ids = link_components(points, ll, Some(frame), &Progress::none())?;
        cpu_link.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        let cat = catalogue::build(&ids, points, case.masses, None, Some(frame), 20);
        cpu_catalogue.push(start.elapsed().as_secs_f64());
        ids_and_groups = Some((canonical(&ids), cat.halos.len()));
        cpu_cat = Some(cat);
    }
    let (link_best, link_median) = best_and_median(&mut cpu_link);
    let (catalogue_best, _) = best_and_median(&mut cpu_catalogue);
    eprintln!(
        "n={} b={}: cpu link {link_best:.4}/{link_median:.4} s (best/median), catalogue {catalogue_best:.4} s",
        points.len(),
        case.b
    );
    Ok(CpuBaseline {
        ids: ids_and_groups,
        catalogue: cpu_cat,
        link_best,
        link_median,
        catalogue_best,
    })
}

/// The CUDA linker in cell `order` on `case` (`repeats` timed runs after a warm-up), then end to
/// end without and with labels, each checked against `cpu`; printed, and returned as JSON.
fn time_order(
    device: &GpuDevice,
    case: &Case<'_>,
    order: CellOrder,
    repeats: usize,
    cpu: &CpuBaseline,
) -> anyhow::Result<serde_json::Value> {
    let (points, ll, frame, b) = (case.points, case.linking_length, case.frame, case.b);
    let n = points.len();
    let (cpu_best, cpu_median, cat_best) = (cpu.link_best, cpu.link_median, cpu.catalogue_best);
    // Warm-up: NVRTC compile or cache load, first touch of the allocator.
    let warm = link_components_cuda(device, points, ll, Some(frame), order, &Progress::none())?;
    let identical = cpu
        .ids
        .as_ref()
        .map(|(ids, _)| *ids == canonical(&warm.set_ids));
    let mut totals = Vec::new();
    let mut best_stages = Vec::new();
    for _ in 0..repeats {
        let start = Instant::now();
        let out = link_components_cuda(device, points, ll, Some(frame), order, &Progress::none())?;
        let seconds = start.elapsed().as_secs_f64();
        if totals.iter().all(|&t| seconds < t) {
            best_stages = out.stage_seconds.clone();
        }
        totals.push(seconds);
    }
    let (best, median) = best_and_median(&mut totals);
    // End to end: link and the catalogue sums on the device, without labels (what
    // the GUI asks for) and with the per-particle labels downloaded.
    let mut runs = Vec::new();
    for with_labels in [false, true] {
        let request = CatalogueRequest {
            positions: points,
            masses: case.masses,
            velocities: None,
            linking_length: ll,
            frame: Some(frame),
            min_members: 20,
            with_labels,
        };
        runs.push(end_to_end(
            device,
            &request,
            frame,
            order,
            repeats,
            cpu.catalogue.as_ref(),
        )?);
    }
    // The catalogue must not depend on whether labels were asked for.
    let same_without_labels = runs[0].last.halos == runs[1].last.halos
        && runs[0].last.n_sets_all_sizes == runs[1].last.n_sets_all_sizes;
    for run in &runs {
        eprintln!(
            "n={n} b={b} cuda {:<9} END TO END {} {:.4}/{:.4} s; [{}]; catalogue sums {:.4} s; catalogue bit-identical to cpu: {:?}, within tolerance (labels too when asked): {:?}; vs cpu link+catalogue {:.1}x",
            order.name(),
            if run.with_labels {
                "catalogue + labels"
            } else {
                "catalogue only    "
            },
            run.best,
            run.median,
            stage_text(&run.stages),
            run.sums_best,
            run.identical,
            run.agrees,
            (cpu_best + cat_best) / run.best
        );
    }
    eprintln!(
        "n={n} b={b} cuda {:<9} catalogue with labels == catalogue without: {same_without_labels}",
        order.name()
    );
    let stages: Vec<String> = best_stages
        .iter()
        .map(|(name, s)| format!("{name} {s:.4}"))
        .collect();
    eprintln!(
        "n={n} b={b} cuda {:<9} link {best:.4}/{median:.4} s; cells {}; [{}]; +catalogue(cpu) {cat_best:.4} s; identical to cpu: {identical:?}; speed-up (link) {:.1}x",
        order.name(),
        warm.n_cells,
        stages.join(", "),
        cpu_best / best
    );
    Ok(serde_json::json!({
        "n_particles": n,
        "b": b,
        "linking_length": ll,
        "order": order.name(),
        "n_cells": warm.n_cells,
        "cuda_link_seconds_best": best,
        "cuda_link_seconds_median": median,
        "cuda_stage_seconds": best_stages.iter().map(|(name, s)| serde_json::json!({"stage": name, "seconds": s})).collect::<Vec<_>>(),
        "cpu_link_seconds_best": cpu_best,
        "cpu_link_seconds_median": cpu_median,
        "catalogue_seconds_cpu": cat_best,
        "n_groups_cpu": cpu.ids.as_ref().map(|(_, g)| *g),
        "identical_to_cpu": identical,
        "end_to_end_seconds_best": runs[0].best,
        "end_to_end_seconds_median": runs[0].median,
        "end_to_end_stage_seconds": stage_json(&runs[0].stages),
        "catalogue_sums_seconds_best": runs[0].sums_best,
        "catalogue_identical_to_cpu": runs[0].identical,
        "catalogue_within_tolerance_of_cpu": runs[0].agrees,
        "labelled_end_to_end_seconds_best": runs[1].best,
        "labelled_end_to_end_seconds_median": runs[1].median,
        "labelled_end_to_end_stage_seconds": stage_json(&runs[1].stages),
        "labelled_catalogue_and_labels_within_tolerance_of_cpu": runs[1].agrees,
        "catalogue_same_with_and_without_labels": same_without_labels,
    }))
}

/// The device catalogue's contract (src/halo/cuda/catalogue.rs): labels, set count, sizes
/// and smallest members equal; masses within a relative 1e-12; centres (minimum image) and radii
/// within 1e-9 of the box size.
fn catalogues_agree(
    cpu: &catalogue::Catalogue,
    gpu: &catalogue::Catalogue,
    frame: BoxFrame,
) -> bool {
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol;
    // Labels are compared when the device returned them (asked for).
    cpu.n_sets_all_sizes == gpu.n_sets_all_sizes
        && gpu
            .labels
            .as_ref()
            .is_none_or(|labels| Some(labels) == cpu.labels.as_ref())
        && cpu.halos.len() == gpu.halos.len()
        && cpu.halos.iter().zip(&gpu.halos).all(|(c, g)| {
            c.size == g.size
                && c.min_index == g.min_index
                && close(c.mass, g.mass, 1e-12 * c.mass.abs())
                && (0..3).all(|a| frame.min_image(c.com[a] - g.com[a]).abs() <= 1e-9 * frame.size)
                && close(c.radius_max, g.radius_max, 1e-9 * frame.size)
                && close(c.radius_rms, g.radius_rms, 1e-9 * frame.size)
        })
}

/// Timings and checks of one end-to-end configuration.
struct EndToEnd {
    with_labels: bool,
    best: f64,
    median: f64,
    stages: Vec<(&'static str, f64)>,
    sums_best: f64,
    identical: Option<bool>,
    agrees: Option<bool>,
    last: catalogue::Catalogue,
}

/// `repeats` end-to-end `catalogue_cuda` runs of `request` (periodic in `frame`), timed, each
/// checked against the CPU catalogue.
fn end_to_end(
    device: &GpuDevice,
    request: &CatalogueRequest<'_>,
    frame: BoxFrame,
    order: CellOrder,
    repeats: usize,
    cpu_cat: Option<&catalogue::Catalogue>,
) -> anyhow::Result<EndToEnd> {
    let with_labels = request.with_labels;
    let mut full = Vec::new();
    let mut sums = Vec::new();
    let mut stages = Vec::new();
    let mut identical = None;
    let mut agrees: Option<bool> = None;
    let mut last = None;
    for _ in 0..repeats {
        let start = Instant::now();
        let out = catalogue_cuda(device, request, order, &Progress::none())?;
        let seconds = start.elapsed().as_secs_f64();
        sums.push(
            out.stage_seconds
                .iter()
                .filter(|(name, _)| *name == "catalogue sums")
                .map(|(_, s)| s)
                .sum::<f64>(),
        );
        if full.iter().all(|&t| seconds < t) {
            stages = out.stage_seconds.clone();
        }
        full.push(seconds);
        if let Some(cpu) = cpu_cat {
            // Bit identity is judged on the halos (labels are compared for tolerance below).
            identical = Some(cpu.halos == out.catalogue.halos);
            let ok = catalogues_agree(cpu, &out.catalogue, frame)
                && out.catalogue.labels.is_some() == with_labels;
            agrees = Some(agrees.unwrap_or(true) && ok);
        }
        last = Some(out.catalogue);
    }
    let (best, median) = best_and_median(&mut full);
    let (sums_best, _) = best_and_median(&mut sums);
    Ok(EndToEnd {
        with_labels,
        best,
        median,
        stages,
        sums_best,
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

/// Set ids renamed to the smallest member index of their set.
fn canonical(ids: &[u32]) -> Vec<u32> {
    let mut first = vec![u32::MAX; ids.len()];
    ids.iter()
        .enumerate()
        .map(|(i, &id)| {
            let slot = &mut first[id as usize];
            if *slot == u32::MAX {
                *slot = i as u32;
            }
            *slot
        })
        .collect()
}

/// Sorts `times` and returns the smallest and the median.
pub fn best_and_median(times: &mut [f64]) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let best = times.first().copied().unwrap_or(f64::NAN);
    let median = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
    (best, median)
}
