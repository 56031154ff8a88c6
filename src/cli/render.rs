//! `haloscope render`: one Splotch image of a snapshot (DESIGN §9, issue 3).

use crate::cli::progress_bar::terminal_progress;
use crate::data::{LoadOptions, Snapshot, SpeciesKind, load_snapshot};
use crate::render::palette::palette_names;
use crate::render::{
    BitDepth, Bounds, Brightness, Camera, Projection, RenderSettings, SpeciesStyle, ToneSettings,
    npy, output, render,
};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// Which renderer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// CUDA when available, else the CPU.
    Auto,
    /// The CPU reference renderer.
    Cpu,
    /// The CUDA renderer.
    Cuda,
}

/// Arguments of `haloscope render`.
///
/// Per-species options take `VALUE` (every drawn species) or `SPECIES=VALUE` (one species) and
/// may be repeated, e.g. `--species gas,dark --intensity gas=Density --palette dark=ice`.
#[derive(Debug, Args)]
#[command(
    after_help = "Defaults: --species is gas when the file's gas has smoothing lengths, \
else dark (missing smoothing lengths come from the k-th nearest neighbour, --knn). With no \
--intensity every particle has n = 1. With no --color the colour follows the intensity field \
(same log flag) when there is one, else white. The palette defaults to inferno. Without \
--camera the view frames the drawn particles from +z with +y up (45 degree field of view)."
)]
pub struct RenderArgs {
    /// Snapshot to render (tipsy or Gadget HDF5).
    #[arg(required_unless_present = "list_palettes")]
    pub file: Option<PathBuf>,
    /// Output PNG.
    #[arg(long, required_unless_present = "list_palettes")]
    pub out: Option<PathBuf>,
    /// Image width in pixels.
    #[arg(long, default_value_t = 800)]
    pub width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 800)]
    pub height: u32,
    /// Per-species style options.
    #[command(flatten)]
    pub style: Box<StyleArgs>,
    /// Global brightness B (turns auto exposure off); multiplies every emission and is
    /// included in --tau-out.
    #[arg(long)]
    pub brightness: Option<f32>,
    /// Camera options.
    #[command(flatten)]
    pub view: Box<ViewArgs>,
    /// Minimum splat radius in pixels (0 = none).
    #[arg(long, default_value_t = 1.0)]
    pub min_radius: f32,
    /// Tile border in pixels for the large class.
    #[arg(long, default_value_t = 8.0)]
    pub border: f32,
    /// Gamma applied to 1 − exp(−τ).
    #[arg(long, default_value_t = 1.0)]
    pub gamma: f32,
    /// Contrast multiplier after the gamma.
    #[arg(long, default_value_t = 1.0)]
    pub contrast: f32,
    /// Bits per channel of the PNG: 8 or 16.
    #[arg(long, default_value_t = 8, value_parser = parse_bits)]
    pub bits: u8,
    /// Write τ as float32 .npy, shape (H, W, 3), row 0 at the top, before tone mapping. It
    /// includes an explicit --brightness; under auto exposure it is τ at brightness 1 (before
    /// exposure) and --json reports the brightness used.
    #[arg(long, value_name = "TAU.npy")]
    pub tau_out: Option<PathBuf>,
    /// Renderer.
    #[arg(long, value_enum, default_value_t = Backend::Auto)]
    pub backend: Backend,
    /// k of the k-th nearest neighbour for species without smoothing lengths.
    #[arg(long, default_value_t = 32)]
    pub knn: usize,
    /// Periodic box side for the kNN smoothing lengths (the file's periodic box otherwise).
    #[arg(long = "box", value_name = "L")]
    pub box_size: Option<f64>,
    /// Load at most N particles (deterministic uniform subsample).
    #[arg(long, value_name = "N")]
    pub max_particles: Option<u64>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// List the palette names and exit.
    #[arg(long)]
    pub list_palettes: bool,
}

/// The camera options of `haloscope render` (each overrides the framing default).
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Camera position X,Y,Z.
    #[arg(long, value_name = "X,Y,Z", allow_hyphen_values = true)]
    pub camera: Option<String>,
    /// Look-at point X,Y,Z.
    #[arg(long, value_name = "X,Y,Z", allow_hyphen_values = true)]
    pub lookat: Option<String>,
    /// Up vector X,Y,Z (points up in the image).
    #[arg(long, value_name = "X,Y,Z", allow_hyphen_values = true)]
    pub up: Option<String>,
    /// Horizontal field of view in degrees.
    #[arg(long)]
    pub fov: Option<f64>,
    /// Orthographic projection (same scale as the perspective one at the look-at plane).
    #[arg(long)]
    pub ortho: bool,
    /// Only particles with depth > NEAR.
    #[arg(long, default_value_t = 0.0)]
    pub near: f64,
    /// Only particles with depth < FAR.
    #[arg(long)]
    pub far: Option<f64>,
}

/// The per-species options of `haloscope render` (`VALUE` or `SPECIES=VALUE`, repeatable).
#[derive(Debug, Args)]
pub struct StyleArgs {
    /// Species to draw, comma separated (gas, dark, star, other).
    #[arg(long, value_delimiter = ',')]
    pub species: Vec<String>,
    /// Intensity field, `[SPECIES=]FIELD` (repeatable); none: n = 1.
    #[arg(long, value_name = "[SPECIES=]FIELD")]
    pub intensity: Vec<String>,
    /// log10 of the intensity; `--log-intensity=gas,dark` for some species only.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "SPECIES,...")]
    pub log_intensity: Option<String>,
    /// Fixed intensity limits `[SPECIES=]LO:HI` (log10 units under --log-intensity).
    #[arg(long, value_name = "[SPECIES=]LO:HI", allow_hyphen_values = true)]
    pub intensity_range: Vec<String>,
    /// Colour field, `[SPECIES=]FIELD` or `[SPECIES=]none` (white).
    #[arg(long, value_name = "[SPECIES=]FIELD|none")]
    pub color: Vec<String>,
    /// log10 of the colour value; `--log-color=gas` for some species only.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "SPECIES,...")]
    pub log_color: Option<String>,
    /// Fixed colour limits `[SPECIES=]LO:HI` (log10 units under --log-color).
    #[arg(long, value_name = "[SPECIES=]LO:HI", allow_hyphen_values = true)]
    pub color_range: Vec<String>,
    /// Palette `[SPECIES=]NAME` (see --list-palettes).
    #[arg(long, value_name = "[SPECIES=]NAME")]
    pub palette: Vec<String>,
    /// Per-species emission multiplier `[SPECIES=]B` (default 1).
    #[arg(long, value_name = "[SPECIES=]B")]
    pub species_brightness: Vec<String>,
    /// Per-species radius multiplier `[SPECIES=]F` (default 1).
    #[arg(long, value_name = "[SPECIES=]F")]
    pub size_factor: Vec<String>,
}

/// Runs `haloscope render`.
pub fn run(args: RenderArgs) -> anyhow::Result<()> {
    if args.list_palettes {
        let names = palette_names();
        if args.json {
            println!("{}", serde_json::json!({ "palettes": names }));
        } else {
            names.iter().for_each(|name| println!("{name}"));
        }
        return Ok(());
    }
    let (Some(file), Some(out)) = (args.file.clone(), args.out.clone()) else {
        bail!("render needs FILE and --out");
    };
    if args.width == 0 || args.height == 0 {
        bail!(
            "{}: image size {}x{} must be at least 1x1",
            out.display(),
            args.width,
            args.height
        );
    }
    output::check_writable(&out)?;
    if let Some(tau_path) = &args.tau_out {
        output::check_writable(tau_path)?;
    }
    let start = Instant::now();
    let options = LoadOptions {
        max_particles: args.max_particles,
    };
    let progress = if args.json {
        crate::jobs::Progress::none()
    } else {
        terminal_progress()
    };
    let mut snapshot = load_snapshot(&file, &options, &progress)?;
    let load_seconds = start.elapsed().as_secs_f64();
    if let Some(side) = args.box_size {
        snapshot.header.box_size = Some(side);
        snapshot.header.periodic = true;
    }
    let context = || file.display().to_string();
    let settings = settings_from_args(&args, &snapshot).with_context(context)?;
    let choice = match args.backend {
        Backend::Auto => crate::gpu::BackendChoice::Auto,
        Backend::Cpu => crate::gpu::BackendChoice::Cpu,
        Backend::Cuda => crate::gpu::BackendChoice::Cuda,
    };
    let (output, backend) =
        render(&snapshot, &settings, choice, &progress).with_context(context)?;

    let write_start = Instant::now();
    output::save_png(&out, &output.image(&settings.tone))?;
    if let Some(tau_path) = &args.tau_out {
        npy::write_tau_npy(tau_path, &output.tau)?;
    }
    let write_seconds = write_start.elapsed().as_secs_f64();
    let stats = &output.stats;
    let mut stages = serde_json::Map::new();
    stages.insert("load".into(), load_seconds.into());
    for stage in &stats.timings {
        stages.insert(stage.stage.into(), stage.seconds.into());
    }
    stages.insert("tone_and_write".into(), write_seconds.into());
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let report = serde_json::json!({
            "backend": backend.name(),
            "file": file.display().to_string(),
            "out": out.display().to_string(),
            "tau_out": args.tau_out.as_ref().map(|p| p.display().to_string()),
            "width": settings.width,
            "height": settings.height,
            "species": settings.species.iter().map(|s| s.kind.name()).collect::<Vec<_>>(),
            "particles": stats.particles,
            "active": stats.counts.active(),
            "inactive": stats.counts.inactive,
            "small": stats.counts.small,
            "medium": stats.counts.medium,
            "large": stats.counts.large,
            "brightness": stats.brightness,
            "brightness_mode": if stats.auto_exposure { "auto" } else { "explicit" },
            "tau_includes_brightness": !stats.auto_exposure,
            "camera": settings.camera,
            "seconds": seconds,
            "render_seconds": stats.seconds,
            "stages": stages,
        });
        println!("{report}");
    } else {
        eprintln!(
            "rendered {} particles ({} active: {} small, {} medium, {} large) at {}x{} on the {}, \
             brightness {} ({}), in {:.3} s -> {}",
            stats.particles,
            stats.counts.active(),
            stats.counts.small,
            stats.counts.medium,
            stats.counts.large,
            settings.width,
            settings.height,
            backend.name(),
            stats.brightness,
            if stats.auto_exposure {
                "auto"
            } else {
                "explicit"
            },
            seconds,
            out.display()
        );
    }
    Ok(())
}

/// Splits `SPECIES=VALUE` (when the prefix names a species) from a plain `VALUE`.
fn split_species(value: &str) -> anyhow::Result<(Option<SpeciesKind>, &str)> {
    if let Some((head, tail)) = value.split_once('=') {
        return match SpeciesKind::from_name(head) {
            Some(kind) => Ok((Some(kind), tail)),
            None => bail!("'{head}' in '{value}' is not a species (gas, dark, star, other)"),
        };
    }
    Ok((None, value))
}

/// Per-species values of one repeatable option: plain values apply to every drawn species,
/// `SPECIES=VALUE` to one (later values win).
fn per_species<T: Clone>(
    option: &str,
    values: &[String],
    kinds: &[SpeciesKind],
    parse: impl Fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<BTreeMap<SpeciesKind, T>> {
    let mut map = BTreeMap::new();
    for value in values {
        let (kind, text) = split_species(value)?;
        let parsed = parse(text).with_context(|| format!("--{option} {value}"))?;
        match kind {
            Some(kind) if !kinds.contains(&kind) => {
                bail!("--{option} {value}: species {kind} is not drawn (see --species)")
            }
            Some(kind) => {
                map.insert(kind, parsed);
            }
            None => kinds.iter().for_each(|k| {
                map.insert(*k, parsed.clone());
            }),
        }
    }
    Ok(map)
}

/// Species named by a `--log-...[=SPECIES,...]` flag (all drawn species when empty).
fn flagged(
    option: &str,
    value: &Option<String>,
    kinds: &[SpeciesKind],
) -> anyhow::Result<Vec<SpeciesKind>> {
    let Some(list) = value else {
        return Ok(Vec::new());
    };
    if list.trim().is_empty() {
        return Ok(kinds.to_vec());
    }
    list.split(',')
        .map(|name| match SpeciesKind::from_name(name) {
            Some(kind) if kinds.contains(&kind) => Ok(kind),
            _ => bail!("--{option}={list}: '{name}' is not a drawn species"),
        })
        .collect()
}

/// `--bits`: 8 or 16.
fn parse_bits(text: &str) -> Result<u8, String> {
    match text.trim() {
        "8" => Ok(8),
        "16" => Ok(16),
        other => Err(format!("'{other}' is not 8 or 16")),
    }
}

fn parse_f32(text: &str) -> anyhow::Result<f32> {
    text.trim()
        .parse::<f32>()
        .with_context(|| format!("'{text}' is not a number"))
}

fn parse_range(text: &str) -> anyhow::Result<(f32, f32)> {
    let Some((lo, hi)) = text.split_once(':') else {
        bail!("expected LO:HI, got '{text}'");
    };
    Ok((parse_f32(lo)?, parse_f32(hi)?))
}

fn parse_vector(option: &str, text: &str) -> anyhow::Result<[f64; 3]> {
    let parts: Vec<&str> = text.split(',').collect();
    let [x, y, z] = parts[..] else {
        bail!("--{option} {text}: expected X,Y,Z");
    };
    let parse = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .with_context(|| format!("--{option} {text}: '{s}' is not a finite number"))
    };
    Ok([parse(x)?, parse(y)?, parse(z)?])
}

/// The default species: gas when it has smoothing lengths, else dark, else the first present.
fn default_species(snapshot: &Snapshot) -> Option<SpeciesKind> {
    let present = |kind| snapshot.species(kind).is_some_and(|s| !s.is_empty());
    if snapshot
        .species(SpeciesKind::Gas)
        .is_some_and(|s| !s.is_empty() && s.smoothing_lengths.is_some())
    {
        return Some(SpeciesKind::Gas);
    }
    if present(SpeciesKind::Dark) {
        return Some(SpeciesKind::Dark);
    }
    snapshot
        .species
        .iter()
        .find(|s| !s.is_empty())
        .map(|s| s.kind)
}

/// Builds the render settings from the command line and the loaded data.
fn settings_from_args(args: &RenderArgs, snapshot: &Snapshot) -> anyhow::Result<RenderSettings> {
    let kinds: Vec<SpeciesKind> = if args.style.species.is_empty() {
        match default_species(snapshot) {
            Some(kind) => vec![kind],
            None => bail!("the snapshot has no particles"),
        }
    } else {
        let mut kinds = Vec::new();
        for name in &args.style.species {
            let Some(kind) = SpeciesKind::from_name(name) else {
                bail!("unknown species '{name}' (gas, dark, star, other)");
            };
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds
    };
    let field = |text: &str| Ok(text.trim().to_owned());
    let intensity = per_species("intensity", &args.style.intensity, &kinds, field)?;
    let colour = per_species("color", &args.style.color, &kinds, field)?;
    let intensity_range = per_species(
        "intensity-range",
        &args.style.intensity_range,
        &kinds,
        parse_range,
    )?;
    let colour_range = per_species("color-range", &args.style.color_range, &kinds, parse_range)?;
    let palette = per_species("palette", &args.style.palette, &kinds, field)?;
    let brightness = per_species(
        "species-brightness",
        &args.style.species_brightness,
        &kinds,
        parse_f32,
    )?;
    let size_factor = per_species("size-factor", &args.style.size_factor, &kinds, parse_f32)?;
    let log_intensity = flagged("log-intensity", &args.style.log_intensity, &kinds)?;
    let log_colour = flagged("log-color", &args.style.log_color, &kinds)?;

    let styles = kinds
        .iter()
        .map(|&kind| {
            let mut style = SpeciesStyle::new(kind);
            style.intensity = intensity.get(&kind).cloned();
            style.intensity_log = log_intensity.contains(&kind);
            style.intensity_range = intensity_range.get(&kind).copied();
            match colour.get(&kind) {
                Some(name) if name.eq_ignore_ascii_case("none") => style.colour = None,
                Some(name) => {
                    style.colour = Some(name.clone());
                    style.colour_log = log_colour.contains(&kind);
                }
                // Default: colour follows the intensity field and its log flag.
                None => {
                    style.colour = style.intensity.clone();
                    style.colour_log = if args.style.log_color.is_some() {
                        log_colour.contains(&kind)
                    } else {
                        style.intensity_log
                    };
                    if style.colour.is_some() && !colour_range.contains_key(&kind) {
                        style.colour_range = style.intensity_range;
                    }
                }
            }
            if let Some(range) = colour_range.get(&kind) {
                style.colour_range = Some(*range);
            }
            if let Some(name) = palette.get(&kind) {
                style.palette = name.clone();
            }
            style.brightness = brightness.get(&kind).copied().unwrap_or(1.0);
            style.size_factor = size_factor.get(&kind).copied().unwrap_or(1.0);
            style
        })
        .collect::<Vec<_>>();

    let mut camera = match Bounds::of_snapshot(snapshot, &kinds) {
        Some(bounds) => Camera::frame_all(&bounds, args.width, args.height),
        None => Camera::look_at([0.0, 0.0, 1.0], [0.0; 3], [0.0, 1.0, 0.0], 45.0),
    };
    if let Some(text) = &args.view.camera {
        camera.position = parse_vector("camera", text)?;
    }
    if let Some(text) = &args.view.lookat {
        camera.lookat = parse_vector("lookat", text)?;
    }
    if let Some(text) = &args.view.up {
        camera.up = parse_vector("up", text)?;
    }
    if let Some(fov) = args.view.fov {
        camera.fov_deg = fov;
    }
    if args.view.ortho {
        camera.projection = Projection::Orthographic;
    }
    camera.near = args.view.near;
    camera.far = args.view.far.unwrap_or(f64::INFINITY);

    let mut settings = RenderSettings::new(args.width, args.height, camera, styles);
    settings.min_radius_px = args.min_radius;
    settings.border_px = args.border;
    settings.knn = args.knn;
    if let Some(b) = args.brightness {
        settings.brightness = Brightness::Explicit(b);
    }
    settings.tone = ToneSettings {
        gamma: args.gamma,
        contrast: args.contrast,
        bits: if args.bits == 16 {
            BitDepth::Sixteen
        } else {
            BitDepth::Eight
        },
    };
    if !(args.gamma > 0.0 && args.gamma.is_finite() && args.contrast.is_finite()) {
        bail!("--gamma must be > 0 and --contrast finite");
    }
    Ok(settings)
}
