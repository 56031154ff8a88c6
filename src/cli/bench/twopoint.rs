//! `haloscope bench twopoint`.

use clap::Args;

/// Arguments of `haloscope bench twopoint`.
#[derive(Debug, Args)]
pub struct BenchTwopointArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// `--backend cuda` and its options.
    #[command(flatten)]
    pub cuda: super::twopoint_cuda::CudaBenchArgs,
}

/// Runs `haloscope bench twopoint`.
pub fn run(_args: BenchTwopointArgs) -> anyhow::Result<()> {
    if _args.cuda.backend == crate::gpu::BackendChoice::Cuda {
        return super::twopoint_cuda::run(&_args.cuda, _args.json);
    }
    anyhow::bail!("haloscope bench twopoint is not implemented yet")
}
