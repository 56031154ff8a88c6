//! Open files: the loaded snapshots and event lists, and Haloscope's own file chooser.

pub mod documents;
pub mod file_browser;
pub mod refine;
