//! `haloscope bench render FILE`: the user's own snapshot with the user's own style and camera
//! options (those `haloscope render` takes), as the command renders it: a fresh renderer per
//! case, whose first frame is the whole `render` call's frame (normalise, upload and reorder on
//! CUDA, then the frame and the tone map), then resident frames with the camera moved a little.
//! Each case runs twice when asked: as styled (colour) and without its colour field (grey).

use super::render::{BenchRenderArgs, frame, profile_json, warm_up};
use crate::backend::Backend;
use crate::cli::render::frame_settings;
use crate::data::{LoadOptions, load_snapshot};
use crate::jobs::Progress;
use crate::render::cpu::SplatProfile;
use crate::render::resolve::validate_settings;
use crate::render::{RenderSettings, RenderStats, Renderer, RendererOptions};
use anyhow::Context;
use std::path::Path;
use std::time::Instant;

/// Whether a case of `bench render FILE` drops the style's colour field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grey {
    /// The style as given (colour where it names a colour field).
    Off,
    /// The same style with no colour field (one plane).
    On,
}

/// Times `file` with the style and camera options of `args` on `backend`; one JSON row per
/// case into `rows`.
pub(super) fn run_file(
    args: &BenchRenderArgs,
    file: &Path,
    backend: &Backend,
    rows: &mut Vec<serde_json::Value>,
) -> anyhow::Result<()> {
    let context = || file.display().to_string();
    let load = Instant::now();
    let mut snapshot =
        load_snapshot(file, &LoadOptions::default(), &Progress::none()).with_context(context)?;
    let load_s = load.elapsed().as_secs_f64();
    args.style.apply_box(&mut snapshot);
    let base = frame_settings(
        &args.style,
        &args.view,
        args.width,
        args.height,
        &snapshot,
        None,
    )
    .with_context(context)?;
    validate_settings(&snapshot, &base).with_context(context)?;
    let n: usize = base
        .species
        .iter()
        .filter_map(|s| snapshot.species(s.kind).map(|sp| sp.len()))
        .sum();
    eprintln!(
        "{}: {n} particles drawn, loaded in {load_s:.3} s; {}x{}",
        file.display(),
        args.width,
        args.height
    );
    for &grey in &args.grey {
        let mut settings = base.clone();
        if grey == Grey::On {
            settings.species.iter_mut().for_each(|s| s.colour = None);
        }
        let options = RendererOptions { large: args.large };
        let mut renderer = Renderer::new(backend.clone(), options)?;
        let row = time_file_case(&mut renderer, &snapshot, &settings, args.repeat)
            .with_context(context)?;
        print_file_row(grey, &row);
        rows.push(serde_json::json!({
            "case": "file",
            "file": crate::cli::json_path(file),
            "particles": n,
            "width": args.width,
            "height": args.height,
            "grey": grey,
            "result": row,
        }));
    }
    Ok(())
}

/// A frame's stage times in ms, in the order the renderer reported them.
fn stages_ms(stats: &RenderStats) -> serde_json::Value {
    stats
        .timings
        .iter()
        .map(|t| serde_json::json!([t.stage, t.seconds * 1e3]))
        .collect()
}

/// The first frame (the `render` call's frame) and, after a GPU's warm-up, the fastest of
/// `repeat` resident frames, each with its stage times.
fn time_file_case(
    renderer: &mut Renderer,
    snapshot: &crate::data::Snapshot,
    settings: &RenderSettings,
    repeat: usize,
) -> anyhow::Result<serde_json::Value> {
    let start = Instant::now();
    let first = frame(renderer, snapshot, settings)?;
    let first_wall_s = start.elapsed().as_secs_f64();
    let threads = rayon::current_num_threads();
    let first_profile = renderer.cpu_splat_profile();
    warm_up(renderer, snapshot, settings)?;
    let mut best: Option<(RenderStats, f64, Option<SplatProfile>)> = None;
    for rep in 0..repeat.max(1) {
        let mut moved = settings.clone();
        moved.camera.position[0] += 1e-4 * (rep as f64 + 1.0);
        let start = Instant::now();
        let stats = frame(renderer, snapshot, &moved)?;
        let wall = start.elapsed().as_secs_f64();
        if best
            .as_ref()
            .is_none_or(|(b, ..)| stats.seconds < b.seconds)
        {
            best = Some((stats, wall, renderer.cpu_splat_profile()));
        }
    }
    let (resident, resident_wall_s, profile) = best.context("no frame")?;
    let profile_of = |p: Option<SplatProfile>| p.map(|p| profile_json(&p, threads));
    Ok(serde_json::json!({
        "backend": renderer.kind(),
        "first_s": first.seconds,
        "first_wall_s": first_wall_s,
        "first_stages_ms": stages_ms(&first),
        "frame_s": resident.seconds,
        "frame_wall_s": resident_wall_s,
        "frame_stages_ms": stages_ms(&resident),
        "resident": renderer.is_resident(),
        "counts": resident.counts,
        "first_profile": profile_of(first_profile),
        "frame_profile": profile_of(profile),
    }))
}

/// The case's line (stderr): first and resident frame, then their stage times.
fn print_file_row(grey: Grey, row: &serde_json::Value) {
    let ms = |k: &str| row[k].as_f64().unwrap_or(f64::NAN) * 1e3;
    let stages = |k: &str| {
        row[k]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|s| {
                        format!(
                            "{} {:.2}",
                            s[0].as_str().unwrap_or("?"),
                            s[1].as_f64().unwrap_or(f64::NAN)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let channels = if grey == Grey::On {
        "grey"
    } else {
        "as styled"
    };
    eprintln!(
        "[{channels}] first frame {:.2} ms, resident frame {:.2} ms (resident: {})",
        ms("first_s"),
        ms("frame_s"),
        row["resident"]
    );
    eprintln!("    first (ms): {}", stages("first_stages_ms"));
    eprintln!("    frame (ms): {}", stages("frame_stages_ms"));
}
