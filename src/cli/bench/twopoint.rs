//! `haloscope bench twopoint`.

use clap::Args;

/// Arguments of `haloscope bench twopoint`.
#[derive(Debug, Args)]
pub struct BenchTwopointArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `haloscope bench twopoint`.
pub fn run(_args: BenchTwopointArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope bench twopoint is not implemented yet")
}
