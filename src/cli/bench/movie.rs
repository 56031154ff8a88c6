//! `haloscope bench movie`: frames per second of the movie pipeline.
//!
//! Until the Splotch renderer is wired in, this measures the export pipeline without rendering:
//! PNG writing alone, H.264 encoding alone, and `export_frames` (PNG + MP4 on their worker
//! threads) fed with pre-made frames. The frames are smooth, moving Gaussian blobs on a dark
//! gradient, close to what a splat render looks like to the PNG and H.264 coders.

use crate::jobs::Progress;
use crate::movie::encode::Mp4Encoder;
use crate::movie::frames::write_png_atomic;
use crate::movie::{CameraPath, FramePlan, Keyframe, Mp4Settings, Timing, export_frames};
use anyhow::Context;
use clap::Args;
use image::RgbImage;
use rayon::prelude::*;
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
    #[arg(long, default_value_t = 30)]
    pub frames: usize,
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
    let (width, height, n) = (args.width, args.height, args.frames.max(1));
    let frames: Vec<RgbImage> = (0..n).map(|i| synthetic_frame(width, height, i)).collect();
    let dir = tempfile::tempdir().context("creating a temporary folder")?;

    let start = Instant::now();
    for (i, frame) in frames.iter().enumerate() {
        write_png_atomic(&dir.path().join(format!("png_{i:05}.png")), frame)?;
    }
    let png_s = start.elapsed().as_secs_f64();
    let png_bytes: u64 = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok()?.metadata().ok())
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

    let keyframes = vec![
        Keyframe::new(0.0, [0.0, 0.0, 3.0], [0.0; 3]),
        Keyframe::new(1.0, [3.0, 0.0, 0.0], [0.0; 3]),
    ];
    let path = CameraPath::new(keyframes, Timing::default(), false)?;
    let plan = FramePlan {
        n_frames: n,
        fps: 30.0,
        width,
        height,
    };
    let export_mp4 = dir.path().join("export.mp4");
    let start = Instant::now();
    export_frames(
        &path,
        &plan,
        &dir.path().join("frames"),
        Some((&export_mp4, &Mp4Settings::default())),
        |_, index| Ok::<_, std::io::Error>(frames[index].clone()),
        &Progress::none(),
    )?;
    let export_s = start.elapsed().as_secs_f64();

    let fps = |seconds: f64| n as f64 / seconds;
    if args.json {
        let report = serde_json::json!({
            "width": width,
            "height": height,
            "frames": n,
            "renderer": "none (pre-made frames)",
            "png_fps": fps(png_s),
            "png_mb_per_frame": png_bytes as f64 / n as f64 / 1e6,
            "h264_fps": fps(encode_s),
            "mp4_mb_per_frame": mp4.bytes as f64 / n as f64 / 1e6,
            "export_fps": fps(export_s),
            "threads": rayon::current_num_threads(),
        });
        println!("{report}");
    } else {
        eprintln!("movie pipeline, {width}×{height}, {n} frames, no renderer (pre-made frames)");
        eprintln!(
            "  PNG write          {:7.2} frames/s  ({:.2} MB/frame)",
            fps(png_s),
            png_bytes as f64 / n as f64 / 1e6
        );
        eprintln!(
            "  H.264 + MP4        {:7.2} frames/s  ({:.3} MB/frame)",
            fps(encode_s),
            mp4.bytes as f64 / n as f64 / 1e6
        );
        eprintln!("  export (PNG ∥ MP4) {:7.2} frames/s", fps(export_s));
    }
    Ok(())
}
