//! The kNN cell grid built on the device (kernels/knn.cu): positions uploaded once, their
//! bounds, the cell counts and modelled cost of each cell size that the CPU grid would try
//! ([`Frame::shapes`], [`cell_cost`]'s model), then cell keys radix-sorted with
//! [`RadixSort`], cell starts by [`crate::gpu::Scan`] and the positions gathered in cell
//! order. Nothing goes back to the host but the block bounds and block costs.

use crate::gpu::{self, GpuDevice, GpuError, RadixSort, StageTimer, alloc, upload_pinned, zeros};
use crate::render::RenderError;
use crate::render::smoothing::check_arguments;
use crate::render::smoothing::grid::{DENSITY_REACH, Frame, Shape};
use cudarc::driver::{CudaFunction, CudaModule, CudaSlice, DeviceRepr};
use std::sync::Arc;

/// Threads per block of the reductions (`KNN_BLOCK` in kernels/knn.cu).
const BLOCK: usize = 256;
/// Most blocks of the bounds reduction (each strides over the positions).
const BOUNDS_BLOCKS: usize = 1024;

/// The kernel's `KnnGrid` (kernels/knn.cu), field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(super) struct KnnGridC {
    n: [i32; 3],
    periodic: i32,
    cell: f64,
    origin: [f64; 3],
    side: f64,
}

impl KnnGridC {
    fn new(frame: &Frame, shape: &Shape) -> Self {
        // Frame::shapes caps every axis at MAX_CELLS_PER_AXIS (1024).
        let axis = |a: usize| i32::try_from(shape.n[a]).unwrap_or(i32::MAX);
        Self {
            n: [axis(0), axis(1), axis(2)],
            periodic: i32::from(frame.box_size.is_some()),
            cell: shape.cell,
            origin: frame.origin,
            side: frame.box_size.unwrap_or(1.0),
        }
    }
}

// SAFETY: plain #[repr(C)] data with the kernel's layout (4 ints, then 5 doubles).
unsafe impl DeviceRepr for KnnGridC {}
crate::kernel_arg_by_value!(KnnGridC);

crate::kernel_args! {
    /// `knn_bounds`: pos holds 3·n values; one bounds triple per block and one count.
    struct BoundsArgs<'a> {
        pos: &'a CudaSlice<f32>,
        n: u32,
        block_lo: &'a mut CudaSlice<f32>,
        block_hi: &'a mut CudaSlice<f32>,
        block_count: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `knn_count`: one thread per position; counts holds the grid's cells (zeroed).
    struct CountArgs<'a> {
        pos: &'a CudaSlice<f32>,
        n: u32,
        grid: KnnGridC,
        counts: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `knn_box_pass`: one thread per cell; reads `counts` (from_counts = 1) or `input`.
    struct BoxArgs<'a> {
        input: &'a CudaSlice<f64>,
        counts: &'a CudaSlice<u32>,
        from_counts: i32,
        cells: u32,
        stride: u32,
        len: i32,
        periodic: i32,
        reach: i32,
        out: &'a mut CudaSlice<f64>,
    }
}

crate::kernel_args! {
    /// `knn_cost`: one thread per cell, one partial sum per block.
    struct CostArgs<'a> {
        counts: &'a CudaSlice<u32>,
        around: &'a CudaSlice<f64>,
        cells: u32,
        width3: f64,
        k: f64,
        visit: f64,
        block_cost: &'a mut CudaSlice<f64>,
    }
}

crate::kernel_args! {
    /// `knn_keys`: one thread per position; keys and values hold n.
    struct KeysArgs<'a> {
        pos: &'a CudaSlice<f32>,
        n: u32,
        grid: KnnGridC,
        cells: u32,
        keys: &'a mut CudaSlice<u64>,
        values: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `knn_gather`: one thread per member; sorted holds 4·m floats.
    struct GatherArgs<'a> {
        pos: &'a CudaSlice<f32>,
        order: &'a CudaSlice<u32>,
        m: u32,
        sorted: &'a mut CudaSlice<f32>,
    }
}

/// The grid on the device, ready for the search.
pub(super) struct DeviceGrid {
    /// The kernel's grid parameters.
    pub(super) params: KnnGridC,
    /// Members (finite positions).
    pub(super) m: usize,
    /// k capped at the other members.
    pub(super) k: usize,
    /// 4·m floats: the members' positions in cell order (x, y, z, 0).
    pub(super) sorted: CudaSlice<f32>,
    /// The particle index of each member (then the non-finite ones).
    pub(super) order: CudaSlice<u32>,
    /// Cells + 1 member offsets.
    pub(super) starts: CudaSlice<u32>,
}

/// The kernels of kernels/knn.cu this file launches.
struct Kernels {
    bounds: CudaFunction,
    count: CudaFunction,
    box_pass: CudaFunction,
    cost: CudaFunction,
    keys: CudaFunction,
    gather: CudaFunction,
}

/// Uploads `positions` (fewer than 2³¹) and builds their grid for k neighbours; `visit` is
/// the cost model's price of a cell visit, `max_cells` the most cells of a tried grid (at most
/// 2³⁰, the per-axis cap's product). Stages go to `timer`.
#[allow(clippy::too_many_arguments)]
pub(super) fn build(
    device: &GpuDevice,
    module: &Arc<CudaModule>,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    visit: f64,
    max_cells: usize,
    timer: &mut StageTimer<'_>,
) -> Result<DeviceGrid, RenderError> {
    let load = |name: &str| module.load_function(name).map_err(GpuError::from);
    let kernels = Kernels {
        bounds: load("knn_bounds")?,
        count: load("knn_count")?,
        box_pass: load("knn_box_pass")?,
        cost: load("knn_cost")?,
        keys: load("knn_keys")?,
        gather: load("knn_gather")?,
    };
    let sort = RadixSort::load(device)?;
    let stream = device.stream();
    let n = positions.len();
    let n32 = n as u32;
    timer.stage("compile")?;
    let pos = upload_pinned(device, positions.as_flattened())?;
    timer.stage("upload")?;

    let blocks = gpu::grid(n, BLOCK).min(BOUNDS_BLOCKS as u32);
    let b = blocks as usize;
    let mut block_lo = alloc::<f32>(stream, 3 * b)?;
    let mut block_hi = alloc::<f32>(stream, 3 * b)?;
    let mut block_count = alloc::<u32>(stream, b)?;
    let args = BoundsArgs {
        pos: &pos,
        n: n32,
        block_lo: &mut block_lo,
        block_hi: &mut block_hi,
        block_count: &mut block_count,
    };
    // SAFETY: pos holds 3·n values (strided loop guarded by i < n); one result per block.
    unsafe { gpu::launch(stream, &kernels.bounds, gpu::blocks(blocks, 0), args) }?;
    let lo_host = stream.clone_dtoh(&block_lo).map_err(GpuError::from)?;
    let hi_host = stream.clone_dtoh(&block_hi).map_err(GpuError::from)?;
    let count_host = stream.clone_dtoh(&block_count).map_err(GpuError::from)?;
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for block in 0..b {
        for a in 0..3 {
            lo[a] = lo[a].min(lo_host[3 * block + a]);
            hi[a] = hi[a].max(hi_host[3 * block + a]);
        }
    }
    let n_valid: usize = count_host.iter().map(|c| *c as usize).sum();
    let k = check_arguments(k, box_size, n_valid)?;
    let frame = Frame::new(box_size, lo, hi);
    timer.stage("bounds")?;

    let (first, rest) = frame.shapes(n_valid, max_cells);
    let mut best = evaluate(device, &kernels, &pos, n32, &frame, first, k, visit)?;
    for shape in rest {
        let trial = evaluate(device, &kernels, &pos, n32, &frame, shape, k, visit)?;
        if trial.0 < best.0 {
            best = trial;
        }
    }
    let (_, shape, counts) = best;
    let params = KnnGridC::new(&frame, &shape);
    let cells = shape.cells();
    timer.stage("cell size")?;

    let mut keys = alloc::<u64>(stream, n)?;
    let mut values = alloc::<u32>(stream, n)?;
    let cells32 = cells as u32;
    let args = KeysArgs {
        pos: &pos,
        n: n32,
        grid: params,
        cells: cells32,
        keys: &mut keys,
        values: &mut values,
    };
    // SAFETY: one thread per position, guarded by i < n; keys and values hold n.
    unsafe { gpu::launch(stream, &kernels.keys, gpu::per_element(n, 0), args) }?;
    let key_bits = u32::BITS - cells32.leading_zeros();
    let (keys, order) = sort.sort_pairs(keys, values, n32, key_bits)?;
    drop(keys);
    timer.stage("sort")?;
    let starts = sort.scan().exclusive(&counts, cells + 1)?;
    drop(counts);
    timer.stage("starts")?;
    let mut sorted = alloc::<f32>(stream, 4 * n_valid)?;
    let args = GatherArgs {
        pos: &pos,
        order: &order,
        m: n_valid as u32,
        sorted: &mut sorted,
    };
    // SAFETY: j < m ≤ n reads order[j] < n and pos[3·order[j] + 2]; sorted holds 4·m.
    unsafe { gpu::launch(stream, &kernels.gather, gpu::per_element(n_valid, 0), args) }?;
    drop(pos);
    timer.stage("gather")?;
    Ok(DeviceGrid {
        params,
        m: n_valid,
        k,
        sorted,
        order,
        starts,
    })
}

/// Counts the particles per cell of `shape` and sums the modelled cost; returns the cost, the
/// shape and its counts (cells + 1 values, the last 0, ready for the starts' scan).
#[allow(clippy::too_many_arguments)]
fn evaluate(
    device: &GpuDevice,
    kernels: &Kernels,
    pos: &CudaSlice<f32>,
    n: u32,
    frame: &Frame,
    shape: Shape,
    k: usize,
    visit: f64,
) -> Result<(f64, Shape, CudaSlice<u32>), RenderError> {
    let stream = device.stream();
    let params = KnnGridC::new(frame, &shape);
    let cells = shape.cells();
    let cells32 = cells as u32;
    let mut counts = zeros::<u32>(stream, cells + 1)?;
    let args = CountArgs {
        pos,
        n,
        grid: params,
        counts: &mut counts,
    };
    // SAFETY: one thread per position, guarded by i < n; every cell index is below cells.
    unsafe {
        gpu::launch(
            stream,
            &kernels.count,
            gpu::per_element(n as usize, 0),
            args,
        )
    }?;
    let mut a = alloc::<f64>(stream, cells)?;
    let mut b = alloc::<f64>(stream, cells)?;
    let periodic = i32::from(frame.box_size.is_some());
    for axis in 0..3 {
        let stride = match axis {
            0 => 1,
            1 => shape.n[0],
            _ => shape.n[0] * shape.n[1],
        };
        let (input, out) = if axis == 1 {
            (&a, &mut b)
        } else {
            (&b, &mut a)
        };
        let args = BoxArgs {
            input,
            counts: &counts,
            from_counts: i32::from(axis == 0),
            cells: cells32,
            stride: stride as u32,
            len: shape.n[axis] as i32,
            periodic,
            reach: DENSITY_REACH as i32,
            out,
        };
        // SAFETY: one thread per cell, guarded by i < cells; neighbours stay inside the grid
        // (wrapped or clipped); axis 0 reads only counts (b is not read before written).
        unsafe { gpu::launch(stream, &kernels.box_pass, gpu::per_element(cells, 0), args) }?;
    }
    let blocks = gpu::grid(cells, BLOCK);
    let mut block_cost = alloc::<f64>(stream, blocks as usize)?;
    let width = (2 * DENSITY_REACH + 1) as f64;
    let args = CostArgs {
        counts: &counts,
        around: &a,
        cells: cells32,
        width3: width * width * width,
        k: k as f64,
        visit,
        block_cost: &mut block_cost,
    };
    // SAFETY: one thread per cell, guarded by i < cells; one partial per block.
    unsafe { gpu::launch(stream, &kernels.cost, gpu::blocks(blocks, 0), args) }?;
    let partial = stream.clone_dtoh(&block_cost).map_err(GpuError::from)?;
    Ok((partial.iter().sum(), shape, counts))
}
