//! The CUDA twin of the kNN search: the grid is built on the host
//! ([`crate::render::smoothing::build_grid`]), its members in cell order go to the device, and
//! `knn_lengths` runs one thread per member in launches of [`LAUNCH`] members (progress and
//! cancellation between them).

use super::CUDA_MAX_K;
use crate::gpu::{self, GpuDevice, GpuError, upload_pinned};
use crate::jobs::Progress;
use crate::render::RenderError;
use crate::render::smoothing::check_arguments;
use crate::render::smoothing::grid::{Grid, finite_bounds};
use cudarc::driver::DeviceRepr;

const SOURCE: &str = include_str!("../../../kernels/knn.cu");

/// Members per launch.
const LAUNCH: usize = 1 << 22;

/// The kernel's `KnnGrid` (kernels/knn.cu), field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct KnnGridC {
    n: [i32; 3],
    periodic: i32,
    cell: f64,
    origin: [f64; 3],
    side: f64,
}

// SAFETY: plain #[repr(C)] data with the kernel's layout (4 ints, then 5 doubles).
unsafe impl DeviceRepr for KnnGridC {}
crate::kernel_arg_by_value!(KnnGridC);

crate::kernel_args! {
    /// `knn_lengths` (kernels/knn.cu), one thread per member from `first`: pos holds 3·m
    /// values in cell order, starts the grid's cells + 1 offsets, out m lengths.
    struct KnnArgs<'a> {
        pos: &'a cudarc::driver::CudaSlice<f32>,
        starts: &'a cudarc::driver::CudaSlice<u32>,
        grid: KnnGridC,
        first: u32,
        m: u32,
        k: i32,
        out: &'a mut cudarc::driver::CudaSlice<f32>,
    }
}

/// h for every particle on `device`, equal bit for bit to
/// [`crate::render::smoothing::knn_smoothing_lengths`]; `k` must be at most [`CUDA_MAX_K`].
pub fn knn_smoothing_lengths_cuda(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    progress: &Progress,
) -> Result<Vec<f32>, RenderError> {
    if k > CUDA_MAX_K {
        return Err(RenderError::setting(format!(
            "--knn {k}: the CUDA kNN holds at most {CUDA_MAX_K} neighbours"
        )));
    }
    let (lo, hi, n_valid) = finite_bounds(positions);
    let k = check_arguments(k, box_size, n_valid)?;
    let grid = Grid::build(positions, box_size, (lo, hi), n_valid, k);
    let m = grid.members.len();
    let Ok(m32) = u32::try_from(m) else {
        return Err(RenderError::setting(format!(
            "{m} particles are too many for the CUDA kNN (at most {})",
            u32::MAX
        )));
    };
    let axis = |a: usize| i32::try_from(grid.shape.n[a]).unwrap_or(i32::MAX);
    let params = KnnGridC {
        n: [axis(0), axis(1), axis(2)],
        periodic: i32::from(grid.frame.box_size.is_some()),
        cell: grid.shape.cell,
        origin: grid.frame.origin,
        side: grid.frame.box_size.unwrap_or(1.0),
    };
    let module = device.module("knn.cu", &format!("#define KNN_MAX {CUDA_MAX_K}\n{SOURCE}"))?;
    let function = module
        .load_function("knn_lengths")
        .map_err(GpuError::from)?;
    let pos: Vec<[f32; 3]> = grid.members.iter().map(|(_, p)| *p).collect();
    let stream = device.stream();
    let pos_dev = upload_pinned(device, pos.as_flattened())?;
    let starts_dev = upload_pinned(device, &grid.starts)?;
    let mut out = stream
        .alloc_zeros::<f32>(m.max(1))
        .map_err(GpuError::from)?;
    for first in (0..m).step_by(LAUNCH) {
        progress.check().map_err(|_| RenderError::Cancelled)?;
        progress.report("smoothing lengths", first as u64, m as u64);
        let len = LAUNCH.min(m - first);
        let args = KnnArgs {
            pos: &pos_dev,
            starts: &starts_dev,
            grid: params,
            first: first as u32,
            m: m32,
            k: k as i32,
            out: &mut out,
        };
        // SAFETY: pos holds 3·m values, starts one more than the grid's cells (the kernel's
        // cell indices stay below n[0]·n[1]·n[2]), out m values; k ≤ KNN_MAX.
        unsafe { gpu::launch(stream, &function, gpu::per_element(len, 0), args) }?;
        // One launch at a time, so that a cancel is seen within one launch.
        stream.synchronize().map_err(GpuError::from)?;
    }
    let by_cell = stream.clone_dtoh(&out).map_err(GpuError::from)?;
    let mut lengths = vec![0.0f32; positions.len()];
    for (h, (index, _)) in by_cell.iter().zip(&grid.members) {
        lengths[*index as usize] = *h;
    }
    Ok(lengths)
}
