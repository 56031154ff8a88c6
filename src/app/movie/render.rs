//! "Render movie…": the settings window and the worker that renders the frames of the camera
//! path through the app's renderer into numbered PNGs (and an MP4) with
//! [`crate::movie::export_frames`], which skips frames already on disk (resume).

use super::edit::camera_from_pose;
use crate::app::viewport::splotch::{SplotchRenderer, render_settings};
use crate::app::viewport::viewport_renderer::{
    RendererFactory, ViewRequest, ViewStyle, ViewportRenderer,
};
use crate::backend::{Backend, BackendChoice};
use crate::data::Snapshot;
use crate::jobs::{JobEvent, JobHandle, JobQueue, Progress, ProgressUpdate, Waker};
use crate::movie::{CameraPath, ExportSummary, FramePlan, Mp4Settings, export_frames};
use crate::render::{CpuRenderer, TauBuffer};
use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// File name of the MP4 written into the output folder.
pub const MP4_FILE_NAME: &str = "movie.mp4";

/// The back-end choices in the order the window lists them: `auto` is the viewport's own
/// renderer (CUDA where a device opens, else the CPU), `cuda` fails when no device opens.
pub const BACKEND_CHOICES: [BackendChoice; 3] =
    [BackendChoice::Auto, BackendChoice::Cuda, BackendChoice::Cpu];

/// Name of a back-end choice shown in the window.
pub fn backend_label(choice: BackendChoice) -> &'static str {
    match choice {
        BackendChoice::Auto => "auto",
        BackendChoice::Cuda => "CUDA",
        BackendChoice::Cpu => "CPU",
        BackendChoice::Wgpu => "wgpu",
    }
}

/// What the export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum MovieFormat {
    /// Numbered PNG frames only.
    #[default]
    Png,
    /// PNG frames and an H.264 MP4 ([`MP4_FILE_NAME`] in the same folder).
    PngAndMp4,
}

/// The settings of the Render movie window (kept with the session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MovieRenderSettings {
    /// Frame width in pixels.
    pub width_px: u32,
    /// Frame height in pixels.
    pub height_px: u32,
    /// Frames per second.
    pub fps: f64,
    /// Movie length in seconds (the path stretched to fit); `None` = the path's own length.
    pub duration_s: Option<f64>,
    /// Renderer.
    pub backend: BackendChoice,
    /// Folder of the frames (created when missing).
    pub out_dir: String,
    /// PNG frames, or PNG frames and an MP4.
    pub format: MovieFormat,
}

impl Default for MovieRenderSettings {
    fn default() -> Self {
        Self {
            width_px: 1920,
            height_px: 1080,
            fps: 30.0,
            duration_s: None,
            backend: BackendChoice::Auto,
            out_dir: String::new(),
            format: MovieFormat::Png,
        }
    }
}

impl MovieRenderSettings {
    /// Width over height of the frames: the aspect that relates the viewport's vertical field of
    /// view to the keyframes' horizontal one.
    pub fn aspect(&self) -> f64 {
        f64::from(self.width_px.max(1)) / f64::from(self.height_px.max(1))
    }

    /// The frames of `path` under these settings: real time at `fps` (duration·fps + 1 frames,
    /// as `haloscope movie` without `--duration`), or `duration_s` at `fps`.
    pub fn plan(&self, path: &CameraPath) -> FramePlan {
        match self.duration_s {
            None => FramePlan::real_time(path, self.fps, self.width_px, self.height_px),
            Some(duration_s) => {
                FramePlan::with_duration(duration_s, self.fps, self.width_px, self.height_px)
            }
        }
    }
}

/// Everything one movie export needs, moved onto its worker.
pub struct MovieJob {
    /// The particles.
    pub snapshot: Arc<Snapshot>,
    /// The look (the viewport's render settings).
    pub style: ViewStyle,
    /// The camera path.
    pub path: CameraPath,
    /// Frames to make.
    pub plan: FramePlan,
    /// Folder of the frames.
    pub out_dir: PathBuf,
    /// The MP4 to write as well, if any.
    pub mp4: Option<PathBuf>,
    /// Which renderer.
    pub backend: BackendChoice,
    /// The app's renderer factory (used for [`BackendChoice::Auto`]).
    pub factory: RendererFactory,
}

/// What a finished export reports.
#[derive(Debug, Clone, PartialEq)]
pub struct MovieOutcome {
    /// What [`export_frames`] did.
    pub summary: ExportSummary,
    /// The back-end that rendered the last frame ("cpu", "cuda"; empty when none was rendered).
    pub backend: String,
}

/// Renders `job` (runs on a worker). Under automatic exposure the brightness is fixed from the
/// path's first frame, as `haloscope movie` does, so the exposure does not flicker; a keyframe's
/// `brightness` multiplies it.
pub fn render_movie(job: &MovieJob, progress: &Progress) -> anyhow::Result<MovieOutcome> {
    let mut renderer = open_renderer(job)?;
    let (width_px, height_px) = (job.plan.width, job.plan.height);
    let aspect = f64::from(width_px.max(1)) / f64::from(height_px.max(1));
    let request_at = |sample: &crate::movie::PathSample, style: ViewStyle| ViewRequest {
        snapshot: job.snapshot.clone(),
        camera: camera_from_pose(&sample.pose, aspect),
        style,
        width_px,
        height_px,
    };
    // The renderers report their own stages nowhere (the window shows frames), but stop inside
    // a frame on cancel.
    let cancel_only = Progress::with_cancel(progress.cancel_token().clone());
    progress.report("exposure", 0, 1);
    let first = job.path.sample(job.path.start_s());
    let base_exposure = if job.style.auto_exposure {
        Some(first_frame_exposure(
            &request_at(&first, job.style.clone()),
            &cancel_only,
        )?)
    } else {
        None
    };
    progress.report("exposure", 1, 1);
    let mut backend = String::new();
    let mp4_settings = Mp4Settings::default();
    let summary = export_frames(
        &job.path,
        &job.plan,
        &job.out_dir,
        job.mp4.as_deref().map(|mp4| (mp4, &mp4_settings)),
        |sample, _index| -> Result<image::RgbImage, String> {
            let mut style = job.style.clone();
            let scale = sample.settings.brightness.unwrap_or(1.0) as f32;
            match base_exposure {
                Some(exposure) => {
                    style.auto_exposure = false;
                    style.exposure = exposure * scale;
                }
                None => style.exposure *= scale,
            }
            let mut image = renderer.render(&request_at(sample, style), &cancel_only)?;
            backend.clone_from(&image.backend);
            let (width_px, height_px) = (image.width_px, image.height_px);
            rgba_to_rgb(width_px, height_px, image.host_rgba()?)
        },
        progress,
    )
    .with_context(|| format!("movie into {}", job.out_dir.display()))?;
    Ok(MovieOutcome { summary, backend })
}

/// The renderer `job.backend` asks for, made once per job: under `auto` the viewport's own
/// (the app's factory, on the window's back-end), else a renderer on the choice resolved here.
fn open_renderer(job: &MovieJob) -> anyhow::Result<Box<dyn ViewportRenderer>> {
    if job.backend == BackendChoice::Auto {
        return Ok((job.factory)());
    }
    let context = || format!("{} back-end", backend_label(job.backend));
    let backend = Backend::resolve(job.backend).with_context(context)?;
    let renderer = SplotchRenderer::with_backend(backend).with_context(context)?;
    if job.backend == BackendChoice::Cuda && renderer.backend_name() != "cuda" {
        anyhow::bail!("CUDA back-end: the CUDA renderer did not start (see the log)");
    }
    Ok(Box::new(renderer))
}

/// The exposure (τ multiplier) automatic exposure picks for `request`, times the style's own
/// exposure: one CPU render of the first frame (the back-ends agree on τ, DESIGN §4).
fn first_frame_exposure(request: &ViewRequest, progress: &Progress) -> anyhow::Result<f32> {
    let settings = render_settings(request).map_err(anyhow::Error::msg)?;
    let mut tau = TauBuffer::default();
    let stats = CpuRenderer::new()
        .render_into(&request.snapshot, &settings, progress, &mut tau)
        .context("exposure of the first frame")?;
    Ok(stats.tau_scale * request.style.exposure.max(0.0))
}

/// Drops the alpha channel of an 8-bit RGBA image.
fn rgba_to_rgb(width_px: u32, height_px: u32, rgba: &[u8]) -> Result<image::RgbImage, String> {
    let rgb: Vec<u8> = rgba
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    image::RgbImage::from_raw(width_px, height_px, rgb).ok_or_else(|| {
        format!(
            "the renderer returned {} bytes for {width_px}×{height_px}",
            rgba.len()
        )
    })
}

/// A movie export in progress.
#[derive(Debug)]
pub struct RunningMovie {
    /// The worker.
    pub handle: JobHandle,
    /// The folder of the frames.
    pub out_dir: PathBuf,
    /// The latest progress report.
    pub progress: Option<ProgressUpdate>,
    /// When the first frame-rendering report came, and how many frames were done then (for
    /// the ETA: set-up time and skipped frames do not count).
    rendering_since: Option<(Instant, u64)>,
}

impl RunningMovie {
    /// Frames rendered and to render by this run, once rendering started.
    pub fn frames(&self) -> Option<(u64, u64)> {
        self.progress
            .as_ref()
            .filter(|p| p.stage == "rendering")
            .map(|p| (p.done, p.total))
    }

    /// Seconds left at the rate seen so far, once a frame was rendered.
    pub fn eta_s(&self, now: Instant) -> Option<f64> {
        let (done, total) = self.frames()?;
        let (since, done_then) = self.rendering_since?;
        let finished = done.checked_sub(done_then).filter(|&n| n > 0)?;
        let per_frame_s = now.duration_since(since).as_secs_f64() / finished as f64;
        Some(per_frame_s * total.saturating_sub(done) as f64)
    }
}

/// How an export ended.
#[derive(Debug, Clone, PartialEq)]
pub enum MovieEnd {
    /// Every frame is on disk (and the MP4 written, when asked for).
    Done(MovieOutcome),
    /// It failed; a readable message.
    Failed(String),
    /// The user cancelled; the frames finished stay on disk.
    Cancelled,
}

/// The Render movie window's state: its settings, the export running, the last outcome.
pub struct MovieRender {
    /// What to render.
    pub settings: MovieRenderSettings,
    /// Whether the window is open.
    pub show_window: bool,
    /// The export running, if any.
    pub running: Option<RunningMovie>,
    /// How the last export ended.
    pub last: Option<MovieEnd>,
    jobs: JobQueue<MovieOutcome>,
}

impl MovieRender {
    /// Nothing running; workers wake the UI through `waker`.
    pub fn new(settings: MovieRenderSettings, waker: Waker) -> Self {
        Self {
            settings,
            show_window: false,
            running: None,
            last: None,
            jobs: JobQueue::new(waker),
        }
    }

    /// Starts `job` on a worker (cancelling one still running).
    pub fn start(&mut self, job: MovieJob) {
        if let Some(running) = self.running.take() {
            running.handle.cancel();
        }
        self.last = None;
        let label = format!("movie into {}", job.out_dir.display());
        let out_dir = job.out_dir.clone();
        let handle = self.jobs.spawn(label, 0, move |progress| {
            // The whole chain ("movie into DIR: DIR: File exists"), not only the outer context.
            render_movie(&job, progress).map_err(|err| format!("{err:#}"))
        });
        self.running = Some(RunningMovie {
            handle,
            out_dir,
            progress: None,
            rendering_since: None,
        });
    }

    /// Asks the running export to stop after the frame in hand (finished frames stay on disk).
    pub fn cancel(&self) {
        if let Some(running) = &self.running {
            running.handle.cancel();
        }
    }

    /// Takes in the worker's messages; returns a line for the status bar when an export ended.
    pub fn poll(&mut self) -> Option<Result<String, String>> {
        let mut ended = None;
        for event in self.jobs.drain() {
            let Some(running) = self.running.as_mut().filter(|r| r.handle.id == event.id()) else {
                continue;
            };
            match event {
                JobEvent::Progress { update, .. } => {
                    if update.stage == "rendering" && running.rendering_since.is_none() {
                        running.rendering_since = Some((Instant::now(), update.done));
                    }
                    running.progress = Some(update);
                    continue;
                }
                JobEvent::Done { result, .. } => {
                    let s = &result.summary;
                    ended = Some(Ok(format!(
                        "movie: {} frames in {} ({} rendered, {} already there)",
                        s.n_frames,
                        running.out_dir.display(),
                        s.rendered,
                        s.skipped
                    )));
                    self.last = Some(MovieEnd::Done(result));
                }
                JobEvent::Failed { error, .. } => {
                    ended = Some(Err(format!("movie: {error}")));
                    self.last = Some(MovieEnd::Failed(error));
                }
                JobEvent::Cancelled { .. } => {
                    ended = Some(Ok("movie cancelled".to_owned()));
                    self.last = Some(MovieEnd::Cancelled);
                }
            }
            self.running = None;
        }
        ended
    }

    /// Whether an export is running.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }
}

/// "1 min 05 s", "12 s".
pub fn format_duration(seconds: f64) -> String {
    let total = seconds.max(0.0).round() as u64;
    match total {
        0..60 => format!("{total} s"),
        60..3600 => format!("{} min {:02} s", total / 60, total % 60),
        _ => format!("{} h {:02} min", total / 3600, (total % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::movie::{Keyframe, Timing};

    #[test]
    fn plans_follow_the_cli_rules() {
        let keyframes = vec![
            Keyframe::new(0.0, [0.0, 0.0, 3.0], [0.0; 3]),
            Keyframe::new(2.0, [1.0, 0.0, 3.0], [1.0, 0.0, 0.0]),
        ];
        let path = CameraPath::new(keyframes, Timing::default(), false).expect("path");
        let mut settings = MovieRenderSettings {
            width_px: 64,
            height_px: 48,
            fps: 1.0,
            ..MovieRenderSettings::default()
        };
        // The path's own 2 s at 1 frame/s: both ends, 3 frames.
        assert_eq!(settings.plan(&path).n_frames, 3);
        settings.duration_s = Some(5.0);
        settings.fps = 2.0;
        assert_eq!(settings.plan(&path).n_frames, 10);
        assert_eq!(settings.aspect(), 64.0 / 48.0);
    }

    /// A 2-frame CPU-sized job on a small demo snapshot, from the home view sideways.
    fn small_job(backend: BackendChoice, out_dir: &std::path::Path) -> MovieJob {
        let mut snapshot = crate::data::demo::demo_snapshot(3_000, 5);
        crate::app::files::documents::fill_missing_smoothing(&mut snapshot, &Progress::none())
            .expect("kNN");
        let keyframes = vec![
            Keyframe::new(0.0, [0.0, 0.0, 2.5], [0.0; 3]),
            Keyframe::new(1.0, [0.3, 0.0, 2.5], [0.3, 0.0, 0.0]),
        ];
        let path = CameraPath::new(keyframes, Timing::default(), false).expect("path");
        MovieJob {
            snapshot: Arc::new(snapshot),
            style: ViewStyle::default(),
            plan: FramePlan {
                n_frames: 2,
                fps: 1.0,
                width: 40,
                height: 30,
            },
            path,
            out_dir: out_dir.to_path_buf(),
            mp4: None,
            backend,
            factory: crate::app::default_renderer_factory(),
        }
    }

    #[test]
    fn the_first_frame_is_what_the_viewport_renderer_shows_at_that_camera() {
        let dir = tempfile::tempdir().expect("temp dir");
        let job = small_job(BackendChoice::Cpu, dir.path());
        let outcome = render_movie(&job, &Progress::none()).expect("movie");
        assert_eq!(outcome.backend, "cpu");
        assert_eq!((outcome.summary.rendered, outcome.summary.skipped), (2, 0));
        let frame = image::open(&outcome.summary.frame_paths[0])
            .expect("frame 0")
            .into_rgb8();
        // The viewport's own render of the same camera and size, under automatic exposure:
        // the movie fixes that exposure from this frame, so the two agree to 8-bit rounding.
        let sample = job.path.sample(0.0);
        let request = ViewRequest {
            snapshot: job.snapshot.clone(),
            camera: camera_from_pose(&sample.pose, 40.0 / 30.0),
            style: job.style.clone(),
            width_px: 40,
            height_px: 30,
        };
        let mut viewport = SplotchRenderer::new()
            .render(&request, &Progress::none())
            .expect("render");
        let expected = rgba_to_rgb(40, 30, viewport.host_rgba().expect("host")).expect("rgb");
        let largest = frame
            .as_raw()
            .iter()
            .zip(expected.as_raw())
            .map(|(a, b)| a.abs_diff(*b))
            .max();
        assert_eq!(
            largest.map(|d| d <= 1),
            Some(true),
            "largest difference {largest:?}"
        );
        assert!(frame.as_raw().iter().any(|&v| v > 40), "a dark frame");
    }

    #[test]
    fn the_cuda_choice_renders_on_cuda_or_says_why_not() {
        let dir = tempfile::tempdir().expect("temp dir");
        match render_movie(
            &small_job(BackendChoice::Cuda, dir.path()),
            &Progress::none(),
        ) {
            Ok(outcome) => assert_eq!(outcome.backend, "cuda"),
            Err(err) => {
                let text = format!("{err:#}");
                assert!(text.starts_with("CUDA back-end: "), "{text}");
                assert!(
                    std::fs::read_dir(dir.path()).is_ok_and(|mut d| d.next().is_none()),
                    "no frames written"
                );
            }
        }
    }

    #[test]
    fn settings_saved_with_the_capitalised_back_end_names_load() {
        for (saved, choice) in [
            ("Auto", BackendChoice::Auto),
            ("Cuda", BackendChoice::Cuda),
            ("Cpu", BackendChoice::Cpu),
        ] {
            let text = format!(r#"{{"width_px": 640, "backend": "{saved}"}}"#);
            let settings: MovieRenderSettings = serde_json::from_str(&text).expect("loads");
            assert_eq!((settings.width_px, settings.backend), (640, choice));
        }
    }

    #[test]
    fn durations_read_as_minutes_and_seconds() {
        assert_eq!(format_duration(4.4), "4 s");
        assert_eq!(format_duration(65.0), "1 min 05 s");
        assert_eq!(format_duration(7260.0), "2 h 01 min");
    }

    #[test]
    fn rgba_becomes_rgb_or_a_size_error() {
        let rgba = [1, 2, 3, 255, 4, 5, 6, 255];
        let rgb = rgba_to_rgb(2, 1, &rgba).expect("2×1");
        assert_eq!(rgb.as_raw(), &vec![1, 2, 3, 4, 5, 6]);
        assert!(rgba_to_rgb(2, 2, &rgba).is_err());
    }
}
