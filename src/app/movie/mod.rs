//! The Movie panel: keyframes, timeline and presets, and the Render movie window with its worker.

pub mod edit;
pub mod panel;
mod presets;
pub mod render;
pub mod timeline;
mod ui;
mod window;
