//! `haloscope movie`: render a camera path to numbered PNG frames and, optionally, an MP4.

use crate::backend::{Backend, BackendChoice};
use crate::cli::progress_bar::terminal_progress;
use crate::cli::style_args::{STYLE_DEFAULTS_HELP, StyleArgs};
use crate::data::{LoadOptions, demo::demo_snapshot, load_snapshot};
use crate::gpu::cuda_available;
use crate::jobs::Progress;
use crate::movie::{
    FramePlan, FrameRenderer, Mp4Settings, export_frames, fill_missing_smoothing_lengths, load_path,
};
use crate::render::{RenderError, output};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

/// Seed of the demo snapshot (`--demo N`), the same as the GUI's first start.
pub(crate) const DEMO_SEED: u64 = 1;

/// Arguments of `haloscope movie`.
#[derive(Debug, Args)]
#[command(after_help = format!(
    "{STYLE_DEFAULTS_HELP} The camera follows --path; the exposure is fixed from its first frame \
     (or by --brightness), times each keyframe's brightness."
))]
pub struct MovieArgs {
    /// Snapshot to render (tipsy or Gadget HDF5); leave out with `--demo`.
    #[arg(required_unless_present = "demo", conflicts_with = "demo")]
    pub file: Option<PathBuf>,
    /// Render the synthetic demo snapshot with this many particles instead of a file.
    #[arg(long, value_name = "N")]
    pub demo: Option<u64>,
    /// Camera path file (TOML; see README "Camera paths").
    #[arg(long, value_name = "PATH.toml")]
    pub path: PathBuf,
    /// Folder for the numbered PNG frames (created; frames already there are kept: resume).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Frame width in pixels.
    #[arg(long, default_value_t = 1920)]
    pub width: u32,
    /// Frame height in pixels.
    #[arg(long, default_value_t = 1080)]
    pub height: u32,
    /// Frames per second.
    #[arg(long, default_value_t = 30.0)]
    pub fps: f64,
    /// Movie length in seconds (the path is stretched to fit); default: the path's own length.
    #[arg(long, conflicts_with = "frames")]
    pub duration: Option<f64>,
    /// Number of frames (spread evenly over the whole path); overrides the length.
    #[arg(long)]
    pub frames: Option<usize>,
    /// Also encode the frames into this H.264 MP4.
    #[arg(long, value_name = "FILE.mp4")]
    pub mp4: Option<PathBuf>,
    /// Rendering back-end: CUDA keeps the particles on the GPU from frame to frame; `auto`
    /// falls back to the CPU (one warning) where no device opens.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Style options (the same as `haloscope render`'s).
    #[command(flatten)]
    pub style: Box<StyleArgs>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `haloscope movie`.
pub fn run(args: MovieArgs) -> anyhow::Result<()> {
    let path = load_path(&args.path)?;
    let plan = match (args.frames, args.duration) {
        (Some(n_frames), _) => FramePlan {
            n_frames,
            fps: args.fps,
            width: args.width,
            height: args.height,
        },
        (None, Some(duration_s)) => {
            FramePlan::with_duration(duration_s, args.fps, args.width, args.height)
        }
        (None, None) => FramePlan::real_time(&path, args.fps, args.width, args.height),
    };
    if let Some(mp4) = &args.mp4 {
        output::check_writable(mp4)?;
    }
    let source = match &args.file {
        Some(file) => file.display().to_string(),
        None => "demo snapshot".to_owned(),
    };
    // `--backend cuda` without a driver fails before a long load, with the message the
    // renderer would give.
    if args.backend == BackendChoice::Cuda {
        cuda_available()
            .map_err(RenderError::Gpu)
            .with_context(|| source.clone())?;
    }
    let progress = if args.json {
        Progress::none()
    } else {
        terminal_progress()
    };
    let mut snapshot = match (&args.file, args.demo) {
        (Some(file), _) => load_snapshot(file, &LoadOptions::default(), &progress)
            .with_context(|| format!("reading {}", file.display()))?,
        (None, Some(n)) => demo_snapshot(n, DEMO_SEED),
        (None, None) => anyhow::bail!("give a snapshot FILE or --demo N"),
    };
    args.style.apply_box(&mut snapshot);
    let first = path.sample(path.start_s());
    let settings = args
        .style
        .render_settings(
            &snapshot,
            plan.width,
            plan.height,
            Some(first.pose.to_render_camera()),
        )
        .with_context(|| source.clone())?;
    fill_missing_smoothing_lengths(&mut snapshot, &settings, &progress)
        .with_context(|| source.clone())?;
    let backend = Backend::resolve(args.backend)
        .map_err(RenderError::from)
        .with_context(|| source.clone())?;
    let mut renderer = FrameRenderer::new(&snapshot, settings, &first, backend, &progress)
        .with_context(|| format!("{source}: preparing the frames of {}", args.path.display()))?;
    let mp4_settings = Mp4Settings::default();
    let summary = export_frames(
        &path,
        &plan,
        &args.out,
        args.mp4.as_deref().map(|mp4| (mp4, &mp4_settings)),
        |sample, _index| renderer.frame(&snapshot, sample),
        &progress,
    )?;
    let backend = renderer.backend().name();
    if args.json {
        let report = serde_json::json!({
            "path": args.path,
            "out": args.out,
            "frames": summary.n_frames,
            "rendered": summary.rendered,
            "skipped": summary.skipped,
            "width": plan.width,
            "height": plan.height,
            "fps": plan.fps,
            "mp4": summary.mp4.as_ref().map(|m| &m.path),
            "mp4_bytes": summary.mp4.as_ref().map(|m| m.bytes),
            "backend": backend,
            "fallback_reason": renderer.fallback_reason(),
            "resident": renderer.is_resident(),
            "species": renderer.settings().species.iter().map(|s| s.kind.name()).collect::<Vec<_>>(),
            "brightness": renderer.base_brightness(),
            "seconds": summary.seconds,
            "render_seconds": summary.render_seconds,
        });
        println!("{report}");
    } else {
        eprintln!(
            "{} frames in {} ({} rendered on the {backend}, {} already there) in {:.1} s",
            summary.n_frames,
            args.out.display(),
            summary.rendered,
            summary.skipped,
            summary.seconds
        );
        if let Some(mp4) = &summary.mp4 {
            eprintln!(
                "{}: {}×{}, {} frames, {:.1} MB",
                mp4.path.display(),
                mp4.width,
                mp4.height,
                mp4.frames,
                mp4.bytes as f64 / 1e6
            );
        }
    }
    Ok(())
}
