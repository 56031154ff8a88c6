//! `haloscope bench gui`: UI frame times of the real application (headless egui context) while a
//! render, friends-of-friends or a trial batch runs on the workers, with a large demo snapshot
//! loaded (the generator of the first start, `data::demo`, at 10⁷ particles by default).
//!
//! Each frame is timed as the UI thread spends it: draining the workers, building every panel,
//! the viewport texture update and tessellation (`Context::run_ui` + `Context::tessellate`). GPU
//! submission and presentation are not included (no window here). Frames are paced at 60 Hz.

use crate::app::files::documents::{bounds_of, fill_missing_smoothing};
use crate::app::viewport::camera::OrbitCamera;
use crate::app::viewport::splotch::SplotchRenderer;
use crate::app::viewport::viewport_renderer::{Pixels, ViewRequest, ViewStyle, ViewportRenderer};
use crate::app::viewport::wgpu_view;
use crate::app::{HaloscopeApp, default_renderer_factory};
use crate::backend::{Backend, BackendChoice};
use crate::jobs::Progress;
use anyhow::Context as _;
use clap::Args;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `haloscope bench gui`.
#[derive(Debug, Args)]
pub struct BenchGuiArgs {
    /// Particles in the demo snapshot (data::demo: gas, dark matter and stars, all with
    /// smoothing lengths; halos for FoF to find).
    #[arg(long, default_value_t = 10_000_000)]
    pub particles: usize,
    /// Events in the demo event list for the trials phase.
    #[arg(long, default_value_t = 20_000)]
    pub events: usize,
    /// Seconds per phase.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Longest friends-of-friends phase in seconds (it runs until the catalogue lands, so
    /// that the next phase has halo circles to draw).
    #[arg(long, default_value_t = 300.0)]
    pub fof_seconds: f64,
    /// Window size in points.
    #[arg(long, num_args = 2, default_values_t = [1280.0, 800.0])]
    pub window: Vec<f32>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Instead of the UI phases, time the window's own viewport frames on this back-end, with
    /// the camera turning every frame, on a wgpu device opened as the window's: the viewport
    /// renderer's render and tone map (wgpu leaves the frame in a texture, the others' frames
    /// are written into one), then the texture registered with egui (stage `display`).
    #[arg(long, value_enum)]
    pub backend: Option<BackendChoice>,
    /// Viewport size in pixels of the --backend frames.
    #[arg(long, num_args = 2, default_values_t = [1920u32, 1080])]
    pub viewport: Vec<u32>,
    /// Frames timed with --backend (after the first, reported apart).
    #[arg(long, default_value_t = 30)]
    pub frames: usize,
}

/// Frame-time statistics of one phase.
#[derive(Debug, Serialize)]
struct Phase {
    phase: &'static str,
    frames: usize,
    median_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    frames_over_50ms: usize,
    /// What the workers finished during the phase.
    note: String,
}

/// Runs `haloscope bench gui`.
pub fn run(args: BenchGuiArgs) -> anyhow::Result<()> {
    if let Some(choice) = args.backend {
        return viewport_frames(&args, choice);
    }
    let setup = Instant::now();
    let snapshot = crate::data::demo::demo_snapshot(args.particles as u64, 1);
    let events = crate::data::demo::demo_events(args.events, 42);
    let setup_seconds = setup.elapsed().as_secs_f64();
    let ctx = egui::Context::default();
    let size = egui::vec2(
        args.window.first().copied().unwrap_or(1280.0),
        args.window.get(1).copied().unwrap_or(800.0),
    );
    let mut app: Option<HaloscopeApp> = None;
    let started = Instant::now();
    let frame = |app: &mut Option<HaloscopeApp>, snapshot: &mut Option<crate::data::Snapshot>| {
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, size)),
            time: Some(started.elapsed().as_secs_f64()),
            ..Default::default()
        };
        let t0 = Instant::now();
        let output = ctx.run_ui(input, |ui| {
            let app = app.get_or_insert_with(|| {
                HaloscopeApp::empty(ui.ctx(), &Default::default(), default_renderer_factory())
            });
            if let Some(snapshot) = snapshot.take() {
                app.documents.insert_snapshot("demo snapshot", snapshot);
            }
            app.ui(ui);
        });
        let _ = ctx.tessellate(output.shapes, output.pixels_per_point);
        t0.elapsed().as_secs_f64()
    };
    let mut pending_snapshot = Some(snapshot);
    frame(&mut app, &mut pending_snapshot);
    let Some(the_app) = app.as_mut() else {
        anyhow::bail!("the application did not start");
    };
    the_app.documents.insert_events("demo events", events);
    let mut phases = Vec::new();
    let pace = Duration::from_micros(16_667);
    let run_phase = |app: &mut Option<HaloscopeApp>,
                     max_seconds: f64,
                     each: &mut dyn FnMut(&mut HaloscopeApp, usize),
                     until: &dyn Fn(&HaloscopeApp) -> bool| {
        let mut times = Vec::new();
        let phase_start = Instant::now();
        let mut i = 0;
        while phase_start.elapsed().as_secs_f64() < max_seconds {
            if let Some(app) = app.as_mut() {
                each(app, i);
                if i > 0 && until(app) {
                    break;
                }
            }
            let tick = Instant::now();
            times.push(frame(app, &mut None));
            i += 1;
            std::thread::sleep(pace.saturating_sub(tick.elapsed()));
        }
        times
    };
    // 1. Camera turning every frame: a preview render is always in flight.
    let times = run_phase(
        &mut app,
        args.seconds,
        &mut |app, _| {
            if let Some(document) = app.documents.shown_snapshot_mut() {
                document.camera.rotate([2.0, 0.5]);
            }
        },
        &|_| false,
    );
    phases.push(stats("render (camera moving)", &times, String::new()));
    // 2. Camera at rest: the full-resolution render runs.
    let times = run_phase(&mut app, args.seconds, &mut |_, _| {}, &|app| {
        app.viewport
            .shown()
            .is_some_and(|s| s.quality == crate::app::progressive::Quality::Full)
            && !app.viewport.is_rendering()
    });
    let note = app
        .as_ref()
        .and_then(|a| a.viewport.shown())
        .map_or(String::new(), |s| format!("last render {:.2} s", s.seconds));
    phases.push(stats("render (full, camera resting)", &times, note));
    // 3. Friends-of-friends on the dark matter, as the Halos panel starts it.
    let times = run_phase(
        &mut app,
        args.fof_seconds,
        &mut |app, i| {
            if i == 0
                && let Some(document) = app.documents.shown_snapshot().cloned()
            {
                // The Halos panel's defaults: dark matter, periodic in the file's box.
                app.halos.adopt_defaults(&document);
                app.halos.start(&document);
            }
        },
        &|app| app.halos.running.is_none(),
    );
    let note = match app.as_mut() {
        Some(app) => {
            if let Some(run) = app.halos.running.take() {
                run.handle.cancel();
                "cancelled at the end of the phase".to_owned()
            } else {
                app.halos.catalogue.as_ref().map_or(String::new(), |c| {
                    format!("{} halos in {:.1} s", c.result.halos.len(), c.seconds)
                })
            }
        }
        None => String::new(),
    };
    phases.push(stats("friends-of-friends", &times, note));
    // 4. The camera turning with every halo circled (overlay of the whole catalogue).
    let times = run_phase(
        &mut app,
        args.seconds,
        &mut |app, _| {
            if let Some(document) = app.documents.shown_snapshot_mut() {
                document.camera.rotate([2.0, 0.5]);
            }
        },
        &|_| false,
    );
    let note = app.as_ref().map_or(String::new(), |a| {
        format!("{} circles drawn", a.viewport.overlay().placed.len())
    });
    phases.push(stats("halo circles (camera moving)", &times, note));
    // 5. Two-point trials in batches, plots shown.
    let times = run_phase(
        &mut app,
        args.seconds,
        &mut |app, i| {
            if i == 0
                && let Some(document) = app.documents.shown_events().cloned()
            {
                app.twopoint.trials = 1_000_000;
                app.twopoint.start(&document);
                app.central = crate::app::session::CentralView::TwoPoint;
            }
        },
        &|_| false,
    );
    let note = match app.as_mut() {
        Some(app) => {
            app.twopoint.stop();
            app.twopoint.state.as_ref().map_or(String::new(), |s| {
                format!(
                    "{} trials, {:.1} trials/s",
                    s.analysis.trials(),
                    s.trials_per_second
                )
            })
        }
        None => String::new(),
    };
    phases.push(stats("two-point trials", &times, note));

    if args.json {
        let value = serde_json::json!({
            "particles": args.particles,
            "events": args.events,
            "window": [size.x, size.y],
            "setup_seconds": setup_seconds,
            "threads": rayon::current_num_threads(),
            "phases": phases,
        });
        println!("{value}");
    } else {
        eprintln!(
            "{} particles, {} events, window {}x{}, {} threads (setup {:.1} s)",
            args.particles,
            args.events,
            size.x,
            size.y,
            rayon::current_num_threads(),
            setup_seconds
        );
        eprintln!(
            "{:<32} {:>7} {:>9} {:>9} {:>9} {:>7}  note",
            "phase", "frames", "median ms", "p99 ms", "max ms", ">50 ms"
        );
        for p in &phases {
            eprintln!(
                "{:<32} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>7}  {}",
                p.phase, p.frames, p.median_ms, p.p99_ms, p.max_ms, p.frames_over_50ms, p.note
            );
        }
    }
    Ok(())
}

fn stats(phase: &'static str, seconds: &[f64], note: String) -> Phase {
    let mut ms: Vec<f64> = seconds.iter().map(|s| s * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if ms.is_empty() {
            f64::NAN
        } else {
            ms[((ms.len() - 1) as f64 * q).round() as usize]
        }
    };
    Phase {
        phase,
        frames: ms.len(),
        median_ms: at(0.5),
        p99_ms: at(0.99),
        max_ms: ms.last().copied().unwrap_or(f64::NAN),
        frames_over_50ms: ms.iter().filter(|&&t| t > 50.0).count(),
        note,
    }
}

/// `--backend`: the viewport renderer's frames of the demo snapshot with a turning camera.
fn viewport_frames(args: &BenchGuiArgs, choice: BackendChoice) -> anyhow::Result<()> {
    let mut snapshot = crate::data::demo::demo_snapshot(args.particles as u64, 1);
    fill_missing_smoothing(&mut snapshot, &Progress::none())?;
    let (lo, hi) = bounds_of(&snapshot).context("the demo snapshot has no finite particle")?;
    // A device opened as the window opens its own, so that frames take the window's path:
    // wgpu draws there and leaves the frame in a texture, the others' frames are written into
    // one by the render worker (without such a device they stay in host memory).
    let window_device = wgpu_view::open_window_device_headless();
    let backend = match choice {
        BackendChoice::Wgpu => {
            window_device.map_err(anyhow::Error::msg)?;
            let context = wgpu_view::shared_context()
                .context("the window's wgpu device cannot render particles")?;
            Backend::wgpu(context, BackendChoice::Wgpu)
        }
        _ => {
            if let Err(err) = window_device {
                eprintln!("{err}: the frames stay in host memory");
            }
            Backend::resolve(choice)?
        }
    };
    let mut renderer = SplotchRenderer::with_backend(backend)?;
    let mut shown: Option<egui::TextureId> = None;
    let (width_px, height_px) = (
        args.viewport.first().copied().unwrap_or(1920),
        args.viewport.get(1).copied().unwrap_or(1080),
    );
    let mut request = ViewRequest {
        snapshot: Arc::new(snapshot),
        camera: OrbitCamera::home(lo, hi),
        style: ViewStyle::default(),
        width_px,
        height_px,
    };
    let mut times = Vec::new();
    // Each stage's milliseconds in the frames after the first, in the renderer's stage order.
    let mut stage_ms: Vec<(&'static str, Vec<f64>)> = Vec::new();
    for frame in 0..=args.frames {
        request.camera.rotate([2.0, 0.5]);
        let start = Instant::now();
        let image = renderer
            .render_for_window(&request, &Progress::none())
            .map_err(anyhow::Error::msg)?;
        // What the window then does with it: egui's image made from host pixels (on the render
        // worker; the texture's upload to the display is not timed), or the device texture
        // registered with egui (on the window's thread).
        let display_start = Instant::now();
        match &image.pixels {
            Pixels::Host(rgba) => {
                anyhow::ensure!(
                    rgba.len() == width_px as usize * height_px as usize * 4,
                    "the viewport image has the wrong size"
                );
                let size = [width_px as usize, height_px as usize];
                std::hint::black_box(egui::ColorImage::from_rgba_unmultiplied(size, rgba));
            }
            Pixels::Device(texture) => {
                shown = wgpu_view::show_texture(texture, shown);
                anyhow::ensure!(shown.is_some(), "the window's device is gone");
            }
        }
        let display = display_start.elapsed().as_secs_f64() * 1e3;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        if frame > 0 {
            let display = crate::render::StageTime {
                stage: "display",
                seconds: display / 1e3,
            };
            for stage in image.stages.iter().chain([&display]) {
                match stage_ms.iter_mut().find(|(name, _)| *name == stage.stage) {
                    Some((_, ms)) => ms.push(stage.seconds * 1e3),
                    None => stage_ms.push((stage.stage, vec![stage.seconds * 1e3])),
                }
            }
        }
    }
    let first = times.first().copied().unwrap_or(0.0);
    let mut rest = times.get(1..).unwrap_or_default().to_vec();
    let median = median_of(&mut rest);
    let max = rest.last().copied().unwrap_or(0.0);
    let over = rest.iter().filter(|ms| **ms > 16.0).count();
    let stage_medians: Vec<(&'static str, f64)> = stage_ms
        .iter_mut()
        .map(|(name, ms)| (*name, median_of(ms)))
        .collect();
    let backend = renderer.backend_name();
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "backend": backend,
                "particles": args.particles,
                "width": width_px,
                "height": height_px,
                "first_ms": first,
                "frames": rest.len(),
                "median_ms": median,
                "max_ms": max,
                "frames_over_16ms": over,
                "stage_median_ms": serde_json::Map::from_iter(
                    stage_medians.iter().map(|(name, ms)| (name.to_string(), (*ms).into()))
                ),
            })
        );
    } else {
        println!(
            "viewport frames on the {backend}, {} particles at {width_px}x{height_px}: first \
             {first:.1} ms, then {} frames median {median:.1} ms, max {max:.1} ms, {over} over 16 ms",
            args.particles,
            rest.len()
        );
        let stages: Vec<String> = stage_medians
            .iter()
            .map(|(name, ms)| format!("{name} {ms:.2}"))
            .collect();
        println!("  stage medians (ms): {}", stages.join(", "));
    }
    Ok(())
}

/// The median of `values` (sorted in place); 0 when there are none.
fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
