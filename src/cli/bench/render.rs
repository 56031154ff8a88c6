//! `haloscope bench render`: frames of the [`Renderer`] every face uses, on the back-end that
//! `--backend` resolves to, on synthetic clustered snapshots at chosen mean radii (the regimes of
//! the GPU Splotch paper's Tests 1–7) and on the shared data.
//!
//! Each snapshot and image side gets a fresh renderer: its first frame, reported apart, uploads
//! the data (CUDA) or sizes the buffers (CPU); on a GPU, half a second of untimed frames brings
//! the clock up; then `--repeat` frames, each a small camera move (the data stay resident), of
//! which the fastest is reported with its stage times. A CPU frame
//! ends at τ (normalise, project, bin, splat); a CUDA frame ends at the 8-bit image, because on
//! the device the tone map and the image's download are part of every frame
//! ([`Renderer::render_image`]). Brightness is explicit (1) for the synthetic cases.

use super::render_file::{Grey, run_file};
use crate::backend::{Backend, BackendChoice, BackendKind, DeviceSelection};
use crate::cli::render::ViewArgs;
use crate::cli::style_args::{STYLE_DEFAULTS_HELP, StyleArgs};
use crate::data::{LoadOptions, Snapshot, SpeciesKind, load_snapshot};
use crate::jobs::Progress;
use crate::render::cpu::SplatProfile;
use crate::render::project::{ParticleClass, StyleParams, ViewParams, project_particle};
use crate::render::synthetic::clustered_snapshot;
use crate::render::{
    Bounds, Brightness, Camera, LargeSplats, RenderSettings, RenderStats, Renderer,
    RendererOptions, SpeciesStyle,
};
use anyhow::Context;
use clap::Args;
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `haloscope bench render`.
#[derive(Debug, Args)]
#[command(after_help = STYLE_DEFAULTS_HELP)]
pub struct BenchRenderArgs {
    /// Time this snapshot (tipsy or Gadget HDF5) with the style and camera options below, as
    /// `haloscope render FILE` draws it, instead of the synthetic cases.
    pub file: Option<PathBuf>,
    /// FILE's frame width in pixels.
    #[arg(long, default_value_t = 2048)]
    pub width: u32,
    /// FILE's frame height in pixels.
    #[arg(long, default_value_t = 2048)]
    pub height: u32,
    /// FILE's cases: `off` (the style as given) and/or `on` (the same without its colour field).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Grey::Off, Grey::On])]
    pub grey: Vec<Grey>,
    /// FILE's style options (as `haloscope render` takes them).
    #[command(flatten)]
    pub style: Box<StyleArgs>,
    /// FILE's camera options (as `haloscope render` takes them).
    #[command(flatten)]
    pub view: Box<ViewArgs>,
    /// Particle counts of the synthetic clustered snapshots.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000_000u64, 10_000_000])]
    pub particles: Vec<u64>,
    /// Square image sides in pixels.
    #[arg(long, value_delimiter = ',', default_values_t = [1024u32, 2048])]
    pub sizes: Vec<u32>,
    /// Mean screen radii R0 in pixels (before the 1 px minimum radius), hit by scaling the size
    /// factor.
    #[arg(long, value_delimiter = ',', default_values_t = [0.3f32, 1.0, 4.0, 16.0])]
    pub radii: Vec<f32>,
    /// Colour of the synthetic cases, one case each: `none` (grey: r = g = b, drawn as one
    /// plane) or a field (log10, viridis; e.g. `Density`: three planes).
    #[arg(long, value_delimiter = ',', default_values_t = ["none".to_owned()])]
    pub colour: Vec<String>,
    /// Timed repetitions per case (the fastest is reported; buffers are reused).
    #[arg(long, default_value_t = 2)]
    pub repeat: usize,
    /// Also time the shared snapshots in this folder (e.g. ../shared/data/snapshots).
    #[arg(long, value_name = "DIR")]
    pub shared: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Back-end to time, resolved as `haloscope render --backend` resolves it.
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// CUDA devices to render on.
    #[command(flatten)]
    pub devices: crate::cli::devices_args::DevicesArgs,
    /// Where CUDA draws large splats: gpu kernels (the renderer's default) or cpu threads. No
    /// effect on the CPU back-end.
    #[arg(long, value_enum, default_value_t = LargeSplats::Gpu)]
    pub large: LargeSplats,
}

/// What every case shares: the resolved back-end, the renderer options and the timing knobs.
struct Bench {
    backend: Backend,
    options: RendererOptions,
    repeat: usize,
    threads: usize,
}

impl Bench {
    /// A fresh renderer (its first frame uploads or allocates).
    fn renderer(&self) -> anyhow::Result<Renderer> {
        Ok(Renderer::new(self.backend.clone(), self.options)?)
    }
}

/// Runs `haloscope bench render`.
pub fn run(args: BenchRenderArgs) -> anyhow::Result<()> {
    let bench = Bench {
        backend: args.devices.resolve(args.backend, DeviceSelection::First)?,
        options: RendererOptions { large: args.large },
        repeat: args.repeat,
        threads: rayon::current_num_threads(),
    };
    let isa = crate::render::cpu::Isa::detect().name();
    let kind = bench.backend.kind();
    let device = match (bench.backend.device(), bench.backend.wgpu_context()) {
        (Some(cuda), _) => Some(cuda.info().to_string()),
        (None, Some(wgpu)) => Some(wgpu.adapter_label()),
        (None, None) => None,
    };
    let cuda_devices = bench.backend.devices().len();
    eprintln!(
        "{kind} renderer ({}{}); CPU hot loops: {isa} ({} threads)",
        device.as_deref().unwrap_or("no device"),
        if cuda_devices > 1 {
            format!(", {cuda_devices} CUDA devices share each frame")
        } else {
            String::new()
        },
        bench.threads
    );
    if kind == BackendKind::Cuda {
        eprintln!("large splats on the {}", args.large.name());
    }
    let mut rows = Vec::new();
    if let Some(file) = &args.file {
        run_file(&args, file, &bench.backend, &mut rows)?;
    } else {
        synthetic_table(&bench, &args, &mut rows)?;
    }
    if let Some(dir) = &args.shared {
        shared_cases(&bench, dir, &mut rows)?;
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "backend": kind,
                "device": device,
                "cuda_devices": cuda_devices,
                "large": args.large,
                "threads": bench.threads,
                "isa": isa,
                "cases": rows
            })
        );
    }
    Ok(())
}

/// The synthetic cases under their table header.
fn synthetic_table(
    bench: &Bench,
    args: &BenchRenderArgs,
    rows: &mut Vec<serde_json::Value>,
) -> anyhow::Result<()> {
    eprintln!(
        "{:>10} {:>6} {:>6} {:>9} {:>9} {:>9} {:>12} {:>9} {:>12}",
        "particles",
        "side",
        "R0",
        "first",
        "frame",
        "Mpart/s",
        "Mpart/s/core",
        "CPU s",
        "Mpart/CPU-s"
    );
    for &n in &args.particles {
        let snapshot = clustered_snapshot(n as usize, 42);
        for &side in &args.sizes {
            synthetic_cases(bench, args, &snapshot, side, rows)?;
        }
    }
    Ok(())
}

/// Every colour and radius on one synthetic snapshot and image side, with one renderer.
fn synthetic_cases(
    bench: &Bench,
    args: &BenchRenderArgs,
    snapshot: &Snapshot,
    side: u32,
    rows: &mut Vec<serde_json::Value>,
) -> anyhow::Result<()> {
    let n = snapshot.n_particles() as u64;
    let bounds = Bounds::of_snapshot(snapshot, &[]).context("empty snapshot")?;
    let camera = Camera::frame_all(&bounds, side, side);
    let base = RenderSettings::new(
        side,
        side,
        camera,
        vec![SpeciesStyle::new(SpeciesKind::Dark)],
    );
    let mean_r1 = mean_radius(snapshot, &base)?;
    let mut renderer = bench.renderer()?;
    for (colour, &r0) in args
        .colour
        .iter()
        .flat_map(|c| args.radii.iter().map(move |r| (c, r)))
    {
        let mut settings = base.clone();
        settings.species[0].size_factor = r0 / mean_r1;
        settings.brightness = Brightness::Explicit(1.0);
        let grey = colour.eq_ignore_ascii_case("none");
        if !grey {
            let style = &mut settings.species[0];
            style.colour = Some(colour.clone());
            style.colour_log = true;
            style.palette = "viridis".to_owned();
        }
        let channels = if grey { "grey" } else { "rgb" };
        let row = time_case(bench, &mut renderer, snapshot, &settings)?;
        eprint!("[colour {colour}, {channels}] ");
        print_row(n, side, r0, &row, bench.threads);
        rows.push(serde_json::json!({
            "case": "synthetic-clustered",
            "particles": n,
            "side": side,
            "r0_px": r0,
            "colour": colour,
            "channels": channels,
            "result": row,
        }));
    }
    Ok(())
}

/// The shared snapshots in `dir`, each with its own renderer, at 1024².
fn shared_cases(
    bench: &Bench,
    dir: &std::path::Path,
    rows: &mut Vec<serde_json::Value>,
) -> anyhow::Result<()> {
    let cases = [
        (
            "g2_lcdm_gas_snapshot_004.hdf5",
            SpeciesKind::Gas,
            Some("Density"),
        ),
        ("lambs.00200_subsamp_30K", SpeciesKind::Dark, None),
        ("test4.tbin", SpeciesKind::Dark, None),
    ];
    for (file, kind, intensity) in cases {
        let path = dir.join(file);
        let mut snapshot = load_snapshot(&path, &LoadOptions::default(), &Progress::none())
            .with_context(|| path.display().to_string())?;
        // Smoothing lengths once, outside the timed frames (as the GUI keeps them).
        fill_smoothing(&mut snapshot, kind)?;
        let bounds = Bounds::of_snapshot(&snapshot, &[kind]).context("empty species")?;
        let mut style = SpeciesStyle::new(kind);
        style.intensity = intensity.map(str::to_owned);
        style.intensity_log = intensity.is_some();
        style.colour = style.intensity.clone();
        style.colour_log = style.intensity_log;
        let settings = RenderSettings::new(
            1024,
            1024,
            Camera::frame_all(&bounds, 1024, 1024),
            vec![style],
        );
        let row = time_case(bench, &mut bench.renderer()?, &snapshot, &settings)?;
        let n = snapshot.species(kind).map_or(0, |s| s.len()) as u64;
        print_row(n, 1024, f32::NAN, &row, bench.threads);
        rows.push(serde_json::json!({ "case": file, "particles": n, "side": 1024, "result": row }));
    }
    Ok(())
}

/// Mean screen radius r (px, no minimum radius, size factor 1) of the active particles.
fn mean_radius(snapshot: &Snapshot, settings: &RenderSettings) -> anyhow::Result<f32> {
    let view = ViewParams::new(
        &settings.camera,
        settings.width,
        settings.height,
        0.0,
        settings.border_px,
    )?;
    let style = StyleParams {
        intensity: None,
        colour: None,
        brightness: 1.0,
        size_factor: 1.0,
    };
    let species = snapshot
        .species(settings.species[0].kind)
        .context("species")?;
    let h = species
        .smoothing_lengths
        .as_ref()
        .context("smoothing lengths")?;
    let (sum, count) = species
        .positions
        .par_iter()
        .zip(h.par_iter())
        .map(|(p, h)| {
            let projected = project_particle(&view, &style, *p, *h, 0.0, 0.0);
            if projected.class == ParticleClass::Inactive {
                (0.0, 0u64)
            } else {
                (f64::from(projected.radius_px), 1)
            }
        })
        .reduce(|| (0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    anyhow::ensure!(count > 0, "no particle in view");
    Ok((sum / count as f64) as f32)
}

/// Computes kNN smoothing lengths where `kind` has none.
fn fill_smoothing(snapshot: &mut Snapshot, kind: SpeciesKind) -> anyhow::Result<()> {
    let box_size = snapshot
        .header
        .box_size
        .filter(|_| snapshot.header.periodic);
    if let Some(species) = snapshot.species_mut(kind)
        && species.smoothing_lengths.is_none()
    {
        let h = crate::render::smoothing::knn_smoothing_lengths(
            &species.positions,
            crate::render::smoothing::DEFAULT_KNN,
            box_size,
            &Progress::none(),
        )?;
        species.smoothing_lengths = Some(h);
    }
    Ok(())
}

/// One frame: τ on the CPU; on CUDA the 8-bit image (device tone map and download); on wgpu
/// the 8-bit image (τ downloaded and tone-mapped on the CPU).
pub(super) fn frame(
    renderer: &mut Renderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> anyhow::Result<RenderStats> {
    let stats = match renderer.kind() {
        BackendKind::Cpu => renderer.render_frame(snapshot, settings, &Progress::none())?,
        BackendKind::Cuda | BackendKind::Wgpu => {
            let (image, stats) = renderer.render_image(snapshot, settings, &Progress::none())?;
            anyhow::ensure!(image.width() == settings.width, "image size");
            stats
        }
    };
    Ok(stats)
}

/// Wall time of untimed frames before a GPU's resident frames are timed.
const GPU_WARM_UP_SECONDS: f64 = 0.5;

/// Untimed frames of `settings` for [`GPU_WARM_UP_SECONDS`] on a GPU back-end (none on the
/// CPU). A GPU left idle while the data were made or read runs at its idle clock and raises it
/// only after some tenths of a second of work (an H200 at 345 MHz reached 1980 MHz after 0.2-0.4
/// s, `nvidia-smi`), so the first resident frames would be timed at a fraction of the clock that
/// the window's frames, drawn one after another, run at.
pub(super) fn warm_up(
    renderer: &mut Renderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> anyhow::Result<()> {
    if renderer.kind() == BackendKind::Cpu {
        return Ok(());
    }
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < GPU_WARM_UP_SECONDS {
        frame(renderer, snapshot, settings)?;
    }
    Ok(())
}

/// The first frame of `settings`, then (after a GPU's warm-up) `repeat` frames with the camera
/// moved a little each time (the data stay resident); the fastest of those with its stage times
/// and rates.
fn time_case(
    bench: &Bench,
    renderer: &mut Renderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> anyhow::Result<serde_json::Value> {
    let first = Instant::now();
    frame(renderer, snapshot, settings)?;
    let first_frame_s = first.elapsed().as_secs_f64();
    let upload_s = renderer.last_upload_seconds();
    warm_up(renderer, snapshot, settings)?;
    /// A timed frame: its stats, wall seconds, CPU seconds and the CPU splatter's profile.
    type Timed = (RenderStats, f64, Option<f64>, Option<SplatProfile>);
    let mut best: Option<Timed> = None;
    for rep in 0..bench.repeat.max(1) {
        let mut moved = settings.clone();
        moved.camera.position[0] += 1e-4 * (rep as f64 + 1.0);
        let cpu_before = process_cpu_seconds();
        let start = Instant::now();
        let stats = frame(renderer, snapshot, &moved)?;
        let wall = start.elapsed().as_secs_f64();
        let cpu = cpu_before
            .zip(process_cpu_seconds())
            .map(|(before, after)| after - before);
        if best
            .as_ref()
            .is_none_or(|(b, ..)| stats.seconds < b.seconds)
        {
            best = Some((stats, wall, cpu, renderer.cpu_splat_profile()));
        }
    }
    let (stats, frame_s, cpu_seconds, profile) = best.context("no frame")?;
    let stage = |name: &str| {
        stats
            .timings
            .iter()
            .find(|t| t.stage == name)
            .map_or(0.0, |t| t.seconds)
    };
    let stages_ms: serde_json::Map<String, serde_json::Value> = stats
        .timings
        .iter()
        .map(|t| (t.stage.to_owned(), (t.seconds * 1e3).into()))
        .collect();
    let rate = stats.particles as f64 / stats.seconds;
    Ok(serde_json::json!({
        "seconds": stats.seconds,
        "frame_s": frame_s,
        "first_frame_s": first_frame_s,
        "upload_s": upload_s,
        "resident": renderer.is_resident(),
        "project_s": stage("project"),
        "splat_s": stage("splat"),
        "normalise_s": stage("normalise"),
        "exposure_s": stage("exposure"),
        "stages_ms": stages_ms,
        "particles_per_s": rate,
        "particles_per_s_per_core": rate / bench.threads as f64,
        "cpu_seconds": cpu_seconds,
        "particles_per_cpu_second": cpu_seconds.map(|c| stats.particles as f64 / c),
        "counts": stats.counts,
        "min_radius_px": settings.min_radius_px,
        "large": renderer.options().large,
        "profile": profile.map(|p| profile_json(&p, bench.threads)),
    }))
}

/// The splatter's per-pass breakdown, with each pass's parallel efficiency (busy time summed
/// over tasks / (wall · threads)).
pub(super) fn profile_json(p: &SplatProfile, threads: usize) -> serde_json::Value {
    let efficiency = |busy: f64, wall: f64| busy / (wall * threads as f64);
    serde_json::json!({
        "bin_wall_s": p.bin_wall_s,
        "produce_busy_s": p.produce_busy_s,
        "sort_busy_s": p.sort_busy_s,
        "bin_efficiency": efficiency(p.produce_busy_s + p.sort_busy_s, p.bin_wall_s),
        "chunks": p.chunks,
        "draw_wall_s": p.draw_wall_s,
        "draw_busy_s": p.draw_busy_s,
        "merge_busy_s": p.merge_busy_s,
        "draw_efficiency": efficiency(p.draw_busy_s + p.merge_busy_s, p.draw_wall_s),
        "slowest_unit_s": p.slowest_unit_s,
        "units": p.units,
        "split_tiles": p.split_tiles,
    })
}

/// CPU time of every thread of this process so far (Linux `/proc/self/task/*/schedstat`, ns on
/// CPU), so that rates per core can be measured on a machine shared with other work.
fn process_cpu_seconds() -> Option<f64> {
    let mut total_ns = 0u64;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let path = entry.ok()?.path().join("schedstat");
        let text = std::fs::read_to_string(path).ok()?;
        total_ns += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total_ns as f64 * 1e-9)
}

/// One table row (stderr): times, rates and class counts, then the stage times, then the CPU
/// splatter's profile where there is one.
fn print_row(n: u64, side: u32, r0: f32, row: &serde_json::Value, threads: usize) {
    let get = |k: &str| row[k].as_f64().unwrap_or(f64::NAN);
    let counts = &row["counts"];
    let active = ["small", "medium", "large"]
        .iter()
        .map(|k| counts[*k].as_u64().unwrap_or(0))
        .sum::<u64>();
    let rate = get("particles_per_s");
    eprintln!(
        "{:>10} {:>6} {:>6.1} {:>8.3}s {:>8.3}s {:>9.2} {:>12.2} {:>8.3}s {:>12.2}   (active {}, large {}, {} threads)",
        n,
        side,
        r0,
        get("first_frame_s"),
        get("seconds"),
        rate / 1e6,
        rate / 1e6 / threads as f64,
        get("cpu_seconds"),
        get("particles_per_cpu_second") / 1e6,
        active,
        counts["large"].as_u64().unwrap_or(0),
        threads
    );
    if let Some(stages) = row["stages_ms"].as_object() {
        let stages: Vec<String> = stages
            .iter()
            .map(|(s, ms)| format!("{s} {:.2}", ms.as_f64().unwrap_or(f64::NAN)))
            .collect();
        eprintln!("{:>34} stages (ms): {}", "", stages.join(", "));
    }
    let p = &row["profile"];
    if p.is_null() {
        return;
    }
    let pf = |k: &str| p[k].as_f64().unwrap_or(f64::NAN);
    eprintln!(
        "{:>34} bin {:.3}s (produce {:.3}, sort {:.3} busy; eff {:.2})  draw {:.3}s (tiles {:.3}, merge {:.3} busy; eff {:.2}; slowest unit {:.4}s; {} units, {} split)",
        "",
        pf("bin_wall_s"),
        pf("produce_busy_s"),
        pf("sort_busy_s"),
        pf("bin_efficiency"),
        pf("draw_wall_s"),
        pf("draw_busy_s"),
        pf("merge_busy_s"),
        pf("draw_efficiency"),
        pf("slowest_unit_s"),
        p["units"].as_u64().unwrap_or(0),
        p["split_tiles"].as_u64().unwrap_or(0),
    );
}
