//! Drives the real application with egui_kittest on a software wgpu adapter (lavapipe).
//!
//! Needs a Vulkan software driver (Debian: mesa-vulkan-drivers, libvulkan1). Snapshot images live
//! in tests/snapshots; refresh with UPDATE_SNAPSHOTS=1.

#[path = "common/app_harness.rs"]
mod app_harness;
mod common;
use app_harness::*;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use haloscope::app::HaloscopeApp;
use haloscope::app::documents::Notice;
use std::time::{Duration, Instant};

/// Window size of every test.
const WINDOW: egui::Vec2 = egui::vec2(1000.0, 640.0);

/// The application in a harness, created on the harness's own context.
fn harness(files: Vec<std::path::PathBuf>) -> Harness<'static, Option<HaloscopeApp>> {
    Harness::builder().with_size(WINDOW).wgpu().build_ui_state(
        move |ui, state: &mut Option<HaloscopeApp>| {
            let app = state.get_or_insert_with(|| {
                HaloscopeApp::new(
                    ui.ctx(),
                    None,
                    files.clone(),
                    gradient_factory(Duration::ZERO),
                )
            });
            app.ui(ui);
        },
        None,
    )
}

fn mask_changing_text(harness: &mut Harness<'_, Option<HaloscopeApp>>) {
    // The status bar (frame time) and the viewport's corner label (render time) change run to run.
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, WINDOW.y - 30.0),
        WINDOW.to_pos2(),
    ));
}

#[test]
fn first_frame_shows_the_window_and_the_demo_render_arrives() {
    let mut harness = harness(Vec::new());
    step_until(&mut harness, "the demo data", |app| {
        app.documents.pending.is_empty()
    });
    let app_state = app(&harness);
    assert_eq!(app_state.documents.snapshots.len(), 1);
    assert_eq!(app_state.documents.events.len(), 1);
    assert_eq!(app_state.documents.snapshots[0].name, "demo snapshot");
    // Panels and menus are there for the user.
    for label in [
        "File",
        "View",
        "Help",
        "Render",
        "Halos",
        "Events",
        "Particles",
        "Sky map",
    ] {
        assert!(
            harness.get_all_by_label(label).next().is_some(),
            "no `{label}` on screen"
        );
    }
    step_until(&mut harness, "a full render on screen", |app| {
        app.viewport
            .shown()
            .is_some_and(|s| s.quality == haloscope::app::progressive::Quality::Full)
    });
    let shown = app(&harness).viewport.shown().cloned().expect("shown");
    assert_eq!(shown.backend, "test");
    assert!(app(&harness).viewport.texture_id().is_some());
    harness.run_ok();
    mask_changing_text(&mut harness);
    harness.snapshot("app_first_frame");
}

#[test]
fn opening_a_missing_file_through_the_open_path_shows_a_readable_error() {
    let mut harness = harness(Vec::new());
    step_until(&mut harness, "the demo data", |app| {
        app.documents.pending.is_empty()
    });
    let missing = common::shared_dir().join("data/snapshots/no-such-file.tbin");
    harness
        .state_mut()
        .as_mut()
        .expect("app")
        .open_path(&missing);
    step_until(&mut harness, "the load to fail", |app| {
        app.documents.pending.is_empty()
    });
    let last = app(&harness).notices.last().cloned();
    let Some(Notice::Error(text)) = last else {
        panic!("expected an error notice, got {last:?}");
    };
    assert!(text.contains("no-such-file.tbin"), "{text}");
    assert_eq!(
        app(&harness).documents.snapshots.len(),
        1,
        "nothing new opened"
    );
    harness.run_ok();
    // The error is in the status bar, readable.
    harness.get_by_label_contains("no-such-file.tbin");
}

#[test]
fn dragging_the_viewport_rotates_and_right_drag_pans() {
    let mut harness = harness(Vec::new());
    step_until(&mut harness, "the demo data", |app| {
        app.documents.pending.is_empty()
    });
    let before = app(&harness).camera().expect("a snapshot is shown");
    // The viewport fills the window right of the side panel; drag in its middle.
    let start = egui::pos2(0.7 * WINDOW.x, 0.5 * WINDOW.y);
    let end = start + egui::vec2(80.0, 30.0);
    harness.hover_at(start);
    harness.step();
    harness.drag_at(start);
    harness.step();
    for i in 1..=4 {
        harness.hover_at(start + (end - start) * (i as f32 / 4.0));
        harness.step();
    }
    harness.drop_at(end);
    harness.step();
    let rotated = app(&harness).camera().expect("camera");
    assert_ne!(rotated.eye_world, before.eye_world);
    assert_eq!(
        rotated.look_at_world, before.look_at_world,
        "rotation keeps the look-at point"
    );
    assert!((rotated.distance() - before.distance()).abs() < 1e-3 * before.distance());

    // Right-drag pans: the look-at point moves.
    let button = |pressed, pos| egui::Event::PointerButton {
        pos,
        button: egui::PointerButton::Secondary,
        pressed,
        modifiers: egui::Modifiers::NONE,
    };
    harness.hover_at(start);
    harness.event(button(true, start));
    harness.step();
    for i in 1..=4 {
        harness.hover_at(start + (end - start) * (i as f32 / 4.0));
        harness.step();
    }
    harness.event(button(false, end));
    harness.step();
    let panned = app(&harness).camera().expect("camera");
    assert_ne!(panned.look_at_world, rotated.look_at_world);

    // `h` brings the home view back.
    harness.key_press(egui::Key::H);
    harness.step();
    let home = app(&harness)
        .documents
        .shown_snapshot()
        .expect("shown")
        .home_camera();
    assert_eq!(app(&harness).camera(), Some(home));
}

#[test]
fn sky_map_panel_snapshot() {
    let mut harness = harness(Vec::new());
    step_until(&mut harness, "the demo data", |app| {
        app.documents.pending.is_empty()
    });
    harness.get_by_label("Sky map").click();
    harness.run_ok();
    assert_eq!(
        app(&harness).central,
        haloscope::app::session::CentralView::SkyMap
    );
    mask_changing_text(&mut harness);
    harness.snapshot("app_sky_map");
}

#[test]
fn opening_a_shared_snapshot_through_the_open_path_shows_it() {
    let mut harness = harness(Vec::new());
    step_until(&mut harness, "the demo data", |app| {
        app.documents.pending.is_empty()
    });
    let path = common::shared_data("snapshots/test4.tbin");
    harness.state_mut().as_mut().expect("app").open_path(&path);
    step_until(&mut harness, "test4.tbin to load", |app| {
        app.documents.pending.is_empty()
    });
    let app_state = app(&harness);
    assert_eq!(app_state.documents.snapshots.len(), 2);
    let shown = app_state
        .documents
        .shown_snapshot()
        .expect("the new snapshot is shown");
    assert_eq!(shown.name, "test4.tbin");
    assert_eq!(shown.snapshot.n_particles(), 67_495);
    assert_eq!(
        app_state
            .documents
            .recent
            .first()
            .and_then(|p| p.file_name()),
        path.file_name()
    );
    let id = shown.id;
    // The viewport asks for a render of the new document and shows it.
    step_until(&mut harness, "a render of test4", |app| {
        app.viewport.shown().is_some()
            && app.documents.shown_snapshot().is_some_and(|d| d.id == id)
            && !app.viewport.is_rendering()
    });
    harness.run_ok();
    harness.get_by_label_contains("test4.tbin (67495 particles)");
}

#[test]
fn the_first_image_is_the_preview_even_when_it_takes_longer_than_the_rest_time() {
    // Slower than the rest time before a full render (150 ms).
    let factory = gradient_factory(Duration::from_millis(400));
    let mut harness = Harness::builder().with_size(WINDOW).wgpu().build_ui_state(
        move |ui, state: &mut Option<HaloscopeApp>| {
            let app = state.get_or_insert_with(|| {
                HaloscopeApp::new(ui.ctx(), None, Vec::new(), factory.clone())
            });
            app.ui(ui);
        },
        None,
    );
    step_until(&mut harness, "a first image", |app| {
        app.viewport.shown().is_some()
    });
    // The full render asked for 150 ms after the preview waits for it instead of cancelling it,
    // so the quick preview is on screen first.
    let first = app(&harness).viewport.shown().cloned().expect("shown");
    assert_eq!(first.quality, haloscope::app::progressive::Quality::Preview);
    step_until(&mut harness, "the full render", |app| {
        app.viewport
            .shown()
            .is_some_and(|s| s.quality == haloscope::app::progressive::Quality::Full)
    });
    assert!(!app(&harness).viewport.is_rendering());
}

#[test]
fn the_built_in_file_chooser_opens_a_shared_snapshot() {
    let mut harness = harness(Vec::new());
    step_until(&mut harness, "the demo data", |app| {
        app.documents.pending.is_empty()
    });
    // What File > Open does when no system dialog can be shown.
    let folder = common::shared_data("snapshots/test4.tbin")
        .parent()
        .expect("folder")
        .to_path_buf();
    {
        let app = harness.state_mut().as_mut().expect("app");
        app.open_file_browser(haloscope::app::file_browser::BrowsePurpose::Open);
        app.file_browser.as_mut().expect("chooser").navigate(folder);
    }
    step_until(&mut harness, "the folder listing", |app| {
        app.file_browser
            .as_ref()
            .is_some_and(|b| b.dir.ends_with("snapshots"))
    });
    // Listing arrives on a worker; step until the entry is on screen, then pick it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while harness.query_by_label_contains("test4.tbin").is_none() {
        assert!(Instant::now() < deadline, "test4.tbin never listed");
        harness.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    harness.get_by_label_contains("test4.tbin").click();
    harness.run_ok();
    assert_eq!(
        app(&harness)
            .file_browser
            .as_ref()
            .map(|b| b.file_name.clone()),
        Some("test4.tbin".to_owned())
    );
    harness.get_by_label("Open").click();
    harness.run_ok();
    assert!(app(&harness).file_browser.is_none(), "the chooser closes");
    step_until(&mut harness, "test4.tbin to load", |app| {
        app.documents.pending.is_empty()
    });
    let shown = app(&harness).documents.shown_snapshot().expect("shown");
    assert_eq!(shown.name, "test4.tbin");
    assert_eq!(shown.snapshot.n_particles(), 67_495);
}
