//! The renderer's scratch buffers on the device, kept between frames and grown on demand:
//! the fixed-point τ of an image tile, the per-particle splat records, the screen tiles'
//! counts, offsets and lists, the outgoing pixels and the host-readable copy.

use super::context::WgpuContext;
use super::error::WgpuError;

/// One buffer reused while it is large enough.
#[derive(Default)]
pub(crate) struct Scratch {
    buffer: Option<(u64, wgpu::Buffer)>,
}

impl Scratch {
    /// The buffer, at least `size` bytes (4 at least), allocated with `usage` inside an
    /// out-of-memory scope when the current one is too small.
    pub(crate) fn at_least(
        &mut self,
        context: &WgpuContext,
        size: u64,
        usage: wgpu::BufferUsages,
        label: &'static str,
    ) -> Result<wgpu::Buffer, WgpuError> {
        let size = size.max(4).next_multiple_of(4);
        if let Some((have, buffer)) = &self.buffer
            && *have >= size
        {
            return Ok(buffer.clone());
        }
        self.buffer = None;
        let scope = context
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = context.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        });
        if pollster::block_on(scope.pop()).is_some() {
            return Err(WgpuError::OutOfMemory {
                what: format!("{} MiB of {label}", size.div_ceil(1 << 20)),
            });
        }
        self.buffer = Some((size, buffer.clone()));
        Ok(buffer)
    }
}

/// Usage of the device-only buffers.
pub(crate) const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);
/// Usage of the host-readable copies.
pub(crate) const READBACK: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_READ.union(wgpu::BufferUsages::COPY_DST);

/// Every scratch buffer of the renderer.
#[derive(Default)]
pub(crate) struct FrameBuffers {
    /// Fixed-point τ: 6 u32 words per pixel of the image tile.
    pub(crate) tau: Scratch,
    /// Two vec4 per particle of a chunk.
    pub(crate) records: Scratch,
    /// One u32 per screen tile (+1).
    pub(crate) counts: Scratch,
    /// One u32 per screen tile + 1.
    pub(crate) offsets: Scratch,
    /// The tile lists of one band.
    pub(crate) entries: Scratch,
    /// The tone map's or resolve's output.
    pub(crate) out: Scratch,
    /// The host-readable copy of `out` or of the counts.
    pub(crate) readback: Scratch,
}

/// Submits `encoder`, maps the first `size` bytes of `readback` and waits for them.
pub(crate) fn submit_and_map(
    context: &WgpuContext,
    encoder: wgpu::CommandEncoder,
    readback: &wgpu::Buffer,
    size: u64,
) -> Result<wgpu::BufferView, WgpuError> {
    context.queue.submit([encoder.finish()]);
    let slice = readback.slice(0..size);
    let (sender, receiver) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    context.finish()?;
    let readback_error = |message: String| WgpuError::Readback { message };
    receiver
        .recv()
        .map_err(|err| readback_error(err.to_string()))?
        .map_err(|err| readback_error(err.to_string()))?;
    slice
        .get_mapped_range()
        .map_err(|err| readback_error(err.to_string()))
}

/// A whole-buffer (or first `size` bytes) binding.
pub(crate) fn entry(
    binding: u32,
    buffer: &wgpu::Buffer,
    size: Option<u64>,
) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer,
            offset: 0,
            size: size.and_then(wgpu::BufferSize::new),
        }),
    }
}
