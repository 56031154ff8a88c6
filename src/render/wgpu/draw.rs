//! Drawing one tile of the image on the device: every species' chunks go through the splat
//! passes of `shaders/splat.wgsl` into the tile's fixed-point τ, resident chunks in batches:
//! classify every chunk of a batch (small splats added with atomics, the others recorded side
//! by side and counted per 16×16 screen tile), one read-back of the counts that the host turns
//! into list offsets and bands of lists that fit ([`super::frame::list_table`]), then per band
//! scatter every chunk and one tiles pass. A batch waits for the device once where each chunk
//! did, and sums every species' splats of a screen tile in one workgroup, which adds them to τ
//! once.

use super::WgpuRenderer;
use super::buffers::{READBACK, STORAGE, entry, submit_and_map};
use super::data::{ChunkBuffers, POS_H_BYTES, VALUES_BYTES, alloc_chunk, write_chunk};
use super::error::WgpuError;
use super::frame::{
    FrameSpecies, RECORD_BYTES, TAU_PIXEL_BYTES, Tile, UniformInputs, list_table, view_uniform,
};
use super::pipelines::{GROUP, groups_2d};
use crate::render::project::ViewParams;
use wgpu::util::DeviceExt;

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
