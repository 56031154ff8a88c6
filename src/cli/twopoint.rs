//! `haloscope twopoint`.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `haloscope twopoint`.
#[derive(Debug, Args)]
pub struct TwopointArgs {
    /// Input files.
    pub files: Vec<PathBuf>,
}

/// Runs `haloscope twopoint`.
pub fn run(_args: TwopointArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope twopoint is not implemented yet")
}
