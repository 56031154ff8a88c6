//! Starting the renderer while the snapshot loads: on CUDA, opening the devices, loading the
//! kernels, pinning the staging buffers and the first upload's data-independent work
//! ([`CudaSet::prepare`]) take tens of milliseconds that `haloscope render` would otherwise
//! spend after the load. They run on a thread of their own; [`RendererStart::finish`] joins it
//! and makes the renderer exactly as [`Renderer::new`] on the resolved back-end would, with
//! any fallback and its warning on the caller's thread, after the caller's own checks.

use super::RenderError;
use super::cuda::{CudaSet, CudaTuning};
use super::options::RendererOptions;
use super::renderer::Renderer;
use crate::backend::{Backend, BackendChoice, DeviceSelection};
use crate::gpu::{DriverThread, GpuDevice, GpuError};
use std::sync::Arc;

/// The opened devices and the CUDA renderer started on them, or why it did not start.
type Started = (Vec<Arc<GpuDevice>>, Result<CudaSet, RenderError>);

/// A renderer being started on a thread (only for a choice that may use CUDA).
pub struct RendererStart {
    choice: BackendChoice,
    selection: DeviceSelection,
    options: RendererOptions,
    cuda: DriverThread<Result<Started, GpuError>>,
}

impl RendererStart {
    /// Starts opening `selection`'s devices when `choice` may use CUDA, and prepares the CUDA
    /// renderer with `reserve_bytes` of device memory for the data (0: none). The thread logs
    /// nothing.
    pub fn spawn(
        choice: BackendChoice,
        selection: DeviceSelection,
        options: RendererOptions,
        reserve_bytes: usize,
    ) -> Self {
        let may_use_cuda = matches!(choice, BackendChoice::Cuda | BackendChoice::Auto);
        let opening = selection.clone();
        let cuda = DriverThread::spawn_if(may_use_cuda, move || {
            let devices = opening.open()?;
            let started =
                CudaSet::new(&devices, CudaTuning::for_options(options)).and_then(|mut cuda| {
                    cuda.prepare(reserve_bytes)?;
                    Ok(cuda)
                });
            Ok((devices, started))
        });
        Self {
            choice,
            selection,
            options,
            cuda,
        }
    }

    /// The renderer: the started CUDA one, else what [`Backend::resolve_on`] and
    /// [`Renderer::new`] give (the error for `cuda` when no device opened; the fallback for
    /// `auto`).
    pub fn finish(mut self) -> Result<Renderer, RenderError> {
        match self.cuda.join() {
            Some(Ok((devices, started))) => Renderer::with_cuda(
                Backend::cuda_devices(devices, self.choice),
                self.options,
                Some(started),
            ),
            Some(Err(err)) if self.choice == BackendChoice::Cuda => Err(err.into()),
            _ => Renderer::new(
                Backend::resolve_on(self.choice, &self.selection)?,
                self.options,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a started renderer became: its back-end and fallback, or the error's message.
    fn outcome(renderer: Result<Renderer, RenderError>) -> Result<String, String> {
        renderer
            .map(|r| format!("{:?} {:?}", r.kind(), r.fallback_reason()))
            .map_err(|err| err.to_string())
    }

    #[test]
    fn a_started_renderer_is_the_one_the_back_end_resolves_to_for_every_choice() {
        for choice in [BackendChoice::Cpu, BackendChoice::Cuda, BackendChoice::Auto] {
            let started = RendererStart::spawn(
                choice,
                DeviceSelection::First,
                RendererOptions::default(),
                1 << 20,
            )
            .finish();
            let direct = Backend::resolve_on(choice, &DeviceSelection::First)
                .map_err(RenderError::from)
                .and_then(|backend| Renderer::new(backend, RendererOptions::default()));
            assert_eq!(outcome(started), outcome(direct), "{choice:?}");
        }
    }
}
