//! The window as a new user meets it, driven with egui_kittest on a software wgpu adapter
//! (lavapipe): playback runs to the end, presets ask before replacing hand-made keyframes and
//! can be undone, and the other rough edges a first session finds.

#[path = "common/app_harness.rs"]
mod app_harness;
mod common;
use app_harness::*;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use haloscope::app::session::Session;
use haloscope::app::{HaloscopeApp, RendererFactory};
use haloscope::jobs::Progress;
use std::time::Duration;

/// Window size of most tests.
const WINDOW: egui::Vec2 = egui::vec2(1000.0, 640.0);
/// Particles of the small demo snapshot.
const DEMO_PARTICLES: u64 = 4_000;
/// A frame at 60 Hz, what a real window steps by (not the harness's default quarter second).
const FRAME_S: f32 = 1.0 / 60.0;

/// The application on a small demo snapshot, with only the sections `open` shows open.
fn harness_with(
    factory: RendererFactory,
    size: egui::Vec2,
    open: fn(&mut HaloscopeApp),
) -> Harness<'static, Option<HaloscopeApp>> {
    Harness::builder()
        .with_size(size)
        .with_step_dt(FRAME_S)
        .wgpu()
        .build_ui_state(
            move |ui, state: &mut Option<HaloscopeApp>| {
                let app = state.get_or_insert_with(|| {
                    let mut app =
                        HaloscopeApp::empty(ui.ctx(), &Session::default(), factory.clone());
                    let mut snapshot = haloscope::data::demo::demo_snapshot(DEMO_PARTICLES, 7);
                    haloscope::app::documents::fill_missing_smoothing(
                        &mut snapshot,
                        &Progress::none(),
                    )
                    .expect("kNN smoothing lengths");
                    app.documents.insert_snapshot("demo", snapshot);
                    app.panels.file = false;
                    app.panels.render = false;
                    open(&mut app);
                    app
                });
                app.ui(ui);
            },
            None,
        )
}

/// The Movie section open.
fn movie_harness() -> Harness<'static, Option<HaloscopeApp>> {
    harness_with(gradient_factory(Duration::ZERO), WINDOW, |app| {
        app.panels.movie = true
    })
}

/// Two hand-made keyframes 2 s apart: the home view, then the view turned and zoomed in.
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

#[test]
fn play_runs_the_path_to_its_end_at_sixty_frames_a_second_and_loops_when_asked() {
    let mut harness = movie_harness();
    add_two_views(&mut harness);
    assert_eq!(app(&harness).movie.editor.time_range(), (0.0, 2.0));
    harness.get_by_label("To start").click();
    harness.step();
    harness.get_by_label("Play").click();
    harness.step();
    assert!(app(&harness).movie.timeline.playing);
    // One second of frames: half the path, still playing, and asking for the next frame.
    for _ in 0..60 {
        harness.step();
    }
    let timeline = app(&harness).movie.timeline;
    assert!(
        timeline.playing,
        "playback stopped at {} s",
        timeline.time_s
    );
    assert!(
        (timeline.time_s - 1.0).abs() < 0.05,
        "{} s after a second",
        timeline.time_s
    );
    assert!(harness.ctx.has_requested_repaint());
    let camera = app(&harness).camera().expect("camera");
    let expected = app(&harness)
        .movie
        .editor
        .camera_at(timeline.time_s, app(&harness).movie.aspect())
        .expect("path camera");
    assert_eq!(camera, expected, "the viewport follows the path");
    // Past the end: stopped there.
    for _ in 0..70 {
        harness.step();
    }
    let timeline = app(&harness).movie.timeline;
    assert_eq!(timeline.time_s, 2.0);
    assert!(!timeline.playing);

    // With Loop, it goes round and keeps playing.
    harness.get_by_label("Loop").click();
    harness.step();
    harness.get_by_label("Play").click();
    harness.step();
    for _ in 0..150 {
        harness.step();
    }
    let timeline = app(&harness).movie.timeline;
    assert!(timeline.playing, "looping stopped at {} s", timeline.time_s);
    assert!(
        timeline.time_s > 0.3 && timeline.time_s < 0.8,
        "{} s after 2.5 s of a 2 s loop",
        timeline.time_s
    );
}

#[test]
fn a_preset_asks_before_replacing_hand_made_keyframes_and_ctrl_z_brings_them_back() {
    let mut harness = movie_harness();
    add_two_views(&mut harness);
    let mine = app(&harness).movie.editor.keyframes().to_vec();
    assert_eq!(mine.len(), 2);

    // Orbit over hand-made keyframes: nothing replaced until the user says so.
    harness.get_by_label("Orbit").click();
    harness.run_ok();
    assert_eq!(app(&harness).movie.editor.keyframes(), &mine[..]);
    harness.get_by_label_contains("replaces your 2 keyframes");
    harness.get_by_label("Keep mine").click();
    harness.run_ok();
    assert_eq!(app(&harness).movie.editor.keyframes(), &mine[..]);
    assert!(
        harness
            .query_by_label_contains("replaces your 2 keyframes")
            .is_none()
    );

    // Confirmed: the orbit's 17 keyframes, and Ctrl+Z brings the two back.
    harness.get_by_label("Orbit").click();
    harness.run_ok();
    harness.get_by_label("Replace keyframes").click();
    harness.run_ok();
    assert_eq!(app(&harness).movie.editor.keyframes().len(), 17);
    // A second preset over the first preset's unchanged keyframes needs no question.
    harness.get_by_label("Orbit").click();
    harness.run_ok();
    assert!(harness.query_by_label("Replace keyframes").is_none());
    assert_eq!(app(&harness).movie.editor.keyframes().len(), 17);
    // Undo goes back one preset only: to the first orbit's keyframes, then the button is gone.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    harness.run_ok();
    assert_eq!(app(&harness).movie.editor.keyframes().len(), 17);
    assert!(harness.query_by_label("Undo preset").is_none());

    // Again from hand-made keyframes, undone with the button this time.
    app_mut(&mut harness).movie.editor = haloscope::app::movie::edit::MovieEditor::default();
    app_mut(&mut harness).movie.undo = None;
    add_two_views(&mut harness);
    let mine = app(&harness).movie.editor.keyframes().to_vec();
    harness.get_by_label("Orbit").click();
    harness.run_ok();
    harness.get_by_label("Replace keyframes").click();
    harness.run_ok();
    assert_eq!(app(&harness).movie.editor.keyframes().len(), 17);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    harness.run_ok();
    assert_eq!(app(&harness).movie.editor.keyframes(), &mine[..]);
    assert!(harness.query_by_label("Undo preset").is_none());
}
