//! `haloscope movie`.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `haloscope movie`.
#[derive(Debug, Args)]
pub struct MovieArgs {
    /// Input files.
    pub files: Vec<PathBuf>,
}

/// Runs `haloscope movie`.
pub fn run(_args: MovieArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope movie is not implemented yet")
}
