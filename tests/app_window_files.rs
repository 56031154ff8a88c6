//! The window's file handling as a new user meets it, driven with egui_kittest on a software
//! wgpu adapter (lavapipe): the built-in file chooser (several files, Enter, where saving
//! starts, keys kept from the viewport), whole error messages in the status bar, the reload of
//! the last session's files, and the side panel in a small window.

#[path = "common/app_harness.rs"]
mod app_harness;
mod common;
use app_harness::*;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use haloscope::app::HaloscopeApp;
use haloscope::app::documents::Notice;
use haloscope::app::file_browser::BrowsePurpose;
use haloscope::app::session::Session;
use haloscope::jobs::Progress;
use std::path::PathBuf;
use std::time::Duration;

/// Window size of most tests.
const WINDOW: egui::Vec2 = egui::vec2(1000.0, 640.0);

/// The application on a small demo snapshot; `session` restores files when `files` is empty.
fn harness(
    size: egui::Vec2,
    session: Option<Session>,
    demo: bool,
) -> Harness<'static, Option<HaloscopeApp>> {
    Harness::builder().with_size(size).wgpu().build_ui_state(
        move |ui, state: &mut Option<HaloscopeApp>| {
            let app = state.get_or_insert_with(|| {
                let factory = gradient_factory(Duration::ZERO);
                let mut app = match &session {
                    Some(session) => {
                        HaloscopeApp::new(ui.ctx(), Some(session.clone()), Vec::new(), factory)
                    }
                    None => HaloscopeApp::empty(ui.ctx(), &Session::default(), factory),
                };
                if demo {
                    let mut snapshot = haloscope::data::demo::demo_snapshot(4_000, 7);
                    haloscope::app::documents::fill_missing_smoothing(
                        &mut snapshot,
                        &Progress::none(),
                    )
                    .expect("kNN smoothing lengths");
                    app.documents.insert_snapshot("demo", snapshot);
                }
                app
            });
            app.ui(ui);
        },
        None,
    )
}

/// A folder with three small files that are no snapshots.
fn three_files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(dir.path().join(name), b"not a snapshot\n").expect("write");
    }
    dir
}

/// Opens the built-in chooser for `purpose` and shows `dir` in it.
fn chooser_in(
    harness: &mut Harness<'_, Option<HaloscopeApp>>,
    purpose: BrowsePurpose,
    dir: &std::path::Path,
) {
    app_mut(harness).open_file_browser(purpose);
    app_mut(harness)
        .file_browser
        .as_mut()
        .expect("chooser")
        .navigate(dir.to_path_buf());
    step_until(harness, "the folder's listing", |_| true);
    for _ in 0..200 {
        harness.step();
        if harness.query_by_label("a.txt    15 B").is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the chooser never listed {}", dir.display());
}

#[test]
fn the_chooser_opens_several_files_with_ctrl_click_and_enter() {
    let mut harness = harness(WINDOW, None, true);
    harness.step();
    let dir = three_files();
    chooser_in(&mut harness, BrowsePurpose::Open, dir.path());
    harness.get_by_label("a.txt    15 B").click();
    harness.step();
    harness
        .get_by_label("c.txt    15 B")
        .click_modifiers(egui::Modifiers::COMMAND);
    harness.step();
    harness.key_press(egui::Key::Enter);
    harness.step();
    assert!(app(&harness).file_browser.is_none(), "Enter did not choose");
    step_until(&mut harness, "the loads", |app| {
        app.documents.pending.is_empty()
    });
    let errors: Vec<String> = app(&harness)
        .notices
        .iter()
        .filter_map(|n| match n {
            Notice::Error(text) => Some(text.clone()),
            Notice::Info(_) => None,
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("a.txt")), "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("c.txt")), "{errors:?}");
    assert!(!errors.iter().any(|e| e.contains("b.txt")), "{errors:?}");

    // Shift-click picks the range.
    chooser_in(&mut harness, BrowsePurpose::Open, dir.path());
    harness.get_by_label("a.txt    15 B").click();
    harness.step();
    harness
        .get_by_label("c.txt    15 B")
        .click_modifiers(egui::Modifiers::SHIFT);
    harness.step();
    let chosen = app(&harness)
        .file_browser
        .as_ref()
        .expect("chooser")
        .chosen();
    let names: Vec<PathBuf> = ["a.txt", "b.txt", "c.txt"]
        .iter()
        .map(|n| dir.path().join(n))
        .collect();
    assert_eq!(chosen, names);
}

#[test]
fn keys_typed_while_the_chooser_is_open_never_move_the_camera() {
    let mut harness = harness(WINDOW, None, true);
    harness.step();
    let dir = three_files();
    chooser_in(&mut harness, BrowsePurpose::Open, dir.path());
    let moved = {
        let document = app_mut(&mut harness)
            .documents
            .shown_snapshot_mut()
            .expect("shown");
        document.camera.rotate([40.0, 10.0]);
        document.camera
    };
    for key in [egui::Key::H, egui::Key::R, egui::Key::F] {
        harness.key_press(key);
        harness.step();
    }
    assert_eq!(
        app(&harness).camera(),
        Some(moved),
        "a key reached the viewport"
    );
    // Closed, the same key works again.
    app_mut(&mut harness).file_browser = None;
    harness.step();
    harness.key_press(egui::Key::H);
    harness.step();
    assert_ne!(app(&harness).camera(), Some(moved));
}

#[test]
fn saving_starts_in_the_working_folder_then_the_last_save_folder_never_the_data_folder() {
    let mut harness = harness(WINDOW, None, true);
    harness.step();
    let data = three_files();
    app_mut(&mut harness).documents.recent = vec![data.path().join("a.txt")];
    app_mut(&mut harness).open_file_browser(BrowsePurpose::SaveScreenshot);
    let cwd = std::env::current_dir().expect("working folder");
    assert_eq!(
        app(&harness).file_browser.as_ref().expect("chooser").dir,
        cwd
    );
    // Opening still starts beside the recent file.
    app_mut(&mut harness).open_file_browser(BrowsePurpose::Open);
    assert_eq!(
        app(&harness).file_browser.as_ref().expect("chooser").dir,
        data.path()
    );
    // A save into another folder: the next save chooser starts there.
    let out = tempfile::tempdir().expect("temp dir");
    std::fs::write(out.path().join("a.txt"), b"not a snapshot\n").expect("write");
    chooser_in(&mut harness, BrowsePurpose::SaveScreenshot, out.path());
    harness.get_by_label("Save").click();
    harness.step();
    assert!(app(&harness).file_browser.is_none());
    step_until(&mut harness, "the screenshot", |app| {
        app.screenshot_job.is_none()
    });
    assert!(out.path().join("haloscope.png").is_file());
    app_mut(&mut harness).open_file_browser(BrowsePurpose::ExportCatalogue);
    assert_eq!(
        app(&harness).file_browser.as_ref().expect("chooser").dir,
        out.path()
    );
}

#[test]
fn a_long_error_is_shown_whole_in_the_status_bar() {
    let mut harness = harness(WINDOW, None, true);
    harness.step();
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join(format!(
        "{}.hdf5",
        "a-rather-long-snapshot-file-name-".repeat(3)
    ));
    app_mut(&mut harness).open_path(&missing);
    step_until(&mut harness, "the failed load", |app| {
        app.documents.pending.is_empty()
    });
    harness.run_ok();
    let Some(Notice::Error(text)) = app(&harness).notices.last().cloned() else {
        panic!("no error notice");
    };
    assert!(text.contains("No such file or directory"), "{text}");
    // One label holds the whole message.
    let whole = format!("Error: {text}");
    let label = harness.get_by_label(&whole);
    let rect = label.rect();
    assert!(
        rect.max.x <= WINDOW.x + 0.5 && rect.min.x >= 0.0,
        "the message runs off the window: {rect:?}"
    );
    assert!(rect.max.y <= WINDOW.y + 0.5, "below the window: {rect:?}");
}

#[test]
fn a_restart_says_which_files_of_the_last_session_are_reloading() {
    // A file of about 170 MB, whose load (a tenth of a second or more) is still under way when
    // the first frame is drawn; a shared snapshot of a few MB had sometimes loaded by then.
    let dir = tempfile::tempdir().expect("temp dir");
    let snapshot = dir.path().join("restart.tbin");
    let demo = haloscope::data::demo::demo_snapshot(4_000_000, 1);
    haloscope::data::tipsy::write(&snapshot, &demo, &Default::default()).expect("write");
    drop(demo);
    let session = Session {
        open_files: vec![snapshot],
        ..Session::default()
    };
    let mut harness = harness(WINDOW, Some(session), false);
    harness.step();
    assert_eq!(app(&harness).documents.pending.len(), 1);
    harness.get_by_label("Reloading 1 file of the last session…");
    // The file's line gains its loading stage ("restart.tbin (stage)") once the loader has
    // reported one, which may be before this first frame (the status bar's progress reads
    // "restart.tbin: stage").
    let file_line = harness.query_by_label("restart.tbin").is_some()
        || harness.query_by_label_contains("restart.tbin (").is_some();
    assert!(file_line, "no line names the file being reloaded");
}

#[test]
fn a_small_window_keeps_the_viewport_and_the_side_panel_keeps_its_width() {
    let small = egui::vec2(500.0, 350.0);
    let mut narrow = harness(small, None, true);
    narrow.step();
    narrow.run_ok();
    let viewport = app(&narrow).viewport.rect();
    assert!(
        viewport.width() >= 0.5 * small.x,
        "the side panel leaves the viewport {viewport:?}"
    );

    // A normal window: the two-point counts table, wider than the panel, keeps its width.
    let mut wide = harness(WINDOW, None, true);
    {
        let app = app_mut(&mut wide);
        app.documents
            .insert_events("events", haloscope::data::demo::demo_events(2_000, 3));
        app.panels.file = false;
        app.panels.render = false;
        app.panels.events = true;
        app.twopoint.trials = 2;
    }
    wide.run_ok();
    let before = app(&wide).viewport.rect().min.x;
    wide.get_by_label("Start").click();
    step_until(&mut wide, "2 trials", |app| {
        !app.twopoint.is_running()
            && app
                .twopoint
                .state
                .as_ref()
                .is_some_and(|s| s.analysis.trials() == 2)
    });
    app_mut(&mut wide).central = haloscope::app::session::CentralView::Viewport;
    wide.run_ok();
    assert_counts_shown(&wide);
    let after = app(&wide).viewport.rect().min.x;
    assert_eq!(before, after, "the side panel's width jumped");
}

/// The two-point counts table is on screen.
fn assert_counts_shown(harness: &Harness<'_, Option<HaloscopeApp>>) {
    harness.get_by_label("Observed pairs (cumulative):");
}
