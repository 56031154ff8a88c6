//! `haloscope bench load`.

use clap::Args;

/// Arguments of `haloscope bench load`.
#[derive(Debug, Args)]
pub struct BenchLoadArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `haloscope bench load`.
pub fn run(_args: BenchLoadArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope bench load is not implemented yet")
}
