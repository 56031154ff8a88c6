//! Device buffers of the CUDA renderer: resident particle data, per-chunk scratch (halved while
//! memory runs out), per-image τ and image buffers.

use super::data;
use super::reorder;
use super::{CudaRenderer, ImageBuffers, MIN_CHUNK, Scratch, is_out_of_memory};
use crate::data::Snapshot;
use crate::gpu::GpuError;
use crate::render::{RenderError, RenderSettings};

/// Uploads every species when data plus scratch fit in device memory (else they stream).
pub(super) fn make_resident(
    r: &mut CudaRenderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
    loaded: &mut [data::LoadedSpecies],
) -> Result<(), RenderError> {
    let total: usize = loaded.iter().map(|s| s.n).sum();
    if !r.tuning.resident {
        return Ok(());
    }
    let (free, _) = r.device.memory()?;
    let bytes: usize = loaded
        .iter()
        .zip(&settings.species)
        .map(|(s, style)| {
            s.n * (16
                + 4 * usize::from(style.intensity.is_some())
                + 4 * usize::from(style.colour.is_some()))
        })
        .sum();
    let scratch = r.tuning.chunk_particles.min(total.max(1)) * 64;
    let image = settings.width as usize * settings.height as usize * 3 * 14;
    if bytes + scratch + image > free / 10 * 9 {
        return Ok(());
    }
    for (species, style) in loaded.iter_mut().zip(&settings.species) {
        if species.n == 0 {
            continue;
        }
        let host = species.host(snapshot, style)?;
        let arrays = data::alloc_arrays(
            &r.copy,
            species.n,
            host.intensity.is_some(),
            host.colour.is_some(),
        );
        let mut arrays = match arrays {
            Ok(a) => a,
            Err(e) if is_out_of_memory(&e) => {
                // Does not fit after all: stream everything.
                loaded.iter_mut().for_each(|s| {
                    s.resident = None;
                    s.device_order = None;
                });
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        data::upload_range(&mut r.staging, &r.copy, &host, 0..species.n, &mut arrays)?;
        if r.tuning.morton_upload && species.n > 1 {
            // On the copy stream, after the upload; None (file order kept) when the second
            // copy does not fit.
            species.device_order =
                reorder::morton_reorder(&r.kernels.order, &r.copy, &mut arrays, species.n)?;
        }
        species.resident = Some(arrays);
    }
    r.copy.synchronize().map_err(GpuError::from)?;
    Ok(())
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
            Err(e) if is_out_of_memory(&e) && capacity / 2 >= MIN_CHUNK => capacity /= 2,
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
        border_slots: None,
        dummy_u64: s.alloc_zeros(1)?,
        dummy_u32: s.alloc_zeros(1)?,
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
        image8: s.alloc_zeros(n)?,
        image16: s.alloc_zeros(n)?,
    });
    Ok(())
}

/// Makes the medium pass's border buffers hold at least `values` words (grown, never shrunk);
/// false when they do not fit in device memory (the pass then uses atomics).
pub(super) fn ensure_border_slots(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    scratch: &mut Scratch,
    values: usize,
) -> Result<bool, GpuError> {
    if scratch
        .border_slots
        .as_ref()
        .is_some_and(|s| s.len() >= values)
    {
        return Ok(true);
    }
    scratch.border_slots = None;
    // SAFETY: the medium pass writes every ring value of a block's slot before the combine
    // pass reads it, and reads only slots of blocks that ran.
    match unsafe { stream.alloc::<u64>(values.max(1)) } {
        Ok(slots) => {
            scratch.border_slots = Some(slots);
            Ok(true)
        }
        Err(e) => {
            let e = GpuError::from(e);
            if is_out_of_memory(&e) {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}
