//! One frame of the CUDA pipeline (see the module docs of [`super`]).

use super::data::{self, HostArrays};
use super::params::{LargeC, StyleC, ViewC};
use super::{CudaRenderer, ImageBuffers, LargePath, MIN_CHUNK, Scratch, is_out_of_memory};
use crate::data::Snapshot;
use crate::gpu::GpuError;
use crate::jobs::Progress;
use crate::render::palette::Palette;
use crate::render::project::{AMPLITUDE_FACTOR, Splat, StyleParams, ViewParams};
use crate::render::{
    Brightness, ClassCounts, RenderError, RenderSettings, RenderStats, StageTime, ToneSettings,
};
use cudarc::driver::{CudaEvent, CudaSlice, CudaView, LaunchConfig, PushKernelArg, sys};
use std::rc::Rc;
use std::time::Instant;

/// Threads per block of the per-particle and per-pixel kernels.
const BLOCK: u32 = 256;
/// Largest dynamic shared memory the tile kernel may ask for (Hopper allows 227 KiB).
const MAX_TILE_SHARED_BYTES: usize = 200 * 1024;

/// Per-stage GPU kernel times of one frame, in milliseconds (CUDA events, summed over chunks).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FrameTimings {
    /// Stage name and milliseconds.
    pub stages: Vec<(&'static str, f64)>,
}

fn grid(n: usize, per_block: usize) -> u32 {
    n.div_ceil(per_block).max(1) as u32
}

fn launch_config(blocks: u32, shared: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: shared as u32,
    }
}

/// Records (stage, start, end) event pairs on the compute stream.
struct Timer {
    marks: Vec<(&'static str, Rc<CudaEvent>, Rc<CudaEvent>)>,
}

impl Timer {
    fn event(stream: &cudarc::driver::CudaStream) -> Result<Rc<CudaEvent>, GpuError> {
        Ok(Rc::new(stream.record_event(Some(
            sys::CUevent_flags::CU_EVENT_DEFAULT,
        ))?))
    }

    fn times(&self) -> Result<Vec<(&'static str, f64)>, GpuError> {
        let mut out: Vec<(&'static str, f64)> = Vec::new();
        for (stage, a, b) in &self.marks {
            let ms = f64::from(a.elapsed_ms(b)?);
            match out.iter_mut().find(|(s, _)| s == stage) {
                Some(entry) => entry.1 += ms,
                None => out.push((stage, ms)),
            }
        }
        Ok(out)
    }
}

/// The fixed-point exponent k for a frame whose every pixel has τ ≤ `bound`: bound·2^k ≤ 2^62.
fn fixed_exponent(bound: f64) -> Result<i32, RenderError> {
    if !bound.is_finite() {
        return Err(RenderError::setting(
            "the tau bound K_A*brightness*sum(1/h) is not finite (smoothing lengths too small)",
        ));
    }
    if bound <= 0.0 {
        return Ok(0);
    }
    let e = bound.log2().floor() as i32 + 1;
    Ok((62 - e).clamp(-1000, 1000))
}

pub(super) fn render_frame(
    r: &mut CudaRenderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<RenderStats, RenderError> {
    let start = Instant::now();
    let view = ViewParams::new(
        &settings.camera,
        settings.width,
        settings.height,
        settings.min_radius_px,
        settings.border_px,
    )?;
    let global_brightness = match settings.brightness {
        Brightness::Explicit(b) if !(b >= 0.0 && b.is_finite()) => {
            return Err(RenderError::setting(format!(
                "brightness {b} must be a finite number >= 0"
            )));
        }
        Brightness::Explicit(b) => b,
        Brightness::Auto { .. } => 1.0,
    };
    if settings.species.is_empty() {
        return Err(RenderError::setting("no species to render"));
    }
    let tile_px = r.tuning.tile_px as usize;
    // Border w plus the CPU box's one-pixel widening plus one pixel against f32 rounding.
    let margin = settings.border_px.ceil() as usize + 2;
    let side = tile_px + 2 * margin;
    let tile_shared = side * side * 3 * 8;
    if tile_shared > MAX_TILE_SHARED_BYTES {
        return Err(RenderError::setting(format!(
            "tile border {} px is too wide for the CUDA tile kernel (at most 32 px)",
            settings.border_px
        )));
    }
    let mut timings = Vec::new();

    // (1) Data: reused when the same host arrays and data-dependent styles were loaded.
    let upload_start = Instant::now();
    let key = data::key_of(snapshot, settings)?;
    if !matches!(&r.loaded, Some((k, _)) if *k == key) {
        r.loaded = None;
        r.scratch = None;
        let mut loaded = data::prepare(snapshot, settings, progress)?;
        make_resident(r, snapshot, settings, &mut loaded)?;
        r.loaded = Some((key, loaded));
        r.last_upload_seconds = upload_start.elapsed().as_secs_f64();
    } else {
        r.last_upload_seconds = 0.0;
    }
    timings.push(StageTime {
        stage: "prepare_upload",
        seconds: upload_start.elapsed().as_secs_f64(),
    });
    progress.check().map_err(|_| RenderError::Cancelled)?;

    let Some((key, loaded)) = r.loaded.take() else {
        return Err(RenderError::setting("no data loaded"));
    };
    let result = run_chunks(
        r,
        snapshot,
        settings,
        &view,
        global_brightness,
        &loaded,
        margin,
        tile_shared,
        progress,
        &mut timings,
    );
    r.loaded = Some((key, loaded));
    let (counts, particles) = result?;
    Ok(RenderStats {
        particles,
        counts,
        brightness: if matches!(settings.brightness, Brightness::Auto { .. }) {
            1.0
        } else {
            global_brightness
        },
        auto_exposure: matches!(settings.brightness, Brightness::Auto { .. }),
        tau_scale: 1.0,
        timings,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Uploads every species when data plus scratch fit in device memory (else they stream).
fn make_resident(
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
                loaded.iter_mut().for_each(|s| s.resident = None);
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        data::upload_range(&mut r.staging, &r.copy, &host, 0..species.n, &mut arrays)?;
        species.resident = Some(arrays);
    }
    r.copy.synchronize().map_err(GpuError::from)?;
    Ok(())
}

/// Allocates the per-chunk scratch, halving the chunk while memory runs out.
fn ensure_scratch(
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
        tile_count: s.alloc_zeros(n_tiles + 1)?,
        tile_start: s.alloc_zeros(n_tiles + 1)?,
        cursor: s.alloc_zeros(n_tiles + 1)?,
        seg_start: s.alloc_zeros(n_tiles + 1)?,
        sorted: s.alloc_zeros(capacity)?,
        large: s.alloc_zeros(capacity)?,
        large_count: s.alloc_zeros(1)?,
        class_count: s.alloc_zeros(4)?,
        streamed: sets,
    })
}

fn ensure_image(r: &mut CudaRenderer, width: u32, height: u32) -> Result<(), GpuError> {
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

/// Kernel-side arrays of one chunk.
struct ChunkViews<'a> {
    pos: CudaView<'a, f32>,
    h: CudaView<'a, f32>,
    intensity: CudaView<'a, f32>,
    colour: CudaView<'a, f32>,
}

#[allow(clippy::too_many_arguments)]
fn run_chunks(
    r: &mut CudaRenderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
    view: &ViewParams,
    global_brightness: f32,
    loaded: &[data::LoadedSpecies],
    margin: usize,
    tile_shared: usize,
    progress: &Progress,
    timings: &mut Vec<StageTime>,
) -> Result<(ClassCounts, u64), RenderError> {
    let (width, height) = (settings.width as usize, settings.height as usize);
    let tile_px = r.tuning.tile_px as usize;
    let tiles_x = width.div_ceil(tile_px);
    let n_tiles = tiles_x * height.div_ceil(tile_px);
    let total: usize = loaded.iter().map(|s| s.n).sum();
    let streamed = loaded.iter().any(|s| s.resident.is_none() && s.n > 0);
    let widths = (
        settings.species.iter().any(|s| s.intensity.is_some()),
        settings.species.iter().any(|s| s.colour.is_some()),
    );
    ensure_scratch(r, n_tiles, total, streamed, widths)?;
    ensure_image(r, settings.width, settings.height)?;
    if tile_shared > 48 * 1024 {
        r.kernels
            .medium
            .set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                tile_shared as i32,
            )
            .map_err(GpuError::from)?;
    }

    // Per-species styles and palettes (these may change every frame).
    let mut bound = 0.0f64;
    let mut styles = Vec::new();
    for (species, style) in loaded.iter().zip(&settings.species) {
        let valid = style.size_factor > 0.0
            && style.size_factor.is_finite()
            && style.brightness >= 0.0
            && style.brightness.is_finite();
        if !valid {
            return Err(RenderError::setting(format!(
                "species {}: size factor and brightness must be finite, > 0 and >= 0",
                style.kind
            )));
        }
        let palette = Palette::by_name(&style.palette)?;
        let brightness = style.brightness * global_brightness;
        bound += f64::from(AMPLITUDE_FACTOR) * f64::from(brightness) * species.sum_inv_h;
        styles.push((palette, brightness));
    }
    let k = fixed_exponent(bound * 1.01)?;
    let scale = 2f64.powi(k);
    let inv_scale = 2f64.powi(-k);

    let stream = r.compute.clone();
    let mut timer = Timer { marks: Vec::new() };
    let scratch = r
        .scratch
        .as_mut()
        .ok_or_else(|| RenderError::setting("no scratch"))?;
    let image = r
        .image
        .as_mut()
        .ok_or_else(|| RenderError::setting("no image"))?;
    let dummy: CudaSlice<f32> = stream.alloc_zeros(3).map_err(GpuError::from)?;
    let t0 = Timer::event(&stream)?;
    stream
        .memset_zeros(&mut image.tau_fixed)
        .map_err(GpuError::from)?;
    stream
        .memset_zeros(&mut scratch.class_count)
        .map_err(GpuError::from)?;
    let t1 = Timer::event(&stream)?;
    timer.marks.push(("clear", t0.clone(), t1.clone()));

    let view_c = ViewC::from(view);
    let capacity = scratch.capacity;
    let mut large_host: Vec<(usize, LargeC)> = Vec::new();
    let mut large_copy_seconds = 0.0;
    let mut chunk_no = 0usize;
    let (w_i32, h_i32) = (width as i32, height as i32);
    for (si, (species, (palette, brightness))) in loaded.iter().zip(&styles).enumerate() {
        if species.n == 0 {
            continue;
        }
        let style = &settings.species[si];
        let params = StyleParams {
            intensity: species.intensity_norm,
            colour: species.colour_norm.map(|n| (n, palette)),
            brightness: *brightness,
            size_factor: style.size_factor,
        };
        let style_c = StyleC::new(&params);
        let stops: Vec<f32> = palette.stops.as_flattened().to_vec();
        let palette_dev = stream.clone_htod(&stops).map_err(GpuError::from)?;
        let host: Option<HostArrays<'_>> = if species.resident.is_none() {
            Some(species.host(snapshot, style)?)
        } else {
            None
        };
        for first in (0..species.n).step_by(capacity) {
            progress.check().map_err(|_| RenderError::Cancelled)?;
            progress.report("render", chunk_no as u64, total.div_ceil(capacity) as u64);
            let len = capacity.min(species.n - first);
            let n_u32 = len as u32;
            let views = if let Some(res) = &species.resident {
                ChunkViews {
                    pos: res.pos.slice(3 * first..3 * (first + len)),
                    h: res.h.slice(first..first + len),
                    intensity: res
                        .intensity
                        .as_ref()
                        .map_or(dummy.slice(..), |v| v.slice(first..first + len)),
                    colour: res
                        .colour
                        .as_ref()
                        .map_or(dummy.slice(..), |v| v.slice(first..first + len)),
                }
            } else {
                let set = &mut scratch.streamed[chunk_no % 2];
                let host = host
                    .as_ref()
                    .ok_or_else(|| RenderError::setting("no host data"))?;
                let u0 = Timer::event(&r.copy)?;
                data::upload_range(&mut r.staging, &r.copy, host, first..first + len, set)?;
                let u1 = Timer::event(&r.copy)?;
                timer.marks.push(("upload", u0.clone(), u1.clone()));
                let set = &scratch.streamed[chunk_no % 2];
                ChunkViews {
                    pos: set.pos.slice(0..3 * len),
                    h: set.h.slice(0..len),
                    intensity: set
                        .intensity
                        .as_ref()
                        .filter(|_| host.intensity.is_some())
                        .map_or(dummy.slice(..), |v| v.slice(0..len)),
                    colour: set
                        .colour
                        .as_ref()
                        .filter(|_| host.colour.is_some())
                        .map_or(dummy.slice(..), |v| v.slice(0..len)),
                }
            };
            chunk_no += 1;

            // (2) classify.
            let e0 = Timer::event(&stream)?;
            stream
                .memset_zeros(&mut scratch.tile_count)
                .map_err(GpuError::from)?;
            stream
                .memset_zeros(&mut scratch.large_count)
                .map_err(GpuError::from)?;
            let (tile_i32, tiles_x_i32) = (tile_px as i32, tiles_x as i32);
            let mut launch = stream.launch_builder(&r.kernels.classify);
            launch
                .arg(&view_c)
                .arg(&style_c)
                .arg(&views.pos)
                .arg(&views.h)
                .arg(&views.intensity)
                .arg(&views.colour)
                .arg(&palette_dev)
                .arg(&n_u32)
                .arg(&tile_i32)
                .arg(&tiles_x_i32)
                .arg(&mut scratch.keys)
                .arg(&mut scratch.tile_count)
                .arg(&mut scratch.class_count);
            // SAFETY: the views hold `len` particles (3·len positions); keys hold ≥ len entries,
            // tile_count n_tiles + 1; every tile id written is < n_tiles (centre on the image).
            unsafe { launch.launch(launch_config(grid(len, BLOCK as usize), 0)) }
                .map_err(GpuError::from)?;
            let e1 = Timer::event(&stream)?;
            timer.marks.push(("classify", e0.clone(), e1.clone()));

            // (5a) counting sort: scan, then scatter (which also compacts the large ones).
            let n_tiles_u32 = n_tiles as u32;
            let segment = r.tuning.segment;
            let mut launch = stream.launch_builder(&r.kernels.tile_scan);
            launch
                .arg(&scratch.tile_count)
                .arg(&n_tiles_u32)
                .arg(&segment)
                .arg(&mut scratch.tile_start)
                .arg(&mut scratch.cursor)
                .arg(&mut scratch.seg_start);
            // SAFETY: one block of 1024 threads; the four arrays hold n_tiles + 1 entries.
            unsafe {
                launch.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (1024, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(GpuError::from)?;
            let index_base = first as u32;
            let mut launch = stream.launch_builder(&r.kernels.scatter);
            launch
                .arg(&view_c)
                .arg(&style_c)
                .arg(&views.pos)
                .arg(&views.h)
                .arg(&views.intensity)
                .arg(&views.colour)
                .arg(&palette_dev)
                .arg(&n_u32)
                .arg(&index_base)
                .arg(&scratch.keys)
                .arg(&mut scratch.cursor)
                .arg(&mut scratch.sorted)
                .arg(&mut scratch.large)
                .arg(&mut scratch.large_count);
            // SAFETY: cursor slots stay inside each tile's range (counts from the histogram of
            // the same keys); sorted and large hold `capacity` ≥ len entries.
            unsafe { launch.launch(launch_config(grid(len, BLOCK as usize), 0)) }
                .map_err(GpuError::from)?;
            let e2 = Timer::event(&stream)?;
            timer.marks.push(("sort", e1.clone(), e2.clone()));

            // (4) small.
            let mut launch = stream.launch_builder(&r.kernels.small);
            launch
                .arg(&view_c)
                .arg(&style_c)
                .arg(&views.pos)
                .arg(&views.h)
                .arg(&views.intensity)
                .arg(&views.colour)
                .arg(&palette_dev)
                .arg(&n_u32)
                .arg(&scratch.keys)
                .arg(&scale)
                .arg(&mut image.tau_fixed);
            // SAFETY: writes only pixels clamped to the W×H image (3·W·H entries).
            unsafe { launch.launch(launch_config(grid(len, BLOCK as usize), 0)) }
                .map_err(GpuError::from)?;
            let e3 = Timer::event(&stream)?;
            timer.marks.push(("small", e2.clone(), e3.clone()));

            // (5b) medium tiles.
            let blocks = n_tiles + len.div_ceil(segment as usize);
            let (margin_i32, side) = (margin as i32, tile_shared);
            let mut launch = stream.launch_builder(&r.kernels.medium);
            launch
                .arg(&scratch.sorted)
                .arg(&scratch.tile_start)
                .arg(&scratch.seg_start)
                .arg(&n_tiles_u32)
                .arg(&segment)
                .arg(&tile_i32)
                .arg(&tiles_x_i32)
                .arg(&margin_i32)
                .arg(&w_i32)
                .arg(&h_i32)
                .arg(&scale)
                .arg(&mut image.tau_fixed);
            // SAFETY: blocks beyond seg_start[n_tiles] return at once; shared memory holds the
            // (tile + 2·margin)² RGB region; global writes are clamped to the image.
            unsafe { launch.launch(launch_config(blocks as u32, side)) }.map_err(GpuError::from)?;
            let e4 = Timer::event(&stream)?;
            timer.marks.push(("medium", e3.clone(), e4.clone()));

            // (3) large: count back on the copy stream (waits only for the scatter).
            let copy_start = Instant::now();
            let count = r
                .copy
                .clone_dtoh(&scratch.large_count)
                .map_err(GpuError::from)?
                .first()
                .copied()
                .unwrap_or(0) as usize;
            if count > 0 {
                match r.tuning.large {
                    LargePath::Cpu => {
                        let list = r
                            .copy
                            .clone_dtoh(&scratch.large.slice(0..count))
                            .map_err(GpuError::from)?;
                        large_host.extend(list.into_iter().map(|l| (si, l)));
                    }
                    LargePath::Gpu => {
                        let count_u32 = count as u32;
                        let zero = 0u32;
                        let mut launch = stream.launch_builder(&r.kernels.large);
                        launch
                            .arg(&scratch.large)
                            .arg(&zero)
                            .arg(&count_u32)
                            .arg(&w_i32)
                            .arg(&h_i32)
                            .arg(&scale)
                            .arg(&mut image.tau_fixed);
                        // SAFETY: one warp per entry of the `count` compacted large splats;
                        // writes clamped to the image.
                        unsafe {
                            launch.launch(launch_config(grid(count * 32, BLOCK as usize), 0))
                        }
                        .map_err(GpuError::from)?;
                        let e5 = Timer::event(&stream)?;
                        timer.marks.push(("large_gpu", e4.clone(), e5.clone()));
                    }
                }
            }
            large_copy_seconds += copy_start.elapsed().as_secs_f64();
        }
    }

    // (3, CPU) large splats in particle order, on CPU threads while the GPU finishes.
    let cpu_start = Instant::now();
    let has_cpu = !large_host.is_empty();
    if has_cpu {
        large_host.sort_unstable_by_key(|(si, l)| (*si, l.index));
        let splats: Vec<Splat> = large_host.iter().map(|(_, l)| l.splat).collect();
        r.cpu_tau.reset(settings.width, settings.height);
        r.splatter.splat_into(&splats, &mut r.cpu_tau);
        stream
            .memcpy_htod(&r.cpu_tau.data, &mut image.tau_cpu)
            .map_err(GpuError::from)?;
    }
    let cpu_seconds = cpu_start.elapsed().as_secs_f64();

    // (6) compose.
    let c0 = Timer::event(&stream)?;
    let n_values = (width * height * 3) as u64;
    let mut launch = stream.launch_builder(&r.kernels.compose);
    let has_cpu_i32 = i32::from(has_cpu);
    launch
        .arg(&image.tau_fixed)
        .arg(&image.tau_cpu)
        .arg(&has_cpu_i32)
        .arg(&n_values)
        .arg(&inv_scale)
        .arg(&mut image.tau);
    // SAFETY: all three buffers hold n_values entries; tau_cpu is read only when it was
    // filled this frame (has_cpu).
    unsafe { launch.launch(launch_config(grid(n_values as usize, BLOCK as usize), 0)) }
        .map_err(GpuError::from)?;
    let c1 = Timer::event(&stream)?;
    timer.marks.push(("compose", c0.clone(), c1.clone()));
    let counts = stream
        .clone_dtoh(&scratch.class_count)
        .map_err(GpuError::from)?;
    stream.synchronize().map_err(GpuError::from)?;
    for (stage, ms) in timer.times()? {
        timings.push(StageTime {
            stage,
            seconds: ms / 1e3,
        });
    }
    timings.push(StageTime {
        stage: "large_copy_back",
        seconds: large_copy_seconds,
    });
    timings.push(StageTime {
        stage: "large_cpu",
        seconds: cpu_seconds,
    });
    let counts = ClassCounts {
        inactive: counts.first().copied().unwrap_or(0),
        small: counts.get(1).copied().unwrap_or(0),
        medium: counts.get(2).copied().unwrap_or(0),
        large: counts.get(3).copied().unwrap_or(0),
    };
    Ok((counts, total as u64))
}

pub(super) fn tone_image(
    r: &mut CudaRenderer,
    tau_scale: f32,
    tone: &ToneSettings,
) -> Result<image::DynamicImage, RenderError> {
    let Some(image) = r.image.as_mut() else {
        return Err(RenderError::setting("no frame rendered yet"));
    };
    let stream = &r.compute;
    let n = image.width as u64 * image.height as u64 * 3;
    let cfg = launch_config(grid(n as usize, BLOCK as usize), 0);
    let (w, h) = (image.width, image.height);
    match tone.bits {
        crate::render::BitDepth::Eight => {
            let mut launch = stream.launch_builder(&r.kernels.tone8);
            launch
                .arg(&image.tau)
                .arg(&n)
                .arg(&tau_scale)
                .arg(&tone.gamma)
                .arg(&tone.contrast)
                .arg(&mut image.image8);
            // SAFETY: tau and image8 hold n entries.
            unsafe { launch.launch(cfg) }.map_err(GpuError::from)?;
            let pixels = stream.clone_dtoh(&image.image8).map_err(GpuError::from)?;
            image::RgbImage::from_raw(w, h, pixels)
                .map(image::DynamicImage::ImageRgb8)
                .ok_or_else(|| RenderError::setting("image size mismatch"))
        }
        crate::render::BitDepth::Sixteen => {
            let mut launch = stream.launch_builder(&r.kernels.tone16);
            launch
                .arg(&image.tau)
                .arg(&n)
                .arg(&tau_scale)
                .arg(&tone.gamma)
                .arg(&tone.contrast)
                .arg(&mut image.image16);
            // SAFETY: tau and image16 hold n entries.
            unsafe { launch.launch(cfg) }.map_err(GpuError::from)?;
            let pixels = stream.clone_dtoh(&image.image16).map_err(GpuError::from)?;
            image::ImageBuffer::<image::Rgb<u16>, _>::from_raw(w, h, pixels)
                .map(image::DynamicImage::ImageRgb16)
                .ok_or_else(|| RenderError::setting("image size mismatch"))
        }
    }
}
