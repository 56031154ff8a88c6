//! `haloscope movie`: render a camera path to numbered PNG frames and, optionally, an MP4.

use crate::cli::progress_bar::terminal_progress;
use crate::data::{LoadOptions, Snapshot, SpeciesKind, demo::demo_snapshot, load_snapshot};
use crate::gpu::{BackendChoice, ResolvedBackend, resolve_backend};
use crate::jobs::Progress;
use crate::movie::{FramePlan, Mp4Settings, PathSample, export_frames, load_path};
use crate::render::smoothing::{DEFAULT_KNN, knn_smoothing_lengths};
use crate::render::{Brightness, CpuRenderer, RenderSettings, SpeciesStyle, TauBuffer, tone_map};
use anyhow::{Context, bail};
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
    let mut snapshot = match (&args.file, args.demo) {
        (Some(file), _) => load_snapshot(file, &LoadOptions::default(), &terminal_progress())
            .with_context(|| format!("reading {}", file.display()))?,
        (None, Some(n)) => demo_snapshot(n, DEMO_SEED),
        (None, None) => anyhow::bail!("give a snapshot FILE or --demo N"),
    };
    if matches!(backend, ResolvedBackend::Cuda(_)) {
        // One log line, as for the other CPU fallbacks: frames need the CUDA splatter.
        log::warn!("the CUDA renderer is not available yet: rendering frames on the CPU");
    }
    let progress = if args.json {
        Progress::none()
    } else {
        terminal_progress()
    };
    let first = path.sample(path.start_s());
    let mut renderer = MovieRenderer::new(&mut snapshot, &first, &plan, &progress)
        .with_context(|| format!("preparing the frames of {}", args.path.display()))?;
    let mp4_settings = Mp4Settings::default();
    let summary = export_frames(
        &path,
        &plan,
        &args.out,
        args.mp4.as_deref().map(|mp4| (mp4, &mp4_settings)),
        |sample, _index| renderer.frame(&snapshot, sample),
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
            "backend": "cpu",
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

/// The species drawn by default, as `haloscope render` chooses it: gas when it has smoothing
/// lengths, else dark matter, else the first non-empty family.
fn default_species(snapshot: &Snapshot) -> Option<SpeciesKind> {
    let non_empty = |kind| snapshot.species(kind).is_some_and(|s| !s.is_empty());
    if snapshot
        .species(SpeciesKind::Gas)
        .is_some_and(|s| !s.is_empty() && s.smoothing_lengths.is_some())
    {
        return Some(SpeciesKind::Gas);
    }
    if non_empty(SpeciesKind::Dark) {
        return Some(SpeciesKind::Dark);
    }
    snapshot
        .species
        .iter()
        .find(|s| !s.is_empty())
        .map(|s| s.kind)
}

/// Renders the frames of one movie on the CPU, reusing its buffers from frame to frame.
pub(crate) struct MovieRenderer {
    renderer: CpuRenderer,
    tau: TauBuffer,
    settings: RenderSettings,
    /// Brightness of the auto exposure of the first frame: every frame uses it (times the
    /// path's `brightness`), so the exposure does not flicker from frame to frame.
    base_brightness: f32,
}

impl MovieRenderer {
    /// Chooses the species, computes missing smoothing lengths once (not per frame), and fixes
    /// the exposure from the path's first frame.
    pub(crate) fn new(
        snapshot: &mut Snapshot,
        first: &PathSample,
        plan: &FramePlan,
        progress: &Progress,
    ) -> anyhow::Result<Self> {
        let Some(kind) = default_species(snapshot) else {
            bail!("the snapshot has no particles");
        };
        let box_size = snapshot
            .header
            .box_size
            .filter(|_| snapshot.header.periodic);
        if let Some(species) = snapshot.species_mut(kind)
            && species.smoothing_lengths.is_none()
        {
            let h = knn_smoothing_lengths(&species.positions, DEFAULT_KNN, box_size, progress)?;
            species.smoothing_lengths = Some(h);
        }
        let settings = RenderSettings::new(
            plan.width,
            plan.height,
            first.pose.to_render_camera(),
            vec![SpeciesStyle::new(kind)],
        );
        let mut renderer = Self {
            renderer: CpuRenderer::new(),
            tau: TauBuffer::default(),
            settings,
            base_brightness: 1.0,
        };
        renderer.settings.brightness = Brightness::default();
        let stats = renderer.renderer.render_into(
            snapshot,
            &renderer.settings,
            &Progress::none(),
            &mut renderer.tau,
        )?;
        renderer.base_brightness = stats.brightness;
        Ok(renderer)
    }

    /// One frame as 8-bit RGB.
    pub(crate) fn frame(
        &mut self,
        snapshot: &Snapshot,
        sample: &PathSample,
    ) -> anyhow::Result<RgbImage> {
        self.settings.camera = sample.pose.to_render_camera();
        let scale = sample.settings.brightness.unwrap_or(1.0) as f32;
        self.settings.brightness = Brightness::Explicit(self.base_brightness * scale);
        let stats = self.renderer.render_into(
            snapshot,
            &self.settings,
            &Progress::none(),
            &mut self.tau,
        )?;
        Ok(tone_map(&self.tau, stats.tau_scale, &self.settings.tone).into_rgb8())
    }
}
