//! `haloscope movie`: render a camera path to numbered PNG frames and, optionally, an MP4.

use crate::cli::progress_bar::terminal_progress;
use crate::data::{LoadOptions, Snapshot, demo::demo_snapshot, load_snapshot};
use crate::gpu::{BackendChoice, ResolvedBackend, resolve_backend};
use crate::jobs::Progress;
use crate::movie::{FramePlan, Mp4Settings, PathSample, export_frames, load_path};
use anyhow::Context;
use clap::Args;
use image::RgbImage;
use std::path::PathBuf;

/// Seed of the demo snapshot (`--demo N`), the same as the GUI's first start.
const DEMO_SEED: u64 = 1;

/// Arguments of `haloscope movie`.
#[derive(Debug, Args)]
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
    /// Rendering back-end.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
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
    let backend = resolve_backend(args.backend)?;
    if let ResolvedBackend::Cpu {
        fallback_reason: Some(reason),
    } = &backend
    {
        log::warn!("CUDA not used, rendering on the CPU: {reason}");
    }
    let snapshot = match (&args.file, args.demo) {
        (Some(file), _) => load_snapshot(file, &LoadOptions::default(), &terminal_progress())
            .with_context(|| format!("reading {}", file.display()))?,
        (None, Some(n)) => demo_snapshot(n, DEMO_SEED),
        (None, None) => anyhow::bail!("give a snapshot FILE or --demo N"),
    };
    let progress = terminal_progress();
    let mp4_settings = Mp4Settings::default();
    let summary = export_frames(
        &path,
        &plan,
        &args.out,
        args.mp4.as_deref().map(|mp4| (mp4, &mp4_settings)),
        |sample, _index| render_frame(&snapshot, sample, &plan, &backend, &progress),
        &progress,
    )?;
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
            "backend": backend.name(),
            "seconds": summary.seconds,
            "render_seconds": summary.render_seconds,
        });
        println!("{report}");
    } else {
        eprintln!(
            "{} frames in {} ({} rendered, {} already there) in {:.1} s",
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

/// Renders one frame of the movie with the Splotch renderer.
fn render_frame(
    _snapshot: &Snapshot,
    _sample: &PathSample,
    _plan: &FramePlan,
    _backend: &ResolvedBackend,
    _progress: &Progress,
) -> anyhow::Result<RgbImage> {
    // Wired to `render::render_cpu` (and the CUDA twin) once the renderer lands on main.
    anyhow::bail!("frame rendering is not available yet: the Splotch renderer has not landed")
}
