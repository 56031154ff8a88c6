//! `haloscope bench movie`.

use clap::Args;

/// Arguments of `haloscope bench movie`.
#[derive(Debug, Args)]
pub struct BenchMovieArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `haloscope bench movie`.
pub fn run(_args: BenchMovieArgs) -> anyhow::Result<()> {
    anyhow::bail!("haloscope bench movie is not implemented yet")
}
