//! The wgpu kNN smoothing lengths (src/render/knn/wgpu.rs, shaders/knn.wgsl) against the CPU
//! reference (src/render/smoothing.rs): equal bit for bit (tolerance 0), on the shared dark
//! snapshots and on synthetic sets (open and periodic boxes, k = 1 to 64, n ≤ k, duplicates,
//! non-finite positions, points on cell and box faces). Runs on whatever adapter opens (lavapipe
//! here and in CI) and fails, never skips, when none does or it lacks f64 in shaders. Sets are
//! small: lavapipe is slow. On lavapipe test4.tbin's sparse outskirts (about 1.7 % of its dark
//! particles) hit llvmpipe's loop limit and take the CPU rerun, so that path is checked too.

mod common;

use haloscope::data::{LoadOptions, SpeciesKind, load_snapshot};
use haloscope::jobs::{CancelToken, Progress};
use haloscope::render::RenderError;
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
    // k above the shader's list, a periodic box narrower than the data.
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
    // f32 subnormals, which a driver may flush to zero.
    let mut tiny = positions.clone();
    tiny[5] = [1e-40, 0.5, 0.5];
    assert!(
        knn_smoothing_lengths_wgpu(&context, &tiny, 8, None, &Progress::none())
            .expect("subnormal")
            .is_none()
    );
    // A cancelled job stops with Cancelled.
    let token = CancelToken::new();
    token.cancel();
    let cancelled =
        knn_smoothing_lengths_wgpu(&context, &positions, 8, None, &Progress::with_cancel(token));
    assert!(matches!(cancelled, Err(RenderError::Cancelled)));
    // Bad input is an error, as on the CPU.
    assert!(knn_smoothing_lengths_wgpu(&context, &positions, 0, None, &Progress::none()).is_err());
}

#[test]
fn the_shaders_guarded_sum_is_never_fused() {
    // a·b = 1 − 2⁻⁶⁰ rounds to 1, so a·b + c is 0 unfused and −2⁻⁶⁰ fused: the plain form shows
    // whether this driver contracts, the guarded form of shaders/knn.wgsl must give 0 anyway.
    use wgpu::util::DeviceExt;
    let context = context();
    let device = &context.device;
    let source = "
        @group(0) @binding(0) var<storage, read_write> v: array<f64>;
        @compute @workgroup_size(1)
        fn main() {
            let a = v[0];
            let b = v[1];
            let c = v[2];
            let one = v[3];
            v[4] = a * b + c;
            v[5] = (a * b) * one + c;
        }";
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("fusion probe"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("fusion probe"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let eps = 2f64.powi(-30);
    let values = [1.0 + eps, 1.0 - eps, -1.0, 1.0, 7.0, 7.0];
    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&values),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 48,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&buffer, 0, &readback, 0, 48);
    context.queue.submit([encoder.finish()]);
    readback
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    context.finish().expect("probe");
    let out: Vec<f64> =
        bytemuck::pod_collect_to_vec(&readback.slice(..).get_mapped_range().expect("view"));
    eprintln!(
        "{}: a*b + c = {:e} ({}), guarded = {:e}",
        context.adapter_label(),
        out[4],
        if out[4] == 0.0 { "not fused" } else { "fused" },
        out[5]
    );
    assert_eq!(out[5], 0.0, "the guarded sum was fused");
}
