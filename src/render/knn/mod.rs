//! kNN smoothing lengths on a back-end: the CPU search of [`super::smoothing`], or its CUDA twin
//! ([`cuda`], kernels/knn_search.cu, on a grid built on the device by [`device_grid`] with
//! kernels/knn.cu), which finds the same exact k-th distance in the same f64 arithmetic and so
//! gives the same lengths bit for bit; or its wgpu twin ([`wgpu`], shaders/knn.wgsl, on the
//! CPU's grid), which returns the same exact k-th squared distance where the device has f64.

pub mod cuda;
mod device_grid;
pub mod wgpu;

use super::RenderError;
use super::smoothing::knn_smoothing_lengths;
use crate::backend::Backend;
use crate::gpu::GpuDevice;
use crate::jobs::Progress;
use crate::render::wgpu::WgpuContext;

/// Largest k the CUDA kernel holds (its k best distances sit in registers); a larger k runs on
/// the CPU.
pub const CUDA_MAX_K: usize = 64;

/// h for every particle (see [`knn_smoothing_lengths`]): on `device` when there is one and
/// `k` ≤ [`CUDA_MAX_K`], else on CPU threads.
pub fn smoothing_lengths(
    device: Option<&GpuDevice>,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    progress: &Progress,
) -> Result<Vec<f32>, RenderError> {
    match device {
        Some(device) if k <= CUDA_MAX_K => {
            cuda::knn_smoothing_lengths_cuda(device, positions, k, box_size, progress)
        }
        _ => knn_smoothing_lengths(positions, k, box_size, progress),
    }
}

/// h for every particle (see [`knn_smoothing_lengths`]): on the wgpu `context` when there is one
/// and [`wgpu::knn_smoothing_lengths_wgpu`] takes the case (f64 in shaders, k ≤
/// [`wgpu::WGPU_MAX_K`], ...), else on CPU threads. A device that fails (out of memory, lost)
/// leaves the search to the CPU, which gives the same lengths.
pub fn smoothing_lengths_wgpu(
    context: Option<&WgpuContext>,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    progress: &Progress,
) -> Result<Vec<f32>, RenderError> {
    let on_device = match context {
        Some(context) => {
            wgpu::knn_smoothing_lengths_wgpu(context, positions, k, box_size, progress)
                .map(|lengths| lengths.map(|lengths| (lengths, "GPU (wgpu)")))
        }
        None => Ok(None),
    };
    or_on_cpu(on_device, positions, k, box_size, progress).map(|(lengths, _)| lengths)
}

/// h for every particle on `backend`'s GPU where it takes the case (CUDA with k ≤
/// [`CUDA_MAX_K`], or wgpu as [`smoothing_lengths_wgpu`]), else on CPU threads, a failing device
/// included; with where the search ran: "CUDA", "GPU (wgpu)" or "CPU".
pub fn smoothing_lengths_on(
    backend: &Backend,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    progress: &Progress,
) -> Result<(Vec<f32>, &'static str), RenderError> {
    let on_device = if let Some(device) = backend.device().filter(|_| k <= CUDA_MAX_K) {
        cuda::knn_smoothing_lengths_cuda(device, positions, k, box_size, progress)
            .map(|lengths| Some((lengths, "CUDA")))
    } else if let Some(context) = backend.wgpu_context() {
        wgpu::knn_smoothing_lengths_wgpu(context, positions, k, box_size, progress)
            .map(|lengths| lengths.map(|lengths| (lengths, "GPU (wgpu)")))
    } else {
        Ok(None)
    };
    or_on_cpu(on_device, positions, k, box_size, progress)
}

/// The device's lengths (with where they were computed), or the CPU search's where the device
/// declined the case or failed (out of memory, lost, too many particles): the CPU gives the same
/// lengths, or refuses bad arguments with the same error. A cancellation stays one.
fn or_on_cpu(
    on_device: Result<Option<(Vec<f32>, &'static str)>, RenderError>,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    progress: &Progress,
) -> Result<(Vec<f32>, &'static str), RenderError> {
    match on_device {
        Ok(Some(done)) => return Ok(done),
        Ok(None) => {}
        Err(RenderError::Cancelled) => return Err(RenderError::Cancelled),
        Err(err) => log::warn!("kNN on the GPU failed ({err}); searching on the CPU"),
    }
    knn_smoothing_lengths(positions, k, box_size, progress).map(|lengths| (lengths, "CPU"))
}
