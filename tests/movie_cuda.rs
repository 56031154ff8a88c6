//! Movies on the CUDA back-end against the CPU back-end. Ignored here (no GPU); build
//! with `cargo test --release --no-run --test movie_cuda` and run on the GPU machine with
//! `--ignored`. Every test fails loudly when no device opens. The command-line test runs the
//! `haloscope` binary named by `$HALOSCOPE_BIN` (the bundled one on the device), else the one
//! built with these tests.

mod common;

use haloscope::backend::{Backend, BackendChoice, BackendKind};
use haloscope::data::SpeciesKind;
use haloscope::data::demo::demo_snapshot;
use haloscope::gpu::GpuDevice;
use haloscope::jobs::Progress;
use haloscope::movie::{FramePlan, FrameRenderer, export_frames, parse_path};
use haloscope::render::{RenderSettings, SpeciesStyle};
use image::RgbImage;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The demo fly-through, embedded: the test binary runs on the GPU machine without the sources.
const DEMO_PATH_TOML: &str = include_str!("../assets/paths/demo-flythrough.toml");
const WIDTH: u32 = 320;
const HEIGHT: u32 = 240;
const FRAMES: usize = 5;
const PARTICLES: u64 = 100_000;

fn open_device() {
    let device = GpuDevice::open(0).expect("no CUDA device opened: these tests need one");
    eprintln!("device: {}", device.info());
}

/// The largest difference of any channel of any pixel, in 8-bit levels, and how many channel
/// values differ at all.
fn max_level_difference(a: &RgbImage, b: &RgbImage) -> (u8, usize) {
    assert_eq!(a.dimensions(), b.dimensions());
    let diffs = a
        .as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| x.abs_diff(*y));
    let differing = diffs.clone().filter(|&d| d > 0).count();
    (diffs.max().unwrap_or(0), differing)
}

/// Checks one CUDA frame against the CPU frame: at most one 8-bit level apart per channel, the
/// tolerance of the CUDA renderer's own tone-map test (tests/render_cuda.rs; its τ agrees to
/// ‖Δ‖/‖ref‖ < 1e-4 and its auto exposure to 1e-3), and not black.
fn assert_frames_match(index: usize, cuda: &RgbImage, cpu: &RgbImage) {
    let (max, differing) = max_level_difference(cuda, cpu);
    eprintln!("frame {index}: max difference {max} level(s), {differing} channel values differ");
    assert!(
        max <= 1,
        "frame {index}: CUDA and CPU differ by {max} levels"
    );
    let lit = cpu.as_raw().iter().filter(|&&v| v > 0).count();
    assert!(
        lit > cpu.as_raw().len() / 100,
        "frame {index}: only {lit} lit channel values: the test scene shows nothing"
    );
}

/// Renders the demo flythrough's `FRAMES` frames into `dir` on `choice` through the library.
fn library_movie(choice: BackendChoice, dir: &Path) -> (Vec<RgbImage>, FrameRenderer) {
    let snapshot = demo_snapshot(PARTICLES, 1);
    let path = parse_path(DEMO_PATH_TOML, Path::new("demo-flythrough.toml")).expect("demo path");
    let plan = FramePlan {
        n_frames: FRAMES,
        fps: 30.0,
        width: WIDTH,
        height: HEIGHT,
    };
    let first = path.sample(path.start_s());
    let settings = RenderSettings::new(
        WIDTH,
        HEIGHT,
        first.pose.to_render_camera(),
        vec![SpeciesStyle::new(SpeciesKind::Gas)],
    );
    let backend = Backend::resolve(choice).expect("back-end");
    let mut renderer = FrameRenderer::new(&snapshot, settings, &first, backend, &Progress::none())
        .expect("frame renderer");
    let summary = export_frames(
        &path,
        &plan,
        dir,
        None,
        |sample, _| renderer.frame(&snapshot, sample),
        &Progress::none(),
    )
    .expect("export");
    assert_eq!(summary.rendered, FRAMES);
    let frames = summary
        .frame_paths
        .iter()
        .map(|p| image::open(p).expect("frame").into_rgb8())
        .collect();
    (frames, renderer)
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn library_movie_on_cuda_matches_the_cpu_with_data_resident() {
    open_device();
    let dir = tempfile::tempdir().expect("tempdir");
    let (cuda_frames, cuda) = library_movie(BackendChoice::Cuda, &dir.path().join("cuda"));
    assert_eq!(cuda.backend(), BackendKind::Cuda);
    assert_eq!(cuda.fallback_reason(), None);
    assert!(cuda.is_resident(), "the particles did not stay on the GPU");
    let (cpu_frames, cpu) = library_movie(BackendChoice::Cpu, &dir.path().join("cpu"));
    assert_eq!(cpu.backend(), BackendKind::Cpu);
    let rel = (cuda.base_brightness() / cpu.base_brightness() - 1.0).abs();
    assert!(
        rel < 1e-3,
        "first-frame exposure {} (CUDA) vs {} (CPU)",
        cuda.base_brightness(),
        cpu.base_brightness()
    );
    for (index, (a, b)) in cuda_frames.iter().zip(&cpu_frames).enumerate() {
        assert_frames_match(index, a, b);
    }
}

fn haloscope() -> PathBuf {
    let bin = std::env::var_os("HALOSCOPE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(common::haloscope_bin);
    assert!(
        bin.exists(),
        "haloscope binary {} not found (set HALOSCOPE_BIN)",
        bin.display()
    );
    bin
}

/// Runs `haloscope movie` on the demo and returns its JSON report and frames.
fn cli_movie(backend: &str, dir: &Path) -> (serde_json::Value, Vec<RgbImage>) {
    let frames_dir = dir.join(backend);
    let path_file = dir.join("demo-flythrough.toml");
    std::fs::write(&path_file, DEMO_PATH_TOML).expect("write the path file");
    let output = Command::new(haloscope())
        .args(["movie", "--demo", &PARTICLES.to_string(), "--path"])
        .arg(&path_file)
        .args(["--frames", &FRAMES.to_string()])
        .args([
            "--width",
            &WIDTH.to_string(),
            "--height",
            &HEIGHT.to_string(),
        ])
        .args(["--backend", backend, "--json", "--out"])
        .arg(&frames_dir)
        .arg("--mp4")
        .arg(dir.join(format!("{backend}.mp4")))
        .output()
        .expect("haloscope runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{backend}: {stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object on stdout");
    let frames = (0..FRAMES)
        .map(|i| {
            image::open(frames_dir.join(format!("frame_{i:05}.png")))
                .expect("frame")
                .into_rgb8()
        })
        .collect();
    (report, frames)
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn cli_movie_with_backend_cuda_matches_the_cpu_and_reports_cuda() {
    open_device();
    let dir = tempfile::tempdir().expect("tempdir");
    let (cuda_report, cuda_frames) = cli_movie("cuda", dir.path());
    eprintln!("cuda: {cuda_report}");
    assert_eq!(cuda_report["backend"], "cuda");
    assert_eq!(cuda_report["fallback_reason"], serde_json::Value::Null);
    assert_eq!(cuda_report["resident"], true);
    assert_eq!(cuda_report["rendered"], FRAMES);
    let (cpu_report, cpu_frames) = cli_movie("cpu", dir.path());
    assert_eq!(cpu_report["backend"], "cpu");
    for (index, (a, b)) in cuda_frames.iter().zip(&cpu_frames).enumerate() {
        assert_frames_match(index, a, b);
    }
}
