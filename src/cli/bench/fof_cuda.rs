//! `haloscope bench fof --backend cuda`: the CUDA linker on synthetic clustered sets against the
//! CPU linker in the same run.

use super::fof::BenchFofArgs;
use crate::data::Masses;
use crate::gpu::GpuDevice;
use crate::halo::{
    BoxFrame, catalogue, catalogue_cuda, link_components, link_components_cuda, mean_separation,
    synthetic,
};
use crate::jobs::Progress;
use std::time::Instant;

/// Runs `haloscope bench fof --backend cuda`.
pub fn run(args: &BenchFofArgs) -> anyhow::Result<()> {
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
    for &n in &args.sizes {
        let start = Instant::now();
        let points = synthetic::clustered_points(n, 1.0, 1);
        eprintln!(
            "synthetic clustered n={n}: generated in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        let masses = Masses::Uniform(1.0);
        for &b in &args.b {
            let ll = b * mean_separation(&points, Some(frame));
            let mut cpu_ids = None;
            let mut cpu_cat = None;
            let mut cpu_link = Vec::new();
            let mut cpu_catalogue = Vec::new();
            for _ in 0..args.cpu_repeats {
                let start = Instant::now();
                let ids = link_components(&points, ll, Some(frame), &Progress::none())?;
                cpu_link.push(start.elapsed().as_secs_f64());
                let start = Instant::now();
                let cat = catalogue::build(&ids, &points, &masses, None, Some(frame), 20);
                cpu_catalogue.push(start.elapsed().as_secs_f64());
                cpu_ids = Some((canonical(&ids), cat.halos.len()));
                cpu_cat = Some(cat);
            }
            let (cpu_best, cpu_median) = best_and_median(&mut cpu_link);
            let (cat_best, _) = best_and_median(&mut cpu_catalogue);
            eprintln!(
                "n={n} b={b}: cpu link {cpu_best:.4}/{cpu_median:.4} s (best/median), catalogue {cat_best:.4} s"
            );
            for &order in &args.orders {
                // Warm-up: NVRTC compile or cache load, first touch of the allocator.
                let warm = link_components_cuda(
                    &device,
                    &points,
                    ll,
                    Some(frame),
                    order,
                    &Progress::none(),
                )?;
                let identical = cpu_ids
                    .as_ref()
                    .map(|(ids, _)| *ids == canonical(&warm.set_ids));
                let mut totals = Vec::new();
                let mut best_stages = Vec::new();
                for _ in 0..repeats {
                    let start = Instant::now();
                    let out = link_components_cuda(
                        &device,
                        &points,
                        ll,
                        Some(frame),
                        order,
                        &Progress::none(),
                    )?;
                    let seconds = start.elapsed().as_secs_f64();
                    if totals.iter().all(|&t| seconds < t) {
                        best_stages = out.stage_seconds.clone();
                    }
                    totals.push(seconds);
                }
                let (best, median) = best_and_median(&mut totals);
                // End to end: link, labels and the catalogue sums on the device.
                let mut full = Vec::new();
                let mut full_stages = Vec::new();
                let mut catalogue_seconds = Vec::new();
                let mut same_catalogue = None;
                let mut agrees = None;
                for _ in 0..repeats {
                    let start = Instant::now();
                    let out = catalogue_cuda(
                        &device,
                        &points,
                        &masses,
                        None,
                        ll,
                        Some(frame),
                        order,
                        20,
                        &Progress::none(),
                    )?;
                    let seconds = start.elapsed().as_secs_f64();
                    let sums = out
                        .stage_seconds
                        .iter()
                        .filter(|(name, _)| *name == "catalogue sums")
                        .map(|(_, s)| s)
                        .sum::<f64>();
                    catalogue_seconds.push(sums);
                    if full.iter().all(|&t| seconds < t) {
                        full_stages = out.stage_seconds.clone();
                    }
                    full.push(seconds);
                    same_catalogue = cpu_cat.as_ref().map(|c| *c == out.catalogue);
                    agrees = cpu_cat
                        .as_ref()
                        .map(|c| catalogues_agree(c, &out.catalogue, frame));
                }
                let (full_best, full_median) = best_and_median(&mut full);
                let (sums_best, _) = best_and_median(&mut catalogue_seconds);
                let full_stage_text: Vec<String> = full_stages
                    .iter()
                    .map(|(name, s)| format!("{name} {s:.4}"))
                    .collect();
                eprintln!(
                    "n={n} b={b} cuda {:<9} END TO END (link + labels + catalogue sums on device) {full_best:.4}/{full_median:.4} s; [{}]; catalogue sums {sums_best:.4} s; catalogue bit-identical to cpu: {same_catalogue:?}, within tolerance: {agrees:?}; vs cpu link+catalogue {:.1}x",
                    order.name(),
                    full_stage_text.join(", "),
                    (cpu_best + cat_best) / full_best
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
                cases.push(serde_json::json!({
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
                    "n_groups_cpu": cpu_ids.as_ref().map(|(_, g)| *g),
                    "identical_to_cpu": identical,
                    "end_to_end_seconds_best": full_best,
                    "end_to_end_seconds_median": full_median,
                    "end_to_end_stage_seconds": full_stages.iter().map(|(name, s)| serde_json::json!({"stage": name, "seconds": s})).collect::<Vec<_>>(),
                    "catalogue_sums_seconds_best": sums_best,
                    "catalogue_identical_to_cpu": same_catalogue,
                    "catalogue_within_tolerance_of_cpu": agrees,
                }));
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

/// The device catalogue's contract (src/halo/fof_cuda_catalogue.rs): labels, set count, sizes
/// and smallest members equal; masses within a relative 1e-12; centres (minimum image) and radii
/// within 1e-9 of the box size.
fn catalogues_agree(
    cpu: &catalogue::Catalogue,
    gpu: &catalogue::Catalogue,
    frame: BoxFrame,
) -> bool {
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol;
    cpu.n_sets_all_sizes == gpu.n_sets_all_sizes
        && cpu.labels == gpu.labels
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
fn best_and_median(times: &mut [f64]) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let best = times.first().copied().unwrap_or(f64::NAN);
    let median = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
    (best, median)
}
