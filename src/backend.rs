//! One back-end model for the whole crate: what the user asks for (`--backend`, the window's
//! default), what it resolves to once (CPU threads, an open CUDA device, or an open wgpu device
//! for rendering), and the one rule for falling back to the CPU when a device cannot be used.
//!
//! Every room takes a [`Backend`] (or reports a [`BackendKind`]); the faces resolve the user's
//! [`BackendChoice`] once with [`Backend::resolve`] and pass the result down.

use crate::gpu::{GpuDevice, GpuError};
use crate::render::wgpu::{WgpuContext, WgpuError};
use std::sync::Arc;

/// A device failure as the fallback rule sees it: only whether memory ran out matters.
pub trait DeviceFailure {
    /// Whether the device ran out of memory (the data do not fit whatever the chunking).
    fn is_out_of_memory(&self) -> bool;
}

impl DeviceFailure for GpuError {
    fn is_out_of_memory(&self) -> bool {
        GpuError::is_out_of_memory(self)
    }
}

impl DeviceFailure for WgpuError {
    fn is_out_of_memory(&self) -> bool {
        WgpuError::is_out_of_memory(self)
    }
}

/// Why a back-end asked for could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// `--backend cuda`: no CUDA device opened.
    #[error(transparent)]
    Cuda(#[from] GpuError),
    /// `--backend wgpu`: no wgpu adapter opened.
    #[error("wgpu: {0}")]
    Wgpu(#[from] WgpuError),
}

/// Which CUDA devices a command uses (`--devices all|0,1,...`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceSelection {
    /// Device 0 only (faces without `--devices`, and the window).
    First,
    /// Every device the driver lists (`--devices all`, the default of commands that spread).
    #[default]
    All,
    /// These ordinals, in this order, each at most once.
    List(Vec<usize>),
}

impl DeviceSelection {
    /// Opens the selected devices (at least one), or says which could not be opened (the
    /// first in the selection's order). Several devices open at once, each on a thread: a
    /// driver context takes a good part of a second to create, and the contexts do not wait
    /// for each other.
    pub fn open(&self) -> Result<Vec<Arc<GpuDevice>>, GpuError> {
        let ordinals = match self {
            Self::First => vec![0],
            Self::All => (0..GpuDevice::count()?.max(1)).collect(),
            Self::List(list) => list.clone(),
        };
        if let [ordinal] = ordinals[..] {
            return Ok(vec![Arc::new(GpuDevice::open(ordinal)?)]);
        }
        std::thread::scope(|scope| {
            let opening: Vec<_> = ordinals
                .iter()
                .map(|&ordinal| scope.spawn(move || GpuDevice::open(ordinal).map(Arc::new)))
                .collect();
            opening
                .into_iter()
                .map(|thread| {
                    thread
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    }
}

impl std::str::FromStr for DeviceSelection {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") {
            return Ok(Self::All);
        }
        let mut list = Vec::new();
        for part in text.split(',') {
            let ordinal: usize = part.trim().parse().map_err(|_| {
                format!("--devices: '{part}' is not a device number (expected all or a list such as 0,1)")
            })?;
            if list.contains(&ordinal) {
                return Err(format!("--devices: device {ordinal} is named twice"));
            }
            list.push(ordinal);
        }
        Ok(Self::List(list))
    }
}

/// What the user asked for with `--backend` (or in a window). The capitalised aliases read
/// the movie window's settings saved by sessions as `"Auto"`, `"Cpu"`, `"Cuda"` or `"Wgpu"`.
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
    /// CUDA when a usable device exists, else a hardware wgpu adapter for rendering, else the
    /// CPU (with one log line saying which and why).
    #[default]
    #[serde(alias = "Auto")]
    Auto,
    /// The CPU reference back-end.
    #[serde(alias = "Cpu")]
    Cpu,
    /// CUDA, or an error when it cannot be used.
    #[serde(alias = "Cuda")]
    Cuda,
    /// wgpu (Vulkan, Metal, DirectX 12; software adapters too) for rendering, or an error when
    /// no adapter opens. Work with no wgpu twin (friends-of-friends, two-point) runs on the CPU.
    #[serde(alias = "Wgpu")]
    Wgpu,
}

impl BackendChoice {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
            Self::Wgpu => "wgpu",
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
    /// A wgpu device (rendering only).
    Wgpu,
}

impl BackendKind {
    /// `"cpu"`, `"cuda"` or `"wgpu"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
            Self::Wgpu => "wgpu",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A resolved back-end: CPU threads, an open CUDA device shared by whoever renders, links or
/// counts on it, or an open wgpu device that renders (the rest runs on the CPU). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Backend {
    /// The CUDA devices in use, the first one the primary (empty: not CUDA).
    devices: Vec<Arc<GpuDevice>>,
    wgpu: Option<WgpuContext>,
    choice: BackendChoice,
    fallback_reason: Option<String>,
}

impl Backend {
    /// Resolves `choice` once: `Cpu` is the CPU; `Cuda` opens device 0 or fails with the reason;
    /// `Wgpu` opens the best wgpu adapter (hardware first, a software one too) or fails with
    /// the adapters it saw; `Auto` opens CUDA device 0, else a hardware wgpu adapter (never a
    /// software one, which is slower than the CPU renderer), else the CPU, with one warning log
    /// line saying which and why.
    pub fn resolve(choice: BackendChoice) -> Result<Self, BackendError> {
        Self::resolve_on(choice, &DeviceSelection::First)
    }

    /// [`Backend::resolve`] on the CUDA devices `selection` names (`--devices`): `cuda` opens
    /// every one of them or fails naming the one that did not open; `auto` uses those that
    /// open, else falls back as [`Backend::resolve`] does. Work that knows how to spread over
    /// devices uses [`Backend::devices`]; everything else runs on the first one.
    pub fn resolve_on(
        choice: BackendChoice,
        selection: &DeviceSelection,
    ) -> Result<Self, BackendError> {
        if matches!(choice, BackendChoice::Cuda | BackendChoice::Auto) {
            match selection.open() {
                Ok(devices) => return Ok(Self::cuda_devices(devices, choice)),
                Err(err) if choice == BackendChoice::Cuda => return Err(err.into()),
                Err(_) => {}
            }
        }
        match choice {
            BackendChoice::Cpu => Ok(Self::cpu()),
            BackendChoice::Cuda => Ok(Self::cuda(Arc::new(GpuDevice::open(0)?), choice)),
            BackendChoice::Wgpu => Ok(Self::wgpu(WgpuContext::open(true)?, choice)),
            BackendChoice::Auto => match GpuDevice::open(0) {
                Ok(device) => Ok(Self::cuda(Arc::new(device), choice)),
                Err(cuda) => match WgpuContext::open(false) {
                    Ok(context) => {
                        log::warn!(
                            "no CUDA device ({cuda}); rendering with wgpu on {}",
                            context.adapter_label()
                        );
                        Ok(Self::wgpu(context, choice))
                    }
                    Err(wgpu) => {
                        let mut backend = Self::cpu();
                        backend.choice = choice;
                        backend.fall_back(format!("no CUDA device ({cuda}) and {wgpu}"));
                        Ok(backend)
                    }
                },
            },
        }
    }

    /// The CPU back-end, as asked for.
    pub fn cpu() -> Self {
        Self {
            devices: Vec::new(),
            wgpu: None,
            choice: BackendChoice::Cpu,
            fallback_reason: None,
        }
    }

    /// The CUDA back-end on an open `device`, resolved from `choice` (which decides whether a
    /// later failure may fall back, see [`Backend::falls_back_after`]).
    pub fn cuda(device: Arc<GpuDevice>, choice: BackendChoice) -> Self {
        Self::cuda_devices(vec![device], choice)
    }

    /// The CUDA back-end on several open devices (the first is the primary one).
    pub fn cuda_devices(devices: Vec<Arc<GpuDevice>>, choice: BackendChoice) -> Self {
        Self {
            devices,
            wgpu: None,
            choice,
            fallback_reason: None,
        }
    }

    /// The wgpu back-end on an open `context` (opened here, or the window's own device),
    /// resolved from `choice`.
    pub fn wgpu(context: WgpuContext, choice: BackendChoice) -> Self {
        Self {
            devices: Vec::new(),
            wgpu: Some(context),
            choice,
            fallback_reason: None,
        }
    }

    /// Which back-end runs.
    pub fn kind(&self) -> BackendKind {
        if !self.devices.is_empty() {
            BackendKind::Cuda
        } else if self.wgpu.is_some() {
            BackendKind::Wgpu
        } else {
            BackendKind::Cpu
        }
    }

    /// The wgpu device, when this is the wgpu back-end.
    pub fn wgpu_context(&self) -> Option<&WgpuContext> {
        self.wgpu.as_ref()
    }

    /// The (first) CUDA device, when this is the CUDA back-end.
    pub fn device(&self) -> Option<&Arc<GpuDevice>> {
        self.devices.first()
    }

    /// Every CUDA device in use, in `--devices` order (empty unless CUDA).
    pub fn devices(&self) -> &[Arc<GpuDevice>] {
        &self.devices
    }

    /// What the user asked for.
    pub fn choice(&self) -> BackendChoice {
        self.choice
    }

    /// Why the CPU is used although CUDA was looked for (`auto`), if it is.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// The fallback rule, written once: after a device (CUDA or wgpu) failed with `err`,
    /// whether the work goes on on the CPU. `auto` always falls back; `cuda` and `wgpu` only
    /// when the device ran out of memory (the data do not fit whatever the chunking; for CUDA
    /// our own [`GpuError::OutOfMemory`] or the driver's, see [`GpuError::is_out_of_memory`]),
    /// never for a missing, lost or broken device.
    pub fn falls_back_after(&self, err: &impl DeviceFailure) -> bool {
        self.choice == BackendChoice::Auto || err.is_out_of_memory()
    }

    /// Switches to the CPU for good, logging `reason` once as a warning.
    pub fn fall_back(&mut self, reason: String) {
        log::warn!("{reason}; using the CPU");
        self.devices.clear();
        self.wgpu = None;
        self.fallback_reason = Some(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_selection_parses_all_and_lists_and_refuses_repeats_and_words() {
        assert_eq!("all".parse::<DeviceSelection>(), Ok(DeviceSelection::All));
        assert_eq!(
            " 1, 0".parse::<DeviceSelection>(),
            Ok(DeviceSelection::List(vec![1, 0]))
        );
        assert!(
            "0,0"
                .parse::<DeviceSelection>()
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            "gpu0"
                .parse::<DeviceSelection>()
                .unwrap_err()
                .contains("'gpu0'")
        );
    }

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
    fn wgpu_falls_back_only_when_memory_runs_out() {
        let mut backend = Backend::cpu();
        backend.choice = BackendChoice::Wgpu;
        let oom = WgpuError::OutOfMemory {
            what: "test".into(),
        };
        let lost = WgpuError::DeviceLost {
            message: "test".into(),
        };
        assert!(backend.falls_back_after(&oom));
        assert!(!backend.falls_back_after(&lost));
        backend.choice = BackendChoice::Auto;
        assert!(backend.falls_back_after(&lost));
        assert_eq!(BackendKind::Wgpu.name(), "wgpu");
        assert_eq!(BackendChoice::Wgpu.name(), "wgpu");
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
            ("\"wgpu\"", BackendChoice::Wgpu),
            ("\"Wgpu\"", BackendChoice::Wgpu),
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
