//! The app's viewport renderer on CUDA (run on the GPU machine with `--ignored`): the best
//! back-end must be CUDA there, and its image must match the CPU viewport render of the same view.

use haloscope::app::camera::OrbitCamera;
use haloscope::app::documents::{bounds_of, fill_missing_smoothing};
use haloscope::app::splotch::SplotchRenderer;
use haloscope::app::{ViewRequest, ViewStyle, ViewportRenderer};
use haloscope::data::demo::demo_snapshot;
use haloscope::jobs::Progress;
use std::sync::Arc;

/// The CUDA tone map may differ from the CPU's by one 8-bit level (as in tests/render_cuda.rs).
const MAX_LEVEL_DIFFERENCE: u8 = 1;

fn request(particles: u64, width_px: u32, height_px: u32) -> ViewRequest {
    let mut snapshot = demo_snapshot(particles, 1);
    fill_missing_smoothing(&mut snapshot, &Progress::none()).expect("smoothing lengths");
    let (lo, hi) = bounds_of(&snapshot).expect("bounds");
    ViewRequest {
        snapshot: Arc::new(snapshot),
        camera: OrbitCamera::home(lo, hi),
        style: ViewStyle::default(),
        width_px,
        height_px,
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn viewport_renders_on_cuda_and_matches_the_cpu_viewport() {
    let mut gpu = SplotchRenderer::best();
    assert_eq!(
        gpu.backend_name(),
        "cuda",
        "no CUDA device opened: this test must run on the GPU machine"
    );
    let mut cpu = SplotchRenderer::new();
    for (particles, width, height) in [(200_000, 980, 727), (1_000_000, 640, 360)] {
        let view = request(particles, width, height);
        // Twice on the GPU: the second frame uses the data already resident.
        for pass in 0..2 {
            let on_gpu = gpu.render(&view, &Progress::none()).expect("CUDA render");
            assert_eq!(on_gpu.backend, "cuda", "pass {pass}: fell back to the CPU");
            let on_cpu = cpu.render(&view, &Progress::none()).expect("CPU render");
            let (gpu_rgba, cpu_rgba) = (
                on_gpu.pixels.host().expect("host pixels"),
                on_cpu.pixels.host().expect("host pixels"),
            );
            assert_eq!(gpu_rgba.len(), cpu_rgba.len());
            let worst = gpu_rgba
                .iter()
                .zip(cpu_rgba)
                .map(|(a, b)| a.abs_diff(*b))
                .max()
                .unwrap_or(0);
            assert!(
                worst <= MAX_LEVEL_DIFFERENCE,
                "{particles} particles, pass {pass}: CUDA and CPU differ by {worst} levels"
            );
            assert!(gpu_rgba.chunks(4).any(|p| p[0] > 0), "image is black");
            eprintln!(
                "{particles} particles {width}x{height}: cuda {:.1} ms, cpu {:.1} ms",
                on_gpu.seconds * 1e3,
                on_cpu.seconds * 1e3
            );
        }
    }
}
