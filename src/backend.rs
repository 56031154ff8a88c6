//! One back-end model for the whole crate: what the user asks for (`--backend`, the window's
//! default), what it resolves to once (CPU threads or an open CUDA device), and the one rule for
//! falling back to the CPU when CUDA cannot be used.
//!
//! Every room takes a [`Backend`] (or reports a [`BackendKind`]); the faces resolve the user's
//! [`BackendChoice`] once with [`Backend::resolve`] and pass the result down.

use crate::gpu::{GpuDevice, GpuError};
use std::sync::Arc;

/// What the user asked for with `--backend` (or in a window). The capitalised aliases read
/// the movie window's settings saved by sessions as `"Auto"`, `"Cpu"` or `"Cuda"`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// CUDA when a usable device exists, else the CPU (with one log line saying why).
    #[default]
    #[serde(alias = "Auto")]
    Auto,
    /// The CPU reference back-end.
    #[serde(alias = "Cpu")]
    Cpu,
    /// CUDA, or an error when it cannot be used.
    #[serde(alias = "Cuda")]
    Cuda,
}

impl BackendChoice {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
        }
    }
}

/// Which back-end made a result, as reported in `--json`, the window and the benches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// CPU threads.
    Cpu,
    /// A CUDA device.
    Cuda,
}

impl BackendKind {
    /// `"cpu"` or `"cuda"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A resolved back-end: CPU threads, or an open CUDA device shared by whoever renders, links
/// or counts on it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Backend {
    device: Option<Arc<GpuDevice>>,
    choice: BackendChoice,
    fallback_reason: Option<String>,
}

impl Backend {
    /// Resolves `choice` once: `Cpu` is the CPU; `Cuda` opens device 0 or fails with the reason;
    /// `Auto` opens device 0 and otherwise falls back to the CPU with one warning log line.
    pub fn resolve(choice: BackendChoice) -> Result<Self, GpuError> {
        match choice {
            BackendChoice::Cpu => Ok(Self::cpu()),
            BackendChoice::Cuda => Ok(Self::cuda(Arc::new(GpuDevice::open(0)?), choice)),
            BackendChoice::Auto => match GpuDevice::open(0) {
                Ok(device) => Ok(Self::cuda(Arc::new(device), choice)),
                Err(err) => {
                    let mut backend = Self::cpu();
                    backend.choice = choice;
                    backend.fall_back(format!("no CUDA device ({err})"));
                    Ok(backend)
                }
            },
        }
    }

    /// The CPU back-end, as asked for.
    pub fn cpu() -> Self {
        Self {
            device: None,
            choice: BackendChoice::Cpu,
            fallback_reason: None,
        }
    }

    /// The CUDA back-end on an open `device`, resolved from `choice` (which decides whether a
    /// later failure may fall back, see [`Backend::falls_back_after`]).
    pub fn cuda(device: Arc<GpuDevice>, choice: BackendChoice) -> Self {
        Self {
            device: Some(device),
            choice,
            fallback_reason: None,
        }
    }

    /// Which back-end runs.
    pub fn kind(&self) -> BackendKind {
        if self.device.is_some() {
            BackendKind::Cuda
        } else {
            BackendKind::Cpu
        }
    }

    /// The CUDA device, when this is the CUDA back-end.
    pub fn device(&self) -> Option<&Arc<GpuDevice>> {
        self.device.as_ref()
    }

    /// What the user asked for.
    pub fn choice(&self) -> BackendChoice {
        self.choice
    }

    /// Why the CPU is used although CUDA was looked for (`auto`), if it is.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// The fallback rule, written once: after CUDA failed with `err`, whether the work goes on
    /// on the CPU. `auto` always falls back; `cuda` only when the device ran out of memory
    /// (the data do not fit whatever the chunking; our own [`GpuError::OutOfMemory`] or the
    /// driver's, see [`GpuError::is_out_of_memory`]), never for a missing or broken device.
    pub fn falls_back_after(&self, err: &GpuError) -> bool {
        self.choice == BackendChoice::Auto || err.is_out_of_memory()
    }

    /// Switches to the CPU for good, logging `reason` once as a warning.
    pub fn fall_back(&mut self, reason: String) {
        log::warn!("{reason}; using the CPU");
        self.device = None;
        self.fallback_reason = Some(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_cpu_and_never_falls_back_from_a_device_error() {
        let backend = Backend::resolve(BackendChoice::Cpu).expect("cpu resolves");
        assert_eq!(backend.kind(), BackendKind::Cpu);
        assert!(backend.fallback_reason().is_none());
        assert!(!backend.falls_back_after(&GpuError::NoDevice));
        assert!(backend.falls_back_after(&GpuError::OutOfMemory { requested_bytes: 1 }));
    }

    #[test]
    fn auto_falls_back_for_any_error() {
        let mut backend = Backend::cpu();
        backend.choice = BackendChoice::Auto;
        assert!(backend.falls_back_after(&GpuError::NoDevice));
        backend.fall_back("no CUDA device (test)".to_owned());
        assert_eq!(backend.fallback_reason(), Some("no CUDA device (test)"));
        assert_eq!(backend.kind(), BackendKind::Cpu);
    }

    #[test]
    fn cuda_falls_back_only_when_memory_runs_out_ours_or_the_drivers() {
        use cudarc::driver::{DriverError, sys::cudaError_enum};
        let mut backend = Backend::cpu();
        backend.choice = BackendChoice::Cuda;
        let driver = |code| GpuError::Driver(DriverError(code));
        assert!(backend.falls_back_after(&GpuError::OutOfMemory { requested_bytes: 1 }));
        assert!(backend.falls_back_after(&driver(cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY)));
        assert!(!backend.falls_back_after(&driver(cudaError_enum::CUDA_ERROR_LAUNCH_FAILED)));
        assert!(!backend.falls_back_after(&GpuError::NoDevice));
    }

    #[test]
    fn choices_read_the_lowercase_names_and_the_capitalised_saved_ones() {
        for (text, choice) in [
            ("\"auto\"", BackendChoice::Auto),
            ("\"Auto\"", BackendChoice::Auto),
            ("\"cpu\"", BackendChoice::Cpu),
            ("\"Cpu\"", BackendChoice::Cpu),
            ("\"cuda\"", BackendChoice::Cuda),
            ("\"Cuda\"", BackendChoice::Cuda),
        ] {
            assert_eq!(
                serde_json::from_str::<BackendChoice>(text).ok(),
                Some(choice)
            );
        }
        assert_eq!(
            serde_json::to_string(&BackendChoice::Cuda).expect("json"),
            "\"cuda\""
        );
    }

    #[test]
    fn names_are_the_command_line_words() {
        assert_eq!(BackendKind::Cuda.name(), "cuda");
        assert_eq!(BackendChoice::Auto.name(), "auto");
        assert_eq!(
            serde_json::to_string(&BackendKind::Cpu).expect("json"),
            "\"cpu\""
        );
    }
}
