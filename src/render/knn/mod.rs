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
    if let Some(context) = context {
        match wgpu::knn_smoothing_lengths_wgpu(context, positions, k, box_size, progress) {
            Ok(Some(lengths)) => return Ok(lengths),
            Ok(None) => {}
            Err(RenderError::Cancelled) => return Err(RenderError::Cancelled),
            // The CPU search refuses bad arguments with the same error, or does the work.
            Err(err) => log::warn!("kNN on the wgpu device failed ({err}); searching on the CPU"),
        }
    }
    knn_smoothing_lengths(positions, k, box_size, progress)
}
