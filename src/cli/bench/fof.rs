//! `haloscope bench fof`.

use clap::Args;

/// Arguments of `haloscope bench fof`.
#[derive(Debug, Args)]
pub struct BenchFofArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `haloscope bench fof`.
pub fn run(_args: BenchFofArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope bench fof is not implemented yet")
}
