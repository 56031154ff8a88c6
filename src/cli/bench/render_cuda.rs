//! `haloscope bench render --backend cuda`: the renderer `haloscope render --backend cuda` runs
//! (a [`CudaRenderer`] with the default tuning; large splats on CPU threads, or with `--large gpu`
//! on the GPU as the movie export draws them) on synthetic clustered snapshots: first frame
//! (upload included) and resident frames (camera moves), per-stage GPU kernel times, particles
//! per second. Frames end with the tone map on the GPU and the download of the 8-bit image only
//! (explicit brightness 1, as the CPU benchmark).

use super::render::{BenchRenderArgs, mean_radius};
use crate::backend::{Backend, BackendChoice};
use crate::data::SpeciesKind;
use crate::jobs::Progress;
use crate::render::synthetic::clustered_snapshot;
use crate::render::{
    Bounds, Brightness, Camera, CudaRenderer, CudaTuning, LargePath, RenderSettings, SpeciesStyle,
    ToneSettings,
};
use anyhow::Context;
use clap::Args;
use std::sync::Arc;
use std::time::Instant;

/// CUDA options of `haloscope bench render`.
#[derive(Debug, Args)]
pub struct CudaBenchArgs {
    /// Where large splats go: cpu threads (the renderer's default) or gpu kernels (the movie
    /// export's choice).
    #[arg(long, value_enum, default_value_t = LargePath::Cpu)]
    pub large: LargePath,
}

/// Runs the CUDA benchmark.
pub fn run(args: &BenchRenderArgs) -> anyhow::Result<()> {
    let backend = Backend::resolve(BackendChoice::Cuda)?;
    let device = backend.device().context("no CUDA device")?;
    eprintln!("device: {}", device.info());
    let mut rows = Vec::new();
    eprintln!(
        "{:>10} {:>5} {:>5} {:>5} {:>9} {:>9} {:>9}  stages (ms)",
        "particles", "side", "R0", "large", "first_s", "frame_ms", "Gpart/s"
    );
    for &n in &args.particles {
        let snapshot = clustered_snapshot(n as usize, 42);
        for &side in &args.sizes {
            bench_snapshot(args, device, &snapshot, n, side, &mut rows)?;
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "backend": "cuda",
                "device": device.info().to_string(),
                "cases": rows
            })
        );
    }
    Ok(())
}

/// Every radius on one snapshot and image side, with a renderer of its own (its first frame
/// uploads the data).
fn bench_snapshot(
    args: &BenchRenderArgs,
    device: &Arc<crate::gpu::GpuDevice>,
    snapshot: &crate::data::Snapshot,
    n: u64,
    side: u32,
    rows: &mut Vec<serde_json::Value>,
) -> anyhow::Result<()> {
    let bounds = Bounds::of_snapshot(snapshot, &[]).context("empty snapshot")?;
    let camera = Camera::frame_all(&bounds, side, side);
    let base = RenderSettings::new(
        side,
        side,
        camera,
        vec![SpeciesStyle::new(SpeciesKind::Dark)],
    );
    let mean_r1 = mean_radius(snapshot, &base)?;
    let tuning = CudaTuning {
        large: args.cuda.large,
        ..CudaTuning::DEFAULT
    };
    let mut renderer = CudaRenderer::new(device.clone(), tuning)?;
    for &r0 in &args.radii {
        let mut settings = base.clone();
        settings.species[0].size_factor = r0 / mean_r1;
        settings.brightness = Brightness::Explicit(1.0);
        let first = Instant::now();
        frame(&mut renderer, snapshot, &settings)?;
        let first_s = first.elapsed().as_secs_f64();
        let upload_s = renderer.last_upload_seconds();
        let mut best: Option<(f64, crate::render::RenderStats)> = None;
        for rep in 0..args.repeat.max(1) {
            // A camera move per frame: data stay resident.
            let mut moved = settings.clone();
            moved.camera.position[0] += 1e-4 * (rep as f64 + 1.0);
            let start = Instant::now();
            let stats = frame(&mut renderer, snapshot, &moved)?;
            let seconds = start.elapsed().as_secs_f64();
            if best.as_ref().is_none_or(|(b, _)| seconds < *b) {
                best = Some((seconds, stats));
            }
        }
        let (seconds, stats) = best.context("no frame")?;
        let stages: Vec<(String, f64)> = stats
            .timings
            .iter()
            .map(|t| (t.stage.to_owned(), t.seconds * 1e3))
            .collect();
        let rate = n as f64 / seconds;
        eprintln!(
            "{:>10} {:>5} {:>5.1} {:>5} {:>9.3} {:>9.2} {:>9.2}  {}  counts {:?}",
            n,
            side,
            r0,
            format!("{:?}", tuning.large).to_lowercase(),
            first_s,
            seconds * 1e3,
            rate / 1e9,
            stages
                .iter()
                .map(|(s, ms)| format!("{s} {ms:.2}"))
                .collect::<Vec<_>>()
                .join(", "),
            stats.counts
        );
        rows.push(serde_json::json!({
                "case": "synthetic-clustered",
                "particles": n,
                "side": side,
                "r0_px": r0,
                "tuning": tuning,
                "first_frame_s": first_s,
                "upload_s": upload_s,
                "resident": renderer.is_resident(),
                "frame_s": seconds,
                "particles_per_s": rate,
                "stages_ms": stages.into_iter().map(|(s, ms)| (s, ms.into())).collect::<serde_json::Map<_, _>>(),
                "counts": stats.counts,
            }));
    }
    Ok(())
}

/// One frame as the GUI would make it: kernels, GPU tone map, 8-bit image download.
fn frame(
    renderer: &mut CudaRenderer,
    snapshot: &crate::data::Snapshot,
    settings: &RenderSettings,
) -> anyhow::Result<crate::render::RenderStats> {
    let mut stats = renderer.render_frame(snapshot, settings, &Progress::none())?;
    let start = Instant::now();
    let image = renderer.download_image(1.0, &ToneSettings::default())?;
    anyhow::ensure!(image.width() == settings.width, "image size");
    stats.timings.push(crate::render::StageTime {
        stage: "tone_download",
        seconds: start.elapsed().as_secs_f64(),
    });
    Ok(stats)
}
