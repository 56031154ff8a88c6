//! The wgpu twin of the kNN search: the grid is built on CPU threads ([`Grid::build`], as the
//! CPU search's own), uploaded, and searched by `search` in shaders/knn.wgsl, one invocation per
//! member in cell order, in dispatches of [`DISPATCH`] members (progress and cancellation between
//! them). The shader returns each member's k-th squared distance in f64, the same value as the
//! CPU's (the shader's header says why fused multiply-adds cannot change it); the square root
//! and the f32 rounding run here, as on the CPU, so the lengths agree bit for bit. A member
//! whose search the driver cut short (lavapipe bounds a shader's loop iterations) says so and is
//! searched again on CPU threads.
//!
//! It runs only where that argument holds: the device has f64 in shaders
//! ([`wgpu::Features::SHADER_F64`]), k ≤ [`WGPU_MAX_K`], the finite coordinates of a periodic box
//! span at most its side per axis, no coordinate is an f32 subnormal, and the buffers fit the
//! device's limits. Elsewhere [`knn_smoothing_lengths_wgpu`] answers `None` and the caller
//! searches on the CPU.

use crate::jobs::Progress;
use crate::render::RenderError;
use crate::render::smoothing::check_arguments;
use crate::render::smoothing::grid::{Grid, cell_index, finite_bounds};
use crate::render::smoothing::search::Best;
use crate::render::wgpu::{WgpuContext, WgpuError};
use rayon::prelude::*;
use wgpu::util::DeviceExt;

/// Largest k the shader holds (`MAX_K` in shaders/knn.wgsl: its k best sit in private memory).
pub const WGPU_MAX_K: usize = 64;

const SHADER: &str = include_str!("../../../shaders/knn.wgsl");

/// Invocations per workgroup (`@workgroup_size` in shaders/knn.wgsl).
const GROUP: usize = 64;

/// Members per dispatch: 1024 workgroups, far below the 65 535 every adapter allows per
/// dimension.
const DISPATCH: usize = 1 << 16;

/// Relative margin of the shader's cell bounds (1 + 2⁻²⁰): it only widens the search.
const MARGIN: f64 = 1.0 + 1.0 / (1u64 << 20) as f64;

/// What the shader writes for a member whose search a loop limit of the driver cut short.
const CUT_SHORT: f64 = -2.0;

/// The smallest periodic side the shader's wrap test takes: side·2⁻⁵⁵ and side/2 must be
/// normal numbers for its exactness argument.
const MIN_SIDE: f64 = 1e-250;

/// The device features the search needs.
pub const FEATURES: wgpu::Features = wgpu::Features::SHADER_F64;

/// h for every particle on `context`, equal bit for bit to
/// [`crate::render::smoothing::knn_smoothing_lengths`], or `None` when this device or input is
/// not one the shader's exactness argument covers (see the module's header): the caller then
/// searches on the CPU.
pub fn knn_smoothing_lengths_wgpu(
    context: &WgpuContext,
    positions: &[[f32; 3]],
    k: usize,
    box_size: Option<f64>,
    progress: &Progress,
) -> Result<Option<Vec<f32>>, RenderError> {
    if !context.device.features().contains(FEATURES) || k > WGPU_MAX_K {
        return Ok(None);
    }
    let (lo, hi, n_valid) = finite_bounds(positions);
    let k = check_arguments(k, box_size, n_valid)?;
    if let Some(side) = box_size
        && !(side >= MIN_SIDE && (0..3).all(|a| spans_at_most(lo[a], hi[a], side)))
    {
        return Ok(None);
    }
    // A Vulkan driver may flush f32 subnormals to zero where the CPU widens them exactly.
    if positions
        .par_iter()
        .any(|p| p.iter().any(|v| v.is_subnormal()))
    {
        return Ok(None);
    }
    let grid = Grid::build(positions, box_size, (lo, hi), n_valid, k);
    let m = grid.members.len();
    let largest = (m * 3 * 8).max(m * 16).max(grid.starts.len() * 4) as u64;
    let limit = context
        .limits
        .max_storage_buffer_binding_size
        .min(context.limits.max_buffer_size);
    if largest > limit || m > u32::MAX as usize {
        return Ok(None);
    }
    let squared = search(context, &grid, k, progress)?;
    let mut lengths = vec![0.0f32; positions.len()];
    let mut cut_short = Vec::new();
    for (slot, (d2, (index, _))) in squared.iter().zip(&grid.members).enumerate() {
        // As the CPU: f64 square root, then f32; fewer than k found (never, with k capped) is 0.
        lengths[*index as usize] = if *d2 >= 0.0 {
            d2.sqrt() as f32
        } else if *d2 == CUT_SHORT {
            cut_short.push(slot);
            0.0
        } else {
            0.0
        };
    }
    // Searches a driver cut short run again on CPU threads: the CPU search itself.
    let redone: Vec<(u32, f32)> = cut_short
        .par_iter()
        .map_init(
            || Best::new(k),
            |best, &slot| {
                let (index, p) = &grid.members[slot];
                (*index, grid.kth_distance(*index, p, best))
            },
        )
        .collect();
    for (index, h) in redone {
        lengths[index as usize] = h;
    }
    Ok(Some(lengths))
}

/// Whether hi − lo ≤ side exactly (so that every coordinate difference d has |d| ≤ side, as
/// the shader's wrap test assumes): the f64 difference and its rounding error by Knuth's
/// TwoSum.
fn spans_at_most(lo: f32, hi: f32, side: f64) -> bool {
    let (a, b) = (f64::from(hi), -f64::from(lo));
    let span = a + b;
    let b_part = span - a;
    let error = (a - (span - b_part)) + (b - b_part);
    span < side || (span == side && error <= 0.0)
}

/// The shader's inputs per member: (x, y, z, 0), the offset inside its cell per axis (as the
/// CPU search's `inside`) and its cell's index.
fn member_inputs(grid: &Grid) -> (Vec<[f32; 4]>, Vec<f64>, Vec<u32>) {
    let frame = &grid.frame;
    let shape = &grid.shape;
    let cell = shape.cell;
    let mut points = Vec::with_capacity(grid.members.len());
    let mut inside = Vec::with_capacity(3 * grid.members.len());
    let mut centres = Vec::with_capacity(grid.members.len());
    for (_, p) in &grid.members {
        let centre = frame.cell_of(shape, p);
        for (a, &c) in centre.iter().enumerate() {
            let x = f64::from(p[a]) - frame.origin[a];
            let x = match frame.box_size {
                Some(side) => x.rem_euclid(side),
                None => x,
            };
            inside.push((x - c as f64 * cell).clamp(0.0, cell));
        }
        points.push([p[0], p[1], p[2], 0.0]);
        centres.push(cell_index(&shape.n, centre) as u32);
    }
    (points, inside, centres)
}

/// The shader's `Params` (shaders/knn.wgsl): four f64 then eight u32.
fn params_bytes(grid: &Grid, k: usize, first: usize, count: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(64);
    let side = grid.frame.box_size.unwrap_or(1.0);
    for v in [grid.shape.cell, side, 1.0, MARGIN] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let n = grid.shape.n;
    let periodic = u32::from(grid.frame.box_size.is_some());
    for v in [
        n[0] as u32,
        n[1] as u32,
        n[2] as u32,
        k as u32,
        first as u32,
        count as u32,
        periodic,
        0,
    ] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    bytes
}

/// Each member's k-th squared distance (−1 where fewer than k were found), in member order.
fn search(
    context: &WgpuContext,
    grid: &Grid,
    k: usize,
    progress: &Progress,
) -> Result<Vec<f64>, RenderError> {
    let device = &context.device;
    let m = grid.members.len();
    let (points, inside, centres) = member_inputs(grid);
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("shaders/knn.wgsl"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("knn search"),
        layout: None,
        module: &module,
        entry_point: Some("search"),
        compilation_options: Default::default(),
        cache: None,
    });
    if let Some(err) = pollster::block_on(scope.pop()) {
        return Err(WgpuError::Device {
            message: format!("shaders/knn.wgsl: {err}"),
        }
        .into());
    }
    let memory = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let storage = wgpu::BufferUsages::STORAGE;
    let init = |label: &str, contents: &[u8], usage: wgpu::BufferUsages| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents,
            usage,
        })
    };
    let params = init(
        "knn params",
        &params_bytes(grid, k, 0, 0),
        storage | wgpu::BufferUsages::COPY_DST,
    );
    let members = init("knn members", bytemuck::cast_slice(&points), storage);
    let starts = init("knn starts", bytemuck::cast_slice(&grid.starts), storage);
    let inside = init("knn inside", bytemuck::cast_slice(&inside), storage);
    let centres = init("knn centres", bytemuck::cast_slice(&centres), storage);
    let out_bytes = (m * 8) as u64;
    let out = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("knn squared distances"),
        size: out_bytes,
        usage: storage | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("knn readback"),
        size: out_bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    if pollster::block_on(memory.pop()).is_some() {
        return Err(WgpuError::OutOfMemory {
            what: format!("{} MiB of kNN search buffers", (m * 68) >> 20),
        }
        .into());
    }
    let layout = pipeline.get_bind_group_layout(0);
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("knn"),
        layout: &layout,
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: params.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: members.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: starts.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 3,
                resource: inside.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 4,
                resource: centres.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 5,
                resource: out.as_entire_binding(),
            },
        ],
    });
    let total = m as u64;
    for first in (0..m).step_by(DISPATCH) {
        progress.check().map_err(|_| RenderError::Cancelled)?;
        let count = DISPATCH.min(m - first);
        context
            .queue
            .write_buffer(&params, 0, &params_bytes(grid, k, first, count));
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(count.div_ceil(GROUP) as u32, 1, 1);
        }
        context.queue.submit([encoder.finish()]);
        context.finish()?;
        progress.report("smoothing lengths", (first + count) as u64, total);
    }
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, out_bytes);
    let view = crate::render::wgpu::submit_and_map(context, encoder, &readback, out_bytes)?;
    // The mapped bytes need not be 8-aligned: copied, not cast.
    let squared = bytemuck::pod_collect_to_vec::<u8, f64>(&view);
    Ok(squared)
}
