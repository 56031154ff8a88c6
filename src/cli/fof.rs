//! `haloscope fof`.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `haloscope fof`.
#[derive(Debug, Args)]
pub struct FofArgs {
    /// Input files.
    pub files: Vec<PathBuf>,
}

/// Runs `haloscope fof`.
pub fn run(_args: FofArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope fof is not implemented yet")
}
