//! One frame of the CUDA pipeline (see the module docs of [`super`]).

use super::CudaRenderer;
use super::buffers::{self, Scratch};
use super::data::{self, HostArrays, LoadedSpecies};
use super::kernels::{Kernels, SplatKernels};
use super::launch::{MAX_TILE_SHARED_BYTES, fixed_exponent, tile_pass, wide_border_px, wide_pass};
use super::params::{LargeC, StyleC, ViewC};
use super::passes::{Chunk, ChunkViews, Passes, Plan};
use super::staged;
use super::tuning::{GPU_BORDER_PX, TILE_PX};
use crate::data::Snapshot;
use crate::gpu::{EventTimer, GpuError};
use crate::jobs::Progress;
use crate::render::cpu::Splatter;
use crate::render::options::LargeSplats;
use crate::render::palette::Palette;
use crate::render::project::{AMPLITUDE_FACTOR, Splat, StyleParams, ViewParams};
use crate::render::resolve::checked_frame;
use crate::render::{
    Brightness, ClassCounts, RenderError, RenderSettings, RenderStats, StageTime, TauBuffer,
};
use cudarc::driver::{CudaFunction, CudaSlice, sys};
use std::time::Instant;

pub(super) fn render_frame(
    r: &mut CudaRenderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<RenderStats, RenderError> {
    let start = Instant::now();
    let (view, global_brightness) = checked_frame(settings)?;
    let tile_px = TILE_PX;
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
        // Resident: normalised while uploading (staged.rs); else host arrays streamed per frame.
        let loaded = match staged::upload_resident(r, snapshot, settings, progress, &mut timings)? {
            Some(loaded) => loaded,
            None => {
                let loaded = data::prepare(&r.device, snapshot, settings, progress)?;
                timings.push(StageTime {
                    stage: "prepare",
                    seconds: upload_start.elapsed().as_secs_f64(),
                });
                loaded
            }
        };
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
    let job = FrameJob {
        snapshot,
        settings,
        view: &view,
        global_brightness,
        loaded: &loaded,
        margin,
        progress,
    };
    let result = run_chunks(r, &job, &mut timings);
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

/// What one frame draws.
struct FrameJob<'a> {
    snapshot: &'a Snapshot,
    settings: &'a RenderSettings,
    view: &'a ViewParams,
    global_brightness: f32,
    loaded: &'a [LoadedSpecies],
    /// Border of the medium tiles' shared region.
    margin: usize,
    progress: &'a Progress,
}

/// Every chunk of every species through the passes, then the CPU's large splats and the
/// compose; returns the class counts and the particle total.
fn run_chunks(
    r: &mut CudaRenderer,
    job: &FrameJob<'_>,
    timings: &mut Vec<StageTime>,
) -> Result<(ClassCounts, u64), RenderError> {
    let settings = job.settings;
    let (width, height) = (settings.width as usize, settings.height as usize);
    let tiles_x = width.div_ceil(TILE_PX);
    let n_tiles = tiles_x * height.div_ceil(TILE_PX);
    let total: usize = job.loaded.iter().map(|s| s.n).sum();
    let streamed = job.loaded.iter().any(|s| s.resident.is_none() && s.n > 0);
    let widths = (
        settings.species.iter().any(|s| s.intensity.is_some()),
        settings.species.iter().any(|s| s.colour.is_some()),
    );
    buffers::ensure_scratch(r, n_tiles, total, streamed, widths)?;
    buffers::ensure_image(r, settings.width, settings.height)?;
    let CudaRenderer {
        compute,
        copy,
        kernels,
        tuning,
        scratch,
        image,
        staging,
        splatter,
        cpu_tau,
        ..
    } = r;
    let kernels: &Kernels = kernels;
    // The wide-border pass: large splats with the centre on the image and R < GPU_BORDER_PX go
    // to tiles with a border wide enough for them (when large splats are drawn on the GPU).
    let grey = job.loaded.iter().all(|s| s.colour_norm.is_none());
    let channels = if grey { &kernels.grey } else { &kernels.rgb }.channels as usize;
    let wide_border = match tuning.large {
        LargeSplats::Gpu => wide_border_px(GPU_BORDER_PX, TILE_PX, settings.border_px, channels),
        LargeSplats::Cpu => 0.0,
    };
    let wide_margin = wide_border.ceil() as usize + 2;
    let (splat, medium, wide) = tile_passes(kernels, job, wide_margin)?;
    let (styles, k) = species_styles(job)?;
    let plan = Plan {
        width,
        height,
        tiles_x,
        n_tiles,
        margin: job.margin,
        wide_margin,
        wide_border,
        splat,
        medium,
        wide,
        scale: 2f64.powi(k),
    };
    let inv_scale = 2f64.powi(-k);

    let stream = compute.clone();
    let scratch = scratch
        .as_mut()
        .ok_or_else(|| RenderError::setting("no scratch"))?;
    let image = image
        .as_mut()
        .ok_or_else(|| RenderError::setting("no image"))?;
    image.fixed_exponent = k;
    image.fixed_channels = channels as u32;
    // Stands in for the intensity and colour arrays of a style that reads none.
    let dummy: CudaSlice<f32> = stream.alloc_zeros(3).map_err(GpuError::from)?;
    let capacity = scratch.capacity;
    let Scratch {
        sort,
        streamed: stream_sets,
        ..
    } = scratch;
    let mut passes = Passes {
        stream: &stream,
        kernels,
        plan,
        sort,
        image,
        timer: EventTimer::new(),
    };
    passes.clear()?;

    let view_c = ViewC::from(job.view);
    let mut large_host: Vec<(usize, LargeC)> = Vec::new();
    let mut large_copy_seconds = 0.0;
    let mut chunk_no = 0usize;
    for (si, (species, (palette, brightness))) in job.loaded.iter().zip(&styles).enumerate() {
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
            Some(species.host(job.snapshot, style)?)
        } else {
            None
        };
        for first in (0..species.n).step_by(capacity) {
            job.progress.check().map_err(|_| RenderError::Cancelled)?;
            job.progress
                .report("render", chunk_no as u64, total.div_ceil(capacity) as u64);
            let len = capacity.min(species.n - first);
            let arrays = if let Some(res) = &species.resident {
                resident_views(res, first..first + len, &dummy)
            } else {
                let host = host
                    .as_ref()
                    .ok_or_else(|| RenderError::setting("no host data"))?;
                let set = &mut stream_sets[chunk_no % 2];
                let u0 = EventTimer::mark(copy)?;
                data::upload_range(staging, copy, host, first..first + len, set)?;
                let u1 = EventTimer::mark(copy)?;
                passes.timer.stage("upload", &u0, &u1);
                streamed_views(&stream_sets[chunk_no % 2], host, len, &dummy)
            };
            chunk_no += 1;
            let chunk = Chunk {
                view: view_c,
                style: style_c,
                arrays,
                palette: &palette_dev,
                first,
                len,
                perm: species
                    .device_order
                    .as_ref()
                    .filter(|_| species.resident.is_some()),
            };
            let classified = passes.classify(&chunk)?;
            let sorted = passes.sort(&chunk, &classified)?;
            let small = passes.small(&chunk, &sorted)?;
            let medium = passes.medium(&chunk, small.as_ref().unwrap_or(&sorted))?;
            if wide_border > 0.0 {
                passes.wide(copy, &medium)?;
            }
            let copy_start = Instant::now();
            passes.large(copy, tuning.large, &medium, (si, &mut large_host))?;
            large_copy_seconds += copy_start.elapsed().as_secs_f64();
        }
    }

    // (3, CPU) large splats in particle order, on CPU threads while the GPU finishes.
    let cpu_start = Instant::now();
    let has_cpu = draw_large_on_cpu(&mut large_host, settings, splatter, cpu_tau);
    if has_cpu {
        stream
            .memcpy_htod(&cpu_tau.data, &mut passes.image.tau_cpu)
            .map_err(GpuError::from)?;
    }
    let cpu_seconds = cpu_start.elapsed().as_secs_f64();

    passes.compose(has_cpu, inv_scale)?;
    let counts = stream
        .clone_dtoh(&passes.sort.class_count)
        .map_err(GpuError::from)?;
    stream.synchronize().map_err(GpuError::from)?;
    for (stage, ms) in passes.timer.times()? {
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

/// The frame's splat kernels (grey frames, where no species has a colour field and every splat
/// has rgb[0] = rgb[1] = rgb[2], accumulate one fixed-point value per pixel), and the medium and
/// wide tile kernels with their shared bytes: (tile + 2·margin)² pixels of `channels` sums
/// ([`tile_pass`]).
/// Raises the kernels' shared-memory limit where they need more than the default 48 KiB.
fn tile_passes<'k>(
    kernels: &'k Kernels,
    job: &FrameJob<'_>,
    wide_margin: usize,
) -> Result<TilePasses<'k>, GpuError> {
    let grey = job.loaded.iter().all(|s| s.colour_norm.is_none());
    let splat = if grey { &kernels.grey } else { &kernels.rgb };
    let pixels = |margin: usize| (TILE_PX + 2 * margin).pow(2);
    let channels = splat.channels as usize;
    let medium = tile_pass(
        &splat.medium,
        &splat.medium_red,
        pixels(job.margin),
        channels,
    );
    let wide = wide_pass(
        &splat.wide,
        &splat.wide_red,
        splat.wide_red_spare_px,
        pixels(wide_margin),
        channels,
    );
    for (function, shared) in [medium, wide] {
        if shared > 48 * 1024 {
            function.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared as i32,
            )?;
        }
    }
    Ok((splat, medium, wide))
}

/// The splat kernels and the (kernel, shared bytes) of the medium and wide tile passes.
type TilePasses<'k> = (
    &'k SplatKernels,
    (&'k CudaFunction, usize),
    (&'k CudaFunction, usize),
);

/// Each species' palette and brightness, and the fixed-point exponent k from the bound on every
/// pixel's τ (K_A·brightness·Σ 1/h over the species, 1 % headroom).
fn species_styles(job: &FrameJob<'_>) -> Result<(Vec<(Palette, f32)>, i32), RenderError> {
    let mut bound = 0.0f64;
    let mut styles = Vec::new();
    for (species, style) in job.loaded.iter().zip(&job.settings.species) {
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
        let brightness = style.brightness * job.global_brightness;
        bound += f64::from(AMPLITUDE_FACTOR) * f64::from(brightness) * species.sum_inv_h;
        styles.push((palette, brightness));
    }
    let k = fixed_exponent(bound * 1.01)?;
    Ok((styles, k))
}

/// Particles `range` of a resident species.
fn resident_views<'a>(
    res: &'a data::DeviceArrays,
    range: std::ops::Range<usize>,
    dummy: &'a CudaSlice<f32>,
) -> ChunkViews<'a> {
    ChunkViews {
        pos: res.pos.slice(3 * range.start..3 * range.end),
        h: res.h.slice(range.clone()),
        intensity: res
            .intensity
            .as_ref()
            .map_or(dummy.slice(..), |v| v.slice(range.clone())),
        colour: res
            .colour
            .as_ref()
            .map_or(dummy.slice(..), |v| v.slice(range.clone())),
    }
}

/// The first `len` particles of a streamed set that `host` was just uploaded to (its intensity
/// and colour arrays only where this species has them).
fn streamed_views<'a>(
    set: &'a data::DeviceArrays,
    host: &HostArrays<'_>,
    len: usize,
    dummy: &'a CudaSlice<f32>,
) -> ChunkViews<'a> {
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
}

/// Draws the copied-back large splats with the CPU splatter into `cpu_tau`, in (species,
/// file index) order so the f32 sums do not depend on the device order; false when there were
/// none.
fn draw_large_on_cpu(
    large: &mut [(usize, LargeC)],
    settings: &RenderSettings,
    splatter: &mut Splatter,
    cpu_tau: &mut TauBuffer,
) -> bool {
    if large.is_empty() {
        return false;
    }
    large.sort_unstable_by_key(|(si, l)| (*si, l.index));
    let splats: Vec<Splat> = large.iter().map(|(_, l)| l.splat).collect();
    cpu_tau.reset(settings.width, settings.height);
    splatter.splat_into(&splats, cpu_tau);
    true
}
