//! `haloscope movie`: render a camera path to numbered PNG frames and, optionally, an MP4.

use crate::backend::{BackendChoice, DeviceSelection};
use crate::cli::movie_preset::is_empty_frame;
use crate::cli::progress_bar::terminal_progress;
use crate::cli::style_args::{STYLE_DEFAULTS_HELP, StyleArgs};
use crate::cli::{json_path, with_lossy_note};
use crate::cluster::{Agreed, Collective, agree};
use crate::data::LoadOptions;
use crate::data::demo::{MAX_DEMO_PARTICLES, demo_snapshot};
use crate::gpu::cuda_available;
use crate::jobs::Progress;
use crate::movie::{
    CameraPath, DataBounds, ExportError, ExportSummary, FramePlan, FrameRenderer, Mp4Settings,
    PlanError, export_frames, export_frames_across, fill_missing_smoothing_lengths, load_path,
};
use crate::output::{OutputPlan, check_writable};
use crate::render::RenderError;
use crate::render::resolve::validate_settings;
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
    /// Camera path file (TOML; see README "Camera paths"); or --preset.
    #[arg(long, value_name = "PATH.toml", required_unless_present = "preset")]
    pub path: Option<PathBuf>,
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
    /// CUDA devices to render on.
    #[command(flatten)]
    pub devices: super::devices_args::DevicesArgs,
    /// Style options (the same as `haloscope render`'s).
    #[command(flatten)]
    pub style: Box<StyleArgs>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Region to load.
    #[command(flatten)]
    pub region: crate::cli::region_args::RegionArgs,
    /// A path built from the data instead of --path, and the empty-frame check.
    #[command(flatten)]
    pub preset: crate::cli::movie_preset::PresetArgs,
}

/// Checks `--demo N` against the demo generator's limit before anything is allocated.
fn check_demo_size(demo: Option<u64>) -> anyhow::Result<()> {
    match demo {
        Some(n) if n > MAX_DEMO_PARTICLES => anyhow::bail!(
            "--demo {n}: the demo snapshot has at most {MAX_DEMO_PARTICLES} particles"
        ),
        _ => Ok(()),
    }
}

/// Checks the options that need no snapshot (`--demo` size, frame plan) and returns the plan,
/// each limit refused with the option that broke it.
pub fn check_options(args: &MovieArgs, path: &CameraPath) -> anyhow::Result<FramePlan> {
    check_demo_size(args.demo)?;
    frame_plan(args, path)
}

/// The frame plan of the options, each limit refused with the option that broke it.
fn frame_plan(args: &MovieArgs, path: &CameraPath) -> anyhow::Result<FramePlan> {
    let (width, height, fps) = (args.width, args.height, args.fps);
    let plan = match (args.frames, args.duration) {
        (Some(n_frames), _) => FramePlan::try_frames(n_frames, fps, width, height),
        (None, Some(duration_s)) => FramePlan::try_with_duration(duration_s, fps, width, height),
        (None, None) => FramePlan::try_real_time(path, fps, width, height),
    };
    let plan = plan.map_err(|err| {
        let option = match &err {
            PlanError::Fps(_) => "--fps".to_owned(),
            PlanError::Frames(_) => "--frames".to_owned(),
            PlanError::Duration(_) => "--duration".to_owned(),
            PlanError::TooLong { .. } if args.duration.is_some() => "--duration with --fps".into(),
            PlanError::TooLong { .. } => format!(
                "the camera path {} at --fps (give --frames or --duration)",
                args.path
                    .as_deref()
                    .map_or_else(|| "of the preset".into(), |p| p.display().to_string())
            ),
            PlanError::Size { .. } | PlanError::TooSmallForMp4 { .. } => {
                "--width/--height".to_owned()
            }
        };
        anyhow::anyhow!("{option}: {err}")
    })?;
    if args.mp4.is_some() {
        plan.check_mp4()
            .map_err(|err| anyhow::anyhow!("--mp4 with --width/--height: {err}"))?;
    }
    Ok(plan)
}

/// Runs `haloscope movie`.
/// What a movie needs once its options are checked and its snapshot is loaded: the same on
/// every rank of an MPI job.
struct MovieJob {
    snapshot: crate::data::Snapshot,
    path: CameraPath,
    path_name: PathBuf,
    plan: FramePlan,
    renderer: FrameRenderer,
    source: String,
}

/// Runs `haloscope movie`: in one process, or as one rank of `mpirun -n K haloscope movie …`
/// (the ranks split the frames on key-frame segment boundaries; rank 0 writes the MP4 from every
/// rank's segments and reports), with the same frames and MP4 bytes.
pub fn run(args: MovieArgs, group: &dyn Collective) -> anyhow::Result<()> {
    let ranks = group.size() > 1;
    let progress = if args.json || !group.is_root() {
        Progress::none()
    } else {
        terminal_progress()
    };
    let job = prepare(&args, group, &progress);
    // Every rank prepares alike; one that fails ends them all, before the frames.
    let mut job = if ranks { agree(group, job)? } else { job? };
    let mut empty_frames = Vec::new();
    let mp4_settings = Mp4Settings::default();
    let mp4 = args.mp4.as_deref().map(|mp4| (mp4, &mp4_settings));
    let (renderer, snapshot) = (&mut job.renderer, &job.snapshot);
    let render = |sample: &crate::movie::PathSample, index| {
        let image = renderer.frame(snapshot, sample)?;
        if is_empty_frame(&image) {
            empty_frames.push(index);
        }
        Ok::<_, RenderError>(image)
    };
    let (path, plan) = (&job.path, &job.plan);
    let summary = if ranks {
        export_frames_across(group, path, plan, &args.out, mp4, render, &progress)?
    } else {
        export_frames(path, plan, &args.out, mp4, render, &progress)
            .map(Some)
            .map_err(|err| interrupted_or(err, &args))?
    };
    if ranks {
        empty_frames = all_empty_frames(group, &empty_frames);
    }
    match summary {
        Some(summary) => report(&args, &job, &summary, &empty_frames),
        // Rank 0 reports; with --strict, empty frames end every rank, rank 0 with the message.
        None if args.preset.strict && !empty_frames.is_empty() => Err(Agreed {
            message: "empty frames".into(),
            quiet: true,
        }
        .into()),
        None => Ok(()),
    }
}

/// The error of an export in one process: an interrupted one says how to resume.
fn interrupted_or(err: ExportError, args: &MovieArgs) -> anyhow::Error {
    match err {
        ExportError::Cancelled(_) if crate::cli::interrupt::interrupted() => anyhow::anyhow!(
            "{}: interrupted; the finished frames are kept and the same command resumes",
            args.out.display()
        ),
        err => err.into(),
    }
}

/// Every rank's empty frames, in frame order (the ranks' parts are consecutive).
fn all_empty_frames(group: &dyn Collective, mine: &[usize]) -> Vec<usize> {
    let bytes: Vec<u8> = mine
        .iter()
        .flat_map(|&i| (i as u64).to_le_bytes())
        .collect();
    group
        .all_gather_bytes(&bytes)
        .iter()
        .flat_map(|part| {
            part.chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) as usize)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Checks the options, loads the snapshot and the camera path, and prepares the renderer on
/// this rank's back-end.
fn prepare(
    args: &MovieArgs,
    group: &dyn Collective,
    progress: &Progress,
) -> anyhow::Result<MovieJob> {
    // Before any work: no output over the snapshot or the camera path, nor frames over a file.
    let mut files = OutputPlan::new();
    if let Some(file) = &args.file {
        files.input("FILE", file)?;
    }
    if let Some(path) = &args.path {
        files.input("--path", path)?;
    }
    files.output_folder("--out", &args.out, crate::movie::frames::is_frame_file_name)?;
    files.maybe_output("--mp4", args.mp4.as_deref())?;
    let path_file = args.path.as_ref().map(|p| load_path(p)).transpose()?;
    // The options that need no snapshot are checked before the load.
    match &path_file {
        Some(path) => check_options(args, path).map(drop)?,
        None => check_demo_size(args.demo)?,
    }
    if let Some(mp4) = &args.mp4 {
        check_writable(mp4)?;
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
    // Ctrl-C stops at the next frame: finished frames stay, temporary files are removed.
    crate::cli::interrupt::cancel_on_interrupt(progress.cancel_token().clone());
    let mut snapshot = match (&args.file, args.demo) {
        (Some(file), _) => args
            .region
            .load(file, &LoadOptions::default(), progress)
            .with_context(|| format!("reading {}", file.display()))?,
        (None, Some(n)) => demo_snapshot(n, DEMO_SEED),
        (None, None) => anyhow::bail!("give a snapshot FILE or --demo N"),
    };
    // Each rank of a host renders its frames on its own part of the host's devices.
    let backend = args
        .devices
        .resolve_for_rank(args.backend, group, DeviceSelection::First)
        .map_err(RenderError::from)
        .with_context(|| source.clone())?;
    let (path, path_name) = match (path_file, args.preset.preset) {
        (Some(path), _) => (path, args.path.clone().unwrap_or_default()),
        (None, Some(preset)) => (
            args.preset
                .path(preset, &snapshot, &source, &backend, progress)?,
            PathBuf::from(format!(
                "preset {}",
                clap::ValueEnum::to_possible_value(&preset)
                    .map_or_else(String::new, |v| v.get_name().to_owned())
            )),
        ),
        (None, None) => anyhow::bail!("give --path PATH.toml or --preset"),
    };
    let plan = frame_plan(args, &path)?;
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
    validate_settings(&snapshot, &settings).with_context(|| source.clone())?;
    fill_missing_smoothing_lengths(&mut snapshot, &settings, progress)
        .with_context(|| source.clone())?;
    let renderer = FrameRenderer::new(&snapshot, settings, &first, backend, progress)
        .with_context(|| format!("{source}: preparing the frames of {}", path_name.display()))?;
    Ok(MovieJob {
        snapshot,
        path,
        path_name,
        plan,
        renderer,
        source,
    })
}

/// The summary on stdout (`--json`) or stderr, and the empty-frame warning (an error with
/// `--strict`).
fn report(
    args: &MovieArgs,
    job: &MovieJob,
    summary: &ExportSummary,
    empty_frames: &[usize],
) -> anyhow::Result<()> {
    let MovieJob {
        renderer,
        plan,
        path_name,
        snapshot,
        source,
        ..
    } = job;
    let backend = renderer.backend().name();
    if args.json {
        let report = serde_json::json!({
            "path": json_path(path_name),
            "empty_frames": empty_frames.len(),
            "out": json_path(&args.out),
            "frames": summary.n_frames,
            "rendered": summary.rendered,
            "skipped": summary.skipped,
            "width": plan.width,
            "height": plan.height,
            "fps": plan.fps,
            "mp4": summary.mp4.as_ref().map(|m| json_path(&m.path)),
            "mp4_bytes": summary.mp4.as_ref().map(|m| m.bytes),
            "backend": backend,
            "fallback_reason": renderer.fallback_reason(),
            "resident": renderer.is_resident(),
            "species": renderer.settings().species.iter().map(|s| s.kind.name()).collect::<Vec<_>>(),
            "brightness": renderer.base_brightness(),
            "seconds": summary.seconds,
            "render_seconds": summary.render_seconds,
        });
        let paths = [
            args.path.as_deref(),
            Some(args.out.as_path()),
            args.mp4.as_deref(),
        ];
        println!("{}", with_lossy_note(report, paths.into_iter().flatten()));
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
    if let Some(first_empty) = empty_frames.first() {
        let message = format!(
            "{} of {} rendered frames are empty (nothing of {source} in view, first: frame {}): \
             is the camera path for these coordinates? Data bounds: {}",
            empty_frames.len(),
            summary.rendered,
            first_empty,
            DataBounds::of(snapshot).map_or("none".to_owned(), |b| format!(
                "{:?} to {:?}",
                b.lower, b.upper
            )),
        );
        if args.preset.strict {
            anyhow::bail!("{message}");
        }
        eprintln!("warning: {message}");
    }
    Ok(())
}
