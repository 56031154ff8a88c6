//! The Movie panel of the real application, driven with egui_kittest on a software wgpu adapter
//! (lavapipe): keyframes from the current view, the scrubber against the library's
//! interpolation, playback, and the Render movie window's worker (PNG frames, resume, cancel,
//! readable errors). A small demo snapshot keeps every test to a few seconds.
//!
//! Snapshot images live in tests/snapshots; refresh with UPDATE_SNAPSHOTS=1.

#[path = "common/app_harness.rs"]
mod app_harness;
use app_harness::*;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use haloscope::app::movie::edit::{camera_from_pose, fov_x_deg};
use haloscope::app::movie::render::{MovieEnd, MovieFormat, MovieRenderSettings};
use haloscope::app::session::Session;
use haloscope::app::{HaloscopeApp, RendererFactory, default_renderer_factory};
use haloscope::jobs::Progress;
use haloscope::movie::{CameraPath, Timing, frame_file_name};
use std::path::Path;
use std::time::Duration;

/// Window size of every test.
const WINDOW: egui::Vec2 = egui::vec2(1000.0, 640.0);
/// Particles of the demo snapshot the tests render.
const DEMO_PARTICLES: u64 = 4_000;

/// The application on a small demo snapshot with only the Movie section open.
fn harness(factory: RendererFactory) -> Harness<'static, Option<HaloscopeApp>> {
    Harness::builder().with_size(WINDOW).wgpu().build_ui_state(
        move |ui, state: &mut Option<HaloscopeApp>| {
            let app = state.get_or_insert_with(|| {
                let mut app = HaloscopeApp::empty(ui.ctx(), &Session::default(), factory.clone());
                let mut snapshot = haloscope::data::demo::demo_snapshot(DEMO_PARTICLES, 7);
                haloscope::app::documents::fill_missing_smoothing(&mut snapshot, &Progress::none())
                    .expect("kNN smoothing lengths");
                app.documents.insert_snapshot("demo", snapshot);
                app.panels.file = false;
                app.panels.render = false;
                app.panels.movie = true;
                app
            });
            app.ui(ui);
        },
        None,
    )
}

/// Two keyframes 2 s apart: the home view, then the view turned and zoomed in.
fn add_two_views(harness: &mut Harness<'_, Option<HaloscopeApp>>) {
    harness.step();
    harness.get_by_label("Add current view").click();
    harness.step();
    {
        let document = app_mut(harness)
            .documents
            .shown_snapshot_mut()
            .expect("shown");
        document.camera.rotate([90.0, 30.0]);
        document.camera.zoom(120.0);
    }
    harness.get_by_label("Add current view").click();
    harness.step();
}

/// Names of the PNG frames in `dir`, sorted.
fn frames_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("frames folder")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("frame_") && n.ends_with(".png"))
        .collect();
    names.sort();
    names
}

#[test]
fn two_views_make_two_keyframes_and_the_scrubber_shows_the_interpolated_camera() {
    let mut harness = harness(gradient_factory(Duration::ZERO));
    let home = app(&harness).camera();
    let home = home.unwrap_or_else(|| {
        harness.step();
        app(&harness).camera().expect("a snapshot is shown")
    });
    add_two_views(&mut harness);
    let turned = app(&harness).camera().expect("camera");
    assert_ne!(turned, home);
    let app_state = app(&harness);
    let aspect = app_state.movie.aspect();
    let keyframes = app_state.movie.editor.keyframes().to_vec();
    assert_eq!(keyframes.len(), 2);
    assert_eq!((keyframes[0].time_s, keyframes[1].time_s), (0.0, 2.0));
    for (key, camera) in keyframes.iter().zip([home, turned]) {
        assert_eq!(key.position, camera.eye_world.map(f64::from));
        assert_eq!(key.look_at, camera.look_at_world.map(f64::from));
        assert_eq!(key.up, camera.up_world.map(f64::from));
        assert_eq!(
            key.fov_deg,
            fov_x_deg(f64::from(camera.fov_y_deg), aspect),
            "the keyframe keeps the movie's horizontal field of view"
        );
    }

    // Scrub to 0.5 s: the viewport camera is the library's interpolation there.
    harness
        .get_by_role_and_label(Role::Slider, "Time")
        .set_value_accesskit(0.5);
    harness.step();
    assert_eq!(app(&harness).movie.timeline.time_s, 0.5);
    let path = CameraPath::new(keyframes.clone(), Timing::default(), false).expect("path");
    let pose = path.sample(0.5).pose;
    let camera = app(&harness).camera().expect("camera");
    assert_eq!(camera, camera_from_pose(&pose, aspect));
    assert_eq!(camera.eye_world, pose.position.map(|v| v as f32));
    assert_eq!(camera.look_at_world, pose.look_at.map(|v| v as f32));
    assert_ne!(camera.eye_world, home.eye_world);
    assert_ne!(camera.eye_world, turned.eye_world);

    // "Go to" the first keyframe shows its view again.
    harness
        .get_all_by_label("Go to")
        .next()
        .expect("a Go to button")
        .click();
    harness.step();
    let back = app(&harness).camera().expect("camera");
    assert_eq!(back.eye_world, home.eye_world);
    assert!((back.fov_y_deg - home.fov_y_deg).abs() < 1e-4);
    assert_eq!(app(&harness).movie.timeline.time_s, 0.0);

    step_until(&mut harness, "a full render", |app| {
        !app.viewport.is_rendering()
            && app
                .viewport
                .shown()
                .is_some_and(|s| s.quality == haloscope::app::progressive::Quality::Full)
    });
    harness.run_ok();
    // The status bar (frame time) and the viewport's corner label change from run to run.
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, WINDOW.y - 30.0),
        WINDOW.to_pos2(),
    ));
    let viewport = app(&harness).viewport.rect();
    harness.mask(egui::Rect::from_min_size(
        viewport.min,
        egui::vec2(viewport.width(), 24.0),
    ));
    harness.snapshot("app_movie_panel");

    // Play: the scrubber advances with the UI clock and the camera follows the path.
    harness.get_by_label("Play").click();
    for _ in 0..3 {
        harness.step();
    }
    let app_state = app(&harness);
    let time_s = app_state.movie.timeline.time_s;
    assert!(time_s > 0.0 && time_s <= 2.0, "time {time_s}");
    let expected = camera_from_pose(&path.sample(time_s).pose, aspect);
    assert_eq!(app_state.camera(), Some(expected));
    harness.get_by_label("Pause").click();
    harness.step();
    assert!(!app(&harness).movie.timeline.playing);

    // Save the path as TOML (what Save path… does with the chosen file), clear, load it back.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("camera.toml");
    app_mut(&mut harness).movie.save_to(&file);
    let saved = haloscope::movie::load_path(&file).expect("the saved file loads");
    assert_eq!(saved.keyframes(), keyframes.as_slice());
    app_mut(&mut harness).movie.editor.clear();
    app_mut(&mut harness).movie.load_from(&file);
    harness.step();
    assert_eq!(app(&harness).movie.editor.keyframes(), keyframes.as_slice());
    harness.get_by_label_contains("loaded 2 keyframes from");
    // A file that is no path file: the panel says where it went wrong.
    std::fs::write(&file, "[[keyframe]]\ntime_s = \"soon\"\n").expect("write");
    app_mut(&mut harness).movie.load_from(&file);
    harness.step();
    assert_eq!(app(&harness).movie.editor.keyframes(), keyframes.as_slice());
    harness.get_by_label_contains("camera.toml");
}

#[test]
fn rendering_three_frames_writes_three_pngs_and_a_second_run_resumes() {
    let mut harness = harness(default_renderer_factory());
    add_two_views(&mut harness);
    let out = tempfile::tempdir().expect("temp dir");
    {
        let app = app_mut(&mut harness);
        app.movie.render.settings = MovieRenderSettings {
            width_px: 64,
            height_px: 48,
            fps: 1.0,
            out_dir: out.path().display().to_string(),
            ..MovieRenderSettings::default()
        };
        app.movie.render.show_window = true;
    }
    harness.run_ok();
    harness.get_by_label_contains("3 frames of 64×48");
    harness.get_by_label("Render frames").click();
    step_until(&mut harness, "the movie", |app| {
        !app.movie.render.is_running()
    });
    let Some(MovieEnd::Done(outcome)) = app(&harness).movie.render.last.clone() else {
        panic!(
            "expected a finished movie, got {:?}",
            app(&harness).movie.render.last
        );
    };
    assert_eq!(
        (
            outcome.summary.n_frames,
            outcome.summary.rendered,
            outcome.summary.skipped
        ),
        (3, 3, 0)
    );
    assert_eq!(outcome.backend, app(&harness).viewport.backend());
    let names = frames_in(out.path());
    assert_eq!(names, (0..3).map(frame_file_name).collect::<Vec<_>>());
    let frames: Vec<image::RgbImage> = names
        .iter()
        .map(|n| image::open(out.path().join(n)).expect("PNG").into_rgb8())
        .collect();
    for frame in &frames {
        assert_eq!(frame.dimensions(), (64, 48));
        assert!(frame.pixels().any(|p| p.0 != [0, 0, 0]), "a black frame");
    }
    assert_ne!(frames[0], frames[2], "the camera moves along the path");
    let modified: Vec<_> = names
        .iter()
        .map(|n| {
            std::fs::metadata(out.path().join(n))
                .and_then(|m| m.modified())
                .expect("mtime")
        })
        .collect();

    // Again into the same folder, now with an MP4: every frame is skipped, none rewritten.
    app_mut(&mut harness).movie.render.settings.format = MovieFormat::PngAndMp4;
    harness.step();
    harness.get_by_label("Render frames").click();
    step_until(&mut harness, "the resumed movie", |app| {
        !app.movie.render.is_running()
    });
    let Some(MovieEnd::Done(outcome)) = app(&harness).movie.render.last.clone() else {
        panic!(
            "expected a finished movie, got {:?}",
            app(&harness).movie.render.last
        );
    };
    assert_eq!((outcome.summary.rendered, outcome.summary.skipped), (0, 3));
    let mp4 = outcome.summary.mp4.expect("an MP4");
    assert_eq!(mp4.frames, 3);
    assert!(out.path().join("movie.mp4").is_file());
    for (name, before) in names.iter().zip(&modified) {
        let after = std::fs::metadata(out.path().join(name))
            .and_then(|m| m.modified())
            .expect("mtime");
        assert_eq!(&after, before, "{name} was rewritten");
    }
    harness.step();
    harness.get_by_label_contains("Done: 3 frames (0 rendered, 3 already there)");

    // A file where the folder should be: a readable error in the window.
    let blocker = out.path().join("frame_00000.png");
    app_mut(&mut harness).movie.render.settings.out_dir = blocker.display().to_string();
    harness.step();
    harness.get_by_label("Render frames").click();
    step_until(&mut harness, "the failure", |app| {
        !app.movie.render.is_running()
    });
    let Some(MovieEnd::Failed(error)) = app(&harness).movie.render.last.clone() else {
        panic!(
            "expected a failure, got {:?}",
            app(&harness).movie.render.last
        );
    };
    assert!(error.contains("frame_00000.png"), "{error}");
    harness.step();
    harness.get_by_label_contains("Error: movie into");
}

#[test]
fn cancel_stops_the_render_and_the_next_run_resumes_from_the_frames_on_disk() {
    let mut harness = harness(gradient_factory(Duration::from_millis(40)));
    add_two_views(&mut harness);
    let out = tempfile::tempdir().expect("temp dir");
    {
        let app = app_mut(&mut harness);
        app.movie.render.settings = MovieRenderSettings {
            width_px: 32,
            height_px: 24,
            fps: 20.0,
            out_dir: out.path().display().to_string(),
            ..MovieRenderSettings::default()
        };
        app.movie.render.show_window = true;
    }
    harness.run_ok();
    harness.get_by_label("Render frames").click();
    step_until(&mut harness, "two frames", |app| {
        app.movie
            .render
            .running
            .as_ref()
            .and_then(|r| r.frames())
            .is_some_and(|(done, _)| done >= 2)
    });
    harness.get_by_label_contains("/41 frames");
    harness.get_by_label("Cancel").click();
    step_until(&mut harness, "the cancel", |app| {
        !app.movie.render.is_running()
    });
    assert_eq!(app(&harness).movie.render.last, Some(MovieEnd::Cancelled));
    let kept = frames_in(out.path()).len();
    assert!((2..41).contains(&kept), "{kept} frames on disk");
    harness.step();
    harness.get_by_label_contains("Cancelled");

    harness.get_by_label("Render frames").click();
    step_until(&mut harness, "the resumed movie", |app| {
        !app.movie.render.is_running()
    });
    let Some(MovieEnd::Done(outcome)) = app(&harness).movie.render.last.clone() else {
        panic!(
            "expected a finished movie, got {:?}",
            app(&harness).movie.render.last
        );
    };
    assert_eq!(outcome.summary.skipped, kept);
    assert_eq!(outcome.summary.rendered, 41 - kept);
    assert_eq!(frames_in(out.path()).len(), 41);
}

#[test]
fn presets_orbit_the_look_at_point_zoom_into_the_selected_halo_and_fly_along_halos() {
    let mut harness = harness(gradient_factory(Duration::ZERO));
    harness.step();
    {
        let app = app_mut(&mut harness);
        let document = app.documents.shown_snapshot().cloned().expect("shown");
        app.halos.adopt_defaults(&document);
        app.halos.start(&document);
    }
    step_until(&mut harness, "friends-of-friends", |app| {
        app.halos.running.is_none() && app.halos.catalogue.is_some()
    });
    let camera = app(&harness).camera().expect("camera");
    let aspect = app(&harness).movie.aspect();
    let fov_x = fov_x_deg(f64::from(camera.fov_y_deg), aspect);
    let eye = glam::DVec3::from(camera.eye_world.map(f64::from));
    let look_at = camera.look_at_world.map(f64::from);
    harness.get_by_label("Orbit").click();
    harness.run_ok();
    let keyframes = app(&harness).movie.editor.keyframes().to_vec();
    // One turn in 16 steps of the preset, both ends included, over the preset's 10 s.
    assert_eq!(keyframes.len(), 17);
    assert_eq!(keyframes[16].time_s, 10.0);
    let start = glam::DVec3::from(keyframes[0].position);
    assert!(
        start.distance(eye) < 1e-6 * eye.length().max(1.0),
        "{start} vs {eye}"
    );
    assert!(keyframes.iter().all(|k| k.look_at == look_at));
    assert!(keyframes.iter().all(|k| (k.fov_deg - fov_x).abs() < 1e-12));

    let halos = {
        let app = app(&harness);
        let id = app.documents.shown_snapshot().expect("shown").id;
        app.halos
            .catalogue_of(id)
            .expect("catalogue")
            .result
            .halos
            .clone()
    };
    assert!(halos.len() >= 2, "{} halos in the demo", halos.len());
    app_mut(&mut harness).halos.selected = Some(1);
    app_mut(&mut harness).movie.fly_halos = 2;
    harness.step();
    // The orbit moved the camera to the path's start; the zoom starts from there.
    let camera = app(&harness).camera().expect("camera");
    let eye = glam::DVec3::from(camera.eye_world.map(f64::from));
    harness.get_by_label("Zoom into halo").click();
    harness.run_ok();
    let keyframes = app(&harness).movie.editor.keyframes().to_vec();
    let centre = glam::DVec3::from(halos[1].com);
    let end = haloscope::movie::presets::framing_distance(halos[1].radius_max, fov_x);
    let last = keyframes.last().expect("keyframes");
    assert_eq!(last.look_at, halos[1].com);
    assert!((glam::DVec3::from(last.position).distance(centre) - end).abs() < 1e-9 * end);
    let first_distance = glam::DVec3::from(keyframes[0].position).distance(centre);
    let expected = eye.distance(centre).max(4.0 * end);
    assert!((first_distance - expected).abs() < 1e-9 * expected);

    harness.get_by_label("Fly along halos").click();
    harness.run_ok();
    let keyframes = app(&harness).movie.editor.keyframes().to_vec();
    assert_eq!(keyframes.len(), 2);
    assert_eq!(keyframes[0].look_at, halos[0].com);
    assert_eq!(keyframes[1].look_at, halos[1].com);
    // The viewport shows the new path's start.
    let shown = app(&harness).camera().expect("camera");
    assert_eq!(shown.look_at_world, halos[0].com.map(|v| v as f32));
}
