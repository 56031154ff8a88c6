//! `haloscope render`: one Splotch image of a snapshot (DESIGN §4, §9).

use crate::backend::{BackendChoice, DeviceSelection};
use crate::cli::progress_bar::terminal_progress;
use crate::cli::style_args::{STYLE_DEFAULTS_HELP, StyleArgs};
use crate::cli::{json_path, with_lossy_note};
use crate::data::{LoadOptions, Snapshot};
use crate::output::{self, OutputPlan};
use crate::render::palette::palette_names;
use crate::render::resolve::validate_settings;
use crate::render::{
    BitDepth, Projection, RenderSettings, RendererOptions, RendererStart, fits, npy, png,
};
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `haloscope render`.
///
/// Per-species options take `VALUE` (every drawn species) or `SPECIES=VALUE` (one species) and
/// may be repeated, e.g. `--species gas,dark --intensity gas=Density --palette dark=ice`.
#[derive(Debug, Args)]
#[command(after_help = format!(
    "{STYLE_DEFAULTS_HELP} Without --camera the view frames the drawn particles from +z with \
     +y up (45 degree field of view)."
))]
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
    /// Style options (shared with `haloscope movie`).
    #[command(flatten)]
    pub style: Box<StyleArgs>,
    /// Camera options.
    #[command(flatten)]
    pub view: Box<ViewArgs>,
    /// Bits per channel of the PNG: 8 or 16.
    #[arg(long, default_value_t = 8, value_parser = parse_bits)]
    pub bits: u8,
    /// Write τ as float32 .npy, shape (H, W, 3), row 0 at the top, before tone mapping. It
    /// includes an explicit --brightness; under auto exposure it is τ at brightness 1 (before
    /// exposure) and --json reports the brightness used.
    #[arg(long, value_name = "TAU.npy")]
    pub tau_out: Option<PathBuf>,
    /// Also write FITS: τ (float32, primary HDU "TAU") and the tone-mapped image (extension
    /// "IMAGE"), one plane when grey, else R, G, B; bottom row first; the header records the
    /// camera, the source file, time/redshift, units and the render settings.
    #[arg(long, value_name = "FILE.fits")]
    pub fits_out: Option<PathBuf>,
    /// Renderer.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// CUDA devices to render on.
    #[command(flatten)]
    pub devices: super::devices_args::DevicesArgs,
    /// Load at most N particles (deterministic uniform subsample).
    #[arg(long, value_name = "N")]
    pub max_particles: Option<u64>,
    /// Region to load.
    #[command(flatten)]
    pub region: super::region_args::RegionArgs,
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
    check_outputs(&args, &file, &out)?;
    let start = Instant::now();
    let options = LoadOptions {
        max_particles: args.max_particles,
    };
    let progress = if args.json {
        crate::jobs::Progress::none()
    } else {
        terminal_progress()
    };
    // The renderer starts while the file loads (on CUDA: the context, kernels, pinned staging
    // and device memory for about the file's size).
    let starting = RendererStart::spawn(
        args.backend,
        args.devices.selection(DeviceSelection::First),
        RendererOptions::default(),
        reserve_bytes(&file, args.max_particles),
    );
    let mut snapshot = args.region.load(&file, &options, &progress)?;
    let load_seconds = start.elapsed().as_secs_f64();
    args.style.apply_box(&mut snapshot);
    let context = || file.display().to_string();
    let settings = settings_from_args(&args, &snapshot, None).with_context(context)?;
    // Settings first, so that a bad setting is the only message the user sees.
    validate_settings(&snapshot, &settings).with_context(context)?;
    let renderer_start = Instant::now();
    let mut renderer = starting.finish().with_context(context)?;
    // Outside render_seconds: the wait for the renderer's start beyond the load.
    let renderer_seconds = renderer_start.elapsed().as_secs_f64();
    // Without --tau-out or --fits-out only the image is needed: on CUDA it is tone-mapped (and
    // auto-exposed) on the device, and τ never comes back.
    let needs_tau = args.tau_out.is_some() || args.fits_out.is_some();
    let (image, output, stats) = if needs_tau {
        let output = renderer
            .render(&snapshot, &settings, &progress)
            .with_context(context)?;
        let stats = output.stats.clone();
        (output.image(&settings.tone), Some(output), stats)
    } else {
        let (image, stats) = renderer
            .render_image(&snapshot, &settings, &progress)
            .with_context(context)?;
        (image, None, stats)
    };
    let backend = renderer.kind();

    let write_start = Instant::now();
    png::save_png(&out, &image)?;
    if let (Some(tau_path), Some(output)) = (&args.tau_out, &output) {
        npy::write_tau_npy(tau_path, &output.tau)?;
    }
    if let (Some(fits_path), Some(output)) = (&args.fits_out, &output) {
        let facts = fits::RenderFacts {
            header: &snapshot.header,
            source: &snapshot.source,
            settings: &settings,
            stats: &output.stats,
            backend: backend.name(),
        };
        fits::write_render_fits(fits_path, output, &facts)?;
    }
    let write_seconds = write_start.elapsed().as_secs_f64();
    let stats = &stats;
    let mut stages = serde_json::Map::new();
    stages.insert("load".into(), load_seconds.into());
    stages.insert("renderer".into(), renderer_seconds.into());
    for stage in &stats.timings {
        stages.insert(stage.stage.into(), stage.seconds.into());
    }
    stages.insert("tone_and_write".into(), write_seconds.into());
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let report = serde_json::json!({
            "backend": backend.name(),
            "file": json_path(&file),
            "out": json_path(&out),
            "tau_out": args.tau_out.as_deref().map(json_path),
            "fits_out": args.fits_out.as_deref().map(json_path),
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
            // Where the CPU's project and splat stages went (wall and busy time of the
            // splatter's passes, over `threads`); null on other back-ends.
            "cpu_profile": renderer.cpu_splat_profile(),
            "threads": rayon::current_num_threads(),
        });
        let paths = [
            Some(file.as_path()),
            Some(out.as_path()),
            args.tau_out.as_deref(),
        ];
        println!("{}", with_lossy_note(report, paths.into_iter().flatten()));
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

/// Device memory to reserve for the particle data while `file` loads: its size, which is more
/// than the device arrays of its particles need (positions, length and two fields: 24 bytes a
/// particle, less than any snapshot format stores), capped at 4 GiB, which maps in well under
/// the time such a file takes to load. Nothing (0) under --max-particles, which loads a share of
/// unknown size.
fn reserve_bytes(file: &std::path::Path, max_particles: Option<u64>) -> usize {
    const CAP: u64 = 4 << 30;
    match (max_particles, std::fs::metadata(file)) {
        (None, Ok(meta)) if meta.is_file() => usize::try_from(meta.len().min(CAP)).unwrap_or(0),
        _ => 0,
    }
}

/// `--bits`: 8 or 16.
fn parse_bits(text: &str) -> Result<u8, String> {
    match text.trim() {
        "8" => Ok(8),
        "16" => Ok(16),
        other => Err(format!("'{other}' is not 8 or 16")),
    }
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

/// Before any work: no output over the snapshot or over the other output, a drawable image
/// size, and every output writable.
pub(super) fn check_outputs(
    args: &RenderArgs,
    file: &std::path::Path,
    out: &std::path::Path,
) -> anyhow::Result<()> {
    let mut plan = OutputPlan::new();
    plan.input("FILE", file)?;
    plan.output("--out", out)?;
    plan.maybe_output("--tau-out", args.tau_out.as_deref())?;
    if args.width == 0 || args.height == 0 {
        bail!(
            "{}: image size {}x{} must be at least 1x1",
            out.display(),
            args.width,
            args.height
        );
    }
    output::check_writable(out)?;
    for extra in [&args.tau_out, &args.fits_out].into_iter().flatten() {
        output::check_writable(extra)?;
    }
    Ok(())
}

/// Builds the render settings from the command line and the loaded data (`framing`: the
/// default camera when given, else one framing `snapshot`'s drawn particles).
pub(super) fn settings_from_args(
    args: &RenderArgs,
    snapshot: &Snapshot,
    framing: Option<crate::render::Camera>,
) -> anyhow::Result<RenderSettings> {
    let mut settings = frame_settings(
        &args.style,
        &args.view,
        args.width,
        args.height,
        snapshot,
        framing,
    )?;
    settings.tone.bits = if args.bits == 16 {
        BitDepth::Sixteen
    } else {
        BitDepth::Eight
    };
    Ok(settings)
}

/// The settings of one frame from the style and camera options (8-bit tone), as `render` and
/// `bench render FILE` take them.
pub(crate) fn frame_settings(
    style: &StyleArgs,
    view: &ViewArgs,
    width: u32,
    height: u32,
    snapshot: &Snapshot,
    framing: Option<crate::render::Camera>,
) -> anyhow::Result<RenderSettings> {
    let mut settings = style.render_settings(snapshot, width, height, framing)?;
    let camera = &mut settings.camera;
    if let Some(text) = &view.camera {
        camera.position = parse_vector("camera", text)?;
    }
    if let Some(text) = &view.lookat {
        camera.lookat = parse_vector("lookat", text)?;
    }
    if let Some(text) = &view.up {
        camera.up = parse_vector("up", text)?;
    }
    if let Some(fov) = view.fov {
        camera.fov_deg = fov;
    }
    if view.ortho {
        camera.projection = Projection::Orthographic;
    }
    camera.near = view.near;
    camera.far = view.far.unwrap_or(f64::INFINITY);
    Ok(settings)
}
