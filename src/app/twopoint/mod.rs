//! The Events panel and the central sky map: the two-point analysis with its plots, and the
//! equal-area all-sky map of the events.

pub mod panel;
pub mod sky_map;
pub mod sky_projection;
mod ui;
