//! `haloscope bench fof --backend cuda --spread`: what `haloscope fof` runs on one CUDA device
//! (one domain when the set fits, sub-boxes one after the other when it does not) against
//! every device of `--devices` (one domain per device, or more), on synthetic clustered sets,
//! with the partitions compared and one domain's local partition checked against the CPU.

use crate::backend::{Backend, BackendChoice, DeviceSelection};
use crate::data::Masses;
use crate::halo::domains::{CUDA_BYTES_PER_PARTICLE, Decomposition, cuda_domains_for};
use crate::halo::{
    FofParams, FofResult, LinkingLength, SeparationFrom, link_components, link_components_cuda,
    prepare_fof, synthetic,
};
use crate::jobs::Progress;
use anyhow::Context;
use std::time::Instant;

/// What the spread benchmark runs (from its command line).
pub struct SpreadOptions<'a> {
    /// Sizes of the synthetic clustered sets (periodic box 1).
    pub sizes: &'a [usize],
    /// Linking length in units of the mean separation.
    pub b: f64,
    /// Timed runs per case.
    pub repeats: usize,
    /// The devices of the multi-device runs.
    pub devices: &'a DeviceSelection,
    /// Largest domain checked against the CPU linker (0 skips the check).
    pub check_up_to: usize,
}

/// Runs the spread benchmark; prints one JSON object per case on stdout.
pub fn run(options: &SpreadOptions<'_>) -> anyhow::Result<()> {
    let all = Backend::resolve_on(BackendChoice::Cuda, options.devices)?;
    let devices = all.devices().to_vec();
    let first = devices.first().context("no CUDA device")?.clone();
    let one = Backend::cuda(first.clone(), BackendChoice::Cuda);
    for device in &devices {
        eprintln!("device: {}", device.info());
    }
    // A measuring aid: each device's memory pool keeps what it maps between runs (as `render`
    // does), so the repeats after the first show the runs without the driver mapping pages.
    if std::env::var_os("HALOSCOPE_FOF_KEEP_POOL").is_some() {
        for device in &devices {
            crate::gpu::reserve_pool(device.stream(), 1 << 20)?;
        }
        eprintln!("device memory pools keep their pages between runs");
    }
    eprintln!("CPU threads: {}", rayon::current_num_threads());
    for &n in options.sizes {
        let start = Instant::now();
        let points = synthetic::clustered_points_parallel(n, 1.0, 1);
        let masses = Masses::Uniform(1.0);
        eprintln!(
            "synthetic clustered n={n}: {:.1} s",
            start.elapsed().as_secs_f64()
        );
        let params = FofParams {
            linking_length: LinkingLength::Relative(options.b),
            separation_from: SeparationFrom::Mean,
            min_members: 20,
            box_size: Some(1.0),
            labels: false,
        };
        let time =
            |backend: &Backend, domains: Option<usize>| -> anyhow::Result<(f64, FofResult)> {
                let mut best = f64::INFINITY;
                let mut last = None;
                for _ in 0..options.repeats.max(1) {
                    let prepared = prepare_fof(&points, &masses, None, &params)?;
                    let start = Instant::now();
                    let result = prepared.find_spread(backend, domains, &Progress::none())?;
                    best = best.min(start.elapsed().as_secs_f64());
                    last = Some(result);
                }
                Ok((best, last.context("no run")?))
            };
        let one_domains = cuda_domains_for(n, std::slice::from_ref(&first))?;
        let (one_seconds, one_result) = time(&one, None)?;
        let (all_seconds, all_result) = time(&all, None)?;
        let key = |r: &FofResult| {
            (
                r.n_sets_all_sizes,
                r.halos
                    .iter()
                    .map(|h| (h.size, h.min_index))
                    .collect::<Vec<_>>(),
            )
        };
        let same = key(&one_result) == key(&all_result);
        let all_domains = cuda_domains_for(n, &devices)?;
        let check = check_one_domain(&points, &one_result, all_domains, options.check_up_to)?;
        let case = serde_json::json!({
            "n": n,
            "b": options.b,
            "devices": devices.len(),
            "one_device_domains": one_domains,
            "one_device_seconds": one_seconds,
            "one_device_stages": one_result.stage_seconds,
            "all_devices_domains": all_domains,
            "all_devices_seconds": all_seconds,
            "all_devices_stages": all_result.stage_seconds,
            "speedup": one_seconds / all_seconds,
            "n_groups": all_result.halos.len(),
            "same_partition": same,
            "cpu_check": check,
            "bytes_per_particle_budget": CUDA_BYTES_PER_PARTICLE,
        });
        println!("{case}");
        anyhow::ensure!(
            same,
            "n={n}: the partitions of one device and all devices differ"
        );
    }
    Ok(())
}

/// Links the first of `domains` slabs (or of more slabs, so that it holds about `up_to`
/// particles) alone on the CPU and on the first device and compares the partitions.
fn check_one_domain(
    points: &[[f32; 3]],
    result: &FofResult,
    domains: usize,
    up_to: usize,
) -> anyhow::Result<serde_json::Value> {
    if up_to == 0 {
        return Ok(serde_json::json!({ "skipped": "--check-up-to 0" }));
    }
    // The run's slabs, or more of them until the first one fits `up_to`.
    let slabs = domains.max(2).max(points.len().div_ceil(up_to));
    let decomposition = Decomposition::balanced(points, slabs, result.linking_length, result.frame);
    let members = decomposition.members(points);
    let first = members.first().context("no domain")?;
    if first.indices.len() > up_to + up_to / 10 {
        return Ok(serde_json::json!({ "skipped": first.indices.len() }));
    }
    let local: Vec<[f32; 3]> = first.indices.iter().map(|&i| points[i as usize]).collect();
    let start = Instant::now();
    let cpu = link_components(
        &local,
        result.linking_length,
        result.frame,
        &Progress::none(),
    )?;
    let cpu_seconds = start.elapsed().as_secs_f64();
    let device = crate::gpu::GpuDevice::open(0)?;
    let gpu = link_components_cuda(
        &device,
        &local,
        result.linking_length,
        result.frame,
        &Progress::none(),
    )?;
    let canonical = |ids: &[u32]| {
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
            .collect::<Vec<u32>>()
    };
    let same = canonical(&cpu) == canonical(&gpu.set_ids);
    anyhow::ensure!(
        same,
        "the first domain's CUDA partition differs from the CPU's"
    );
    Ok(serde_json::json!({
        "slabs": slabs,
        "domain_particles": local.len(),
        "cpu_link_seconds": cpu_seconds,
        "same_partition": same,
    }))
}
