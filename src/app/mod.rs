//! The desktop application (eframe/egui with the wgpu renderer).
//!
//! Thin: it calls the library and never the other way round. Everything long (loading,
//! rendering, screenshots) runs on workers from [`crate::jobs`]; the UI thread only drains their
//! channels with `try_recv` and draws.

pub mod camera;
mod dialogs;
pub mod documents;
pub mod file_browser;
pub mod glide;
pub mod halos;
mod halos_ui;
pub mod haloscope_app;
mod menu;
pub mod movie_edit;
pub mod movie_panel;
mod movie_presets;
pub mod movie_render;
mod movie_window;
pub mod overlay;
pub mod overlay_labels;
pub mod overlay_raster;
pub mod pick;
pub mod preview;
pub mod progressive;
pub mod screenshot;
pub mod session;
mod side_panel;
pub mod sky_map;
pub mod sky_projection;
pub mod splotch;
pub mod startup_log;
pub mod timeline;
pub mod twopoint_panel;
mod twopoint_ui;
pub mod viewport;
pub mod viewport_renderer;

pub use haloscope_app::HaloscopeApp;
pub use splotch::default_renderer_factory;
pub use viewport_renderer::{
    Legend, RenderedImage, RendererFactory, ViewRequest, ViewStyle, ViewportRenderer,
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
    eframe::run_native(
        "Haloscope",
        options,
        Box::new(move |cc| {
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
    )
    .map_err(|err| anyhow::anyhow!("opening the window: {err}"))
}
