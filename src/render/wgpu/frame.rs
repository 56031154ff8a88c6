//! One frame on the device: per tile of the image (tiles only where a side exceeds the
//! renderer's tile limit), one render pass per species and chunk adds the splats into the
//! Rgba32Float target, which is then read back into τ.

use super::WgpuRenderer;
use super::data::{ChunkBuffers, POS_H_BYTES, alloc_chunk, palette_stops, write_chunk};
use super::error::WgpuError;
use crate::render::palette::Palette;
use crate::render::project::ViewParams;
use crate::render::{SpeciesStyle, TauBuffer};
use rayon::prelude::*;
use wgpu::util::DeviceExt;

/// The shader's `View` uniform: ten vec4s.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ViewUniform {
    lookat_hi: [f32; 4],
    lookat_lo: [f32; 4],
    x_hat: [f32; 4],
    y_hat: [f32; 4],
    z_hat: [f32; 4],
    camera: [f32; 4],
    image: [f32; 4],
    style: [f32; 4],
    tile: [f32; 4],
    colour: [f32; 4],
}

/// A rectangle of the image drawn in one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tile {
    pub(crate) x0: u32,
    pub(crate) y0: u32,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

/// The tiles of a `width`×`height` image, at most `side` pixels a side, row by row.
pub(crate) fn tiles(width: u32, height: u32, side: u32) -> Vec<Tile> {
    let side = side.max(1);
    let mut out = Vec::new();
    for y0 in (0..height).step_by(side as usize) {
        for x0 in (0..width).step_by(side as usize) {
            out.push(Tile {
                x0,
                y0,
                width: side.min(width - x0),
                height: side.min(height - y0),
            });
        }
    }
    out
}

fn split(v: f64) -> (f32, f32) {
    let hi = v as f32;
    (hi, (v - f64::from(hi)) as f32)
}

/// The uniform of one species in one tile.
pub(crate) fn view_uniform(
    view: &ViewParams,
    style: &SpeciesStyle,
    brightness: f32,
    stops: usize,
    has_colour: bool,
    tile: Tile,
) -> ViewUniform {
    let [(hx, lx), (hy, ly), (hz, lz)] = view.lookat_world.map(split);
    let v4 = |v: [f32; 3]| [v[0], v[1], v[2], 0.0];
    ViewUniform {
        lookat_hi: [hx, hy, hz, 0.0],
        lookat_lo: [lx, ly, lz, 0.0],
        x_hat: v4(view.x_hat),
        y_hat: v4(view.y_hat),
        z_hat: v4(view.z_hat),
        camera: [view.distance, view.scale, view.half_width, view.half_height],
        image: [
            view.width_px as f32,
            view.height_px as f32,
            view.near,
            view.far,
        ],
        style: [
            view.min_radius_px,
            style.size_factor,
            style.brightness * brightness,
            if view.perspective { 1.0 } else { 0.0 },
        ],
        tile: [
            tile.x0 as f32,
            tile.y0 as f32,
            tile.width as f32,
            tile.height as f32,
        ],
        // z: the exact 1 the shader multiplies products by to keep them unfused.
        colour: [if has_colour { 1.0 } else { 0.0 }, stops as f32, 1.0, 0.0],
    }
}

/// Per species of a frame: its palette buffer and style.
pub(crate) struct FrameSpecies<'a> {
    pub(crate) style: &'a SpeciesStyle,
    pub(crate) palette: wgpu::Buffer,
    pub(crate) stops: usize,
}

/// Builds the per-species palette buffers of a frame.
pub(crate) fn frame_species<'a>(
    renderer: &WgpuRenderer,
    styles: &'a [SpeciesStyle],
) -> Result<Vec<FrameSpecies<'a>>, crate::render::RenderError> {
    styles
        .iter()
        .map(|style| {
            let stops = palette_stops(&Palette::by_name(&style.palette)?);
            let palette =
                renderer
                    .context
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("palette"),
                        contents: bytemuck::cast_slice(&stops),
                        usage: wgpu::BufferUsages::STORAGE,
                    });
            Ok(FrameSpecies {
                style,
                palette,
                stops: stops.len(),
            })
        })
        .collect()
}

/// Encodes every species' passes into the target of `tile` (resident chunks, or streamed
/// through one buffer pair, submitting as it goes); the returned encoder holds the last ones.
pub(crate) fn draw_tile(
    renderer: &mut WgpuRenderer,
    view: &ViewParams,
    brightness: f32,
    species: &[FrameSpecies<'_>],
    tile: Tile,
) -> Result<wgpu::CommandEncoder, WgpuError> {
    let context = renderer.context.clone();
    let device = &context.device;
    let target = renderer.target(tile.width, tile.height)?;
    let target_view = target.create_view(&wgpu::TextureViewDescriptor::default());
    let mut first = true;
    let chunk_len = renderer.chunk_particles;
    let prepared = renderer
        .prepared
        .as_ref()
        .map(|(_, p)| p)
        .ok_or_else(|| WgpuError::Device {
            message: "no prepared data".into(),
        })?;
    let mut encoder = device.create_command_encoder(&Default::default());
    for (index, (frame, data)) in species.iter().zip(prepared.iter()).enumerate() {
        let uniform = view_uniform(
            view,
            frame.style,
            brightness,
            frame.stops,
            data.has_colour,
            tile,
        );
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("view"),
            contents: bytemuck::bytes_of(&uniform),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        for (c, start) in (0..data.n).step_by(chunk_len.max(1)).enumerate() {
            let range = start..data.n.min(start + chunk_len);
            let buffers: &ChunkBuffers = match &renderer.resident {
                Some(resident) => &resident[index][c],
                None => {
                    // Streamed: each chunk overwrites the one buffer pair, so the passes so
                    // far are submitted first (write_buffer lands before the next submission).
                    context.queue.submit([encoder.finish()]);
                    encoder = device.create_command_encoder(&Default::default());
                    let stream = match &renderer.stream {
                        Some(s) => s,
                        None => {
                            renderer.stream = Some(alloc_chunk(&context, chunk_len)?);
                            renderer.stream.as_ref().ok_or_else(|| WgpuError::Device {
                                message: "stream buffers".into(),
                            })?
                        }
                    };
                    write_chunk(&context, data, range.clone(), stream);
                    stream
                }
            };
            let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("splat"),
                layout: &renderer.layout,
                entries: &[
                    entry(0, &uniform, None),
                    entry(1, &frame.palette, None),
                    entry(2, &buffers.pos_h, Some(range.len() as u64 * POS_H_BYTES)),
                    entry(3, &buffers.values, Some(range.len() as u64 * 8)),
                ],
            });
            pass(
                &mut encoder,
                &renderer.pipeline,
                &target_view,
                &bind,
                range.len(),
                first,
            );
            first = false;
        }
    }
    if first {
        pass_clear(&mut encoder, &target_view);
    }
    Ok(encoder)
}

fn entry(binding: u32, buffer: &wgpu::Buffer, size: Option<u64>) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer,
            offset: 0,
            size: size.and_then(wgpu::BufferSize::new),
        }),
    }
}

fn attachment(view: &wgpu::TextureView, clear: bool) -> wgpu::RenderPassColorAttachment<'_> {
    wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations {
            load: if clear {
                wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT)
            } else {
                wgpu::LoadOp::Load
            },
            store: wgpu::StoreOp::Store,
        },
    }
}

fn pass(
    encoder: &mut wgpu::CommandEncoder,
    pipeline: &wgpu::RenderPipeline,
    target: &wgpu::TextureView,
    bind: &wgpu::BindGroup,
    particles: usize,
    clear: bool,
) {
    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("splats"),
        color_attachments: &[Some(attachment(target, clear))],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    if particles > 0 {
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind, &[]);
        pass.draw(0..3, 0..particles as u32);
    }
}

fn pass_clear(encoder: &mut wgpu::CommandEncoder, target: &wgpu::TextureView) {
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("clear"),
        color_attachments: &[Some(attachment(target, true))],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
}

/// Copies the target into the readback buffer, waits, and writes the tile's RGB into τ.
pub(crate) fn read_back_tau(
    renderer: &mut WgpuRenderer,
    mut encoder: wgpu::CommandEncoder,
    tile: Tile,
    tau: &mut TauBuffer,
) -> Result<(), WgpuError> {
    let row_bytes = u64::from(tile.width) * 16;
    let padded = row_bytes.div_ceil(256) * 256;
    let size = padded * u64::from(tile.height);
    let readback = renderer.readback(size)?;
    let target = renderer.target(tile.width, tile.height)?;
    encoder.copy_texture_to_buffer(
        target.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &readback,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded as u32),
                rows_per_image: None,
            },
        },
        wgpu::Extent3d {
            width: tile.width,
            height: tile.height,
            depth_or_array_layers: 1,
        },
    );
    let bytes = submit_and_map(&renderer.context, encoder, &readback, size)?;
    {
        let texels: &[f32] = bytemuck::cast_slice(&bytes);
        let stride = (padded / 4) as usize;
        let row_out = tau.width as usize * 3;
        let (x0, y0, w) = (tile.x0 as usize, tile.y0 as usize, tile.width as usize);
        tau.data
            .par_chunks_mut(row_out)
            .skip(y0)
            .zip(texels.par_chunks(stride))
            .for_each(|(out, src)| {
                let dst = &mut out[3 * x0..3 * (x0 + w)];
                for (d, s) in dst.chunks_exact_mut(3).zip(src[..4 * w].chunks_exact(4)) {
                    d.copy_from_slice(&s[..3]);
                }
            });
    }
    drop(bytes);
    readback.unmap();
    Ok(())
}

/// Tone-maps the target of `tile` on the device (8 bits) and writes its RGB into `image`
/// (`width` pixels a row, 3 bytes a pixel).
pub(crate) fn read_back_image(
    renderer: &mut WgpuRenderer,
    mut encoder: wgpu::CommandEncoder,
    tile: Tile,
    tone: [f32; 3],
    image: &mut [u8],
    width: u32,
) -> Result<(), WgpuError> {
    let device = renderer.context.device.clone();
    let pixels = u64::from(tile.width) * u64::from(tile.height);
    let size = pixels * 4;
    let packed = renderer.packed(size)?;
    let readback = renderer.readback(size)?;
    let target = renderer.target(tile.width, tile.height)?;
    let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("tone"),
        contents: bytemuck::cast_slice(&[tone[0], tone[1], tone[2], tile.width as f32]),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let target_view = target.create_view(&wgpu::TextureViewDescriptor::default());
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("tone"),
        layout: &renderer.tone_layout,
        entries: &[
            entry(0, &uniform, None),
            wgpu::BindGroupEntry {
                binding: 1,
                resource: wgpu::BindingResource::TextureView(&target_view),
            },
            entry(2, &packed, Some(size)),
        ],
    });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("tone8"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&renderer.tone_pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(tile.width.div_ceil(16), tile.height.div_ceil(16), 1);
    }
    encoder.copy_buffer_to_buffer(&packed, 0, &readback, 0, size);
    let bytes = submit_and_map(&renderer.context, encoder, &readback, size)?;
    {
        // Row by row on threads: the image's rows are disjoint slices of `image`.
        let (row_in, row_out) = (tile.width as usize * 4, width as usize * 3);
        let (x0, y0, w) = (tile.x0 as usize, tile.y0 as usize, tile.width as usize);
        image
            .par_chunks_mut(row_out)
            .skip(y0)
            .zip(bytes.par_chunks_exact(row_in))
            .for_each(|(out, src)| {
                let dst = &mut out[3 * x0..3 * (x0 + w)];
                for (d, s) in dst.chunks_exact_mut(3).zip(src.chunks_exact(4)) {
                    d.copy_from_slice(&s[..3]);
                }
            });
    }
    drop(bytes);
    readback.unmap();
    Ok(())
}

/// Submits `encoder`, maps the first `size` bytes of `readback` and waits for them.
fn submit_and_map(
    context: &super::WgpuContext,
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
