//! The wgpu kNN smoothing lengths (src/render/knn/wgpu.rs, shaders/knn.wgsl) against the CPU
//! reference (src/render/smoothing.rs): equal bit for bit (tolerance 0), on the shared dark
//! snapshots and on synthetic sets (open and periodic boxes, k = 1 to 64, n ≤ k, duplicates,
//! non-finite positions, points on cell and box faces). Runs on whatever adapter opens (lavapipe
//! here and in CI) and fails, never skips, when none does or it lacks f64 in shaders. Sets are
//! small: lavapipe is slow.

mod common;

use haloscope::data::{LoadOptions, SpeciesKind, load_snapshot};
use haloscope::jobs::Progress;
use haloscope::render::knn::smoothing_lengths_wgpu;
use haloscope::render::knn::wgpu::{FEATURES, WGPU_MAX_K, knn_smoothing_lengths_wgpu};
use haloscope::render::smoothing::knn_smoothing_lengths;
use haloscope::render::wgpu::WgpuContext;

fn context() -> WgpuContext {
    let context = WgpuContext::open(true).expect("no wgpu adapter opened: these tests need one");
    assert!(
        context.device.features().contains(FEATURES),
        "{} lacks f64 in shaders: the wgpu kNN search cannot be tested on it",
        context.adapter_label()
    );
    context
}

fn bits(lengths: &[f32]) -> Vec<u32> {
    lengths.iter().map(|h| h.to_bits()).collect()
}

fn check(context: &WgpuContext, what: &str, positions: &[[f32; 3]], k: usize, side: Option<f64>) {
    let want = knn_smoothing_lengths(positions, k, side, &Progress::none()).expect("cpu");
    let got = knn_smoothing_lengths_wgpu(context, positions, k, side, &Progress::none())
        .expect("wgpu")
        .unwrap_or_else(|| panic!("{what}: the wgpu search declined k = {k}, box {side:?}"));
    let wrong: Vec<(usize, f32, f32)> = (0..want.len())
        .filter(|&i| got[i].to_bits() != want[i].to_bits())
        .map(|i| (i, got[i], want[i]))
        .take(5)
        .collect();
    assert!(
        wrong.is_empty() && got.len() == want.len(),
        "{what}: k = {k}, box {side:?}: (index, wgpu, cpu) first differing: {wrong:?}"
    );
}

/// `n` points, a third spread over the unit box and the rest in a dense clump by a corner.
fn clustered(n: usize, seed: u64) -> Vec<[f32; 3]> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n)
        .map(|i| {
            if i % 3 == 0 {
                [next(), next(), next()]
            } else {
                [0.02 * next(), 0.97 + 0.02 * next(), 0.5 + 0.01 * next()]
            }
        })
        .collect()
}

#[test]
fn wgpu_knn_equals_the_cpu_on_clustered_sets() {
    let context = context();
    let positions = clustered(3000, 7);
    for side in [None, Some(1.0)] {
        for k in [1, 8, 32, 64] {
            check(&context, "clustered 3000", &positions, k, side);
        }
    }
    // Shifted to [-0.5, 0.5) (as tipsy boxes are): still periodic with side 1.
    let shifted: Vec<[f32; 3]> = positions.iter().map(|p| p.map(|v| v - 0.5)).collect();
    check(&context, "clustered, shifted", &shifted, 32, Some(1.0));
}

#[test]
fn wgpu_knn_equals_the_cpu_on_small_and_awkward_sets() {
    let context = context();
    // n ≤ k: the farthest other one.
    let few = clustered(20, 3);
    for k in [8, 19, 20, 64] {
        for side in [None, Some(1.0)] {
            check(&context, "20 points", &few, k, side);
        }
    }
    // Duplicates: zero distances, k-th among ties.
    let mut dupes = clustered(400, 5);
    for i in 0..100 {
        dupes[i + 200] = dupes[i % 7];
    }
    for k in [1, 8, 32] {
        check(&context, "duplicates", &dupes, k, None);
        check(&context, "duplicates", &dupes, k, Some(1.0));
    }
    // Non-finite positions get 0 and are nobody's neighbour.
    let mut holes = clustered(500, 9);
    holes[3] = [f32::NAN, 0.5, 0.5];
    holes[77] = [0.1, f32::INFINITY, 0.2];
    holes[400] = [0.3, 0.3, f32::NEG_INFINITY];
    for side in [None, Some(1.0)] {
        check(&context, "non-finite", &holes, 8, side);
    }
    // A lattice on cell and box faces: many equal distances, coordinates 0 and the side itself.
    let lattice: Vec<[f32; 3]> = (0..9 * 9 * 9)
        .map(|i| [(i % 9) as f32, ((i / 9) % 9) as f32, (i / 81) as f32].map(|v| v * 0.125))
        .collect();
    for k in [1, 6, 8, 32, 64] {
        check(&context, "lattice", &lattice, k, None);
        check(&context, "lattice", &lattice, k, Some(1.0));
    }
    // Half-box distances, where the minimum image is ambiguous.
    let halves: Vec<[f32; 3]> = (0..64)
        .map(|i| [i % 4, (i / 4) % 4, i / 16].map(|v| v as f32 * 0.25))
        .collect();
    for k in [1, 8, 32] {
        check(&context, "half-box", &halves, k, Some(1.0));
    }
}

#[test]
fn wgpu_knn_equals_the_cpu_on_the_shared_dark_snapshots() {
    let context = context();
    for file in [
        "snapshots/lambs.00200_subsamp_30K",
        "snapshots/test4.tbin",
        "snapshots/g2_lcdm_gas_snapshot_004.hdf5",
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
        let positions = &snapshot.species(SpeciesKind::Dark).expect("dark").positions;
        check(&context, file, positions, 32, side);
    }
}

#[test]
fn what_the_wgpu_search_declines_falls_back_to_the_cpu() {
    let context = context();
    let positions = clustered(300, 4);
    // k above the shader's list, and a periodic box narrower than the data.
    assert!(
        knn_smoothing_lengths_wgpu(
            &context,
            &positions,
            WGPU_MAX_K + 1,
            None,
            &Progress::none()
        )
        .expect("k")
        .is_none()
    );
    assert!(
        knn_smoothing_lengths_wgpu(&context, &positions, 8, Some(0.5), &Progress::none())
            .expect("box")
            .is_none()
    );
    for (k, side) in [(WGPU_MAX_K + 1, None), (8, Some(0.5)), (8, None)] {
        let want = knn_smoothing_lengths(&positions, k, side, &Progress::none()).expect("cpu");
        let got = smoothing_lengths_wgpu(Some(&context), &positions, k, side, &Progress::none())
            .expect("dispatch");
        assert_eq!(bits(&got), bits(&want));
    }
    // Bad input is an error, as on the CPU.
    assert!(knn_smoothing_lengths_wgpu(&context, &positions, 0, None, &Progress::none()).is_err());
}
