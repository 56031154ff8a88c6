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

/// The demo snapshot's halos found by friends-of-friends, the Halos section open.
fn find_halos(harness: &mut Harness<'_, Option<HaloscopeApp>>) {
    harness.step();
    {
        let app = app_mut(harness);
        let document = app.documents.shown_snapshot().cloned().expect("shown");
        app.halos.adopt_defaults(&document);
        app.halos.start(&document);
    }
    step_until(harness, "friends-of-friends", |app| {
        app.halos.running.is_none() && app.halos.catalogue.is_some()
    });
}

#[test]
fn halo_labels_in_the_window_are_the_rank_column_of_the_exported_csv() {
    let mut harness = harness_with(gradient_factory(Duration::ZERO), WINDOW, |app| {
        app.panels.halos = true
    });
    find_halos(&mut harness);
    let dir = tempfile::tempdir().expect("temp dir");
    let csv = dir.path().join("halos.csv");
    app_mut(&mut harness).export_catalogue_to(csv.clone());
    step_until(&mut harness, "the export", |app| {
        app.halos.export_job.is_none()
    });
    let text = std::fs::read_to_string(&csv).expect("exported CSV");
    // The window's export names the snapshot and its units, as `haloscope fof` does.
    let comments: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
    assert!(
        comments
            .iter()
            .any(|l| l.contains("source_file: demo snapshot")),
        "{comments:?}"
    );
    assert!(
        comments.iter().any(|l| l.contains("length_unit")),
        "{comments:?}"
    );
    let mut lines = text.lines().skip_while(|l| l.starts_with('#'));
    assert!(lines.next().expect("header").starts_with("rank,"));
    // rank -> (com_x, com_y, com_z) as the CSV writes them.
    let rows: Vec<(usize, [f64; 3])> = lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let number = |i: usize| cells[i].parse::<f64>().expect("number");
            (
                cells[0].parse().expect("rank"),
                [number(4), number(5), number(6)],
            )
        })
        .collect();
    assert!(rows.len() >= 2, "{} halos", rows.len());
    let halos = app(&harness)
        .halos
        .catalogue
        .as_ref()
        .expect("catalogue")
        .result
        .halos
        .clone();
    for selected in [0, 1] {
        app_mut(&mut harness).halos.selected = Some(selected);
        harness.run_ok();
        let label = app(&harness)
            .viewport
            .overlay()
            .items
            .iter()
            .find_map(|item| match item {
                haloscope::app::overlay::OverlayItem::Text { text, colour, .. }
                    if *colour == haloscope::app::overlay::SELECTED_COLOUR =>
                {
                    Some(text.clone())
                }
                _ => None,
            })
            .expect("the selected halo's label");
        let rank: usize = label
            .strip_prefix('#')
            .and_then(|n| n.parse().ok())
            .expect("#rank");
        let (_, com) = rows
            .iter()
            .find(|(r, _)| *r == rank)
            .expect("the label's rank in the CSV");
        assert_eq!(
            *com, halos[selected].com,
            "label {label} names another halo in the CSV"
        );
    }
    // The table's first column is the same rank, headed as in the CSV.
    harness.get_by_label("rank");
}

/// A renderer that fails, as the real one does, when no family of the snapshot is switched on,
/// and logs the families of every snapshot it draws.
struct SpeciesRenderer {
    log: std::sync::Arc<std::sync::Mutex<Vec<Vec<haloscope::data::SpeciesKind>>>>,
}

impl haloscope::app::ViewportRenderer for SpeciesRenderer {
    fn backend_name(&self) -> String {
        "test".to_owned()
    }

    fn render(
        &mut self,
        request: &haloscope::app::ViewRequest,
        _: &Progress,
    ) -> Result<haloscope::app::RenderedImage, String> {
        let kinds: Vec<_> = request.snapshot.species.iter().map(|s| s.kind).collect();
        self.log.lock().expect("log").push(kinds.clone());
        let on = kinds
            .iter()
            .any(|&k| request.style.species(k).is_some_and(|s| s.enabled));
        if !on {
            return Err("no species is switched on".to_owned());
        }
        let (w, h) = (request.width_px, request.height_px);
        Ok(test_image(w, h, vec![200; (w * h * 4) as usize]))
    }
}

#[test]
fn species_switches_belong_to_each_snapshot_and_a_failed_render_clears_the_old_image() {
    use haloscope::data::SpeciesKind;
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let factory: RendererFactory = {
        let log = log.clone();
        std::sync::Arc::new(move || Box::new(SpeciesRenderer { log: log.clone() }))
    };
    let mut harness = harness_with(factory, WINDOW, |_| {});
    let last_drawn = |log: &std::sync::Mutex<Vec<Vec<SpeciesKind>>>| {
        log.lock().expect("log").last().cloned().unwrap_or_default()
    };
    step_until(&mut harness, "the first image", |app| {
        app.viewport.texture_id().is_some()
    });
    // Dark matter off for the demo (gas, dark, stars): still drawn from gas and stars.
    app_mut(&mut harness)
        .style
        .species_mut(SpeciesKind::Dark)
        .expect("dark style")
        .enabled = false;
    // A dark-only snapshot opened next shows its dark matter.
    let mut dark = haloscope::data::demo::demo_snapshot(DEMO_PARTICLES, 9);
    dark.species.retain(|s| s.kind == SpeciesKind::Dark);
    haloscope::app::documents::fill_missing_smoothing(&mut dark, &Progress::none())
        .expect("kNN smoothing lengths");
    app_mut(&mut harness)
        .documents
        .insert_snapshot("dark only", dark);
    app_mut(&mut harness).documents.shown_snapshot = Some(1);
    step_until(&mut harness, "a render of the dark-only file", |app| {
        last_drawn(&log) == vec![SpeciesKind::Dark]
            && !app.viewport.is_rendering()
            && (app.viewport.error().is_some() || app.viewport.shown().is_some())
    });
    harness.run_ok();
    assert_eq!(app(&harness).viewport.error(), None);
    assert!(app(&harness).viewport.texture_id().is_some());
    let dark_on = |app: &HaloscopeApp| {
        app.style
            .species(SpeciesKind::Dark)
            .is_some_and(|s| s.enabled)
    };
    assert!(dark_on(app(&harness)));
    // Back to the demo: its dark matter is still off.
    app_mut(&mut harness).documents.shown_snapshot = Some(0);
    harness.run_ok();
    assert!(!dark_on(app(&harness)));
    app_mut(&mut harness).documents.shown_snapshot = Some(1);
    harness.run_ok();
    assert!(dark_on(app(&harness)));

    // Nothing on in the dark-only file: the error, and no stale image or legend under it.
    app_mut(&mut harness)
        .style
        .species_mut(SpeciesKind::Dark)
        .expect("dark style")
        .enabled = false;
    step_until(&mut harness, "the failed render", |app| {
        app.viewport.error().is_some()
    });
    harness.run_ok();
    let app_state = app(&harness);
    assert_eq!(
        app_state.viewport.error(),
        Some("no species is switched on")
    );
    assert!(
        app_state.viewport.texture_id().is_none(),
        "stale image kept"
    );
    assert!(app_state.viewport.legend().is_none());
    assert!(app_state.viewport.shown().is_none());
}

/// A renderer whose images are one pixel short of the size asked for.
struct ShortRenderer;

impl haloscope::app::ViewportRenderer for ShortRenderer {
    fn backend_name(&self) -> String {
        "test".to_owned()
    }

    fn render(
        &mut self,
        request: &haloscope::app::ViewRequest,
        _: &Progress,
    ) -> Result<haloscope::app::RenderedImage, String> {
        let (w, h) = (request.width_px, request.height_px);
        Ok(test_image(w, h, vec![200; (w * h * 4 - 4) as usize]))
    }
}

#[test]
fn an_image_of_the_wrong_size_is_an_error_not_a_texture() {
    let factory: RendererFactory = std::sync::Arc::new(|| Box::new(ShortRenderer));
    let mut harness = harness_with(factory, WINDOW, |_| {});
    step_until(&mut harness, "the render's outcome", |app| {
        app.viewport.error().is_some()
    });
    let viewport = &app(&harness).viewport;
    let error = viewport.error().expect("error");
    assert!(error.contains("bytes for a"), "{error}");
    assert!(viewport.texture_id().is_none());
    assert!(viewport.shown().is_none());
}

#[test]
fn closing_the_event_list_under_analysis_cancels_its_trials_and_show_plots_works_after() {
    let mut harness = harness_with(gradient_factory(Duration::ZERO), WINDOW, |app| {
        app.panels.events = true;
        app.panels.file = true;
        app.documents
            .insert_events("first", haloscope::data::demo::demo_events(3_000, 1));
        app.documents
            .insert_events("second", haloscope::data::demo::demo_events(400, 2));
        app.documents.shown_events = Some(0);
        app.twopoint.trials = 1_000_000;
    });
    harness.run_ok();
    harness.get_by_label("Start").click();
    step_until(&mut harness, "trials under way", |app| {
        app.twopoint.state.is_some()
    });
    let job = app(&harness)
        .twopoint
        .run
        .as_ref()
        .expect("running")
        .handle
        .clone();
    // The "x" on the first list's row.
    let row = harness.get_by_label("first (3000 events)").rect();
    let close = harness
        .get_all_by_label("x")
        .find(|x| (x.rect().center().y - row.center().y).abs() < 4.0)
        .expect("the row's close button");
    close.click();
    harness.run_ok();
    assert_eq!(app(&harness).documents.events.len(), 1);
    assert!(job.is_cancelled(), "the closed list's trials still run");
    assert!(!app(&harness).twopoint.is_running());
    assert!(app(&harness).twopoint.state.is_none(), "its results stay");
    harness.get_by_label_contains("cancelled, first was closed");

    // The remaining list: Show plots shows its (empty) plots, Start runs it.
    app_mut(&mut harness).twopoint.trials = 4;
    app_mut(&mut harness).central = haloscope::app::session::CentralView::Viewport;
    harness.run_ok();
    harness.get_by_label("Show plots").click();
    harness.run_ok();
    assert_eq!(
        app(&harness).central,
        haloscope::app::session::CentralView::TwoPoint
    );
    harness.get_by_label_contains("Event list: second (400 events)");
    harness
        .get_all_by_label("Start")
        .next()
        .expect("Start")
        .click();
    step_until(&mut harness, "4 trials on the second list", |app| {
        !app.twopoint.is_running()
            && app
                .twopoint
                .state
                .as_ref()
                .is_some_and(|s| s.analysis.trials() == 4)
    });
    let second = app(&harness).documents.events[0].id;
    assert!(app(&harness).twopoint.state_of(second).is_some());
}
