//! The resident chunks reordered on the device as they are uploaded (`shaders/order.wgsl`, the
//! twin of the CUDA back-end's kernels/render_order.cu): each chunk goes in file order into a
//! staging pair of buffers, and a counting sort by a coarse 3-D Morton cell of the chunk's
//! bounding box moves it into its resident buffers. O(N) on the device, so the first frame pays
//! milliseconds rather than the second a host sort of 10⁸ particles takes. τ is summed in fixed
//! point, so the order changes no bit of it; nothing maps device particles back to file order
//! (the wgpu renderer draws every particle on the device and reports no per-particle result).

use super::buffers::entry;
use super::context::WgpuContext;
use super::data::{ChunkBuffers, PreparedSpecies, alloc_chunk, write_chunk};
use super::error::WgpuError;
use super::pipelines::{GROUP, groups_2d};
use wgpu::util::DeviceExt;

/// The WGSL source of the reorder passes, built into the binary.
pub const ORDER_SHADER: &str = include_str!("../../../shaders/order.wgsl");

/// Morton bits per axis of the cell key: 2^7 cells across the bounding cube project to about
/// one 16 px screen tile at 2048² (as in the CUDA back-end), and 2^21 counters keep the scan to
/// three short passes.
const CELL_BITS: u32 = 7;
const CELLS: u32 = 1 << (3 * CELL_BITS);
/// Cells per block of the scan (`BLOCK` in order.wgsl).
const BLOCK: u32 = 1024;
/// Block sums one workgroup can scan (`GROUP · TOP_PER` in order.wgsl).
const MAX_BLOCKS: u32 = GROUP * 8;
/// Words of the aux buffer before the block sums (`SUMS_AT` in order.wgsl).
const SUMS_AT: u32 = 8;
/// Workgroups of the grid-stride bounds pass.
const BOUNDS_GROUPS: u32 = 1024;

const _: () = assert!(CELLS / BLOCK <= MAX_BLOCKS && CELLS.is_multiple_of(BLOCK));

/// The reorder's pipelines, compiled once per renderer.
pub(crate) struct OrderPipelines {
    layout: wgpu::BindGroupLayout,
    bounds: wgpu::ComputePipeline,
    keys: wgpu::ComputePipeline,
    block_sums: wgpu::ComputePipeline,
    top_scan: wgpu::ComputePipeline,
    cells_scan: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
}

impl OrderPipelines {
    /// Compiles `shaders/order.wgsl` on `device`; a shader the device rejects is an error.
    pub(crate) fn new(device: &wgpu::Device) -> Result<Self, WgpuError> {
        use super::pipelines::{compute, storage_entry, uniform_entry};
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("shaders/order.wgsl"),
            source: wgpu::ShaderSource::Wgsl(ORDER_SHADER.into()),
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("order"),
            entries: &[
                uniform_entry(0),
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(3, false),
                storage_entry(4, false),
                storage_entry(5, false),
                storage_entry(6, false),
                storage_entry(7, false),
            ],
        });
        let pipelines = Self {
            bounds: compute(device, &layout, &module, "order_bounds"),
            keys: compute(device, &layout, &module, "order_keys"),
            block_sums: compute(device, &layout, &module, "order_block_sums"),
            top_scan: compute(device, &layout, &module, "order_top_scan"),
            cells_scan: compute(device, &layout, &module, "order_cells_scan"),
            scatter: compute(device, &layout, &module, "order_scatter"),
            layout,
        };
        if let Some(err) = pollster::block_on(scope.pop()) {
            return Err(WgpuError::Device {
                message: format!("shaders/order.wgsl: {err}"),
            });
        }
        Ok(pipelines)
    }
}

/// The scratch of the reorder while a data set uploads: the staging chunk in file order, the
/// keys, the cell counters and the bounds with the block sums. Dropped after the upload.
pub(crate) struct Reorder {
    staging: ChunkBuffers,
    keys: wgpu::Buffer,
    cells: wgpu::Buffer,
    aux: wgpu::Buffer,
}

impl Reorder {
    /// Allocates the scratch for chunks of at most `particles` inside an out-of-memory scope.
    pub(crate) fn new(context: &WgpuContext, particles: usize) -> Result<Self, WgpuError> {
        let staging = alloc_chunk(context, particles)?;
        let scope = context
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let buffer = |label, size: u64| {
            context.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        let keys = buffer("order keys", 4 * particles.max(1) as u64);
        let cells = buffer("order cells", 4 * u64::from(CELLS));
        let aux = buffer(
            "order bounds and block sums",
            4 * u64::from(SUMS_AT + MAX_BLOCKS),
        );
        if pollster::block_on(scope.pop()).is_some() {
            return Err(WgpuError::OutOfMemory {
                what: format!("{} MiB of reorder keys", (4 * particles) >> 20),
            });
        }
        Ok(Self {
            staging,
            keys,
            cells,
            aux,
        })
    }

    /// Writes particles `range` of `species` into `target` in cell order: uploaded into the
    /// staging pair, then sorted into `target` by the reorder passes (submitted here).
    pub(crate) fn write_ordered(
        &self,
        context: &WgpuContext,
        pipelines: &OrderPipelines,
        species: &PreparedSpecies,
        range: std::ops::Range<usize>,
        target: &ChunkBuffers,
    ) {
        let n = range.len();
        if n == 0 {
            return;
        }
        // The staging pair is reused chunk after chunk: the write lands before this chunk's
        // submission and after the previous one's passes (wgpu orders them on the queue).
        write_chunk(context, species, range, &self.staging);
        let n = n as u32;
        let blocks = CELLS / BLOCK;
        let device = &context.device;
        let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("order params"),
            contents: bytemuck::cast_slice(&[n, CELL_BITS, CELLS, blocks]),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let start = [u32::MAX, u32::MAX, u32::MAX, 0, 0, 0];
        context
            .queue
            .write_buffer(&self.aux, 0, bytemuck::cast_slice(&start));
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("order"),
            layout: &pipelines.layout,
            entries: &[
                entry(0, &params, None),
                entry(1, &self.staging.pos_h, None),
                entry(2, &self.staging.values, None),
                entry(3, &self.aux, None),
                entry(4, &self.keys, None),
                entry(5, &self.cells, None),
                entry(6, &target.pos_h, None),
                entry(7, &target.values, None),
            ],
        });
        let per_particle = n.div_ceil(GROUP);
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.clear_buffer(&self.cells, 0, None);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("order"),
                timestamp_writes: None,
            });
            pass.set_bind_group(0, &bind, &[]);
            // Passes in one compute pass run in order, each seeing the previous one's writes.
            pass.set_pipeline(&pipelines.bounds);
            pass.dispatch_workgroups(per_particle.clamp(1, BOUNDS_GROUPS), 1, 1);
            let (x, y) = groups_2d(per_particle);
            pass.set_pipeline(&pipelines.keys);
            pass.dispatch_workgroups(x, y, 1);
            pass.set_pipeline(&pipelines.block_sums);
            pass.dispatch_workgroups(blocks, 1, 1);
            pass.set_pipeline(&pipelines.top_scan);
            pass.dispatch_workgroups(1, 1, 1);
            pass.set_pipeline(&pipelines.cells_scan);
            pass.dispatch_workgroups(blocks, 1, 1);
            pass.set_pipeline(&pipelines.scatter);
            pass.dispatch_workgroups(x, y, 1);
        }
        context.queue.submit([encoder.finish()]);
    }
}
