//! The CUDA twin of the kNN search: the grid is built on the device ([`device_grid`]), then
//! `knn_lengths` (kernels/knn.cu) runs one thread per member in cell order, in launches of
//! [`LAUNCH`] members (progress and cancellation between them), and writes each length at its
//! particle's index; one download brings them back.

use super::CUDA_MAX_K;
use super::device_grid::{self, KnnGridC};
use crate::gpu::{self, GpuDevice, GpuError, StageTimer, download_pinned, zeros};
use crate::jobs::Progress;
use crate::render::RenderError;
use crate::render::smoothing::check_arguments;

const SOURCE: &str = include_str!("../../../kernels/knn.cu");

/// Members per launch.
const LAUNCH: usize = 1 << 24;

/// The cost model's price of one cell visit on the device, in distance evaluations.
pub const GPU_VISIT_COST: f64 = 8.0;

/// Most particles the device search takes (its indices are 32-bit and its bounds loop strides
/// past n).
const MAX_PARTICLES: usize = (u32::MAX / 2) as usize;

crate::kernel_args! {
    /// `knn_lengths` (kernels/knn.cu), one thread per member from `first`: pos holds 4·m
    /// values in cell order, starts the grid's cells + 1 offsets, order n particle indices
    /// (the first m those of the members), out n lengths.
    struct KnnArgs<'a> {
        pos: &'a cudarc::driver::CudaSlice<f32>,
        starts: &'a cudarc::driver::CudaSlice<u32>,
        grid: KnnGridC,
        first: u32,
        m: u32,
        k: i32,
        order: &'a cudarc::driver::CudaSlice<u32>,
        out: &'a mut cudarc::driver::CudaSlice<f32>,
    }
}

/// Wall seconds per stage, in order: (stage, seconds).
pub type Stages = Vec<(&'static str, f64)>;

/// h for every particle on `device`, equal bit for bit to
/// [`crate::render::smoothing::knn_smoothing_lengths`]; `k` must be at most [`CUDA_MAX_K`].
pub fn knn_smoothing_lengths_cuda(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    progress: &Progress,
) -> Result<Vec<f32>, RenderError> {
    knn_smoothing_lengths_cuda_timed(device, positions, k, box_size, GPU_VISIT_COST, progress)
        .map(|(lengths, _)| lengths)
}

/// As [`knn_smoothing_lengths_cuda`], with the cost model's price of a cell visit (`visit`,
/// [`GPU_VISIT_COST`] by default; it changes the grid, never the lengths) and the wall seconds
/// of each stage (compile, upload, bounds, cell size, sort, starts, gather, search, download).
pub fn knn_smoothing_lengths_cuda_timed(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    visit: f64,
    progress: &Progress,
) -> Result<(Vec<f32>, Stages), RenderError> {
    if k > CUDA_MAX_K {
        return Err(RenderError::setting(format!(
            "--knn {k}: the CUDA kNN holds at most {CUDA_MAX_K} neighbours"
        )));
    }
    let n = positions.len();
    if n < 2 {
        // Refused with the CPU's message (k, box, too few particles).
        check_arguments(k, box_size, n)?;
    }
    if n > MAX_PARTICLES {
        return Err(RenderError::setting(format!(
            "{n} particles are too many for the CUDA kNN (at most {MAX_PARTICLES})"
        )));
    }
    let stream = device.stream();
    let mut timer = StageTimer::new(stream);
    let module = device.module("knn.cu", &format!("#define KNN_MAX {CUDA_MAX_K}\n{SOURCE}"))?;
    let function = module
        .load_function("knn_lengths")
        .map_err(GpuError::from)?;
    progress.check().map_err(|_| RenderError::Cancelled)?;
    let grid = device_grid::build(device, &module, positions, k, box_size, visit, &mut timer)?;
    let m = grid.m;
    let mut out = zeros::<f32>(stream, n)?;
    for first in (0..m).step_by(LAUNCH) {
        progress.check().map_err(|_| RenderError::Cancelled)?;
        progress.report("smoothing lengths", first as u64, m as u64);
        let len = LAUNCH.min(m - first);
        let args = KnnArgs {
            pos: &grid.sorted,
            starts: &grid.starts,
            grid: grid.params,
            first: first as u32,
            m: m as u32,
            k: grid.k as i32,
            order: &grid.order,
            out: &mut out,
        };
        // SAFETY: pos holds 4·m values, starts one more than the grid's cells (the kernel's
        // cell indices stay below n[0]·n[1]·n[2]), order n indices below n, out n values;
        // k ≤ KNN_MAX.
        unsafe { gpu::launch(stream, &function, gpu::per_element(len, 0), args) }?;
        // One launch at a time, so that a cancel is seen within one launch.
        stream.synchronize().map_err(GpuError::from)?;
    }
    progress.report("smoothing lengths", m as u64, m as u64);
    timer.stage("search")?;
    let lengths = download_pinned(device, &out, n, |h| h)?;
    timer.stage("download")?;
    Ok((lengths, timer.into_stages()))
}
