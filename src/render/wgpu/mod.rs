//! The wgpu twin of [`super::cpu`]: the Splotch model on any GPU wgpu drives (Vulkan, Metal,
//! DirectX 12), with its WGSL shaders in shaders/: splat.wgsl (after tau_u64.wgsl or
//! tau_pairs.wgsl), tone.wgsl, exposure.wgsl and order.wgsl.
//!
//! Method: compute passes mirroring the CUDA twin, τ summed in 64-bit fixed point: one u64
//! atomic where the adapter has 64-bit atomics, else pairs of u32 words with an explicit carry
//! (core WGSL has no 64-bit atomics). Small splats (a box of at most 3×3 pixels) are added by
//! their own invocation with atomics; larger ones are listed per 16×16 screen tile and summed
//! by one workgroup per tile through workgroup memory: medium boxes by a few invocations each
//! (`WgpuTuning::medium_lanes`), larger ones with each invocation summing a 2×2 group of pixels
//! in registers. Rasterised quads with f32 blending were measured first and ran 23–175× slower
//! than CUDA on an H200: the raster and blend units of a compute card draw 0.5–0.7·10⁹ blended
//! fragments a second, and per-particle triangles are set up at a few hundred million a
//! second. Fixed point also makes τ independent of the order of the sums (repeated, tiled and
//! chunked frames give the same bits) and needs no adapter feature. τ matches the CPU
//! reference within f32 rounding of each weight (DESIGN §4's ‖Δ‖/‖ref‖ < 1e-4). The data stay
//! resident between frames in chunks that respect the adapter's binding limits; when they do
//! not fit they are streamed chunk by chunk. Images larger than the tile limit (or what the
//! adapter can bind) are drawn tile by tile.

mod buffers;
mod context;
mod data;
mod draw;
mod error;
mod exposure;
mod frame;
mod order;
mod pipelines;
mod present;
mod readback;

pub use context::{OPTIONAL_FEATURES, REQUIRED_FEATURES, WgpuContext};
pub use error::WgpuError;
pub use present::{FRAME_FORMAT, FrameTexture, TexturePool};

pub(crate) use buffers::submit_and_map;

use super::{
    Brightness, RenderError, RenderOutput, RenderSettings, RenderStats, StageTime, TauBuffer,
};
use crate::data::Snapshot;
use crate::jobs::Progress;
use buffers::FrameBuffers;
use data::{ChunkBuffers, DataKey, PreparedSpecies};
use pipelines::Pipelines;
use std::time::Instant;

pub use pipelines::{INT64_ATOMICS, SPLAT_SHADER, TAU_PAIRS_SHADER, TAU_U64_SHADER, TONE_SHADER};

/// Sizes the wgpu renderer works in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgpuTuning {
    /// Most particles per chunk (also bounded by the adapter's binding and buffer limits).
    pub chunk_particles: usize,
    /// Most pixels per side of one render target (also bounded by the adapter's texture
    /// limit); larger images are drawn in tiles.
    pub tile_side: u32,
    /// Most particles of the resident chunks drawn together as one batch (at least one chunk,
    /// at most what one splat-record binding holds; 0: every chunk alone): the batch's chunks
    /// are classified into one set of tile counts read back once, and their splats go into one
    /// set of tile lists summed by one tiles pass, where each chunk had its own read-back (the
    /// host waiting for the device) and its own tiles pass.
    pub batch_particles: usize,
    /// Most entries of the screen tiles' splat lists drawn in one band (also bounded by the
    /// adapter's binding limit; never below one chunk); more are drawn band after band.
    pub list_entries: u64,
    /// Widest splat box, in pixels, added straight into τ with atomics by the particle's own
    /// invocation (0: none); wider ones go through the screen tiles' lists.
    pub small_side: u32,
    /// Widest box within a 16×16 screen tile, in pixels, drawn splat by splat into workgroup
    /// memory (0: none, at most 16); wider ones are summed pixel by pixel in registers.
    pub medium_side: u32,
    /// Also draw a splat splat by splat in workgroup memory when its box within a 16×16 screen
    /// tile has at most this many pixels (0: by `medium_side` alone), so that a sliver of a wide
    /// splat (say 3×16 pixels at the edge of its box) keeps 8 invocations busy rather than
    /// holding a quarter of the workgroup over mostly idle pixels. 64 by default: on an H200
    /// through Vulkan the window's 10⁷ demo frame at 1920×1080 took 16.9-17.3 ms against
    /// 17.8-18.0 with 0 (four alternated runs each; 32: 17.3, 128: 18.4 in one run each), and
    /// 10⁸ colour at 2048² with R0 = 16 347 against 368 ms (R0 ≤ 4 the same); τ the same bits.
    pub medium_area: u32,
    /// Add τ with 64-bit atomics where the device has them (else u32 pairs with a carry).
    pub int64_atomics: bool,
    /// Sum the medium splats in workgroup memory as 21-bit parts added without waiting (else
    /// as (lo, hi) words carried from the low word's old value).
    pub medium_parts: bool,
    /// Give each 32 invocations of the tiles pass an 8×4 block of pixels (else two rows).
    pub pixel_blocks: bool,
    /// Reorder each resident chunk on the device by coarse 3-D Morton cell as it is uploaded
    /// (`shaders/order.wgsl`), so that neighbouring invocations draw neighbouring particles;
    /// else keep file order. Streamed chunks keep file order either way. On by default: on an
    /// H200 (10⁸ colour, 2048², each process's frames after a first R0 = 16 case, so that the SM
    /// clock has risen from its idle 345 MHz to 1980 MHz) it made R0 = 0.3, 1 and 4 faster
    /// (13.3-13.7 → 12.0, 20.8-21.1 → 18.9 and 71.1-71.6 → 61.6 ms), R0 = 16 a little slower
    /// (414.8-415.5 → 426.3 ms). Its R0 = 1 slowdown measured earlier (39-50 ms), and the
    /// variants tried for it, were frames timed right after the upload, before the clock had
    /// risen.
    pub order: bool,
    /// The tiles pass's larger splats by 2×2 groups of pixels per invocation, a quarter of
    /// the workgroup per splat (else one pixel per invocation, the whole workgroup per splat).
    /// With `fold`, on an H200 (10⁸ colour, 2048², clock up, the same call): R0 = 16 425.7 →
    /// 404.1 ms (`quads` alone 410), R0 ≤ 4 unchanged; the 10⁷ movie at 1080p 44.5 → 48.3
    /// frames/s, the window's frame 20.8 → 19.8 ms.
    pub quads: bool,
    /// Fold the fixed-point scale into the tiles pass's rgb at batch load, where that is exact
    /// (one product less per channel and pixel).
    pub fold: bool,
    /// Let the driver zero the tiles pass's workgroup memory first (WebGPU's rule; the pass
    /// writes all it reads, so it is not needed).
    pub zero_init_tiles: bool,
    /// Measuring aid: the tiles pass converts to fixed point with `to_fixed`'s carry test.
    pub carry_test: bool,
    /// The tiles pass converts to fixed point by integer operations on the value's bits
    /// (splat.wgsl's `fixed_bits`) rather than by roundings and float-to-integer conversions.
    /// On an H200 (10⁸ colour, 2048², the same call): R0 = 16 403.7 → 368.2 ms, R0 ≤ 4
    /// unchanged; the 10⁷ movie at 1080p 47.3 → 48.9 frames/s, the window's frame 19.7 → 19.0 ms.
    pub int_fixed: bool,
    /// With `fold` and `int_fixed`, fold 2^k rather than 2^(k − 32) into the tiles pass's rgb
    /// (one product less per channel and pixel).
    pub fold_k: bool,
    /// With `fold` and 64-bit τ atomics, the tiles pass's fixed-point values by a conversion to
    /// u64 and its register sums as u64 (splat.wgsl's `WIDE`), a 2×2 group's pixels each behind
    /// a branch (1) or all four added without one (2, the default); 0: by `fixed_words`' shifts
    /// into (lo, hi) pairs. The same words. On an H200 through Vulkan the window's 10⁷ demo
    /// frame at 1920×1080 took 12.8-13.4 ms with 2 against 16.5-17.4 with 0 (13.6-13.8 with 1),
    /// and 10⁸ colour at 2048² R0 = 4 / 16 53.4 / 251 ms against 60.3 / 347 (main f634061).
    /// Where the device has no 64-bit atomics it acts as 0.
    pub wide: u32,
    /// Invocations per medium splat in the tiles pass (splat.wgsl's `LANES`; rounded up to a
    /// power of two from 1 to 32). 8 by default: on an H200 (10⁸ colour, 2048², R0 = 4,
    /// `profile=1`) 4 and 16 made the tiles pass slower (43.9 → 45.4 and 46.3 ms).
    pub medium_lanes: u32,
    /// wgpu's runtime checks compiled into the splat passes, as a bit mask: 1 index clamps,
    /// 2 loop bounding, 4 integer-division guards (7: all, wgpu's default). 1 by default: the
    /// shader's loops end and its divisors are non-zero by construction (see
    /// `pipelines::RuntimeChecks`), so only the index clamps stay, which keep a wrong index
    /// inside the buffers on every back-end (Metal and DirectX 12 have no robust buffer access
    /// of their own). On an H200 through Vulkan (10⁸ colour, 2048², one call, with `corder=1`)
    /// R0 = 4 took 41.1 ms with 1, 44.5 with 7 and 40.7 with 0, R0 = 16 224, 237 and 218 (R0 ≤
    /// 1 the same); τ the same bits.
    pub runtime_checks: u32,
    /// Place each batch's medium splats in the tiles pass in order of their lanes' rounds over
    /// the box (splat.wgsl's `CORDER`, as CUDA's COST_ORDER), so that the groups of a warp,
    /// which run in step, draw boxes of like size; else in the order they were read. On by
    /// default: on an H200 through Vulkan (10⁸ colour, 2048², one call, with `checks=0`) R0 = 4
    /// took 40.7 ms against 48.3 with `corder=0`, R0 = 16 218 against 236 (R0 ≤ 1 the same);
    /// τ the same bits.
    pub medium_cost_order: bool,
    /// Wait for the device after each pass and report the passes' times as stages
    /// (`classify`, `scatter`, `tiles`, `pixels`): slower frames, for finding where one goes.
    pub profile_passes: bool,
}

impl WgpuTuning {
    /// The tuning with what `$HALOSCOPE_WGPU_TUNING` sets (comma-separated `name=value` of
    /// `chunk`, `batch`, `small`, `medium`, `marea`, and 0 or 1 for `int64`, `parts`,
    /// `blocks`, `order`, `quads`, `fold`, `zinit`, `carry`, `intfix`, `foldk`, `corder`,
    /// `profile`, 0 to 2 for `wide`, 4, 8, 16 or 32 for `lanes`, and 0 to 7
    /// for `checks`); a malformed entry is ignored with a warning, since the variable is a
    /// developer's measuring aid.
    pub fn with_env_overrides(self) -> Self {
        match std::env::var("HALOSCOPE_WGPU_TUNING") {
            Ok(text) => self.with_overrides(&text),
            Err(_) => self,
        }
    }

    /// The tuning with the `name=value` entries of `text` applied (see
    /// [`Self::with_env_overrides`]).
    pub fn with_overrides(mut self, text: &str) -> Self {
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let parsed = item
                .split_once('=')
                .and_then(|(name, value)| Some((name.trim(), value.trim().parse::<u64>().ok()?)));
            match parsed {
                Some(("chunk", v)) => self.chunk_particles = v.max(1) as usize,
                Some(("small", v)) => self.small_side = v.min(64) as u32,
                Some(("medium", v)) => self.medium_side = v.min(16) as u32,
                Some(("marea", v)) => self.medium_area = v.min(256) as u32,
                Some(("batch", v)) => self.batch_particles = v as usize,
                Some(("int64", v)) => self.int64_atomics = v != 0,
                Some(("parts", v)) => self.medium_parts = v != 0,
                Some(("blocks", v)) => self.pixel_blocks = v != 0,
                Some(("order", v)) => self.order = v != 0,
                Some(("profile", v)) => self.profile_passes = v != 0,
                Some(("quads", v)) => self.quads = v != 0,
                Some(("fold", v)) => self.fold = v != 0,
                Some(("zinit", v)) => self.zero_init_tiles = v != 0,
                Some(("carry", v)) => self.carry_test = v != 0,
                Some(("intfix", v)) => self.int_fixed = v != 0,
                Some(("foldk", v)) => self.fold_k = v != 0,
                Some(("wide", v)) if v <= 2 => self.wide = v as u32,
                Some(("lanes", v)) if [4, 8, 16, 32].contains(&v) => self.medium_lanes = v as u32,
                Some(("checks", v)) if v <= 7 => self.runtime_checks = v as u32,
                Some(("corder", v)) => self.medium_cost_order = v != 0,
                _ => log::warn!("HALOSCOPE_WGPU_TUNING: ignored `{item}`"),
            }
        }
        self
    }
}

impl Default for WgpuTuning {
    fn default() -> Self {
        Self {
            chunk_particles: 1 << 24,
            batch_particles: 1 << 24,
            tile_side: 4096,
            list_entries: frame::MAX_ENTRIES,
            small_side: 3,
            medium_side: 8,
            medium_area: 64,
            int64_atomics: true,
            medium_parts: true,
            pixel_blocks: true,
            order: true,
            quads: true,
            fold: true,
            zero_init_tiles: true,
            carry_test: false,
            int_fixed: true,
            fold_k: false,
            wide: 2,
            medium_lanes: 8,
            runtime_checks: 1,
            medium_cost_order: true,
            profile_passes: false,
        }
    }
}

/// What receives each drawn image tile of an 8-bit frame: the renderer, the tile, its tone
/// parameters (τ scale, gamma, contrast) and the fixed-point exponent.
type DeliverTile<'a> =
    dyn FnMut(&mut WgpuRenderer, frame::Tile, [f32; 3], i32) -> Result<(), WgpuError> + 'a;

/// The wgpu renderer: the pipeline, the resident particle data and the target, reused across
/// frames.
pub struct WgpuRenderer {
    context: WgpuContext,
    pipelines: Pipelines,
    buffers: FrameBuffers,
    chunk_particles: usize,
    /// Most particles of one batch of resident chunks (0: every chunk alone).
    batch_particles: usize,
    tile_side: u32,
    max_entries: u64,
    small_side: u32,
    medium_side: u32,
    medium_area: u32,
    medium_parts: bool,
    pixel_blocks: bool,
    /// The reorder passes when resident chunks are reordered at upload.
    order: Option<order::OrderPipelines>,
    /// Seconds per pass of the last frame when profiling (classify, scatter, tiles, pixels).
    pass_seconds: Option<[f64; 4]>,
    prepared: Option<(DataKey, Vec<PreparedSpecies>)>,
    resident: Option<Vec<Vec<ChunkBuffers>>>,
    stream: Option<ChunkBuffers>,
    last_upload_seconds: f64,
    exposure_scratch: Vec<f32>,
    /// The textures frames are toned into for the window ([`WgpuRenderer::render_texture`]).
    textures: present::TexturePool,
}

impl std::fmt::Debug for WgpuRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuRenderer")
            .field("adapter", &self.context.info.name)
            .field("chunk_particles", &self.chunk_particles)
            .field("tile_side", &self.tile_side)
            .finish_non_exhaustive()
    }
}

impl WgpuRenderer {
    /// Compiles the pipelines on `context`'s device and sizes chunks and tiles to its limits.
    pub fn new(context: WgpuContext, tuning: WgpuTuning) -> Result<Self, WgpuError> {
        let tiles = pipelines::TilesVariant {
            quads: tuning.quads,
            fold: tuning.fold,
            zero_init: tuning.zero_init_tiles,
            carry: tuning.carry_test,
            intfix: tuning.int_fixed,
            foldk: tuning.fold_k,
            wide: tuning.wide,
            // Any other count would leave a group short of lanes, and pixels undrawn.
            lanes: tuning.medium_lanes.clamp(1, 32).next_power_of_two(),
            corder: tuning.medium_cost_order,
        };
        let checks = pipelines::RuntimeChecks::from_bits(tuning.runtime_checks);
        let pipelines = Pipelines::new(&context.device, tuning.int64_atomics, tiles, checks)?;
        let order = if tuning.order {
            Some(order::OrderPipelines::new(&context.device)?)
        } else {
            None
        };
        let limits = &context.limits;
        let bindable = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        // Per particle the widest binding is its splat record.
        let chunk_particles = tuning
            .chunk_particles
            .min((bindable / frame::RECORD_BYTES) as usize)
            .max(1);
        // A batch's splat records share one binding; batches never split a chunk.
        let batch_particles = match tuning.batch_particles {
            0 => 0,
            n => n
                .min((bindable / frame::RECORD_BYTES) as usize)
                .max(chunk_particles),
        };
        // Every list of one tile fits one band: at least one chunk's worth of entries.
        let max_entries = (bindable / 4)
            .min(tuning.list_entries)
            .max(chunk_particles as u64);
        // A tile's fixed-point τ is the widest per-pixel binding.
        let bindable_side = ((bindable / frame::TAU_PIXEL_BYTES) as f64).sqrt() as u32;
        let tile_side = tuning
            .tile_side
            .min(limits.max_texture_dimension_2d)
            .min(bindable_side)
            .max(1);
        Ok(Self {
            context,
            pipelines,
            buffers: FrameBuffers::default(),
            chunk_particles,
            batch_particles,
            tile_side,
            max_entries,
            small_side: tuning.small_side,
            medium_side: tuning.medium_side.min(16),
            medium_area: tuning.medium_area.min(256),
            medium_parts: tuning.medium_parts,
            pixel_blocks: tuning.pixel_blocks,
            order,
            pass_seconds: tuning.profile_passes.then_some([0.0; 4]),
            prepared: None,
            resident: None,
            stream: None,
            last_upload_seconds: 0.0,
            exposure_scratch: Vec::new(),
            textures: present::TexturePool::default(),
        })
    }

    /// The device context.
    pub fn context(&self) -> &WgpuContext {
        &self.context
    }

    /// The splat paths as the shader's `view.tuning` takes them (the medium splats' widest
    /// side in the low byte of the second word, their largest area above it).
    pub(crate) fn paths(&self) -> [u32; 4] {
        [
            self.small_side,
            self.medium_side | (self.medium_area << 8),
            u32::from(self.pixel_blocks),
            u32::from(self.medium_parts),
        ]
    }

    /// Particles per chunk in use (after the adapter's limits).
    pub fn chunk_particles(&self) -> usize {
        self.chunk_particles
    }

    /// Pixels per tile side in use (after the adapter's limits).
    pub fn tile_side(&self) -> u32 {
        self.tile_side
    }

    /// Most particles of one batch of resident chunks in use (after the adapter's limits; 0:
    /// every chunk alone).
    pub fn batch_particles(&self) -> usize {
        self.batch_particles
    }

    /// Most list entries per band in use (after the adapter's limits).
    pub fn list_entries(&self) -> u64 {
        self.max_entries
    }

    /// Whether τ is added with 64-bit atomics (the device has them and the tuning allows).
    pub fn int64_atomics(&self) -> bool {
        self.pipelines.int64_atomics
    }

    /// Whether the loaded data are resident on the device (else streamed each frame).
    pub fn is_resident(&self) -> bool {
        self.prepared.is_some() && self.resident.is_some()
    }

    /// Seconds the last frame spent preparing and uploading data (0 when resident already).
    pub fn last_upload_seconds(&self) -> f64 {
        self.last_upload_seconds
    }

    /// Forgets the loaded data (the next frame prepares and uploads again).
    pub fn forget_data(&mut self) {
        self.prepared = None;
        self.resident = None;
    }

    /// Prepares and uploads the data of `settings` unless they are the loaded ones: resident
    /// when every chunk fits, else streamed.
    fn load(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<(), RenderError> {
        let key = data::key_of(snapshot, settings)?;
        if self.prepared.as_ref().is_some_and(|(k, _)| *k == key) {
            self.last_upload_seconds = 0.0;
            return Ok(());
        }
        let start = Instant::now();
        self.forget_data();
        let prepared = data::prepare(&self.context, snapshot, settings, progress)?;
        let mut resident = Vec::new();
        let mut fits = true;
        let mut reorder = self.reorder_scratch(&prepared)?;
        'species: for species in &prepared {
            let mut chunks = Vec::new();
            for first in (0..species.n).step_by(self.chunk_particles) {
                let range = first..species.n.min(first + self.chunk_particles);
                let mut allocated = data::alloc_chunk(&self.context, range.len());
                if allocated.as_ref().is_err_and(WgpuError::is_out_of_memory) && reorder.is_some() {
                    // The reorder's scratch gives way to the data: file order from here on.
                    log::info!("wgpu: no memory left to reorder the particles; file order");
                    reorder = None;
                    allocated = data::alloc_chunk(&self.context, range.len());
                }
                match allocated {
                    Ok(chunk) => {
                        match (&reorder, &self.order) {
                            (Some(scratch), Some(pipelines)) => scratch.write_ordered(
                                &self.context,
                                pipelines,
                                species,
                                range,
                                &chunk,
                            ),
                            _ => data::write_chunk(&self.context, species, range, &chunk),
                        }
                        chunks.push(chunk);
                    }
                    Err(err) if err.is_out_of_memory() => {
                        log::info!("wgpu: {err}; streaming the particles in chunks");
                        fits = false;
                        break 'species;
                    }
                    Err(err) => return Err(err.into()),
                }
            }
            resident.push(chunks);
        }
        drop(reorder);
        self.resident = fits.then_some(resident);
        self.prepared = Some((key, prepared));
        self.context.finish()?;
        self.last_upload_seconds = start.elapsed().as_secs_f64();
        Ok(())
    }

    /// The reorder's scratch for uploading `prepared` when the renderer reorders and some
    /// species has more than one workgroup of particles; `None` (file order) also when the
    /// scratch does not fit in device memory.
    fn reorder_scratch(
        &self,
        prepared: &[PreparedSpecies],
    ) -> Result<Option<order::Reorder>, WgpuError> {
        let largest = prepared.iter().map(|s| s.n).max().unwrap_or(0);
        if self.order.is_none() || largest <= pipelines::GROUP as usize {
            return Ok(None);
        }
        match order::Reorder::new(&self.context, largest.min(self.chunk_particles)) {
            Ok(scratch) => Ok(Some(scratch)),
            Err(err) if err.is_out_of_memory() => {
                log::info!("wgpu: {err}; the particles keep file order");
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }

    /// Renders one frame and tone-maps it on the device to 8 bits with the τ scale times
    /// `extra_scale`, reading back only the image; auto exposure is measured on the device too
    /// when the image is one tile. `None` (nothing drawn) for 16 bits and for auto exposure of
    /// a tiled image, which need τ on the CPU.
    pub fn render_image8(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
    ) -> Result<Option<(image::DynamicImage, RenderStats)>, RenderError> {
        let (width, height) = (settings.width, settings.height);
        let frame = self.render_pixels8(snapshot, settings, extra_scale, progress, 3)?;
        frame
            .map(|(rgb, stats)| {
                let image = image::RgbImage::from_raw(width, height, rgb)
                    .ok_or_else(|| RenderError::setting("image buffer size"))?;
                Ok((image::DynamicImage::ImageRgb8(image), stats))
            })
            .transpose()
    }

    /// [`WgpuRenderer::render_image8`] as opaque RGBA bytes, the device's own layout (the
    /// window's texture), so no pixel is rearranged on the host.
    pub fn render_rgba8(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
    ) -> Result<Option<(Vec<u8>, RenderStats)>, RenderError> {
        self.render_pixels8(snapshot, settings, extra_scale, progress, 4)
    }

    /// The frame of [`WgpuRenderer::render_image8`] with `channels` (3 or 4) bytes a pixel.
    fn render_pixels8(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
        channels: usize,
    ) -> Result<Option<(Vec<u8>, RenderStats)>, RenderError> {
        let width = settings.width;
        let mut pixels = vec![0u8; width as usize * settings.height as usize * channels];
        let stats = self.render_toned(
            snapshot,
            settings,
            extra_scale,
            progress,
            "splat_tone_download",
            &mut |renderer, tile, tone, k| {
                readback::read_back_image(renderer, tile, tone, k, &mut pixels, (width, channels))
            },
        )?;
        Ok(stats.map(|stats| (pixels, stats)))
    }

    /// [`WgpuRenderer::render_image8`] left on the device: the 8-bit image in a texture of the
    /// renderer's pool (see [`FrameTexture`]), for a window on the same device to show as it is.
    pub fn render_texture(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
    ) -> Result<Option<(FrameTexture, RenderStats)>, RenderError> {
        let target = present::frame_texture(self, settings.width, settings.height);
        let stats = self.render_toned(
            snapshot,
            settings,
            extra_scale,
            progress,
            "splat_tone_texture",
            &mut |renderer, tile, tone, k| {
                present::tone_into_texture(renderer, tile, tone, k, &target)
            },
        )?;
        Ok(stats.map(|stats| (target, stats)))
    }

    /// Renders one 8-bit frame tile by tile, handing each drawn tile with its tone parameters
    /// (τ scale times `extra_scale`, gamma, contrast) and fixed-point exponent to `deliver`,
    /// whose time from the first splat on is the stage `stage`. `None` (nothing drawn) for 16
    /// bits and for auto exposure of a tiled image.
    fn render_toned(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
        stage: &'static str,
        deliver: &mut DeliverTile<'_>,
    ) -> Result<Option<RenderStats>, RenderError> {
        let tone = &settings.tone;
        let (width, height) = (settings.width, settings.height);
        let tiles = frame::tiles(width, height, self.tile_side);
        let auto = match settings.brightness {
            Brightness::Auto {
                percentile,
                target_value,
            } => Some((percentile, target_value)),
            Brightness::Explicit(_) => None,
        };
        if tone.bits != super::BitDepth::Eight || (auto.is_some() && tiles.len() != 1) {
            return Ok(None);
        }
        let start = Instant::now();
        let (view, brightness) = crate::render::resolve::checked_frame(settings)?;
        crate::render::resolve::validate_settings(snapshot, settings)?;
        self.load(snapshot, settings, progress)?;
        let upload = start.elapsed().as_secs_f64();
        let splat_start = Instant::now();
        let species = frame::frame_species(self, &settings.species)?;
        let k = self.fixed_exponent(&settings.species, brightness)?;
        let mut tau_scale = 1.0;
        if let Some(passes) = &mut self.pass_seconds {
            *passes = [0.0; 4];
        }
        for tile in tiles {
            if progress.is_cancelled() {
                return Err(RenderError::Cancelled);
            }
            draw::draw_tile(self, &view, brightness, &species, tile, k)?;
            let pixels_start = Instant::now();
            if let Some((percentile, target_value)) = auto {
                tau_scale = exposure::auto_brightness(self, tile, k, percentile, target_value)?;
            }
            deliver(
                self,
                tile,
                [tau_scale * extra_scale, tone.gamma, tone.contrast],
                k,
            )?;
            if let Some(passes) = &mut self.pass_seconds {
                passes[3] += pixels_start.elapsed().as_secs_f64();
            }
        }
        Ok(Some(RenderStats {
            particles: self.particles(),
            counts: Default::default(),
            brightness: if auto.is_some() {
                tau_scale
            } else {
                brightness
            },
            auto_exposure: auto.is_some(),
            tau_scale,
            timings: vec![
                StageTime {
                    stage: "upload",
                    seconds: upload,
                },
                StageTime {
                    stage,
                    seconds: splat_start.elapsed().as_secs_f64(),
                },
            ]
            .into_iter()
            .chain(self.pass_stages())
            .collect(),
            seconds: start.elapsed().as_secs_f64(),
        }))
    }

    /// The last frame's pass times when profiling.
    fn pass_stages(&self) -> Vec<StageTime> {
        let names = ["classify", "scatter", "tiles", "pixels"];
        self.pass_seconds.map_or_else(Vec::new, |passes| {
            names
                .iter()
                .zip(passes)
                .map(|(&stage, seconds)| StageTime { stage, seconds })
                .collect()
        })
    }

    /// The frame's fixed-point exponent from its bound on τ: K_A·brightness·Σ 1/h over every
    /// species (n ≤ 1, palette entries ≤ 1, weights ≤ 1 and the minimum-radius factor ≥ 1).
    fn fixed_exponent(
        &self,
        styles: &[super::SpeciesStyle],
        brightness: f32,
    ) -> Result<i32, RenderError> {
        let prepared = self
            .prepared
            .as_ref()
            .map_or(&[][..], |(_, p)| p.as_slice());
        let bound: f64 = styles
            .iter()
            .zip(prepared)
            .map(|(style, data)| {
                f64::from(crate::render::project::AMPLITUDE_FACTOR)
                    * f64::from(style.brightness * brightness).max(0.0)
                    * data.sum_inv_h
            })
            .sum();
        frame::fixed_exponent(bound)
    }

    fn particles(&self) -> u64 {
        self.prepared
            .as_ref()
            .map_or(0, |(_, p)| p.iter().map(|s| s.n as u64).sum())
    }

    /// Renders one frame and downloads τ (auto exposure measured from it, as on the CPU).
    pub fn render(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderOutput, RenderError> {
        let start = Instant::now();
        let (view, brightness) = crate::render::resolve::checked_frame(settings)?;
        crate::render::resolve::validate_settings(snapshot, settings)?;
        self.load(snapshot, settings, progress)?;
        let upload = start.elapsed().as_secs_f64();
        let splat_start = Instant::now();
        let species = frame::frame_species(self, &settings.species)?;
        let k = self.fixed_exponent(&settings.species, brightness)?;
        let mut tau = TauBuffer::new(settings.width, settings.height);
        for tile in frame::tiles(settings.width, settings.height, self.tile_side) {
            if progress.is_cancelled() {
                return Err(RenderError::Cancelled);
            }
            draw::draw_tile(self, &view, brightness, &species, tile, k)?;
            readback::read_back_tau(self, tile, k, &mut tau)?;
        }
        let splat = splat_start.elapsed().as_secs_f64();
        let exposure_start = Instant::now();
        let (tau_scale, auto) = match settings.brightness {
            Brightness::Auto {
                percentile,
                target_value,
            } => (
                super::exposure::auto_brightness(
                    &tau,
                    percentile,
                    target_value,
                    &mut self.exposure_scratch,
                ),
                true,
            ),
            Brightness::Explicit(_) => (1.0, false),
        };
        let exposure = exposure_start.elapsed().as_secs_f64();
        let particles = self.particles();
        let stats = RenderStats {
            particles,
            counts: Default::default(),
            brightness: if auto { tau_scale } else { brightness },
            auto_exposure: auto,
            tau_scale,
            timings: vec![
                StageTime {
                    stage: "upload",
                    seconds: upload,
                },
                StageTime {
                    stage: "splat",
                    seconds: splat,
                },
                StageTime {
                    stage: "exposure",
                    seconds: exposure,
                },
            ],
            seconds: start.elapsed().as_secs_f64(),
        };
        Ok(RenderOutput { tau, stats })
    }
}

#[cfg(test)]
mod tests {
    use super::WgpuTuning;

    #[test]
    fn tuning_overrides_set_what_they_name_and_skip_what_they_cannot_read() {
        let base = WgpuTuning::default();
        let tuned = base.with_overrides(
            "small=1, medium=40,int64=0,profile=1,chunk=4096,bad,x=2,parts=0,blocks=0,quads=1,\
             fold=1,zinit=0,carry=1,intfix=0,foldk=1,batch=0,marea=32,wide=3,wide=1,lanes=16,\
             lanes=5,checks=5,checks=8,corder=0",
        );
        assert_eq!(
            tuned,
            WgpuTuning {
                chunk_particles: 4096,
                batch_particles: 0,
                small_side: 1,
                medium_side: 16,
                medium_area: 32,
                int64_atomics: false,
                medium_parts: false,
                pixel_blocks: false,
                profile_passes: true,
                quads: true,
                fold: true,
                zero_init_tiles: false,
                carry_test: true,
                int_fixed: false,
                fold_k: true,
                wide: 1,
                medium_lanes: 16,
                runtime_checks: 5,
                medium_cost_order: false,
                ..base
            }
        );
        assert_eq!(base.with_overrides(""), base);
    }
}
