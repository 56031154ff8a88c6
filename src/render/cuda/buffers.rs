//! Device buffers of the CUDA renderer: resident particle data, per-chunk scratch (halved while
//! memory runs out), per-image τ and image buffers.

use super::CudaRenderer;
use super::data;
use super::params::{LargeC, SplatC};
use super::tuning::MIN_CHUNK;
use crate::gpu::GpuError;
use crate::render::RenderError;
use cudarc::driver::CudaSlice;

/// Per-chunk device scratch, sized for `capacity` particles and `n_tiles` tiles.
#[derive(Debug)]
pub(super) struct Scratch {
    pub(super) capacity: usize,
    pub(super) n_tiles: usize,
    /// The sort's buffers, used by every pass.
    pub(super) sort: SortBuffers,
    /// Streaming: two sets of particle arrays used in turn.
    pub(super) streamed: Vec<data::DeviceArrays>,
}

/// Keys, histogram and sorted splats of one chunk. The key ranges are the medium tiles, then the
/// wide-border tiles of large splats: 2·n_tiles + 1 entries per table.
#[derive(Debug)]
pub(super) struct SortBuffers {
    pub(super) keys: CudaSlice<u32>,
    pub(super) tile_count: CudaSlice<u32>,
    pub(super) tile_start: CudaSlice<u32>,
    pub(super) cursor: CudaSlice<u32>,
    pub(super) seg_start: CudaSlice<u32>,
    pub(super) sorted: CudaSlice<SplatC>,
    pub(super) large: CudaSlice<LargeC>,
    pub(super) large_count: CudaSlice<u32>,
    /// Particles per class (inactive, small, medium, large) over the frame.
    pub(super) class_count: CudaSlice<u64>,
    /// Stand-in for the permutation when the chunk is in file order.
    pub(super) dummy_u32: CudaSlice<u32>,
}

/// Per-image device buffers (3·W·H values each; a grey frame uses W·H of `tau_fixed`).
#[derive(Debug)]
pub(super) struct ImageBuffers {
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) tau_fixed: CudaSlice<u64>,
    pub(super) tau: CudaSlice<f32>,
    pub(super) tau_cpu: CudaSlice<f32>,
    pub(super) image8: CudaSlice<u8>,
    pub(super) image16: CudaSlice<u16>,
    /// The auto exposure's 2^16-bin histogram.
    pub(super) hist: CudaSlice<u32>,
    /// The last frame's fixed-point exponent k (τ = value·2^−k) and values per pixel in
    /// `tau_fixed` (3, or 1 for a grey frame), for sums of several devices' images.
    pub(super) fixed_exponent: i32,
    pub(super) fixed_channels: u32,
}

/// Allocates the per-chunk scratch, halving the chunk while memory runs out.
pub(super) fn ensure_scratch(
    r: &mut CudaRenderer,
    n_tiles: usize,
    total: usize,
    streamed: bool,
    widths: (bool, bool),
) -> Result<(), RenderError> {
    let wanted = r.tuning.chunk_particles.min(total.max(1024));
    if let Some(s) = &r.scratch
        && s.n_tiles == n_tiles
        && s.capacity >= wanted.min(MIN_CHUNK)
        && (!streamed || !s.streamed.is_empty())
    {
        return Ok(());
    }
    r.scratch = None;
    let mut capacity = wanted;
    loop {
        match alloc_scratch(r, capacity, n_tiles, streamed, widths) {
            Ok(s) => {
                r.scratch = Some(s);
                return Ok(());
            }
            Err(e) if e.is_out_of_memory() && capacity / 2 >= MIN_CHUNK => capacity /= 2,
            Err(e) => return Err(e.into()),
        }
    }
}

fn alloc_scratch(
    r: &CudaRenderer,
    capacity: usize,
    n_tiles: usize,
    streamed: bool,
    (intensity, colour): (bool, bool),
) -> Result<Scratch, GpuError> {
    let s = &r.compute;
    let mut sets = Vec::new();
    if streamed {
        for _ in 0..2 {
            sets.push(data::alloc_arrays(s, capacity, intensity, colour)?);
        }
    }
    Ok(Scratch {
        capacity,
        n_tiles,
        sort: SortBuffers {
            keys: s.alloc_zeros(capacity)?,
            // Two key ranges: medium tiles, then the wide-border tiles of large splats.
            tile_count: s.alloc_zeros(2 * n_tiles + 1)?,
            tile_start: s.alloc_zeros(2 * n_tiles + 1)?,
            cursor: s.alloc_zeros(2 * n_tiles + 1)?,
            seg_start: s.alloc_zeros(2 * n_tiles + 1)?,
            sorted: s.alloc_zeros(capacity)?,
            large: s.alloc_zeros(capacity)?,
            large_count: s.alloc_zeros(1)?,
            class_count: s.alloc_zeros(4)?,
            dummy_u32: s.alloc_zeros(1)?,
        },
        streamed: sets,
    })
}

pub(super) fn ensure_image(r: &mut CudaRenderer, width: u32, height: u32) -> Result<(), GpuError> {
    if r.image
        .as_ref()
        .is_some_and(|i| i.width == width && i.height == height)
    {
        return Ok(());
    }
    r.image = None;
    let n = width as usize * height as usize * 3;
    let s = &r.compute;
    r.image = Some(ImageBuffers {
        width,
        height,
        tau_fixed: s.alloc_zeros(n)?,
        tau: s.alloc_zeros(n)?,
        tau_cpu: s.alloc_zeros(n)?,
        // Room for RGBA, the window's layout.
        image8: s.alloc_zeros(width as usize * height as usize * 4)?,
        image16: s.alloc_zeros(n)?,
        hist: s.alloc_zeros(1 << 16)?,
        fixed_exponent: 0,
        fixed_channels: 3,
    });
    Ok(())
}
