//! `haloscope bench render`.

use clap::Args;

/// Arguments of `haloscope bench render`.
#[derive(Debug, Args)]
pub struct BenchRenderArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `haloscope bench render`.
pub fn run(_args: BenchRenderArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope bench render is not implemented yet")
}
