//! The Halos panel: friends-of-friends runs, the catalogue table and its export.

mod halos_ui;
pub mod panel;
