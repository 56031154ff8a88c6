//! `haloscope render`.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `haloscope render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Input files.
    pub files: Vec<PathBuf>,
}

/// Runs `haloscope render`.
pub fn run(_args: RenderArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope render is not implemented yet")
}
