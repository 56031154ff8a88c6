//! The window renders the demo through wgpu on the device egui draws with (lavapipe here and in
//! CI): egui_kittest's render state is made with the renderer's feature request, handed to the
//! Splotch renderer; the frame must reach the screen with the back-end and adapter named.
//! (The τ of that renderer against the CPU's is tests/render_wgpu.rs's job.)

#[path = "common/app_harness.rs"]
mod app_harness;
mod common;
use app_harness::*;

use eframe::egui_wgpu;
use egui_kittest::Harness;
use egui_kittest::wgpu::{WgpuTestRenderer, create_render_state, default_wgpu_setup};
use haloscope::app::viewport::wgpu_view;
use haloscope::app::{HaloscopeApp, splotch};
use haloscope::backend::{Backend, BackendChoice};

#[test]
fn the_demo_renders_through_wgpu_on_the_windows_device() {
    let mut config = egui_wgpu::WgpuConfiguration {
        wgpu_setup: default_wgpu_setup(),
        ..Default::default()
    };
    wgpu_view::request_float_blending(&mut config);
    let state = create_render_state(config.wgpu_setup, egui_wgpu::RendererOptions::PREDICTABLE);
    let context = wgpu_view::context_of(&state).expect("the window's device renders particles");
    let factory = splotch::factory_on(Backend::wgpu(context, BackendChoice::Wgpu));
    let mut harness = Harness::builder()
        .with_size(egui::vec2(640.0, 400.0))
        .renderer(WgpuTestRenderer::from_render_state(state))
        .build_ui_state(
            move |ui, app: &mut Option<HaloscopeApp>| {
                app.get_or_insert_with(|| {
                    HaloscopeApp::new(ui.ctx(), None, Vec::new(), factory.clone())
                })
                .ui(ui);
            },
            None,
        );
    step_until(&mut harness, "the demo data", |app| {
        app.documents.pending.is_empty()
    });
    step_until(&mut harness, "a full render on screen", |app| {
        app.viewport
            .shown()
            .is_some_and(|s| s.quality == haloscope::app::progressive::Quality::Full)
    });
    let shown = app(&harness).viewport.shown().cloned().expect("shown");
    assert!(shown.backend.starts_with("wgpu on "), "{}", shown.backend);
    assert!(app(&harness).viewport.texture_id().is_some());
    let (w, h, pixels) = app(&harness).viewport.shown_pixels().expect("pixels");
    assert_eq!(pixels.len(), (w * h * 4) as usize);
    let lit = pixels.chunks(4).filter(|p| p[0] > 16).count();
    assert!(
        lit > pixels.len() / 400,
        "the wgpu frame is nearly black: {lit} lit pixels"
    );
    // As the window does once it closes: the app's workers end before the process does.
    drop(harness);
    haloscope::jobs::wait_for_workers(std::time::Duration::from_secs(10));
}
