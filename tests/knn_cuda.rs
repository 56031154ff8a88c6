//! The CUDA kNN smoothing lengths against the CPU reference (src/render/smoothing.rs): equal
//! bit for bit (tolerance 0: the same exact search in the same f64 arithmetic, whatever grid
//! each side builds), on the shared dark and star snapshots and on clustered synthetic sets
//! (with grids of several cell sizes, every query searched alone, warps searching together
//! wherever they can, and the default), with the timings and stages printed. Ignored here (no
//! GPU); run on the GPU machine with `--ignored --nocapture`. Fails loudly without a device.

mod common;

use haloscope::data::{LoadOptions, SpeciesKind, load_snapshot};
use haloscope::gpu::GpuDevice;
use haloscope::jobs::Progress;
use haloscope::render::knn::cuda::{
    GPU_VISIT_COST, KnnTuning, MAX_CELLS, knn_smoothing_lengths_cuda,
    knn_smoothing_lengths_cuda_timed,
};
use haloscope::render::smoothing::knn_smoothing_lengths;
use haloscope::render::synthetic::clustered_snapshot;
use std::time::Instant;

/// Warp boxes that make every query search alone (the default), warps within 8 cells, and
/// every warp of an open grid search together.
const WARP_BOXES: [u32; 3] = [0, 8, u32::MAX];

fn device() -> GpuDevice {
    GpuDevice::open(0).expect("no CUDA device opened: these tests need one")
}

fn check(device: &GpuDevice, name: &str, positions: &[[f32; 3]], k: usize, side: Option<f64>) {
    let start = Instant::now();
    let want = knn_smoothing_lengths(positions, k, side, &Progress::none()).expect("cpu");
    let cpu = start.elapsed().as_secs_f64();
    compare(device, name, positions, k, side, &want, cpu);
}

/// Runs the CUDA search (default, and with each of [`WARP_BOXES`]) and asserts every length
/// equals `want` bit for bit.
fn compare(
    device: &GpuDevice,
    name: &str,
    positions: &[[f32; 3]],
    k: usize,
    side: Option<f64>,
    want: &[f32],
    cpu: f64,
) {
    let start = Instant::now();
    let got =
        knn_smoothing_lengths_cuda(device, positions, k, side, &Progress::none()).expect("cuda");
    let gpu = start.elapsed().as_secs_f64();
    eprintln!(
        "{name}: {} particles, k {k}: CPU {cpu:.3} s, CUDA {gpu:.3} s",
        positions.len()
    );
    assert_eq!(differing(&got, want), 0, "{name}: lengths differ");
    for warp_box in WARP_BOXES {
        let tuning = KnnTuning {
            warp_box,
            ..KnnTuning::default()
        };
        let (got, _) =
            knn_smoothing_lengths_cuda_timed(device, positions, k, side, tuning, &Progress::none())
                .expect("cuda");
        assert_eq!(
            differing(&got, want),
            0,
            "{name}, warp box {warp_box}: lengths differ"
        );
    }
    assert!(want.iter().filter(|h| **h > 0.0).count() > positions.len() / 2);
}

/// Lengths of `got` whose bits differ from `want`'s (all of them when the counts differ).
fn differing(got: &[f32], want: &[f32]) -> usize {
    if got.len() != want.len() {
        return want.len().max(got.len());
    }
    got.iter()
        .zip(want)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count()
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn cuda_knn_equals_the_cpu_on_the_shared_snapshots() {
    let device = device();
    for (file, kind) in [
        ("snapshots/lambs.00200_subsamp_30K", SpeciesKind::Dark),
        ("snapshots/test4.tbin", SpeciesKind::Dark),
        ("snapshots/cube300.tbin", SpeciesKind::Dark),
        ("snapshots/run581.20000", SpeciesKind::Star),
        ("snapshots/g2_lcdm_gas_snapshot_004.hdf5", SpeciesKind::Dark),
    ] {
        let snapshot = load_snapshot(
            &common::shared_data(file),
            &LoadOptions::default(),
            &Progress::none(),
        )
        .expect("load");
        let side = snapshot
            .header
            .box_size
            .filter(|_| snapshot.header.periodic);
        let positions = &snapshot.species(kind).expect("species").positions;
        for k in [32, 8, 64] {
            check(&device, file, positions, k, side);
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn cuda_knn_equals_the_cpu_on_a_clustered_million() {
    let snapshot = clustered_snapshot(1_000_000, 11);
    check(
        &device(),
        "clustered 10^6",
        &snapshot.species[0].positions,
        32,
        None,
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn cuda_knn_equals_the_cpu_on_grids_of_any_cell_size() {
    // The cell-visit price moves the device grid's cell size; the lengths must not move.
    let device = device();
    for (n, side) in [(10_000_000, None), (1_000_000, Some(1.0))] {
        let snapshot = clustered_snapshot(n, 17);
        let positions = &snapshot.species[0].positions;
        let start = Instant::now();
        let want = knn_smoothing_lengths(positions, 32, side, &Progress::none()).expect("cpu");
        let cpu = start.elapsed().as_secs_f64();
        for visit in [0.5, GPU_VISIT_COST, 64.0] {
            // Every warp box, then the default with a cell cap 2x the default's (8x the CPU's
            // is the default).
            let finer = KnnTuning {
                visit,
                max_cells: 2 * KnnTuning::default().max_cells,
                ..KnnTuning::default()
            };
            let tunings = WARP_BOXES.map(|warp_box| KnnTuning {
                visit,
                warp_box,
                ..KnnTuning::default()
            });
            for tuning in tunings.into_iter().chain([finer]) {
                let (got, stages) = knn_smoothing_lengths_cuda_timed(
                    &device,
                    positions,
                    32,
                    side,
                    tuning,
                    &Progress::none(),
                )
                .expect("cuda");
                let differing = differing(&got, &want);
                eprintln!(
                    "clustered {n}, box {side:?}, {tuning:?}: CPU {cpu:.3} s, stages {stages:?}"
                );
                assert_eq!(differing, 0, "{tuning:?}: {differing} lengths differ");
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored --nocapture"]
fn cuda_knn_times_a_clustered_hundred_million() {
    let device = device();
    let snapshot = clustered_snapshot(100_000_000, 13);
    let positions = &snapshot.species[0].positions;
    for round in 0..2 {
        let start = Instant::now();
        let h = knn_smoothing_lengths_cuda(&device, positions, 32, None, &Progress::none())
            .expect("cuda");
        eprintln!(
            "clustered 10^8, k 32, round {round}: CUDA {:.3} s",
            start.elapsed().as_secs_f64()
        );
        assert!(h.iter().filter(|h| **h > 0.0).count() > positions.len() / 2);
    }
    // The default, warp boxes, a visit price of 8 with cell caps of 1/8 (the CPU's: the
    // default before 2026-11-28), 1/2 and 2x the default's, other visit prices.
    let default = KnnTuning::default();
    let warp_boxes = [8, 64].map(|warp_box| KnnTuning {
        warp_box,
        ..default
    });
    let caps = [MAX_CELLS / 8, MAX_CELLS / 2, 2 * MAX_CELLS].map(|max_cells| KnnTuning {
        visit: 8.0,
        max_cells,
        ..default
    });
    let visits = [0.5, 32.0].map(|visit| KnnTuning { visit, ..default });
    let tunings = [default].into_iter().chain(warp_boxes).chain(caps);
    for tuning in tunings.chain(visits) {
        let start = Instant::now();
        let (h, stages) = knn_smoothing_lengths_cuda_timed(
            &device,
            positions,
            32,
            None,
            tuning,
            &Progress::none(),
        )
        .expect("cuda");
        let total = start.elapsed().as_secs_f64();
        let stages: Vec<String> = stages
            .iter()
            .map(|(name, s)| format!("{name} {:.1} ms", s * 1e3))
            .collect();
        eprintln!(
            "clustered 10^8, k 32, {tuning:?}: CUDA {total:.3} s ({})",
            stages.join(", ")
        );
        assert!(h.iter().filter(|h| **h > 0.0).count() > positions.len() / 2);
    }
}
