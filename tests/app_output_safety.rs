//! The window never saves over a file it has open: a screenshot or catalogue export onto an
//! open snapshot is refused with a clear error in the status bar, and the file is left intact.

#[path = "common/app_harness.rs"]
mod app_harness;
mod common;
use app_harness::*;

use egui_kittest::Harness;
use haloscope::app::HaloscopeApp;
use haloscope::app::documents::Notice;
use std::time::Duration;

#[test]
fn saving_over_an_open_snapshot_is_refused_in_the_status_bar() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let snapshot = sub.join("snap");
    let bytes = std::fs::read(common::shared_data("snapshots/run581.20000")).expect("read");
    std::fs::write(&snapshot, &bytes).expect("copy");
    let files = vec![snapshot.clone()];
    let factory = gradient_factory(Duration::ZERO);
    let mut harness = Harness::builder()
        .with_size(egui::vec2(900.0, 600.0))
        .build_ui_state(
            move |ui, state: &mut Option<HaloscopeApp>| {
                let app = state.get_or_insert_with(|| {
                    HaloscopeApp::new(ui.ctx(), None, files.clone(), factory.clone())
                });
                app.ui(ui);
            },
            None,
        );
    step_until(&mut harness, "the snapshot loaded", |app| {
        app.documents.pending.is_empty() && !app.documents.snapshots.is_empty()
    });
    let dotted = dir.path().join("sub/../sub/snap");
    app_mut(&mut harness).save_screenshot_to(dotted.clone());
    app_mut(&mut harness).export_catalogue_to(snapshot.clone());
    for _ in 0..20 {
        harness.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    let errors: Vec<&String> = app(&harness)
        .notices
        .iter()
        .filter_map(|notice| match notice {
            Notice::Error(text) => Some(text),
            Notice::Info(_) => None,
        })
        .collect();
    let expected_screenshot = format!(
        "screenshot {} is the same file as the input open file {}",
        dotted.display(),
        snapshot.display()
    );
    assert!(
        errors.iter().any(|e| e.starts_with(&expected_screenshot)),
        "{errors:?}"
    );
    let expected_catalogue = format!("catalogue {} is the same file", snapshot.display());
    assert!(
        errors.iter().any(|e| e.starts_with(&expected_catalogue)),
        "{errors:?}"
    );
    assert_eq!(
        std::fs::read(&snapshot).expect("read"),
        bytes,
        "snapshot intact"
    );
}
