//! `haloscope info`.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `haloscope info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Input files.
    pub files: Vec<PathBuf>,
}

/// Runs `haloscope info`.
pub fn run(_args: InfoArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope info is not implemented yet")
}
