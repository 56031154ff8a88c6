//! Choosing between the CPU and CUDA back-ends.

use super::{GpuDevice, GpuError};

/// What the user asked for with `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum BackendChoice {
    /// CUDA when a usable device exists, else the CPU (with one log line saying why).
    #[default]
    Auto,
    /// The CPU reference back-end.
    Cpu,
    /// CUDA, or an error when it cannot be used.
    Cuda,
}

/// The back-end that will run.
#[derive(Debug)]
pub enum ResolvedBackend {
    /// CPU threads.
    Cpu {
        /// Why CUDA is not used, when `auto` fell back (for the one log line).
        fallback_reason: Option<String>,
    },
    /// A CUDA device.
    Cuda(GpuDevice),
}

impl ResolvedBackend {
    /// `"cpu"` or `"cuda"`, as reported in `--json`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Cpu { .. } => "cpu",
            Self::Cuda(_) => "cuda",
        }
    }
}

/// Opens device 0 for `Cuda`/`Auto`; `Auto` falls back to the CPU, `Cuda` fails.
pub fn resolve_backend(choice: BackendChoice) -> Result<ResolvedBackend, GpuError> {
    match choice {
        BackendChoice::Cpu => Ok(ResolvedBackend::Cpu {
            fallback_reason: None,
        }),
        BackendChoice::Cuda => GpuDevice::open(0).map(ResolvedBackend::Cuda),
        BackendChoice::Auto => match GpuDevice::open(0) {
            Ok(device) => Ok(ResolvedBackend::Cuda(device)),
            Err(err) => Ok(ResolvedBackend::Cpu {
                fallback_reason: Some(err.to_string()),
            }),
        },
    }
}
