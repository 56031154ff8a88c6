//! The window renders the demo through wgpu on the device egui draws with (lavapipe here and in
//! CI): egui_kittest's render state is made with the renderer's feature request and shared as
//! the window shares its own; the frame must stay on the device, in the texture egui draws, and
//! reach the screen with the back-end and adapter named. (The τ of that renderer against the
//! CPU's is tests/render_wgpu.rs's job.)

#[path = "common/app_harness.rs"]
mod app_harness;
mod common;
use app_harness::*;

use eframe::egui_wgpu;
use egui_kittest::Harness;
use egui_kittest::wgpu::{WgpuTestRenderer, create_render_state, default_wgpu_setup};
use haloscope::app::camera::OrbitCamera;
use haloscope::app::documents::{bounds_of, fill_missing_smoothing};
use haloscope::app::splotch::SplotchRenderer;
use haloscope::app::viewport::pick::ShownImage;
use haloscope::app::viewport::wgpu_view;
use haloscope::app::{HaloscopeApp, Pixels, ViewRequest, ViewStyle, ViewportRenderer, splotch};
use haloscope::backend::{Backend, BackendChoice};
use haloscope::jobs::Progress;
use std::sync::Arc;

#[test]
fn the_demo_renders_through_wgpu_on_the_windows_device() {
    let mut config = egui_wgpu::WgpuConfiguration {
        wgpu_setup: default_wgpu_setup(),
        ..Default::default()
    };
    wgpu_view::request_float_blending(&mut config);
    let state = create_render_state(config.wgpu_setup, egui_wgpu::RendererOptions::PREDICTABLE);
    // As the window does at start-up (one test in this binary: the device is process-wide).
    wgpu_view::share_render_state(&state);
    let context = wgpu_view::shared_context().expect("the window's device renders particles");
    let backend = Backend::wgpu(context, BackendChoice::Wgpu);
    let factory = splotch::factory_on(backend.clone());
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
    // The frame stayed on the device, shown as the renderer's own texture.
    let texture_id = app(&harness).viewport.texture_id().expect("a texture");
    assert!(
        matches!(texture_id, egui::TextureId::User(_)),
        "{texture_id:?}"
    );
    let image = app(&harness)
        .viewport
        .shown_image()
        .cloned()
        .expect("image");
    let Pixels::Device(frame) = &*image.pixels else {
        panic!("the wgpu frame came back to the host");
    };
    let pixels = frame
        .read_rgba((0, 0), (image.width_px, image.height_px))
        .expect("read back");
    assert_eq!(
        pixels.len(),
        (image.width_px * image.height_px * 4) as usize
    );
    let lit = pixels.chunks(4).filter(|p| p[0] > 16).count();
    assert!(
        lit > pixels.len() / 400,
        "the wgpu frame is nearly black: {lit} lit pixels"
    );
    // And the window draws it: where the frame is lit, the viewport's part of the screen is
    // that frame, pixel for pixel (one texel a pixel; the overlays cover some: 88 % were
    // uncovered on lavapipe).
    let screen = harness.render().expect("the window renders");
    let rect = app(&harness).viewport.rect();
    let (x0, y0) = (rect.min.x.round() as u32, rect.min.y.round() as u32);
    let mut same = 0;
    for y in 0..image.height_px {
        for x in 0..image.width_px {
            let i = ((y * image.width_px + x) * 4) as usize;
            let shown = screen.get_pixel(x0 + x, y0 + y);
            if pixels[i] > 16 && (0..3).all(|c| shown[c].abs_diff(pixels[i + c]) <= 2) {
                same += 1;
            }
        }
    }
    eprintln!("{same} of the frame's {lit} lit pixels are on screen");
    assert!(
        same > lit * 3 / 4,
        "only {same} of the frame's {lit} lit pixels are on screen"
    );
    // As the window does once it closes: the app's workers end before the process does.
    drop(harness);
    haloscope::jobs::wait_for_workers(std::time::Duration::from_secs(10));

    frames_left_on_the_device_equal_the_frames_read_back(backend);
}

/// On the window's device the viewport's frame stays in a texture: it holds the bytes of the
/// same frame rendered to host memory, a texture on screen is never drawn into again, and the
/// brightest pixel near a click is the same found on the device or in host memory.
fn frames_left_on_the_device_equal_the_frames_read_back(backend: Backend) {
    let mut renderer = SplotchRenderer::with_backend(backend).expect("renderer");
    let mut snapshot = haloscope::data::demo::demo_snapshot(20_000, 3);
    fill_missing_smoothing(&mut snapshot, &Progress::none()).expect("kNN");
    let (lo, hi) = bounds_of(&snapshot).expect("bounds");
    let mut request = ViewRequest {
        snapshot: Arc::new(snapshot),
        camera: OrbitCamera::home(lo, hi),
        style: ViewStyle::default(),
        // Rows of 4 × 201 bytes: the texture copy pads them to 256-byte multiples.
        width_px: 201,
        height_px: 133,
    };
    let first = renderer
        .render_for_window(&request, &Progress::none())
        .expect("frame on the device");
    let host = renderer
        .render(&request, &Progress::none())
        .expect("frame in host memory");
    let (Pixels::Device(frame), Some(expected)) = (&first.pixels, host.pixels.host()) else {
        panic!("expected a device frame and a host frame");
    };
    let read = frame
        .read_rgba((0, 0), (frame.width(), frame.height()))
        .expect("read back");
    assert_eq!(
        read, expected,
        "the device frame differs from the host frame"
    );
    // As screenshots and movie frames would take it, were a renderer to leave it on the device.
    let mut taken = first.clone();
    assert_eq!(taken.host_rgba().expect("read back").as_slice(), expected);
    assert!(taken.pixels.host().is_some());
    // A second frame while the first is held goes into another texture.
    request.camera.rotate([30.0, 0.0]);
    let second = renderer
        .render_for_window(&request, &Progress::none())
        .expect("second frame");
    let Pixels::Device(second_frame) = &second.pixels else {
        panic!("the second frame came back to the host");
    };
    assert_ne!(
        read,
        second_frame.read_rgba((0, 0), (201, 133)).expect("read")
    );
    assert_eq!(
        frame.read_rgba((0, 0), (201, 133)).expect("read"),
        read,
        "the texture on screen was drawn into"
    );
    // A frame made on the CPU goes into a texture on the window's device too, unchanged.
    let mut cpu = SplotchRenderer::new();
    let on_window = cpu
        .render_for_window(&request, &Progress::none())
        .expect("CPU frame for the window");
    let in_host = cpu.render(&request, &Progress::none()).expect("CPU frame");
    let Pixels::Device(cpu_frame) = &on_window.pixels else {
        panic!("the CPU frame stayed in host memory");
    };
    assert_eq!(
        Some(&cpu_frame.read_rgba((0, 0), (201, 133)).expect("read")[..]),
        in_host.pixels.host()
    );
    // Picking: the brightest pixel near a point, on the device and in host memory.
    let on_device = ShownImage {
        width_px: 201,
        height_px: 133,
        pixels: Arc::new(first.pixels.clone()),
    };
    let in_host = ShownImage {
        pixels: Arc::new(host.pixels.clone()),
        ..on_device.clone()
    };
    for (x, y) in [(100.5, 66.5), (3.0, 4.0), (199.0, 130.0), (60.2, 20.7)] {
        let found = on_device.brightest_near(x, y, 12.0).expect("read");
        assert_eq!(found, in_host.brightest_near(x, y, 12.0).expect("host"));
        assert!(found.is_some(), "nothing found near ({x}, {y})");
    }
}
