//! The Halos panel: friends-of-friends runs, the catalogue table and its export.

pub mod panel;
mod ui;
