//! The CUDA twin of the kNN search: the grid is built on the device ([`device_grid`]), then
//! `knn_search_*` (kernels/knn_search.cu, the k best in 16, 32 or 64 registers) runs one thread
//! per member in cell order (warps of nearby members together when [`KnnTuning::warp_box`]
//! allows), in launches of [`LAUNCH`] members (progress and cancellation between them), and
//! writes each length at its particle's index; one download brings them back.

use super::CUDA_MAX_K;
use super::device_grid::{self, KnnGridC};
use crate::gpu::{self, GpuDevice, GpuError, StageTimer, download_pinned, zeros};
use crate::jobs::Progress;
use crate::render::RenderError;
use crate::render::smoothing::check_arguments;
use crate::render::smoothing::grid::MAX_CELLS_TOTAL;

const SOURCE: &str = include_str!("../../../kernels/knn.cu");
const SEARCH: &str = include_str!("../../../kernels/knn_search.cu");

/// Members per launch.
const LAUNCH: usize = 1 << 24;

/// The cost model's price of one cell visit on the device, in distance evaluations. With
/// [`MAX_CELLS`] it picks finer cells than the CPU's: on 10⁸ clustered particles (k = 32, an
/// H200, 2026-11-28) the search took 754 ms at 2 with 2²⁷ cells at most, against 1036 ms at 8
/// with the CPU's cap (2²⁴) and 798 ms at 8 with 2²⁶ or more.
pub const GPU_VISIT_COST: f64 = 2.0;

/// Most cells of a tried device grid by default: 8x the CPU's cap (about 2.7 GB of device
/// memory while a size is tried, for sets large enough to want that many; less where the free
/// memory is small, see [`TRIED_CELL_BYTES`]).
pub const MAX_CELLS: usize = 8 * MAX_CELLS_TOTAL;

/// Device bytes a cell of a tried grid holds while its cost is summed (device_grid.rs: a u32
/// count and two f64 partial costs).
const TRIED_CELL_BYTES: usize = 20;

/// Most cells a warp's 32 queries may span for the warp to search them together: none by
/// default, since on clustered sets every query alone was the fastest measured (an H100,
/// 10⁸ particles: 1037 ms against 1122 ms for boxes of up to 8 cells).
pub const WARP_BOX: u32 = 0;

/// Most cells of a device grid: the kernels index cells with 32-bit integers, and the
/// per-axis cap (1024) allows no more.
const MAX_DEVICE_CELLS: usize = 1 << 30;

/// Register lists the search kernel comes in (`knn_search_16` ...), smallest first.
const LIST_SLOTS: [usize; 3] = [16, 32, 64];

/// How the device search runs: it changes the speed, never the lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnnTuning {
    /// The cost model's price of one cell visit, in distance evaluations (it picks the grid).
    pub visit: f64,
    /// Most cells a warp's queries may span for a joint search (0: every query alone).
    pub warp_box: u32,
    /// Most cells of a tried grid (clamped to 1..=2³⁰); more cells cost device memory (about
    /// 20 bytes each while a size is tried) and allow finer cells where there are many
    /// particles.
    pub max_cells: usize,
}

impl Default for KnnTuning {
    fn default() -> Self {
        Self {
            visit: GPU_VISIT_COST,
            warp_box: WARP_BOX,
            max_cells: MAX_CELLS,
        }
    }
}

/// Most particles the device search takes (its indices are 32-bit and its bounds loop strides
/// past n).
const MAX_PARTICLES: usize = (u32::MAX / 2) as usize;

crate::kernel_args! {
    /// `knn_search_*` (kernels/knn_search.cu), one thread per member from `first`: pos holds
    /// 4·m values in cell order, starts the grid's cells + 1 offsets, order n particle indices
    /// (the first m those of the members), out n lengths.
    struct KnnArgs<'a> {
        pos: &'a cudarc::driver::CudaSlice<f32>,
        starts: &'a cudarc::driver::CudaSlice<u32>,
        grid: KnnGridC,
        first: u32,
        m: u32,
        k: i32,
        warp_box: u32,
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
    knn_smoothing_lengths_cuda_timed(
        device,
        positions,
        k,
        box_size,
        KnnTuning::default(),
        progress,
    )
    .map(|(lengths, _)| lengths)
}

/// As [`knn_smoothing_lengths_cuda`], with the search's `tuning` ([`KnnTuning::default`] there;
/// it changes the grid and the warps' grouping, never the lengths) and the wall seconds of each
/// stage (compile, upload, bounds, cell size, sort, starts, gather, search, download).
pub fn knn_smoothing_lengths_cuda_timed(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    tuning: KnnTuning,
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
    let module = device.module("knn.cu", &format!("{SOURCE}\n{SEARCH}"))?;
    progress.check().map_err(|_| RenderError::Cancelled)?;
    // A tried grid costs TRIED_CELL_BYTES a cell: at most a quarter of the free memory goes to
    // it, so a small GPU keeps room for the points, but never fewer cells than the CPU's cap.
    let (free, _) = device.memory()?;
    let memory_cap = (free / 4 / TRIED_CELL_BYTES).max(MAX_CELLS_TOTAL);
    let max_cells = tuning.max_cells.min(memory_cap).clamp(1, MAX_DEVICE_CELLS);
    let grid = device_grid::build(
        device,
        &module,
        positions,
        k,
        box_size,
        tuning.visit,
        max_cells,
        &mut timer,
    )?;
    // k ≤ CUDA_MAX_K, the largest list.
    let slots = LIST_SLOTS
        .into_iter()
        .find(|slots| *slots >= grid.k)
        .unwrap_or(CUDA_MAX_K);
    let function = module
        .load_function(&format!("knn_search_{slots}"))
        .map_err(GpuError::from)?;
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
            warp_box: tuning.warp_box,
            order: &grid.order,
            out: &mut out,
        };
        // SAFETY: pos holds 4·m values, starts one more than the grid's cells (the kernel's
        // cell indices stay below n[0]·n[1]·n[2]), order n indices below n, out n values;
        // k ≤ slots, the kernel's list.
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
