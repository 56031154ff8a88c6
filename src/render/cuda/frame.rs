//! One frame of the CUDA pipeline (see the module docs of [`super`]).

use super::buffers;
use super::data::{self, HostArrays};
use super::launch::{
    BLOCK, MAX_TILE_SHARED_BYTES, Timer, WIDE_BLOCK, fixed_exponent, grid, launch_config,
    tile_pass, wide_border_px,
};
use super::params::{LargeC, StyleC, ViewC};
use super::{CudaRenderer, LargePath};
use crate::data::Snapshot;
use crate::gpu::GpuError;
use crate::jobs::Progress;
use crate::render::cpu::checked_frame;
use crate::render::palette::Palette;
use crate::render::project::{AMPLITUDE_FACTOR, Splat, StyleParams, ViewParams};
use crate::render::{Brightness, ClassCounts, RenderError, RenderSettings, RenderStats, StageTime};
use cudarc::driver::{CudaSlice, CudaView, LaunchConfig, PushKernelArg, sys};
use std::time::Instant;

/// Per-stage GPU kernel times of one frame, in milliseconds (CUDA events, summed over chunks).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FrameTimings {
    /// Stage name and milliseconds.
    pub stages: Vec<(&'static str, f64)>,
}

pub(super) fn render_frame(
    r: &mut CudaRenderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<RenderStats, RenderError> {
    let start = Instant::now();
    let (view, global_brightness) = checked_frame(settings)?;
    let tile_px = r.tuning.tile_px as usize;
    // Border w plus the CPU box's one-pixel widening plus one pixel against f32 rounding.
    let margin = settings.border_px.ceil() as usize + 2;
    let side = tile_px + 2 * margin;
    // The RGB region (the largest: a grey frame's is a third) must fit in shared memory.
    if side * side * 3 * 8 > MAX_TILE_SHARED_BYTES {
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
        buffers::make_resident(r, snapshot, settings, &mut loaded)?;
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
    buffers::ensure_scratch(r, n_tiles, total, streamed, widths)?;
    buffers::ensure_image(r, settings.width, settings.height)?;
    // The wide-border pass: large splats with the centre on the image and R < gpu_border go to
    // tiles with a border wide enough for them (when large splats are drawn on the GPU).
    let wide_border = match r.tuning.large {
        LargePath::Gpu => wide_border_px(r.tuning.gpu_border_px, tile_px, settings.border_px),
        LargePath::Cpu => 0.0,
    };
    // Grey frames (no species with a colour field: every splat has rgb[0] = rgb[1] = rgb[2])
    // accumulate one fixed-point value per pixel.
    let grey = r.tuning.grey_channel && loaded.iter().all(|s| s.colour_norm.is_none());
    let kernels = if grey {
        &r.kernels.grey
    } else {
        &r.kernels.rgb
    };
    let channels = kernels.channels as usize;
    // Shared-memory regions: (tile + 2·margin)² pixels of `channels` 64-bit sums (8 bytes
    // each, or 12 as three-part sums where the segment allows and the region fits).
    let side = tile_px + 2 * margin;
    let wide_margin = wide_border.ceil() as usize + 2;
    let values = |side: usize| side * side * channels;
    let medium = tile_pass(
        &kernels.medium,
        kernels.medium_red.as_ref(),
        values(tile_px + 2 * margin),
        r.tuning.segment,
    );
    let wide = tile_pass(
        &kernels.wide,
        kernels.wide_red.as_ref(),
        values(tile_px + 2 * wide_margin),
        r.tuning.wide_segment,
    );
    for (function, shared) in [medium, wide] {
        if shared > 48 * 1024 {
            function
                .set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
                .map_err(GpuError::from)?;
        }
    }
    let direct_cut = r.tuning.direct_cut_px;

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
    let used_fixed = width * height * channels;
    stream
        .memset_zeros(&mut image.tau_fixed.slice_mut(0..used_fixed))
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
            let (n_tiles_u32, n_keys_u32) = (n_tiles as u32, 2 * n_tiles as u32);
            let (segment, wide_segment) = (r.tuning.segment, r.tuning.wide_segment);
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
                .arg(&n_tiles_u32)
                .arg(&direct_cut)
                .arg(&wide_border)
                .arg(&mut scratch.keys)
                .arg(&mut scratch.tile_count)
                .arg(&mut scratch.class_count);
            // SAFETY: the views hold `len` particles (3·len positions); keys hold ≥ len entries,
            // tile_count 2·n_tiles + 1; every tile key written is < 2·n_tiles (centre on the
            // image).
            unsafe { launch.launch(launch_config(grid(len, BLOCK as usize), 0)) }
                .map_err(GpuError::from)?;
            let e1 = Timer::event(&stream)?;
            timer.marks.push(("classify", e0.clone(), e1.clone()));

            // (5a) counting sort: scan, then scatter (which also compacts the large ones).
            let mut launch = stream.launch_builder(&r.kernels.tile_scan);
            launch
                .arg(&scratch.tile_count)
                .arg(&n_keys_u32)
                .arg(&segment)
                .arg(&n_tiles_u32)
                .arg(&wide_segment)
                .arg(&mut scratch.tile_start)
                .arg(&mut scratch.cursor)
                .arg(&mut scratch.seg_start);
            // SAFETY: one block of 1024 threads; the four arrays hold 2·n_tiles + 1 entries.
            unsafe {
                launch.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (1024, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(GpuError::from)?;
            let index_base = first as u32;
            let device_order = species
                .device_order
                .as_ref()
                .filter(|_| species.resident.is_some());
            let has_perm = i32::from(device_order.is_some());
            let perm = device_order.unwrap_or(&scratch.dummy_u32);
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
                .arg(&mut scratch.large_count)
                .arg(perm)
                .arg(&has_perm);
            // SAFETY: cursor slots stay inside each tile's range (counts from the histogram of
            // the same keys); sorted and large hold `capacity` ≥ len entries; perm (when
            // has_perm) holds the resident species' n ≥ first + len entries.
            unsafe { launch.launch(launch_config(grid(len, BLOCK as usize), 0)) }
                .map_err(GpuError::from)?;
            let e2 = Timer::event(&stream)?;
            timer.marks.push(("sort", e1.clone(), e2.clone()));

            // (4) small.
            let mut launch = stream.launch_builder(&kernels.small);
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
            // SAFETY: writes only pixels clamped to the W×H image (`channels`·W·H ≤ 3·W·H
            // entries, the kernel compiled for `channels`).
            unsafe { launch.launch(launch_config(grid(len, BLOCK as usize), 0)) }
                .map_err(GpuError::from)?;
            let e3 = Timer::event(&stream)?;
            timer.marks.push(("small", e2.clone(), e3.clone()));

            // (5b) medium tiles; with border buffers, then the pass adding the slots.
            let blocks = n_tiles + len.div_ceil(segment as usize);
            let margin_i32 = margin as i32;
            let zero_u32 = 0u32;
            let ring_values = (side * side - tile_px * tile_px) * channels;
            let ring_mode = r.tuning.border_buffers
                && buffers::ensure_border_slots(&stream, scratch, blocks * ring_values)?;
            let ring_mode_i32 = i32::from(ring_mode);
            let slots = match (&mut scratch.border_slots, ring_mode) {
                (Some(slots), true) => slots,
                _ => &mut scratch.dummy_u64,
            };
            let mut launch = stream.launch_builder(medium.0);
            launch
                .arg(&scratch.sorted)
                .arg(&scratch.tile_start)
                .arg(&scratch.seg_start)
                .arg(&zero_u32)
                .arg(&n_tiles_u32)
                .arg(&segment)
                .arg(&tile_i32)
                .arg(&tiles_x_i32)
                .arg(&margin_i32)
                .arg(&w_i32)
                .arg(&h_i32)
                .arg(&scale)
                .arg(&mut image.tau_fixed)
                .arg(&ring_mode_i32)
                .arg(&mut *slots);
            // SAFETY: blocks beyond seg_start[n_tiles] return at once; shared memory holds the
            // (tile + 2·margin)² region of `channels` sums; global writes are clamped to the image;
            // with ring_mode the slots hold `blocks` ≥ seg_start[n_tiles] rings of ring_values.
            unsafe { launch.launch(launch_config(blocks as u32, medium.1)) }
                .map_err(GpuError::from)?;
            let mut e4 = Timer::event(&stream)?;
            timer.marks.push(("medium", e3.clone(), e4.clone()));
            if ring_mode {
                let tiles_y_i32 = (n_tiles / tiles_x) as i32;
                let mut launch = stream.launch_builder(&kernels.combine);
                launch
                    .arg(&*slots)
                    .arg(&scratch.seg_start)
                    .arg(&tile_i32)
                    .arg(&tiles_x_i32)
                    .arg(&tiles_y_i32)
                    .arg(&margin_i32)
                    .arg(&w_i32)
                    .arg(&h_i32)
                    .arg(&mut image.tau_fixed);
                // SAFETY: one thread per pixel of the W×H image; reads the slots of the blocks
                // seg_start[key]..seg_start[key + 1] that the medium pass just wrote.
                unsafe { launch.launch(launch_config(grid(width * height, BLOCK as usize), 0)) }
                    .map_err(GpuError::from)?;
                let e = Timer::event(&stream)?;
                timer.marks.push(("borders", e4.clone(), e.clone()));
                e4 = e;
            }
            if wide_border > 0.0 {
                let blocks = n_tiles + len.div_ceil(wide_segment as usize);
                let wide_margin_i32 = wide_margin as i32;
                let mut launch = stream.launch_builder(wide.0);
                launch
                    .arg(&scratch.sorted)
                    .arg(&scratch.tile_start)
                    .arg(&scratch.seg_start)
                    .arg(&n_tiles_u32)
                    .arg(&n_tiles_u32)
                    .arg(&wide_segment)
                    .arg(&tile_i32)
                    .arg(&tiles_x_i32)
                    .arg(&wide_margin_i32)
                    .arg(&w_i32)
                    .arg(&h_i32)
                    .arg(&scale)
                    .arg(&mut image.tau_fixed)
                    .arg(&0i32)
                    .arg(&scratch.dummy_u64);
                // SAFETY: as the medium pass (atomics: ring_mode 0, no slots used), over keys
                // n_tiles..2·n_tiles with the wide margin
                // (shared memory sized for it; 1024 threads, a multiple of the lanes).
                let cfg = LaunchConfig {
                    grid_dim: (blocks as u32, 1, 1),
                    block_dim: (WIDE_BLOCK, 1, 1),
                    shared_mem_bytes: wide.1 as u32,
                };
                unsafe { launch.launch(cfg) }.map_err(GpuError::from)?;
                let e5 = Timer::event(&stream)?;
                timer.marks.push(("wide_tiles", e4.clone(), e5.clone()));
            }

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
                        // The scatter wrote file-order indices (also for a Morton-ordered
                        // resident copy), so the CPU sums the large splats in the same order as
                        // when streaming.
                        large_host.extend(list.into_iter().map(|l| (si, l)));
                    }
                    LargePath::Gpu => {
                        let count_u32 = count as u32;
                        let zero = 0u32;
                        let mut launch = stream.launch_builder(&kernels.large);
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
    let channels_i32 = channels as i32;
    launch
        .arg(&image.tau_fixed)
        .arg(&image.tau_cpu)
        .arg(&has_cpu_i32)
        .arg(&channels_i32)
        .arg(&n_values)
        .arg(&inv_scale)
        .arg(&mut image.tau);
    // SAFETY: all three buffers hold n_values entries (a grey frame reads tau_fixed[i / 3]);
    // tau_cpu is read only when it was filled this frame (has_cpu).
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
