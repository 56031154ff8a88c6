//! The Movie panel: keyframes, timeline and presets, and the Render movie window with its worker.

pub mod movie_edit;
pub mod movie_panel;
mod movie_presets;
pub mod movie_render;
mod movie_ui;
mod movie_window;
pub mod timeline;
