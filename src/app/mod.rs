//! The desktop application (eframe/egui with the wgpu renderer).
//!
//! Thin: it calls the library and never the other way round. Everything long (loading,
//! rendering, screenshots) runs on workers from [`crate::jobs`]; the UI thread only drains their
//! channels with `try_recv` and draws.

mod closing;
mod dialogs;
pub mod document_style;
pub mod files;
pub mod halos;
pub mod haloscope_app;
mod input;
mod loading;
mod menu;
pub mod movie;
pub mod session;
mod side_panel;
pub mod startup_log;
pub mod twopoint;
pub mod viewport;

// The paths the tests and the GUI bench use.
pub use files::{documents, file_browser};
pub use viewport::{camera, overlay, progressive, screenshot, splotch};

pub use haloscope_app::HaloscopeApp;
pub use splotch::default_renderer_factory;
pub use viewport::viewport_renderer::{
    Legend, Pixels, RenderedImage, RendererFactory, ViewRequest, ViewStyle, ViewportRenderer,
};

use std::path::PathBuf;

/// Opens the application window with `files` (the demo data when empty).
pub fn run(files: Vec<PathBuf>) -> anyhow::Result<()> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("Haloscope")
            .with_app_id("haloscope")
            .with_inner_size([1280.0, 800.0])
            .with_min_inner_size([640.0, 400.0])
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Wgpu,
        ..Default::default()
    };
    let mut options = options;
    viewport::wgpu_view::request_float_blending(&mut options.wgpu_options);
    let closed = eframe::run_native(
        "Haloscope",
        options,
        Box::new(move |cc| {
            if let Some(state) = &cc.wgpu_render_state {
                viewport::wgpu_view::share_render_state(state);
            }
            let session = cc
                .storage
                .and_then(|storage| eframe::get_value(storage, session::STORAGE_KEY));
            let mut app =
                HaloscopeApp::new(&cc.egui_ctx, session, files, default_renderer_factory());
            // Used by the screenshots script under Xvfb: save the window, then quit.
            if let Some(path) = std::env::var_os("HALOSCOPE_CAPTURE_WINDOW") {
                app.capture_window_then_quit(PathBuf::from(path));
            }
            Ok(Box::new(app))
        }),
    );
    // The window and its app are gone: let their renders and counts leave the GPU drivers
    // before the process exits and the drivers clean up (bounded: a long job still running is
    // left to the exit).
    crate::jobs::wait_for_workers(std::time::Duration::from_secs(2));
    closed.map_err(|err| anyhow::anyhow!("opening the window: {err}"))
}

/// The window's back-end: `auto`, resolved once per process (the first call probes the GPU,
/// never panicking without a driver, and logs the fallback once).
pub fn window_backend() -> crate::backend::Backend {
    static BACKEND: std::sync::OnceLock<crate::backend::Backend> = std::sync::OnceLock::new();
    BACKEND
        .get_or_init(|| {
            use crate::backend::{Backend, BackendChoice};
            Backend::resolve(BackendChoice::Auto).unwrap_or_else(|_| Backend::cpu())
        })
        .clone()
}
