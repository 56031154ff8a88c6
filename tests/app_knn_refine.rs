//! A snapshot without smoothing lengths opens in the window at once, drawn with a provisional
//! length per species, and is refined when the k-th-neighbour lengths arrive: driven with
//! egui_kittest on a software wgpu adapter (lavapipe), from a real tipsy file of dark matter.

#[path = "common/app_harness.rs"]
mod app_harness;
use app_harness::*;
use egui_kittest::Harness;
use haloscope::app::HaloscopeApp;
use haloscope::app::documents::Notice;
use haloscope::app::session::Session;
use haloscope::data::tipsy::{TipsyWriteOptions, write as write_tipsy};
use haloscope::data::{LoadOptions, SpeciesKind, load_snapshot};
use haloscope::jobs::Progress;
use haloscope::render::smoothing::{DEFAULT_KNN, knn_smoothing_lengths};
use haloscope::render::synthetic::clustered_snapshot;
use std::time::Duration;

/// Where the window's refinement computes the lengths: on its CUDA device when it has one, on
/// its wgpu device (a hardware adapter, never lavapipe) where that has f64, else on the CPU.
fn window_knn_device() -> &'static str {
    let backend = haloscope::app::window_backend();
    if backend.device().is_some() {
        "CUDA"
    } else if backend
        .wgpu_context()
        .is_some_and(|c| c.device.features().contains(wgpu::Features::SHADER_F64))
    {
        "GPU (wgpu)"
    } else {
        "CPU"
    }
}

#[test]
fn a_snapshot_without_lengths_shows_at_once_and_refines_when_they_arrive() {
    refines_on(window_knn_device());
}

/// On a machine with an NVIDIA GPU the window's refinement runs the CUDA kNN, and its lengths
/// are the CPU search's, bit for bit.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn the_window_refines_on_the_cuda_device() {
    assert_eq!(window_knn_device(), "CUDA", "no CUDA device for the window");
    refines_on("CUDA");
}

/// Opens a tipsy file of dark matter in the window, checks the provisional lengths, waits for
/// the refinement and checks that its lengths equal the CPU search's and that the status bar
/// says they were computed `on` "CUDA" or "CPU".
fn refines_on(on: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("dark.tbin");
    // Dark particles: tipsy stores no smoothing lengths for them.
    let mut snapshot = clustered_snapshot(30_000, 5);
    snapshot.species[0].smoothing_lengths = None;
    snapshot.species[0].fields.clear();
    write_tipsy(&path, &snapshot, &TipsyWriteOptions::default()).expect("tipsy written");
    let read = load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("read");
    let dark = read.species(SpeciesKind::Dark).expect("dark");
    assert!(dark.smoothing_lengths.is_none(), "the file has no lengths");
    let want =
        knn_smoothing_lengths(&dark.positions, DEFAULT_KNN, None, &Progress::none()).expect("kNN");

    let mut harness: Harness<'static, Option<HaloscopeApp>> = Harness::builder()
        .with_size(egui::vec2(800.0, 500.0))
        .wgpu()
        .build_ui_state(
            |ui, state: &mut Option<HaloscopeApp>| {
                let app = state.get_or_insert_with(|| {
                    HaloscopeApp::empty(
                        ui.ctx(),
                        &Session::default(),
                        gradient_factory(Duration::ZERO),
                    )
                });
                app.ui(ui);
            },
            None,
        );
    harness.step();
    app_mut(&mut harness).documents.open(&path);
    step_until(&mut harness, "the snapshot to open", |app| {
        !app.documents.snapshots.is_empty()
    });
    // The frame that opened it started the refinement: the lengths shown are provisional, one
    // value for every particle, and positive (the particles are drawn).
    let app = app(&harness);
    let document = &app.documents.snapshots[0];
    let (id, camera) = (document.id, document.camera);
    let shown = document.snapshot.species(SpeciesKind::Dark).expect("dark");
    let provisional = shown
        .smoothing_lengths
        .as_ref()
        .expect("provisional lengths");
    assert_eq!(provisional.len(), want.len());
    assert!(provisional[0] > 0.0 && provisional[0].is_finite());
    assert!(provisional.iter().all(|h| *h == provisional[0]));
    assert_ne!(provisional, &want);
    assert!(app.documents.refining.is_refining(id));
    assert_eq!(app.documents.shown_snapshot().map(|d| d.id), Some(id));

    step_until(&mut harness, "the smoothing lengths", |app| {
        !app.documents.refining.is_refining(id)
    });
    let app = app_harness::app(&harness);
    let document = &app.documents.snapshots[0];
    assert_eq!(document.id, id, "the same document");
    assert_eq!(document.camera, camera, "the view stays where it was");
    let refined = document.snapshot.species(SpeciesKind::Dark).expect("dark");
    assert_eq!(refined.smoothing_lengths.as_ref(), Some(&want));
    assert_eq!(refined.positions, dark.positions);
    let ready = format!("smoothing lengths ready (kNN on the {on})");
    assert!(
        app.notices
            .iter()
            .any(|n| matches!(n, Notice::Info(t) if t.ends_with(&ready))),
        "the status bar says the lengths arrived: {:?}",
        app.notices
    );
}
