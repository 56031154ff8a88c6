//! What leaves the device after a tile is drawn: τ as f32 (the `resolve` pass) or the 8-bit
//! image (the `tone8` pass), each copied into the host-readable buffer and written into the
//! frame's rows on threads.

use super::WgpuRenderer;
use super::buffers::{READBACK, STORAGE, entry, submit_and_map};
use super::error::WgpuError;
use super::frame::{TAU_PIXEL_BYTES, Tile, power_of_two};
use crate::render::TauBuffer;
use rayon::prelude::*;
use wgpu::util::DeviceExt;

/// The tone shader's uniform.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ToneUniform {
    params: [f32; 4],
    fixed: [f32; 4],
    size: [u32; 4],
}

/// A pass over the pixels of a drawn tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PixelPass {
    /// τ as f32, three per pixel.
    Resolve,
    /// The 8-bit image, one RGBA word per pixel.
    Tone8,
    /// The auto exposure's first histogram (65 536 bins of the high 16 bits).
    HistogramHigh,
    /// Its second histogram, of the values in high bin `.0`.
    HistogramLow(u32),
}

/// Encodes `pass` over `tile` into `encoder`, writing `out_bytes` bytes of the frame's `out`
/// buffer (cleared first for the histograms; the tone map's rows `stride` words apart), and
/// returns that buffer.
pub(crate) fn encode_pixel_pass(
    renderer: &mut WgpuRenderer,
    encoder: &mut wgpu::CommandEncoder,
    pass: PixelPass,
    tile: Tile,
    (params, fixed_exponent): ([f32; 3], i32),
    out_bytes: u64,
    stride: u32,
) -> Result<wgpu::Buffer, WgpuError> {
    let context = renderer.context.clone();
    let device = &context.device;
    let tau_bytes = tile.pixels() * TAU_PIXEL_BYTES;
    let bufs = &mut renderer.buffers;
    let tau = bufs
        .tau
        .at_least(&context, tau_bytes, STORAGE, "fixed-point tau")?;
    let out = bufs
        .out
        .at_least(&context, out_bytes, STORAGE, "frame out")?;
    let uniform = ToneUniform {
        params: [params[0], params[1], params[2], 0.0],
        fixed: [
            power_of_two(32 - fixed_exponent),
            power_of_two(-fixed_exponent),
            0.0,
            0.0,
        ],
        size: [
            tile.width,
            tile.height,
            match pass {
                PixelPass::HistogramLow(bin) => bin,
                _ => 0,
            },
            stride,
        ],
    };
    let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("tone"),
        contents: bytemuck::bytes_of(&uniform),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let pipelines = &renderer.pipelines;
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("tone"),
        layout: &pipelines.tone_layout,
        entries: &[
            entry(0, &uniform, None),
            entry(1, &tau, Some(tau_bytes)),
            entry(2, &out, Some(out_bytes)),
        ],
    });
    let pipeline = match pass {
        PixelPass::Resolve => &pipelines.resolve,
        PixelPass::Tone8 => &pipelines.tone8,
        PixelPass::HistogramHigh => {
            encoder.clear_buffer(&out, 0, Some(out_bytes));
            &pipelines.histogram_high
        }
        PixelPass::HistogramLow(_) => {
            encoder.clear_buffer(&out, 0, Some(out_bytes));
            &pipelines.histogram_low
        }
    };
    let mut compute = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("pixels"),
        timestamp_writes: None,
    });
    compute.set_pipeline(pipeline);
    compute.set_bind_group(0, &bind, &[]);
    compute.dispatch_workgroups(tile.width.div_ceil(16), tile.height.div_ceil(16), 1);
    drop(compute);
    Ok(out)
}

/// Runs `pass` over `tile`, writing `out_bytes` bytes (cleared first for the histograms), and
/// maps them; the caller reads the returned buffer's first `out_bytes` and unmaps it.
pub(crate) fn run_and_map(
    renderer: &mut WgpuRenderer,
    pass: PixelPass,
    tile: Tile,
    params: [f32; 3],
    fixed_exponent: i32,
    out_bytes: u64,
) -> Result<wgpu::Buffer, WgpuError> {
    let context = renderer.context.clone();
    let readback = renderer
        .buffers
        .readback
        .at_least(&context, out_bytes, READBACK, "readback")?;
    let mut encoder = context.device.create_command_encoder(&Default::default());
    let out = encode_pixel_pass(
        renderer,
        &mut encoder,
        pass,
        tile,
        (params, fixed_exponent),
        out_bytes,
        tile.width,
    )?;
    encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, out_bytes);
    // Mapped here and unmapped by the caller once the rows are copied.
    drop(submit_and_map(&context, encoder, &readback, out_bytes)?);
    Ok(readback)
}

/// Resolves the tile's fixed-point τ to f32 on the device and writes it into `tau`.
pub(crate) fn read_back_tau(
    renderer: &mut WgpuRenderer,
    tile: Tile,
    fixed_exponent: i32,
    tau: &mut TauBuffer,
) -> Result<(), WgpuError> {
    let out_bytes = tile.pixels() * 12;
    let readback = run_and_map(
        renderer,
        PixelPass::Resolve,
        tile,
        [1.0; 3],
        fixed_exponent,
        out_bytes,
    )?;
    {
        let bytes = readback
            .slice(0..out_bytes)
            .get_mapped_range()
            .map_err(|err| WgpuError::Readback {
                message: err.to_string(),
            })?;
        let values: &[f32] = bytemuck::cast_slice(&bytes);
        let row_out = tau.width as usize * 3;
        let (x0, y0, w) = (tile.x0 as usize, tile.y0 as usize, tile.width as usize);
        tau.data
            .par_chunks_mut(row_out)
            .skip(y0)
            .zip(values.par_chunks_exact(3 * w))
            .for_each(|(out, src)| out[3 * x0..3 * (x0 + w)].copy_from_slice(src));
    }
    readback.unmap();
    Ok(())
}

/// Tone-maps the tile's τ on the device (8 bits; `tone`: τ scale, gamma, contrast) and writes
/// its pixels into `image` (`width` pixels a row, `channels` bytes a pixel: 3 for RGB, 4 for
/// the device's own opaque RGBA).
pub(crate) fn read_back_image(
    renderer: &mut WgpuRenderer,
    tile: Tile,
    tone: [f32; 3],
    fixed_exponent: i32,
    image: &mut [u8],
    (width, channels): (u32, usize),
) -> Result<(), WgpuError> {
    let out_bytes = tile.pixels() * 4;
    let readback = run_and_map(
        renderer,
        PixelPass::Tone8,
        tile,
        tone,
        fixed_exponent,
        out_bytes,
    )?;
    {
        let bytes = readback
            .slice(0..out_bytes)
            .get_mapped_range()
            .map_err(|err| WgpuError::Readback {
                message: err.to_string(),
            })?;
        // Row by row on threads: the image's rows are disjoint slices of `image`.
        let (row_in, row_out) = (tile.width as usize * 4, width as usize * channels);
        let (x0, y0, w) = (tile.x0 as usize, tile.y0 as usize, tile.width as usize);
        image
            .par_chunks_mut(row_out)
            .skip(y0)
            .zip(bytes.par_chunks_exact(row_in))
            .for_each(|(out, src)| {
                let dst = &mut out[channels * x0..channels * (x0 + w)];
                if channels == 4 {
                    dst.copy_from_slice(src);
                } else {
                    for (d, s) in dst.chunks_exact_mut(3).zip(src.chunks_exact(4)) {
                        d.copy_from_slice(&s[..3]);
                    }
                }
            });
    }
    readback.unmap();
    Ok(())
}
