//! The back-end switch: the CPU reference or the CUDA renderer, chosen by `--backend`.

use super::cpu::validate_settings;
use super::cuda::{CudaRenderer, CudaTuning};
use super::{RenderError, RenderOutput, RenderSettings, render_cpu};
use crate::data::Snapshot;
use crate::gpu::{BackendChoice, GpuError, ResolvedBackend, resolve_backend};
use crate::jobs::Progress;
use std::sync::Arc;

/// The back-end that made a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RenderBackend {
    /// CPU threads.
    Cpu,
    /// The CUDA renderer.
    Cuda,
}

impl RenderBackend {
    /// `"cpu"` or `"cuda"`, as reported in `--json`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
        }
    }
}

/// Renders one frame on the back-end `choice` asks for. `Auto` uses CUDA when a device opens
/// and falls back to the CPU (one warning log line saying why) otherwise; `Cuda` fails when no device
/// opens. Running out of device memory after the chunk shrank to its minimum falls back to the
/// CPU under either choice (with a warning), never aborts. Settings are checked first, so a
/// bad setting is the only message the user sees.
pub fn render(
    snapshot: &Snapshot,
    settings: &RenderSettings,
    choice: BackendChoice,
    progress: &Progress,
) -> Result<(RenderOutput, RenderBackend), RenderError> {
    validate_settings(snapshot, settings)?;
    let device = match resolve_backend(choice)? {
        ResolvedBackend::Cpu { fallback_reason } => {
            if let Some(reason) = fallback_reason {
                log::warn!("CUDA not available ({reason}); rendering on the CPU");
            }
            return Ok((
                render_cpu(snapshot, settings, progress)?,
                RenderBackend::Cpu,
            ));
        }
        ResolvedBackend::Cuda(device) => device,
    };
    let attempt = CudaRenderer::new(Arc::new(device), CudaTuning::default())
        .and_then(|mut renderer| renderer.render(snapshot, settings, progress));
    match attempt {
        Ok(output) => Ok((output, RenderBackend::Cuda)),
        Err(RenderError::Gpu(err))
            if choice == BackendChoice::Auto || matches!(err, GpuError::OutOfMemory { .. }) =>
        {
            log::warn!("CUDA render failed ({err}); rendering on the CPU instead");
            Ok((
                render_cpu(snapshot, settings, progress)?,
                RenderBackend::Cpu,
            ))
        }
        Err(err) => Err(err),
    }
}
