//! The CUDA pair counter equals the CPU exactly: IC40 reference and IC86-2011 observed counts,
//! every scrambled trial of a seed, random small lists (poles, RA wrap, duplicates, edges), the
//! host path for edge pairs, batching and cancellation. Ignored here (no GPU); run on the GPU
//! machine with `--ignored`. A missing device fails the tests, never skips them.

mod common;

use common::{shared_data, shared_reference};
use haloscope::backend::{Backend, BackendChoice};
use haloscope::data::{EventList, events};
use haloscope::gpu::GpuDevice;
use haloscope::jobs::{CancelToken, Progress};
use haloscope::twopoint::cuda::{CountKernel, CudaPairCounter};
use haloscope::twopoint::{
    CoordinateGrid, Prepared, Scramble, ScrambleChoice, TwoPointConfig, TwoPointError,
    count_observed, count_pairs, count_pairs_brute_force, prepare, run_trials_cuda, run_trials_on,
    scrambled_ra_on,
};
use std::sync::Arc;

fn device() -> Arc<GpuDevice> {
    let device = GpuDevice::open(0).expect("no CUDA device opened: these tests need an NVIDIA GPU");
    eprintln!("device: {}", device.info());
    Arc::new(device)
}

/// The CUDA back-end on `device`.
fn cuda(device: &Arc<GpuDevice>) -> Backend {
    Backend::cuda(device.clone(), BackendChoice::Cuda)
}

fn ic40() -> EventList {
    events::read(&[&shared_data("events/IC40_exp.csv")], &Progress::none()).expect("read IC40")
}

fn ic86() -> EventList {
    let up = shared_data("events/IC86-2011/upgoing_events.txt");
    let down = shared_data("events/IC86-2011/downgoing_events.txt");
    let list = events::read(&[&up, &down], &Progress::none()).expect("read IC86-2011");
    assert_eq!(list.len(), 138_322);
    list
}

/// Every trial of `trials` on the GPU equals the CPU's count with the prepared list's scramble.
fn assert_trials_equal_cpu(
    device: &GpuDevice,
    prepared: &Prepared,
    seed: u64,
    trials: std::ops::Range<u64>,
) {
    let mut counter = CudaPairCounter::new(device, prepared).expect("counter");
    let gpu = counter.trials(seed, trials.clone()).expect("GPU trials");
    assert_eq!(gpu.len() as u64, trials.end - trials.start);
    for (trial, counts) in trials.zip(&gpu) {
        let ra = scrambled_ra_on(prepared.scramble, prepared.len(), seed, trial);
        let cpu = count_pairs(prepared, Some(&ra)).expect("CPU trial");
        assert_eq!(counts, &cpu, "seed {seed} trial {trial}");
    }
    eprintln!(
        "kernel {:?}: pairs left to the host: {}",
        counter.kernel(),
        counter.pairs_left_to_host()
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn ic40_observed_counts_equal_the_reference_and_the_cpu() {
    let device = device();
    let prepared = prepare(&ic40(), &TwoPointConfig::default()).expect("prepare");
    let gpu = count_observed(&cuda(&device), &prepared).expect("GPU count");
    assert_eq!(gpu, count_pairs(&prepared, None).expect("CPU count"));
    let text = std::fs::read_to_string(shared_reference("twopoint/ic40_reference.json"))
        .expect("reference");
    let reference: serde_json::Value = serde_json::from_str(&text).expect("json");
    for (c, cut) in prepared.cuts.iter().enumerate() {
        let want: Vec<u64> = reference["observed"]["counts"][&cut.name]
            .as_array()
            .expect("counts")
            .iter()
            .filter_map(|v| v.as_u64())
            .collect();
        assert_eq!(want.len(), prepared.bins.len(), "{}", cut.name);
        assert_eq!(gpu.cut(c), &want[..], "{}", cut.name);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn ic86_observed_counts_equal_the_cpu() {
    let device = device();
    let prepared = prepare(&ic86(), &TwoPointConfig::default()).expect("prepare");
    let mut counter = CudaPairCounter::new(&device, &prepared).expect("counter");
    let gpu = counter.observed().expect("GPU count");
    let cpu = count_pairs(&prepared, None).expect("CPU count");
    assert_eq!(gpu, cpu);
    // Tens of thousands of exact ties: all must have been decided on the GPU in f64.
    eprintln!(
        "IC86 observed: pairs left to the host {}",
        counter.pairs_left_to_host()
    );
    assert!(gpu.get(0, 19) > 10_000_000, "{}", gpu.get(0, 19));
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn ic40_64_trials_equal_the_cpu() {
    let device = device();
    let prepared = prepare(&ic40(), &TwoPointConfig::default()).expect("prepare");
    assert_trials_equal_cpu(&device, &prepared, 7, 1000..1064);
    assert_trials_equal_cpu(
        &device,
        &prepared,
        u64::MAX - 3,
        (1u64 << 33)..(1u64 << 33) + 3,
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn ic86_16_trials_equal_the_cpu() {
    let device = device();
    let prepared = prepare(&ic86(), &TwoPointConfig::default()).expect("prepare");
    assert_trials_equal_cpu(&device, &prepared, 2011, 0..16);
}

/// IC86-2011 lies on a 0.1° grid: its default trials scramble RA on the grid (tp_scramble's
/// grid branch), and on request on the continuum; both equal the CPU trial for trial.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn ic86_grid_and_continuous_scrambles_equal_the_cpu() {
    let device = device();
    let mut prepared = prepare(&ic86(), &TwoPointConfig::default()).expect("prepare");
    let grid = prepared.coordinate_grid.expect("IC86-2011 grid");
    assert_eq!(grid.step_deg(), 0.1);
    assert_eq!(prepared.scramble, Scramble::Grid(grid));
    assert_trials_equal_cpu(&device, &prepared, 17, 40..48);
    assert_trials_equal_cpu(&device, &prepared, u64::MAX, (1u64 << 40)..(1u64 << 40) + 2);
    // Coarser grids too (other per-degree divisors through the same kernel branch).
    for per_degree in [1, 4, 100] {
        prepared.scramble = Scramble::Grid(CoordinateGrid::per_degree(per_degree).expect("grid"));
        assert_trials_equal_cpu(&device, &prepared, 5, 0..2);
    }
    prepared
        .set_scramble(ScrambleChoice::Continuous)
        .expect("continuous");
    assert_trials_equal_cpu(&device, &prepared, 17, 40..44);
}

/// Deterministic random lists: clustered spots, poles, RA wrap, decimal edges, duplicates.
fn random_list(case: u64, n: usize) -> EventList {
    let mut state = case.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5DEE_CE66;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    fn push(list: &mut EventList, ra_deg: f64, dec_deg: f64, energy: f64) {
        list.ra.push(ra_deg.rem_euclid(360.0).to_radians());
        list.dec.push(dec_deg.to_radians());
        list.energy.push(energy);
    }
    let mut list = EventList::default();
    let spots = [
        (0.0, 10.0),
        (359.9, -30.0),
        (180.0, 89.0),
        (42.0, -89.5),
        (200.0, 0.0),
    ];
    for i in 0..n {
        let r = next();
        let (ra0, dec0) = spots[(r % 5) as usize];
        // 0.05° grid offsets: many pairs exactly on 0.25° edges.
        let dra = ((r >> 8) % 121) as f64 * 0.05 - 3.0;
        let ddec = ((r >> 20) % 121) as f64 * 0.05 - 3.0;
        let (ra, dec, energy) = (
            ra0 + dra,
            (dec0 + ddec).clamp(-90.0, 90.0),
            ((r >> 40) % 9) as f64,
        );
        push(&mut list, ra, dec, energy);
        if i % 17 == 0 {
            // An exact duplicate.
            push(&mut list, ra, dec, energy);
        }
    }
    for (ra, dec) in [
        (0.0, 90.0),
        (123.4, 90.0),
        (0.0, -90.0),
        (359.95, -89.75),
        (0.0, 10.5),
    ] {
        push(&mut list, ra, dec, 8.0);
    }
    list
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn random_small_lists_equal_the_cpu_and_the_brute_force() {
    let device = device();
    let configs = [
        TwoPointConfig::default(),
        TwoPointConfig {
            bin_step_deg: 0.5,
            bin_count: 7,
            cut_fractions: vec![0.3, 1.0],
        },
        TwoPointConfig {
            bin_step_deg: 7.0,
            bin_count: 25,
            cut_fractions: vec![1.0, 0.5, 0.05],
        },
        TwoPointConfig {
            bin_step_deg: 0.05,
            bin_count: 3,
            cut_fractions: vec![0.2],
        },
    ];
    for case in 0..24u64 {
        let config = &configs[case as usize % configs.len()];
        let n = [1usize, 2, 40, 300, 900, 1500][case as usize % 6];
        let list = random_list(case, n);
        let prepared = prepare(&list, config).expect("prepare");
        let brute = count_pairs_brute_force(&prepared, None).expect("brute force");
        let gpu = count_observed(&cuda(&device), &prepared).expect("GPU count");
        assert_eq!(gpu, brute, "case {case} (n {}) observed", list.len());
        let mut counter =
            CudaPairCounter::with_trials_per_launch(&device, &prepared, 3).expect("counter");
        let trials = counter.trials(case, 5..12).expect("GPU trials");
        for (t, counts) in (5..12).zip(&trials) {
            let ra = scrambled_ra_on(prepared.scramble, prepared.len(), case, t);
            assert_eq!(
                counts,
                &count_pairs(&prepared, Some(&ra)).expect("CPU"),
                "case {case} trial {t}"
            );
        }
    }
    // All events on one spot: every pair is in the first bin.
    let mut same = EventList::default();
    for i in 0..700 {
        same.ra.push(1.0);
        same.dec.push(-0.2);
        same.energy.push(f64::from(i % 3));
    }
    let prepared = prepare(&same, &TwoPointConfig::default()).expect("prepare");
    let gpu = count_observed(&cuda(&device), &prepared).expect("GPU count");
    assert_eq!(gpu.get(0, 0), 700 * 699 / 2);
    assert_eq!(gpu, count_pairs(&prepared, None).expect("CPU"));
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn edge_pairs_decided_on_the_host_stay_exact() {
    let device = device();
    let prepared = prepare(&ic40(), &TwoPointConfig::default()).expect("prepare");
    let mut counter =
        CudaPairCounter::with_trials_per_launch(&device, &prepared, 4).expect("counter");
    // Bands ~1e6 times wider and a 16-entry list: thousands of pairs go to the host, and the
    // list must grow and the launch be repeated.
    counter.widen_ambiguity_for_tests(1e6, 16).expect("widen");
    assert_eq!(
        counter.observed().expect("observed"),
        count_pairs(&prepared, None).expect("CPU")
    );
    let trials = counter.trials(3, 0..4).expect("trials");
    for (t, counts) in (0..4).zip(&trials) {
        let ra = scrambled_ra_on(prepared.scramble, prepared.len(), 3, t);
        assert_eq!(
            counts,
            &count_pairs(&prepared, Some(&ra)).expect("CPU"),
            "trial {t}"
        );
    }
    let host = counter.pairs_left_to_host();
    eprintln!("pairs decided on the host: {host}");
    assert!(host > 16, "only {host} pairs went to the host");
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn gpu_batches_equal_cpu_batches_and_cancel_cleanly() {
    let device = device();
    let prepared = prepare(&random_list(99, 3000), &TwoPointConfig::default()).expect("prepare");
    let collect = |backend: &Backend, batch: usize| {
        let mut batches = Vec::new();
        run_trials_on(
            backend,
            &prepared,
            42,
            3..40,
            batch,
            &Progress::none(),
            |b| batches.push(b),
        )
        .expect("trials");
        batches
    };
    let cpu = collect(&Backend::cpu(), 8);
    let gpu = collect(&cuda(&device), 8);
    assert_eq!(gpu, cpu);
    let gpu_odd: Vec<_> = collect(&cuda(&device), 300)
        .into_iter()
        .flat_map(|b| b.counts)
        .collect();
    let cpu_all: Vec<_> = cpu.into_iter().flat_map(|b| b.counts).collect();
    assert_eq!(gpu_odd, cpu_all);

    let token = CancelToken::new();
    token.cancel();
    let mut seen = 0;
    let result = run_trials_cuda(
        &device,
        &prepared,
        1,
        0..100,
        4,
        &Progress::with_cancel(token),
        |_| seen += 1,
    );
    assert_eq!(result, Err(TwoPointError::Cancelled));
    assert_eq!(seen, 0);
}

/// Both counting kernels equal the CPU on random lists: the flat kernel where the tables are
/// one-step, the direct kernel everywhere (forced, and chosen where the tables are not).
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn both_count_kernels_equal_the_cpu() {
    let device = device();
    // (config, what the default selection runs).
    let configs = [
        (TwoPointConfig::default(), CountKernel::Flat),
        (
            TwoPointConfig {
                bin_step_deg: 0.2,
                bin_count: 30,
                cut_fractions: vec![1.0, 0.5, 0.2, 0.05],
            },
            CountKernel::Flat,
        ),
        // The first bin is narrower than a lookup cell, so the cell table does not apply.
        (
            TwoPointConfig {
                bin_step_deg: 0.04,
                bin_count: 200,
                cut_fractions: vec![1.0],
            },
            CountKernel::Direct,
        ),
    ];
    for (case, (config, default_kernel)) in configs.iter().enumerate() {
        let list = random_list(40 + case as u64, 2500);
        let prepared = prepare(&list, config).expect("prepare");
        let cpu_observed = count_pairs(&prepared, None).expect("CPU");
        let cpu_trials: Vec<_> = (0..5)
            .map(|t| {
                let ra = scrambled_ra_on(prepared.scramble, prepared.len(), 7, t);
                count_pairs(&prepared, Some(&ra)).expect("CPU trial")
            })
            .collect();
        let default =
            CudaPairCounter::with_trials_per_launch(&device, &prepared, 2).expect("counter");
        assert_eq!(default.kernel(), *default_kernel, "config {case}");
        for kernel in [CountKernel::Flat, CountKernel::Direct] {
            let mut counter =
                CudaPairCounter::with_kernel(&device, &prepared, 2, kernel).expect("counter");
            let expected = kernel.fitting(*default_kernel == CountKernel::Flat);
            assert_eq!(counter.kernel(), expected, "config {case}");
            assert_eq!(
                counter.observed().expect("observed"),
                cpu_observed,
                "config {case} {kernel:?} observed"
            );
            let gpu = counter.trials(7, 0..5).expect("GPU trials");
            assert_eq!(gpu, cpu_trials, "config {case} {kernel:?} trials");
        }
    }
    // IC86-2011 (exact ties, dense regions): both kernels agree on two trials and equal the CPU
    // on the observed counts.
    let prepared = prepare(&ic86(), &TwoPointConfig::default()).expect("prepare");
    let cpu_observed = count_pairs(&prepared, None).expect("CPU");
    let mut results = Vec::new();
    for kernel in [CountKernel::Flat, CountKernel::Direct] {
        let mut counter =
            CudaPairCounter::with_kernel(&device, &prepared, 2, kernel).expect("counter");
        assert_eq!(counter.kernel(), kernel);
        results.push(counter.trials(11, 20..22).expect("trials"));
        assert_eq!(
            counter.observed().expect("observed"),
            cpu_observed,
            "{kernel:?}"
        );
    }
    assert_eq!(results[0], results[1]);
}

/// 70,000 events on one spot: one thread sees 69,999 partners in one bin; every pair is in
/// every bin and cut, with both counting kernels.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn coincident_events_overflow_no_counter() {
    let device = device();
    let n = 70_000u64;
    let mut same = EventList::default();
    for _ in 0..n {
        same.ra.push(1.0);
        same.dec.push(-0.2);
        same.energy.push(5.0);
    }
    let prepared = prepare(&same, &TwoPointConfig::default()).expect("prepare");
    for kernel in [CountKernel::Direct, CountKernel::Flat] {
        let mut counter =
            CudaPairCounter::with_kernel(&device, &prepared, 1, kernel).expect("counter");
        let counts = counter.observed().expect("observed");
        assert!(
            counts.values.iter().all(|&c| c == n * (n - 1) / 2),
            "{kernel:?}: {:?}",
            &counts.values[..4]
        );
    }
}

/// Two counters on their own streams of one device (a run of several launches per counter)
/// give one counter's batches, and their first trials equal the CPU's.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn two_streams_on_one_device_equal_one_counter() {
    let device = device();
    let prepared = prepare(&ic40(), &TwoPointConfig::default()).expect("prepare");
    let trials = 3..3 + 700;
    let mut one = Vec::new();
    run_trials_cuda(
        &device,
        &prepared,
        17,
        trials.clone(),
        128,
        &Progress::none(),
        |b| one.push(b),
    )
    .expect("one counter");
    let mut spread = Vec::new();
    run_trials_on(
        &cuda(&device),
        &prepared,
        17,
        trials.clone(),
        128,
        &Progress::none(),
        |b| spread.push(b),
    )
    .expect("two counters");
    assert_eq!(spread.len(), 6);
    assert_eq!(spread, one);
    let first = &spread[0].counts[0];
    let ra = scrambled_ra_on(prepared.scramble, prepared.len(), 17, 3);
    assert_eq!(
        first,
        &count_pairs(&prepared, Some(&ra)).expect("CPU trial")
    );
}
