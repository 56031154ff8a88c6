//! The real application with the real Splotch renderer, driven through its panels with
//! egui_kittest on a software wgpu adapter (lavapipe): demo render, render controls, FoF from
//! the Halos panel with its overlay, the two-point panel against the library, screenshots.
//!
//! Snapshot images live in tests/snapshots; refresh with UPDATE_SNAPSHOTS=1.

#[path = "common/app_harness.rs"]
mod app_harness;
mod common;
use app_harness::*;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use haloscope::app::overlay::OverlayOptions;
use haloscope::app::progressive::Quality;
use haloscope::app::screenshot::render_screenshot;
use haloscope::app::splotch::render_camera;
use haloscope::app::viewport::OverlayInput;
use haloscope::app::{HaloscopeApp, ViewRequest, default_renderer_factory};
use haloscope::backend::{Backend, BackendChoice};
use haloscope::data::SpeciesKind;
use haloscope::halo::{FofParams, LinkingLength, fof_snapshot};
use haloscope::jobs::Progress;
use haloscope::twopoint::{TwoPointConfig, count_pairs, prepare};

/// Window size of every test.
const WINDOW: egui::Vec2 = egui::vec2(1000.0, 640.0);

fn harness(files: Vec<std::path::PathBuf>) -> Harness<'static, Option<HaloscopeApp>> {
    Harness::builder().with_size(WINDOW).wgpu().build_ui_state(
        move |ui, state: &mut Option<HaloscopeApp>| {
            let app = state.get_or_insert_with(|| {
                HaloscopeApp::new(ui.ctx(), None, files.clone(), default_renderer_factory())
            });
            app.ui(ui);
        },
        None,
    )
}

fn full_render_shown(app: &HaloscopeApp) -> bool {
    !app.viewport.is_rendering()
        && app
            .viewport
            .shown()
            .is_some_and(|s| s.quality == Quality::Full)
}

fn mask_changing_text(harness: &mut Harness<'_, Option<HaloscopeApp>>) {
    // Status bar (frame and render times) and the viewport's corner label (render time).
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, WINDOW.y - 30.0),
        WINDOW.to_pos2(),
    ));
    let viewport = app(harness).viewport.rect();
    harness.mask(egui::Rect::from_min_size(
        viewport.min,
        egui::vec2(viewport.width(), 24.0),
    ));
}

/// Left edge of the viewport (points): where the side panel ends.
fn viewport_left(harness: &Harness<'_, Option<HaloscopeApp>>) -> f32 {
    app(harness).viewport.rect().left()
}

#[test]
fn first_frame_renders_the_demo_and_render_controls_reach_the_renderer() {
    let mut harness = harness(Vec::new());
    step_until(&mut harness, "the demo render", |app| {
        app.documents.pending.is_empty() && full_render_shown(app)
    });
    let shown = app(&harness).viewport.shown().cloned().expect("shown");
    assert_eq!(shown.backend, "cpu");
    let (w, h, rgba) = app(&harness).viewport.shown_pixels().expect("pixels");
    assert_eq!([w, h], shown.size_px);
    let lit = rgba
        .chunks(4)
        .filter(|p| p[0] as u32 + p[1] as u32 + p[2] as u32 > 60)
        .count();
    assert!(
        lit > (w * h / 50) as usize,
        "only {lit} lit pixels of {}",
        w * h
    );
    let legend = app(&harness)
        .viewport
        .legend()
        .cloned()
        .expect("colour bar");
    assert_eq!(legend.label, "gas log10 Density [mean density]");
    harness.run_ok();
    mask_changing_text(&mut harness);
    harness.snapshot("app_demo_render");

    // Switching gas off in the Render panel re-renders without it: no field colours the image.
    harness.get_by_label("gas").click();
    step_until(&mut harness, "a render without gas", |app| {
        full_render_shown(app) && app.viewport.legend().is_none()
    });
    assert!(
        !app(&harness)
            .style
            .species(SpeciesKind::Gas)
            .expect("gas")
            .enabled
    );
}

#[test]
fn fof_from_the_halos_panel_circles_every_halo_in_view_and_a_click_flies_there() {
    let path = common::shared_data("snapshots/lambs.00200_subsamp_30K");
    let mut harness = harness(vec![path.clone()]);
    step_until(&mut harness, "lambs to load", |app| {
        app.documents.pending.is_empty() && app.documents.shown_snapshot().is_some()
    });
    {
        let app = app_mut(&mut harness);
        app.panels.file = false;
        app.panels.render = false;
        app.panels.halos = true;
    }
    harness.run_ok();
    let panel_right = viewport_left(&harness);
    // The long file name ("lambs.00200_subsamp_30K (30000 particles)") is cut to the panel's
    // width: opening the File section does not widen the panel.
    app_mut(&mut harness).panels.file = true;
    harness.run_ok();
    assert_eq!(viewport_left(&harness), panel_right);
    // Nor does closing every section narrow it.
    {
        let panels = &mut app_mut(&mut harness).panels;
        (panels.file, panels.halos, panels.events, panels.movie) = (false, false, false, false);
    }
    harness.run_ok();
    assert_eq!(viewport_left(&harness), panel_right);
    {
        let panels = &mut app_mut(&mut harness).panels;
        (panels.file, panels.halos) = (true, true);
    }
    harness.run_ok();
    // lambs is a tipsy file (no box recorded) whose particles fill the unit box: the panel
    // proposes the periodic box and says so.
    assert!(app(&harness).halos.periodic);
    assert_eq!(app(&harness).halos.box_size, 1.0);
    harness.get_by_label(
        "periodic box of side 1 assumed: particles fill the unit box (untick for open boundaries)",
    );
    harness.get_by_label("Find halos").click();
    step_until(&mut harness, "friends-of-friends", |app| {
        app.halos.running.is_none() && app.halos.catalogue.is_some()
    });
    harness.run_ok();
    // The table (wider than the panel) scrolls inside it: the viewport does not move.
    assert_eq!(viewport_left(&harness), panel_right);
    let app_state = app(&harness);
    let document = app_state.documents.shown_snapshot().expect("shown");
    let catalogue = app_state
        .halos
        .catalogue_of(document.id)
        .expect("catalogue");
    // The same run through the library: same halos.
    let params = FofParams {
        linking_length: LinkingLength::Relative(0.2),
        min_members: 20,
        box_size: Some(1.0),
        ..FofParams::default()
    };
    let direct = fof_snapshot(
        &document.snapshot,
        &[SpeciesKind::Dark],
        &params,
        &Backend::resolve(BackendChoice::Auto).expect("auto"),
        &Progress::none(),
    )
    .expect("fof");
    assert_eq!(catalogue.result.halos, direct.halos);
    assert!(!direct.halos.is_empty());
    // Halos in view, by the renderer's projection: in front of the camera, centre on screen.
    let rect = app_state.viewport.rect();
    let camera = render_camera(&document.camera, rect.width() as u32, rect.height() as u32);
    let basis = camera.basis().expect("camera");
    let tan_half_x = (0.5 * camera.fov_deg).to_radians().tan();
    let scale = 0.5 * f64::from(rect.width()) / tan_half_x;
    let in_view = direct
        .halos
        .iter()
        .filter(|h| {
            let q: Vec<f64> = (0..3).map(|a| h.com[a] - camera.lookat[a]).collect();
            let along = |v: [f64; 3]| q[0] * v[0] + q[1] * v[1] + q[2] * v[2];
            let depth = basis.distance - along(basis.z_hat);
            let x = f64::from(rect.center().x) + scale / depth * along(basis.x_hat);
            let y = f64::from(rect.center().y) - scale / depth * along(basis.y_hat);
            depth > 0.0 && rect.contains(egui::pos2(x as f32, y as f32))
        })
        .count();
    let placed = app_state.viewport.overlay().placed.clone();
    assert!(in_view > 0);
    assert_eq!(placed.len(), in_view);
    harness.get_by_label_contains("halos of >= 20 members");
    // What the numbers depend on, next to them.
    harness.get_by_label("linking length from: mean separation of all 30000 particles");
    harness.get_by_label("periodic box of side 1 from -0.5 on every axis");

    // Click the biggest halo's circle: it is selected and the camera glides to it.
    let target = placed
        .iter()
        .find(|p| p.index == 0)
        .copied()
        .expect("halo 0 in view");
    harness.hover_at(target.centre);
    harness.step();
    harness.drag_at(target.centre);
    harness.step();
    harness.drop_at(target.centre);
    step_until(&mut harness, "the glide to halo 1", |app| {
        app.halos.selected.is_some() && app.glide.is_none()
    });
    let selected = app(&harness).halos.selected.expect("selected");
    let com = direct.halos[selected].com;
    let look_at = app(&harness).camera().expect("camera").look_at_world;
    for axis in 0..3 {
        assert!((f64::from(look_at[axis]) - com[axis]).abs() < 1e-5);
    }
}

#[test]
fn two_point_panel_shows_the_library_counts_and_live_plots() {
    let mut harness = harness(Vec::new());
    step_until(&mut harness, "the demo data", |app| {
        app.documents.pending.is_empty()
    });
    {
        let app = app_mut(&mut harness);
        app.panels.file = false;
        app.panels.render = false;
        app.panels.events = true;
        app.twopoint.trials = 8;
    }
    harness.run_ok();
    harness.get_by_label("Start").click();
    step_until(&mut harness, "8 trials", |app| {
        !app.twopoint.is_running()
            && app
                .twopoint
                .state
                .as_ref()
                .is_some_and(|s| s.analysis.trials() == 8)
    });
    harness.run_ok();
    let events = app(&harness)
        .documents
        .shown_events()
        .expect("events")
        .events
        .clone();
    let prepared = prepare(&events, &TwoPointConfig::default()).expect("prepare");
    let counts = count_pairs(&prepared, None).expect("counts");
    let state = app(&harness).twopoint.state.clone().expect("state");
    assert_eq!(state.analysis.observed, counts);
    // Every listed count is on screen.
    for cut in 0..counts.n_cuts {
        for bin in [0, 5, 19] {
            let text = counts.get(cut, bin).to_string();
            assert!(
                harness.get_all_by_label(&text).next().is_some(),
                "count {text} (cut {cut}, bin {bin}) not shown"
            );
        }
    }
    assert_eq!(
        app(&harness).central,
        haloscope::app::session::CentralView::TwoPoint,
        "starting shows the plots"
    );
    assert!(
        harness
            .get_all_by_label_contains("8 trials")
            .next()
            .is_some()
    );
    // The demo's coordinates are continuous: the panel says so and offers no grid choice.
    assert!(
        harness
            .get_all_by_label("coordinates on no grid (0.01° to 1°): RA scrambled on the continuum")
            .next()
            .is_some()
    );
    assert_eq!(state.scramble, haloscope::twopoint::Scramble::Continuous);
    // Status bar, and the summary line with trials/s.
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, WINDOW.y - 30.0),
        WINDOW.to_pos2(),
    ));
    // The summary lines at the top of the view change from run to run (trials/s, and the line
    // under it, the best bin's significance, was seen drawn differently in one of two identical
    // runs); that text is checked through its label elsewhere.
    let central = app(&harness).viewport.rect();
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(central.left(), 0.0),
        egui::pos2(WINDOW.x, 94.0),
    ));
    harness.snapshot("app_two_point");
}

#[test]
fn screenshots_render_off_screen_at_any_size_with_or_without_overlays() {
    let mut snapshot = haloscope::data::demo::demo_snapshot(20_000, 3);
    haloscope::app::documents::fill_missing_smoothing(&mut snapshot, &Progress::none())
        .expect("kNN");
    let bounds = haloscope::app::documents::bounds_of(&snapshot).expect("bounds");
    let request = ViewRequest {
        snapshot: std::sync::Arc::new(snapshot),
        camera: haloscope::app::camera::OrbitCamera::home(bounds.0, bounds.1),
        style: haloscope::app::ViewStyle::default(),
        width_px: 640,
        height_px: 360,
    };
    let factory = default_renderer_factory();
    let plain = render_screenshot(&factory, &request, None, &Progress::none()).expect("plain");
    let overlay = OverlayInput {
        halos: Vec::new(),
        selected: None,
        options: Some(OverlayOptions {
            halos: true,
            labels: true,
            color_bar: true,
            scale_bar: true,
        }),
    };
    let marked =
        render_screenshot(&factory, &request, Some(&overlay), &Progress::none()).expect("marked");
    assert_eq!((plain.width_px, plain.height_px), (640, 360));
    let (plain, marked) = (
        plain.pixels.host().expect("host pixels"),
        marked.pixels.host().expect("host pixels"),
    );
    assert_eq!(plain.len(), marked.len());
    let changed: Vec<usize> = (0..plain.len() / 4)
        .filter(|&i| plain[4 * i..4 * i + 3] != marked[4 * i..4 * i + 3])
        .collect();
    assert!(
        changed.len() > 500,
        "overlay changed only {} pixels",
        changed.len()
    );
    // Bars sit at the right edge (colour bar) and bottom right (scale bar), nowhere left.
    assert!(
        changed.iter().all(|&i| (i % 640) > 320),
        "overlay drawn on the left half"
    );
}

/// Events uniform on the sky (a fixed LCG) plus `clustered` events within 0.1° of RA 100°,
/// Dec 20°, written as a whitespace table in degrees.
fn write_events_with_a_source(path: &std::path::Path, uniform: usize, clustered: usize) {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut unit = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut text = String::from("RA Dec logE\n");
    for _ in 0..uniform {
        let ra = 360.0 * unit();
        let dec = (2.0 * unit() - 1.0).asin().to_degrees();
        text += &format!("{ra:.6} {dec:.6} {:.4}\n", 2.0 + 4.0 * unit());
    }
    for _ in 0..clustered {
        let (ra, dec) = (100.0 + 0.1 * unit(), 20.0 + 0.1 * unit());
        text += &format!("{ra:.6} {dec:.6} {:.4}\n", 2.0 + 4.0 * unit());
    }
    std::fs::write(path, text).expect("write events");
}

#[test]
fn two_point_header_map_and_histogram_say_the_same_significance() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("source.txt");
    write_events_with_a_source(&path, 1_500, 60);
    let mut harness = harness(vec![path]);
    step_until(&mut harness, "the events to load", |app| {
        app.documents.pending.is_empty()
            && app
                .documents
                .shown_events()
                .is_some_and(|d| d.events.len() == 1_560)
    });
    {
        let app = app_mut(&mut harness);
        app.panels.file = false;
        app.panels.render = false;
        app.panels.events = true;
        app.twopoint.trials = 8;
    }
    harness.run_ok();
    harness.get_by_label("Start").click();
    step_until(&mut harness, "8 trials", |app| {
        !app.twopoint.is_running()
            && app
                .twopoint
                .state
                .as_ref()
                .is_some_and(|s| s.analysis.trials() == 8)
    });
    let state = app(&harness).twopoint.state.clone().expect("state");
    let (cut, bin) = state.summary.most_significant().expect("a best bin");
    let text = state.summary.significance(cut, bin).text();
    // The source's pairs lie within 0.15° of each other: no scramble comes close.
    assert_eq!((cut, bin), (0, 0));
    assert!(
        text.starts_with("beyond all 8 trials (p < 1.111e-1"),
        "{text}"
    );
    {
        let app = app_mut(&mut harness);
        app.twopoint.chosen_cut = cut;
        app.twopoint.chosen_bin = bin;
    }
    harness.run_ok();
    let place = "all <= 0.25 deg";
    let header = format!("best bin: {place}, {text}");
    assert!(
        harness.get_all_by_label(&header).next().is_some(),
        "header: {header}"
    );
    let stats = state.summary.get(cut, bin);
    let cell = format!(
        "{place}: observed {}, background {:.1}, {text}",
        stats.observed, stats.background_mean
    );
    let map_label = format!("significance map, chosen {cell}");
    // Hovering the top-left cell (past the 52-point cut labels) gives the same words.
    let corner = harness.get_by_label(&map_label).rect().min + egui::vec2(56.0, 4.0);
    harness.hover_at(corner);
    harness.run_ok();
    assert!(
        harness.get_all_by_label(&cell).next().is_some(),
        "map hover: {cell}"
    );
    let caption = format!("Background of all within 0.25 deg: {text} (click the map to choose)");
    assert!(
        harness.get_all_by_label(&caption).next().is_some(),
        "caption: {caption}"
    );
}
