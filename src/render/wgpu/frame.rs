//! One frame on the device: per tile of the image (tiles only where a side exceeds the
//! renderer's tile limit), every species' chunks go through the splat passes of
//! `shaders/splat.wgsl` into the tile's fixed-point τ, resident chunks in batches: classify
//! every chunk of a batch (small splats added with atomics, the others recorded side by side
//! and counted per 16×16 screen tile), one read-back of the counts that the host turns into
//! list offsets and bands of lists that fit, then per band scatter every chunk and one tiles
//! pass. A batch waits for the device once where each chunk did, and sums every species'
//! splats of a screen tile in one workgroup, which adds them to τ once.

use super::WgpuRenderer;
use super::buffers::{READBACK, STORAGE, entry, submit_and_map};
use super::data::{
    ChunkBuffers, POS_H_BYTES, VALUES_BYTES, alloc_chunk, palette_stops, write_chunk,
};
use super::error::WgpuError;
use super::pipelines::{GROUP, TILE, groups_2d};
use crate::render::palette::Palette;
use crate::render::project::ViewParams;
use crate::render::{RenderError, SpeciesStyle};
use wgpu::util::DeviceExt;

/// Bytes of one pixel's fixed-point τ: three channels of (lo, hi) u32 words.
pub(crate) const TAU_PIXEL_BYTES: u64 = 24;
/// Bytes of one particle's splat record (two vec4).
pub(crate) const RECORD_BYTES: u64 = 32;
/// Most list entries of one band (also bounded by the adapter's binding limit): 512 MiB.
pub(crate) const MAX_ENTRIES: u64 = 1 << 27;
/// Most list entries one workgroup of the tiles pass sums (`SEGMENT` in splat.wgsl).
pub(crate) const SEGMENT: u32 = 1024;

/// The shader's `View` uniform: ten vec4s of f32 and two of u32.
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
    grid: [u32; 4],
    tuning: [u32; 4],
}

/// A rectangle of the image drawn in one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tile {
    pub(crate) x0: u32,
    pub(crate) y0: u32,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

impl Tile {
    /// Pixels in the tile.
    pub(crate) fn pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// Screen tiles across and down.
    fn grid(&self) -> (u32, u32) {
        (self.width.div_ceil(TILE), self.height.div_ceil(TILE))
    }
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

/// Everything a chunk's uniform depends on besides the particles.
pub(crate) struct UniformInputs<'a> {
    pub(crate) view: &'a ViewParams,
    pub(crate) style: &'a SpeciesStyle,
    pub(crate) brightness: f32,
    pub(crate) stops: usize,
    pub(crate) has_colour: bool,
    pub(crate) tile: Tile,
    pub(crate) fixed_exponent: i32,
    /// The splat paths (`view.tuning` of shaders/splat.wgsl): widest box added directly,
    /// widest box within a screen tile drawn in workgroup memory, pixel blocks, 21-bit parts.
    pub(crate) paths: [u32; 4],
}

/// The uniform of one species' chunk of `particles` in one tile.
pub(crate) fn view_uniform(inputs: &UniformInputs<'_>, particles: u32) -> ViewUniform {
    let UniformInputs {
        view,
        style,
        brightness,
        stops,
        has_colour,
        tile,
        fixed_exponent,
        paths,
    } = *inputs;
    let [(hx, lx), (hy, ly), (hz, lz)] = view.lookat_world.map(split);
    let v4 = |v: [f32; 3]| [v[0], v[1], v[2], 0.0];
    let (tiles_x, tiles_y) = tile.grid();
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
        colour: [
            if has_colour { 1.0 } else { 0.0 },
            stops as f32,
            1.0,
            power_of_two(fixed_exponent - 32),
        ],
        grid: [tiles_x, tiles_y, particles, 0],
        tuning: paths,
    }
}

/// 2^e as f32 (e within the normal range: [`fixed_exponent`] keeps it there).
pub(crate) fn power_of_two(e: i32) -> f32 {
    2f64.powi(e) as f32
}

/// The fixed-point exponent k of a frame whose every pixel has τ ≤ `bound`: bound·2^k < 2^62,
/// so the high words never overflow; kept where 2^(k − 32), 2^(32 − k) and 2^−k are normal f32.
pub(crate) fn fixed_exponent(bound: f64) -> Result<i32, RenderError> {
    if !bound.is_finite() {
        return Err(RenderError::setting(
            "the tau bound K_A*brightness*sum(1/h) is not finite (smoothing lengths too small)",
        ));
    }
    if bound <= 0.0 {
        return Ok(0);
    }
    let e = (bound * 1.01).log2().floor() as i32 + 1;
    Ok((62 - e).clamp(-94, 126))
}

/// Whether the tiles pass may fold 2^(k − 32) into each splat's rgb (splat.wgsl's `FOLD`):
/// rn(rn(rgb·2^(k−32))·w) then has the bits of rn(rn(rgb·w)·2^(k−32)). A power-of-two scale
/// commutes with rounding where every value is a normal f32, and rgb·2^k is at most the frame's
/// bound (below 2^62), so nothing overflows. Where a product or rgb·2^(k−32) falls below 2^−126
/// (subnormal, or flushed to zero), both sides stay at most 2^−126·max(1, 2^(k−32)), which is
/// at most 2^−34 for k ≤ 124, and give the fixed-point value 0 either way.
pub(crate) fn fold_exact(fixed_exponent: i32) -> bool {
    fixed_exponent <= 124
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
) -> Result<Vec<FrameSpecies<'a>>, RenderError> {
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

/// Ranges of screen tiles whose lists hold at most `cap` entries together (a single tile may
/// hold more only when `cap` is below one chunk, which the renderer's limits rule out).
pub(crate) fn bands(counts: &[u32], cap: u64) -> Vec<(usize, usize, u64)> {
    let mut out = Vec::new();
    let (mut start, mut held) = (0usize, 0u64);
    for (tile, &count) in counts.iter().enumerate() {
        let count = u64::from(count);
        if held + count > cap && tile > start {
            out.push((start, tile, held));
            (start, held) = (tile, 0);
        }
        held += count;
    }
    if held > 0 {
        out.push((start, counts.len(), held));
    }
    out
}

/// One band of screen tiles and its segments.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TableBand {
    /// First screen tile of the band.
    first_tile: u32,
    /// One past its last tile.
    end_tile: u32,
    /// List entries of its tiles together.
    entries: u64,
    /// Its first segment in the table.
    first_segment: u32,
    /// Its segments (workgroups of the tiles pass).
    segments: u32,
}

/// The host's part of a chunk's lists: the tiles' list offsets (tiles + 1 words, an exclusive
/// prefix sum wrapping in u32, since the shader subtracts a band's base in u32 too and a band
/// spans less than 2^32), then (tile, start within its band) per segment of every band.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ListTable {
    /// The offsets, then the segments, as uploaded.
    pub(crate) words: Vec<u32>,
    /// The bands, drawn one after another.
    pub(crate) bands: Vec<TableBand>,
}

/// The list table of `counts` in bands of at most `cap` entries; `None` when no tile has any.
pub(crate) fn list_table(counts: &[u32], cap: u64) -> Option<ListTable> {
    let mut words = Vec::with_capacity(counts.len() + 1);
    let mut sum = 0u64;
    for &count in counts {
        words.push(sum as u32);
        sum += u64::from(count);
    }
    words.push(sum as u32);
    if sum == 0 {
        return None;
    }
    let mut table_bands = Vec::new();
    let mut segment = 0u32;
    for (first, end, held) in bands(counts, cap) {
        let first_segment = segment;
        let base = words[first];
        for (tile, &count) in counts.iter().enumerate().take(end).skip(first) {
            let start = words[tile].wrapping_sub(base);
            for k in 0..count.div_ceil(SEGMENT) {
                words.extend([tile as u32, start + k * SEGMENT]);
                segment += 1;
            }
        }
        table_bands.push(TableBand {
            first_tile: first as u32,
            end_tile: end as u32,
            entries: held,
            first_segment,
            segments: segment - first_segment,
        });
    }
    Some(ListTable {
        words,
        bands: table_bands,
    })
}

/// One resident or streamed chunk of a batch: its particles' buffers, its uniform (whose
/// `grid.w` says where its splat records start in the batch's record buffer) and palette.
struct BatchChunk<'a> {
    chunk: &'a ChunkBuffers,
    uniform: wgpu::Buffer,
    palette: &'a wgpu::Buffer,
    particles: u64,
}

/// Draws every species into the fixed-point τ of `tile` (left in the renderer's τ buffer).
/// Resident chunks go in batches of at most `batch_particles` (see [`super::WgpuTuning`]),
/// streamed ones one at a time (each overwrites the one stream buffer pair).
pub(crate) fn draw_tile(
    renderer: &mut WgpuRenderer,
    view: &ViewParams,
    brightness: f32,
    species: &[FrameSpecies<'_>],
    tile: Tile,
    fixed_exponent: i32,
) -> Result<(), WgpuError> {
    let context = renderer.context.clone();
    let device = &context.device;
    let chunk_len = renderer.chunk_particles.max(1);
    let batch_len = renderer.batch_particles;
    let (tiles_x, tiles_y) = tile.grid();
    let screen_tiles = (tiles_x * tiles_y) as usize;
    let tau_bytes = tile.pixels() * TAU_PIXEL_BYTES;
    let bufs = &mut renderer.buffers;
    let tau = bufs
        .tau
        .at_least(&context, tau_bytes, STORAGE, "fixed-point tau")?;
    let counts_bytes = 4 * screen_tiles as u64;
    let counts = bufs
        .counts
        .at_least(&context, counts_bytes, STORAGE, "tile counts")?;
    let records_len = batch_len.max(chunk_len) as u64;
    let records_bytes = records_len * RECORD_BYTES;
    let records = bufs
        .records
        .at_least(&context, records_bytes, STORAGE, "splat records")?;
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.clear_buffer(&tau, 0, Some(tau_bytes));
    let prepared = renderer
        .prepared
        .as_ref()
        .map(|(_, p)| p)
        .ok_or_else(|| WgpuError::Device {
            message: "no prepared data".into(),
        })?;
    let targets = Targets {
        tau: (&tau, tau_bytes),
        records: (&records, records_bytes),
        counts: (&counts, counts_bytes),
    };
    let mut batch: Vec<BatchChunk<'_>> = Vec::new();
    let mut batched = 0u64;
    for (index, (frame, data)) in species.iter().zip(prepared.iter()).enumerate() {
        let inputs = UniformInputs {
            view,
            style: frame.style,
            brightness,
            stops: frame.stops,
            has_colour: data.has_colour,
            tile,
            fixed_exponent,
            paths: renderer.paths(),
        };
        for (c, start) in (0..data.n).step_by(chunk_len).enumerate() {
            let range = start..data.n.min(start + chunk_len);
            let particles = range.len() as u64;
            let Some(resident) = &renderer.resident else {
                // Streamed: each chunk overwrites the one buffer pair, so the passes so far
                // are submitted first (write_buffer lands before the next submission).
                context.queue.submit([encoder.finish()]);
                if renderer.stream.is_none() {
                    renderer.stream = Some(alloc_chunk(&context, chunk_len)?);
                }
                let stream = renderer.stream.as_ref().ok_or_else(|| WgpuError::Device {
                    message: "stream buffers".into(),
                })?;
                write_chunk(&context, data, range, stream);
                let alone = [BatchChunk {
                    chunk: stream,
                    uniform: chunk_uniform(&context, &inputs, particles as u32, 0),
                    palette: &frame.palette,
                    particles,
                }];
                let parts = renderer_parts(
                    &context,
                    &renderer.pipelines,
                    &mut renderer.buffers,
                    renderer.max_entries,
                    fixed_exponent,
                    renderer.pass_seconds.as_mut(),
                );
                let fresh = device.create_command_encoder(&Default::default());
                encoder = draw_batch(parts, fresh, &targets, &alone, screen_tiles)?;
                continue;
            };
            if !batch.is_empty() && (batch_len == 0 || batched + particles > batch_len as u64) {
                let parts = renderer_parts(
                    &context,
                    &renderer.pipelines,
                    &mut renderer.buffers,
                    renderer.max_entries,
                    fixed_exponent,
                    renderer.pass_seconds.as_mut(),
                );
                encoder = draw_batch(parts, encoder, &targets, &batch, screen_tiles)?;
                batch.clear();
                batched = 0;
            }
            batch.push(BatchChunk {
                chunk: &resident[index][c],
                uniform: chunk_uniform(&context, &inputs, particles as u32, batched as u32),
                palette: &frame.palette,
                particles,
            });
            batched += particles;
        }
    }
    if !batch.is_empty() {
        let parts = renderer_parts(
            &context,
            &renderer.pipelines,
            &mut renderer.buffers,
            renderer.max_entries,
            fixed_exponent,
            renderer.pass_seconds.as_mut(),
        );
        encoder = draw_batch(parts, encoder, &targets, &batch, screen_tiles)?;
    }
    context.queue.submit([encoder.finish()]);
    Ok(())
}

/// The uniform of one chunk whose records start at `record_base` in the batch's buffer.
fn chunk_uniform(
    context: &super::WgpuContext,
    inputs: &UniformInputs<'_>,
    particles: u32,
    record_base: u32,
) -> wgpu::Buffer {
    let mut uniform = view_uniform(inputs, particles);
    uniform.grid[3] = record_base;
    context
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("view"),
            contents: bytemuck::bytes_of(&uniform),
            usage: wgpu::BufferUsages::UNIFORM,
        })
}

/// [`Parts`] from the renderer's fields, borrowed apart from its resident data.
fn renderer_parts<'a>(
    context: &'a super::WgpuContext,
    pipelines: &'a super::pipelines::Pipelines,
    buffers: &'a mut super::buffers::FrameBuffers,
    max_entries: u64,
    fixed_exponent: i32,
    pass_seconds: Option<&'a mut [f64; 4]>,
) -> Parts<'a> {
    Parts {
        context,
        pipelines,
        buffers,
        max_entries,
        tiles: pipelines.tiles_for(fixed_exponent),
        pass_seconds,
    }
}

/// What `draw_batch` needs of the renderer, borrowed apart from its resident data.
struct Parts<'a> {
    context: &'a super::WgpuContext,
    pipelines: &'a super::pipelines::Pipelines,
    buffers: &'a mut super::buffers::FrameBuffers,
    max_entries: u64,
    /// The tiles pass for this frame's fixed-point exponent.
    tiles: &'a wgpu::ComputePipeline,
    /// When profiling: seconds per pass, added to.
    pass_seconds: Option<&'a mut [f64; 4]>,
}

impl Parts<'_> {
    /// When profiling: submits `encoder`, waits for the device and adds the seconds since
    /// `since` to pass `pass`; returns a fresh encoder. Otherwise returns `encoder` as it is.
    fn timed(
        &mut self,
        encoder: wgpu::CommandEncoder,
        pass: usize,
        since: std::time::Instant,
    ) -> Result<wgpu::CommandEncoder, WgpuError> {
        let Some(seconds) = self.pass_seconds.as_deref_mut() else {
            return Ok(encoder);
        };
        self.context.queue.submit([encoder.finish()]);
        self.context.finish()?;
        seconds[pass] += since.elapsed().as_secs_f64();
        Ok(self
            .context
            .device
            .create_command_encoder(&Default::default()))
    }
}

/// The tile's buffers every chunk of a frame draws into, with their bound sizes: τ, the
/// batch's splat records and the screen tiles' counts.
struct Targets<'a> {
    tau: (&'a wgpu::Buffer, u64),
    records: (&'a wgpu::Buffer, u64),
    counts: (&'a wgpu::Buffer, u64),
}

impl BatchChunk<'_> {
    fn bind_group(
        &self,
        parts: &Parts<'_>,
        targets: &Targets<'_>,
        offsets: (&wgpu::Buffer, u64),
        entries: (&wgpu::Buffer, u64),
        band: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        let n = self.particles.max(1);
        parts
            .context
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("splat"),
                layout: &parts.pipelines.splat_layout,
                entries: &[
                    entry(0, &self.uniform, None),
                    entry(1, self.palette, None),
                    entry(2, &self.chunk.pos_h, Some(n * POS_H_BYTES)),
                    entry(3, &self.chunk.values, Some(n * VALUES_BYTES)),
                    entry(4, targets.tau.0, Some(targets.tau.1)),
                    entry(5, targets.records.0, Some(targets.records.1)),
                    entry(6, targets.counts.0, Some(targets.counts.1)),
                    entry(7, offsets.0, Some(offsets.1)),
                    entry(8, entries.0, Some(entries.1.max(4))),
                    entry(9, band, None),
                ],
            })
    }
}

fn dispatch(
    encoder: &mut wgpu::CommandEncoder,
    pipeline: &wgpu::ComputePipeline,
    bind: &wgpu::BindGroup,
    groups: u32,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: None,
        timestamp_writes: None,
    });
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, bind, &[]);
    let (x, y) = groups_2d(groups);
    pass.dispatch_workgroups(x, y, 1);
}

fn band_uniform(context: &super::WgpuContext, range: [u32; 8]) -> wgpu::Buffer {
    context
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("band"),
            contents: bytemuck::cast_slice(&range),
            usage: wgpu::BufferUsages::UNIFORM,
        })
}

/// After what `encoder` holds: classify every chunk of `batch` into one set of tile counts
/// (their records side by side in the batch's buffer, each chunk's from its uniform's record
/// base), read the counts back once, then per band scatter every chunk into the one set of
/// lists (a tile's list holds the chunks' splats one chunk after another, the fill continuing
/// from chunk to chunk) and sum the lists with one tiles pass. Submits what it encoded and
/// returns a fresh encoder.
fn draw_batch(
    mut parts: Parts<'_>,
    mut encoder: wgpu::CommandEncoder,
    targets: &Targets<'_>,
    batch: &[BatchChunk<'_>],
    screen_tiles: usize,
) -> Result<wgpu::CommandEncoder, WgpuError> {
    let context = parts.context;
    let device = &context.device;
    let fresh = || device.create_command_encoder(&Default::default());
    let drawn: Vec<&BatchChunk<'_>> = batch.iter().filter(|c| c.particles > 0).collect();
    let Some(last) = drawn.last() else {
        context.queue.submit([encoder.finish()]);
        return Ok(fresh());
    };
    let groups = |c: &BatchChunk<'_>| c.particles.div_ceil(u64::from(GROUP)) as u32;
    let no_band = band_uniform(context, [0; 8]);
    let entries = parts
        .buffers
        .entries
        .at_least(context, 4, STORAGE, "tile lists")?;
    let table_bytes = 4 * (screen_tiles as u64 + 1);
    let offsets = parts
        .buffers
        .offsets
        .at_least(context, table_bytes, STORAGE, "tile offsets")?;
    let (counts, counts_bytes) = targets.counts;
    encoder.clear_buffer(counts, 0, Some(counts_bytes));
    let classify_start = std::time::Instant::now();
    for chunk in &drawn {
        let bind = chunk.bind_group(
            &parts,
            targets,
            (&offsets, table_bytes),
            (&entries, 4),
            &no_band,
        );
        dispatch(
            &mut encoder,
            &parts.pipelines.classify,
            &bind,
            groups(chunk),
        );
    }
    encoder = parts.timed(encoder, 0, classify_start)?;
    let readback = parts
        .buffers
        .readback
        .at_least(context, counts_bytes, READBACK, "readback")?;
    encoder.copy_buffer_to_buffer(counts, 0, &readback, 0, counts_bytes);
    let tile_counts: Vec<u32> = {
        let bytes = submit_and_map(context, encoder, &readback, counts_bytes)?;
        bytemuck::cast_slice::<u8, u32>(&bytes)[..screen_tiles].to_vec()
    };
    readback.unmap();
    let Some(table) = list_table(&tile_counts, parts.max_entries) else {
        return Ok(fresh());
    };
    let table_bytes = 4 * table.words.len() as u64;
    let offsets = parts
        .buffers
        .offsets
        .at_least(context, table_bytes, STORAGE, "tile offsets")?;
    context
        .queue
        .write_buffer(&offsets, 0, bytemuck::cast_slice(&table.words));
    for band in &table.bands {
        let entries_bytes = 4 * band.entries;
        let entries =
            parts
                .buffers
                .entries
                .at_least(context, entries_bytes, STORAGE, "tile lists")?;
        let uniform = band_uniform(
            context,
            [
                band.first_tile,
                band.end_tile,
                table.words[band.first_tile as usize],
                0,
                band.first_segment,
                band.segments,
                screen_tiles as u32 + 1,
                0,
            ],
        );
        let mut encoder = fresh();
        encoder.clear_buffer(counts, 0, Some(counts_bytes));
        let scatter_start = std::time::Instant::now();
        for chunk in &drawn {
            let bind = chunk.bind_group(
                &parts,
                targets,
                (&offsets, table_bytes),
                (&entries, entries_bytes),
                &uniform,
            );
            dispatch(&mut encoder, &parts.pipelines.scatter, &bind, groups(chunk));
        }
        encoder = parts.timed(encoder, 1, scatter_start)?;
        let tiles_start = std::time::Instant::now();
        // The tiles pass reads the lists and records, not the particles: any chunk's binding
        // serves (the uniform's tile, grid and tuning are the frame's).
        let bind = last.bind_group(
            &parts,
            targets,
            (&offsets, table_bytes),
            (&entries, entries_bytes),
            &uniform,
        );
        dispatch(&mut encoder, parts.tiles, &bind, band.segments);
        encoder = parts.timed(encoder, 2, tiles_start)?;
        context.queue.submit([encoder.finish()]);
    }
    Ok(fresh())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_hold_at_most_the_cap_and_cover_every_listed_tile() {
        let counts = [3, 0, 4, 2, 0, 0, 5, 1];
        assert_eq!(bands(&counts, 6), vec![(0, 2, 3), (2, 6, 6), (6, 8, 6)]);
        // A tile above the cap gets a band of its own.
        assert_eq!(bands(&[2, 9, 2], 4), vec![(0, 1, 2), (1, 2, 9), (2, 3, 2)]);
        assert_eq!(bands(&[0, 0], 4), vec![]);
        assert_eq!(bands(&counts, 100), vec![(0, 8, 15)]);
    }

    #[test]
    fn the_list_table_cuts_dense_tiles_into_segments_per_band() {
        let counts = [3, 0, SEGMENT + 5, 2];
        let table = list_table(&counts, u64::from(SEGMENT) + 7).expect("entries");
        let s = SEGMENT;
        assert_eq!(
            table.words,
            vec![0, 3, 3, s + 8, s + 10, 0, 0, 2, 0, 2, s, 3, s + 5]
        );
        let band = |first_tile, end_tile, entries, first_segment, segments| TableBand {
            first_tile,
            end_tile,
            entries,
            first_segment,
            segments,
        };
        assert_eq!(
            table.bands,
            vec![band(0, 2, 3, 0, 1), band(2, 4, u64::from(s) + 7, 1, 3)]
        );
        assert_eq!(list_table(&[0, 0], 10), None);
    }

    #[test]
    fn the_fixed_exponent_keeps_the_bound_below_2_to_62() {
        assert_eq!(fixed_exponent(1.0).ok(), Some(61));
        assert_eq!(fixed_exponent(0.0).ok(), Some(0));
        for bound in [1e-6, 0.3, 7.0, 1e9] {
            let k = fixed_exponent(bound).expect("finite");
            assert!(bound * 1.01 * 2f64.powi(k) < 2f64.powi(62), "{bound}: {k}");
            assert!(
                bound * 1.01 * 2f64.powi(k + 1) >= 2f64.powi(62),
                "{bound}: {k}"
            );
        }
        assert_eq!(fixed_exponent(1e-60).ok(), Some(126));
        assert!(fixed_exponent(f64::INFINITY).is_err());
    }
}
