//! `haloscope bench movie`: frames per second of the movie pipeline.
//!
//! With `--particles N` (default 10⁷): the demo snapshot, an orbit around the box centre, every
//! frame rendered by the movie [`FrameRenderer`] on `--backend` (CUDA: data resident on the
//! device), written as PNG and encoded to H.264/MP4 by `export_frames` (PNG writers and the
//! encoder on their worker threads): the frames per second a user gets, and the render alone.
//! The PNG writer and the H.264 encoder are then timed alone on the same frames. With
//! `--particles 0` the frames are synthetic (smooth moving Gaussian blobs, close to a splat render
//! for the PNG and H.264 coders) and only the export pipeline is measured.

use crate::backend::{BackendChoice, DeviceSelection};
use crate::cli::movie::DEMO_SEED;
use crate::cli::style_args::default_species;
use crate::data::demo::demo_snapshot;
use crate::jobs::Progress;
use crate::movie::encode::Mp4Encoder;
use crate::movie::frames::write_png_atomic;
use crate::movie::presets::{Orbit, orbit};
use crate::movie::{FramePlan, FrameRenderer, Mp4Settings, export_frames};
use crate::render::{RenderSettings, SpeciesStyle};
use anyhow::Context;
use clap::Args;
use image::RgbImage;
use rayon::prelude::*;
use std::sync::Mutex;
use std::time::Instant;

/// Arguments of `haloscope bench movie`.
#[derive(Debug, Args)]
pub struct BenchMovieArgs {
    /// Frame width.
    #[arg(long, default_value_t = 1920)]
    pub width: u32,
    /// Frame height.
    #[arg(long, default_value_t = 1080)]
    pub height: u32,
    /// Frames per measurement.
    #[arg(long, default_value_t = 10)]
    pub frames: usize,
    /// Particles in the demo snapshot; 0 = no rendering (synthetic frames).
    #[arg(long, default_value_t = 10_000_000)]
    pub particles: u64,
    /// Rendering back-end (as `haloscope movie --backend`).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// CUDA devices to render on.
    #[command(flatten)]
    pub devices: crate::cli::devices_args::DevicesArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A synthetic frame: Gaussian blobs drifting with `index` over a dark vertical gradient.
fn synthetic_frame(width: u32, height: u32, index: usize) -> RgbImage {
    let phase = index as f32 * 0.05;
    let blobs: Vec<(f32, f32, f32, [f32; 3])> = (0..24)
        .map(|k| {
            let k = k as f32;
            let x = (0.5 + 0.4 * (1.7 * k + phase).sin()) * width as f32;
            let y = (0.5 + 0.4 * (2.3 * k + 0.7 * phase).cos()) * height as f32;
            let sigma = (0.01 + 0.03 * ((k * 0.37).sin() * 0.5 + 0.5)) * width as f32;
            let colour = [
                1.0,
                0.55 + 0.4 * (k * 0.9).sin(),
                0.3 + 0.3 * (k * 1.3).cos(),
            ];
            (x, y, sigma, colour)
        })
        .collect();
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    pixels
        .par_chunks_mut(width as usize * 3)
        .enumerate()
        .for_each(|(y, row)| {
            let background = 12.0 * y as f32 / height as f32;
            for (x, pixel) in row.chunks_exact_mut(3).enumerate() {
                let mut tau = [0.0f32; 3];
                for &(bx, by, sigma, colour) in &blobs {
                    let d2 = ((x as f32 - bx).powi(2) + (y as f32 - by).powi(2)) / (sigma * sigma);
                    if d2 < 9.0 {
                        let weight = (-d2).exp();
                        for c in 0..3 {
                            tau[c] += weight * colour[c];
                        }
                    }
                }
                for c in 0..3 {
                    // Splotch's 1 − exp(−τ) over the background.
                    let value = background + 255.0 * (1.0 - (-tau[c]).exp());
                    pixel[c] = value.min(255.0) as u8;
                }
            }
        });
    RgbImage::from_raw(width, height, pixels).unwrap_or_else(|| RgbImage::new(width, height))
}

/// Runs `haloscope bench movie`.
pub fn run(args: BenchMovieArgs) -> anyhow::Result<()> {
    let (width, height, n) = (args.width, args.height, args.frames.max(2));
    let dir = tempfile::tempdir().context("creating a temporary folder")?;
    // An orbit around the demo box's centre, seen from outside the box.
    let path = orbit(
        &Orbit {
            center: [0.5, 0.5, 0.5],
            radius: 1.8,
            axis: [0.0, 1.0, 0.0],
            start_direction: [0.0, 0.0, 1.0],
            elevation_deg: 15.0,
            turns: 0.25,
            duration_s: n as f64 / 30.0,
            fov_deg: 45.0,
        },
        0.0,
    )?;
    let plan = FramePlan {
        n_frames: n,
        fps: 30.0,
        width,
        height,
    };
    let mut report = serde_json::Map::new();
    report.insert("width".into(), width.into());
    report.insert("height".into(), height.into());
    report.insert("frames".into(), n.into());
    report.insert("particles".into(), args.particles.into());
    report.insert("threads".into(), rayon::current_num_threads().into());

    let frames: Vec<RgbImage> = if args.particles > 0 {
        let start = Instant::now();
        let snapshot = demo_snapshot(args.particles, DEMO_SEED);
        report.insert("demo_seconds".into(), start.elapsed().as_secs_f64().into());
        let start = Instant::now();
        let first = path.sample(path.start_s());
        // `haloscope movie`'s default style: the default species (the demo's gas, which has
        // smoothing lengths), white, auto exposure fixed from the first frame.
        let kind = default_species(&snapshot).context("the demo snapshot is empty")?;
        let settings = RenderSettings::new(
            width,
            height,
            first.pose.to_render_camera(),
            vec![SpeciesStyle::new(kind)],
        );
        let backend = args.devices.resolve(args.backend, DeviceSelection::First)?;
        let mut renderer =
            FrameRenderer::new(&snapshot, settings, &first, backend, &Progress::none())?;
        report.insert("setup_seconds".into(), start.elapsed().as_secs_f64().into());
        report.insert("backend".into(), renderer.backend().name().into());
        let kept = Mutex::new(Vec::with_capacity(n));
        let start = Instant::now();
        let summary = export_frames(
            &path,
            &plan,
            &dir.path().join("frames"),
            Some((&dir.path().join("movie.mp4"), &Mp4Settings::default())),
            |sample, _| {
                let image = renderer.frame(&snapshot, sample)?;
                if let Ok(mut kept) = kept.lock() {
                    kept.push(image.clone());
                }
                Ok::<_, anyhow::Error>(image)
            },
            &Progress::none(),
        )?;
        let seconds = start.elapsed().as_secs_f64();
        report.insert("movie_fps".into(), (n as f64 / seconds).into());
        report.insert(
            "render_fps".into(),
            (n as f64 / summary.render_seconds).into(),
        );
        // After the frames: a CUDA failure may have switched to the CPU part-way.
        report.insert("backend_at_end".into(), renderer.backend().name().into());
        report.insert("resident".into(), renderer.is_resident().into());
        report.insert("fallback_reason".into(), renderer.fallback_reason().into());
        kept.into_inner().unwrap_or_default()
    } else {
        (0..n).map(|i| synthetic_frame(width, height, i)).collect()
    };

    let start = Instant::now();
    for (i, frame) in frames.iter().enumerate() {
        write_png_atomic(&dir.path().join(format!("png_{i:05}.png")), frame)?;
    }
    let png_s = start.elapsed().as_secs_f64();
    let png_bytes: u64 = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();

    let start = Instant::now();
    let mp4_path = dir.path().join("encode.mp4");
    let mut encoder = Mp4Encoder::create(&mp4_path, width, height, 30.0, &Mp4Settings::default())?;
    for frame in &frames {
        encoder.push_frame(frame)?;
    }
    let mp4 = encoder.finish()?;
    let encode_s = start.elapsed().as_secs_f64();

    let start = Instant::now();
    export_frames(
        &path,
        &plan,
        &dir.path().join("premade"),
        Some((&dir.path().join("premade.mp4"), &Mp4Settings::default())),
        |_, index| Ok::<_, std::io::Error>(frames[index].clone()),
        &Progress::none(),
    )?;
    let export_s = start.elapsed().as_secs_f64();

    let fps = |seconds: f64| n as f64 / seconds;
    report.insert("png_fps".into(), fps(png_s).into());
    report.insert(
        "png_mb_per_frame".into(),
        (png_bytes as f64 / n as f64 / 1e6).into(),
    );
    report.insert("h264_fps".into(), fps(encode_s).into());
    report.insert(
        "mp4_mb_per_frame".into(),
        (mp4.bytes as f64 / n as f64 / 1e6).into(),
    );
    report.insert("export_without_render_fps".into(), fps(export_s).into());
    if args.json {
        println!("{}", serde_json::Value::Object(report));
    } else {
        let get = |key: &str| report.get(key).and_then(|v| v.as_f64());
        let backend = report
            .get("backend")
            .and_then(|v| v.as_str())
            .unwrap_or("none");
        eprintln!(
            "movie pipeline, {width}×{height}, {n} frames, {} particles, back-end {backend}",
            args.particles
        );
        if let (Some(movie), Some(render)) = (get("movie_fps"), get("render_fps")) {
            eprintln!("  movie (render + PNG + MP4) {movie:7.3} frames/s");
            eprintln!("  render alone               {render:7.3} frames/s");
        }
        eprintln!(
            "  PNG write alone            {:7.2} frames/s  ({:.2} MB/frame)",
            fps(png_s),
            png_bytes as f64 / n as f64 / 1e6
        );
        eprintln!(
            "  H.264 + MP4 alone          {:7.2} frames/s  ({:.3} MB/frame)",
            fps(encode_s),
            mp4.bytes as f64 / n as f64 / 1e6
        );
        eprintln!(
            "  export, pre-made frames    {:7.2} frames/s",
            fps(export_s)
        );
    }
    Ok(())
}
