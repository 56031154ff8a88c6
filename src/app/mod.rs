//! The desktop application (eframe/egui with the wgpu renderer).

use std::path::PathBuf;

/// Opens the application window with `files` (the demo data when empty).
pub fn run(_files: Vec<PathBuf>) -> anyhow::Result<()> {
    anyhow::bail!("the desktop application is not implemented yet")
}
