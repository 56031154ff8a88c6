//! The CUDA twin of [`super::cpu`]: the GPU Splotch pipeline of Rivi et al. (2014) with the
//! small/medium/large split (DESIGN §4, §7; issue 4).
//!
//! Per frame and chunk of particles: (1) data are resident on the device, or uploaded through
//! pinned staging buffers; (2) `classify`, one thread per particle, mirrors
//! [`super::project_particle`] and writes a key (tile id, small, large, inactive) and the tile
//! histogram; (3) large splats are compacted by `scatter` and copied back to CPU threads (the
//! tiled CPU splatter) while the GPU works, or splatted on the GPU (`large_splat`); (4) `small_splat`
//! adds each small particle at its pixel; (5) `tile_scan` + `scatter` counting-sort the medium
//! splats by tile and `medium_tiles` renders each tile in shared memory with a border; (6)
//! `compose` adds the CPU τ and `tone8`/`tone16` tone-map, so only the image comes back.
//!
//! τ is accumulated in 64-bit fixed point (value·2^k) with integer atomics: the sum does not
//! depend on the order of the additions, so frames are bit-for-bit deterministic and chunked
//! renders equal unchunked ones. k is chosen per frame from a bound on every pixel's τ
//! (K_A·brightness·Σ 1/h), leaving two bits of headroom in 64.

mod buffers;
mod data;
mod frame;
mod kernels;
mod launch;
mod params;
mod reorder;
mod tone;

pub use frame::FrameTimings;

use super::splat_cpu::Splatter;
use super::{RenderError, RenderOutput, RenderSettings, RenderStats, TauBuffer};
use crate::data::Snapshot;
use crate::gpu::{GpuDevice, GpuError};
use crate::jobs::Progress;
use cudarc::driver::{CudaSlice, CudaStream};
use data::{DataKey, LoadedSpecies, Staging};
use kernels::Kernels;
use params::{LargeC, SplatC};
use std::sync::Arc;
use std::time::Instant;

/// Where large splats are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LargePath {
    /// CPU threads (the tiled CPU splatter), overlapping the GPU kernels (Rivi et al.).
    #[default]
    Cpu,
    /// A GPU kernel, one warp per splat with global atomics.
    Gpu,
}

/// Tuning parameters of the CUDA renderer.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CudaTuning {
    /// Tile side in pixels of the medium kernel.
    pub tile_px: u32,
    /// Threads sharing one splat in the medium kernel (1, 2, 4, 8, 16 or 32).
    pub medium_lanes: u32,
    /// Threads sharing one splat in the wide-border tile pass of large splats (1 to 32, as
    /// `medium_lanes`): bigger splats keep more lanes busy.
    pub wide_lanes: u32,
    /// Shared-memory tile sums as two native 32-bit atomics with a carry instead of a 64-bit
    /// atomic (a compare-and-swap loop on Hopper); both give the same bits. Applies to the
    /// wide-border pass and to the medium pass of RGB frames.
    pub split_shared_atomics: bool,
    /// The same choice for the medium pass of grey frames (one channel), where the 64-bit
    /// atomic measured faster on an H200 (23.3 vs 26.3 ms at 10⁸, R0 = 4).
    pub grey_medium_split_atomics: bool,
    /// Accumulate one fixed-point value per pixel instead of three when no species of the frame
    /// has a colour field (grey splats: the three sums are equal); same bits, a third of the
    /// atomics.
    pub grey_channel: bool,
    /// Separable weights in the tile passes: one expf per column and per row of a splat's box
    /// (lanes own columns, rows shared by shuffles) instead of two per pixel; same bits.
    pub separable_weights: bool,
    /// Medium splats per thread block (a tile with more gets several blocks).
    pub segment: u32,
    /// Medium splats with R below this many pixels go to the direct atomic kernel with the
    /// small ones (their box is a few pixels: atomics beat sorting); 0 = none.
    pub direct_cut_px: f32,
    /// With [`LargePath::Gpu`]: large splats with the centre on the image and R below this go
    /// to a second tile pass with this border (capped by shared memory); the rest to one warp
    /// each.
    pub gpu_border_px: f32,
    /// Large splats per block of the wide-border tile pass.
    pub wide_segment: u32,
    /// Particles per kernel pass (and per upload when streaming).
    pub chunk_particles: usize,
    /// Keep data resident on the device when they fit (false: stream every frame).
    pub resident: bool,
    /// Reorder the resident copy on the device after upload by a coarse 3-D Morton cell key
    /// (kernels/render_order.cu, a counting sort): particles close in space close in memory, so
    /// a warp's particles share a tile and the sort's atomics collapse. τ does not change: the
    /// sums are fixed point, and large splats drawn on the CPU keep their file-order index.
    /// On by default: on an H200 at 10⁸, 2048² it cuts R0 = 4 px from 34.4 to 23.1 ms and costs
    /// ≈ 0.03 s on the first frame (0.27–0.36 s with the upload; session 3b's host-side reorder
    /// cost 1.4 s), for 0.1–0.5 ms more at R0 ≤ 1 px (BENCHMARKS.md, session 4).
    pub morton_upload: bool,
    /// Border buffers instead of global atomics for the medium pass's tile borders: each block
    /// stores the ring outside its tile in its own slot and a second pass adds the slots per
    /// pixel; same bits (integer sums). Falls back to atomics when the slots do not fit. Off by
    /// default: on an H200 (10⁸, 2048²) the atomic flush costs nothing measurable and the
    /// combining pass adds 0.2–0.3 ms (BENCHMARKS.md, session 4).
    pub border_buffers: bool,
    /// Shared-memory tile sums as three 21-bit parts in 32-bit words with native atomic adds
    /// whose result is unused (no compare-and-swap loop); exact for segments of at most 2048
    /// splats, same bits. Used by both tile passes where the 12-byte region fits. On by
    /// default: the medium pass at R0 = 4 px, 10⁸, H200: 17.5 → 15.9 ms (BENCHMARKS.md, session 4).
    pub red_shared_sums: bool,
    /// Thread blocks per SM that the grey medium pass's kernel is compiled to fit
    /// (`__launch_bounds__(256, n)`: a register cap of 65536 / (256 n)), 0 = the compiler's
    /// choice. Applied only where the medium pass has a module of its own (its lane count or
    /// atomics differ from the wide pass's, whose blocks have 1024 threads) and to grey frames
    /// (the RGB kernel spills under a 40-register cap). Default 6: ptxas (sm_90) fits the
    /// grey kernel with three-part sums in 40 registers without spills (48 without the cap: 5
    /// blocks; its 64-bit-word fallback spills 8 bytes). H200, 10⁸, R0 = 4 px: medium pass
    /// 7.39 → 7.29 ms (BENCHMARKS.md, session 5).
    pub grey_medium_min_blocks: u32,
    /// Where large splats go.
    pub large: LargePath,
}

impl CudaTuning {
    /// The defaults, chosen by measurement on an H200 (BENCHMARKS.md, "CUDA Splotch renderer").
    pub const DEFAULT: Self = Self {
        tile_px: 16,
        medium_lanes: 8,
        wide_lanes: 32,
        split_shared_atomics: true,
        grey_medium_split_atomics: false,
        grey_channel: true,
        separable_weights: true,
        segment: 2048,
        direct_cut_px: 1.5,
        gpu_border_px: 32.0,
        wide_segment: 256,
        chunk_particles: 1 << 25,
        resident: true,
        morton_upload: true,
        border_buffers: false,
        red_shared_sums: true,
        grey_medium_min_blocks: 6,
        large: LargePath::Cpu,
    };
}

impl Default for CudaTuning {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Smallest chunk tried when device memory runs out.
const MIN_CHUNK: usize = 1 << 16;

/// Per-chunk device scratch.
#[derive(Debug)]
struct Scratch {
    capacity: usize,
    n_tiles: usize,
    keys: CudaSlice<u32>,
    tile_count: CudaSlice<u32>,
    tile_start: CudaSlice<u32>,
    cursor: CudaSlice<u32>,
    seg_start: CudaSlice<u32>,
    sorted: CudaSlice<SplatC>,
    large: CudaSlice<LargeC>,
    large_count: CudaSlice<u32>,
    class_count: CudaSlice<u64>,
    /// Border buffers of the medium pass (grown on demand; None: not allocated or did not fit).
    border_slots: Option<CudaSlice<u64>>,
    /// Stand-ins for unused pointer arguments.
    dummy_u64: CudaSlice<u64>,
    dummy_u32: CudaSlice<u32>,
    /// Streaming: two sets of particle arrays used in turn.
    streamed: Vec<data::DeviceArrays>,
}

/// Per-image device buffers.
#[derive(Debug)]
struct ImageBuffers {
    width: u32,
    height: u32,
    tau_fixed: CudaSlice<u64>,
    tau: CudaSlice<f32>,
    tau_cpu: CudaSlice<f32>,
    image8: CudaSlice<u8>,
    image16: CudaSlice<u16>,
}

/// The CUDA renderer: holds the device, compiled kernels, resident particle data and every
/// buffer, so that a camera move costs only the per-frame kernels.
pub struct CudaRenderer {
    device: Arc<GpuDevice>,
    compute: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    kernels: Kernels,
    tuning: CudaTuning,
    loaded: Option<(DataKey, Vec<LoadedSpecies>)>,
    scratch: Option<Scratch>,
    image: Option<ImageBuffers>,
    staging: Staging,
    splatter: Splatter,
    cpu_tau: TauBuffer,
    exposure_scratch: Vec<f32>,
    last_upload_seconds: f64,
}

impl std::fmt::Debug for CudaRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaRenderer")
            .field("device", self.device.info())
            .field("tuning", &self.tuning)
            .finish_non_exhaustive()
    }
}

impl CudaRenderer {
    /// Compiles the kernels and creates the streams on `device`.
    pub fn new(device: Arc<GpuDevice>, tuning: CudaTuning) -> Result<Self, RenderError> {
        check_tuning(&tuning)?;
        let kernels = Kernels::load(&device, &tuning)?;
        let compute = device.context().new_stream().map_err(GpuError::from)?;
        let copy = device.context().new_stream().map_err(GpuError::from)?;
        let staging = Staging::new(&copy)?;
        Ok(Self {
            device,
            compute,
            copy,
            kernels,
            tuning,
            loaded: None,
            scratch: None,
            image: None,
            staging,
            splatter: Splatter::new(),
            cpu_tau: TauBuffer::default(),
            exposure_scratch: Vec::new(),
            last_upload_seconds: 0.0,
        })
    }

    /// The device.
    pub fn device(&self) -> &Arc<GpuDevice> {
        &self.device
    }

    /// The tuning in use.
    pub fn tuning(&self) -> &CudaTuning {
        &self.tuning
    }

    /// Forgets the resident data (the next frame uploads again). Call it after changing a
    /// snapshot's arrays in place.
    pub fn forget_data(&mut self) {
        self.loaded = None;
    }

    /// Whether the loaded species are resident on the device.
    pub fn is_resident(&self) -> bool {
        self.loaded
            .as_ref()
            .is_some_and(|(_, s)| s.iter().all(|s| s.resident.is_some() || s.n == 0))
    }

    /// Renders one frame and downloads τ (auto exposure computed from it, as the CPU does).
    pub fn render(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderOutput, RenderError> {
        let mut stats = self.render_frame(snapshot, settings, progress)?;
        let start = Instant::now();
        let tau = self.download_tau()?;
        if let super::Brightness::Auto {
            percentile,
            target_value,
        } = settings.brightness
        {
            stats.tau_scale = super::exposure::auto_brightness(
                &tau,
                percentile,
                target_value,
                &mut self.exposure_scratch,
            );
            stats.brightness = stats.tau_scale;
        }
        stats.timings.push(super::StageTime {
            stage: "download_tau",
            seconds: start.elapsed().as_secs_f64(),
        });
        stats.seconds += start.elapsed().as_secs_f64();
        Ok(RenderOutput { tau, stats })
    }

    /// Renders one frame into the device τ buffer (uploading the data first when they are not
    /// the loaded ones). `stats.tau_scale` is 1; under auto exposure use [`Self::render`].
    pub fn render_frame(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderStats, RenderError> {
        frame::render_frame(self, snapshot, settings, progress)
    }

    /// Seconds the last data upload took (0 when the data were already resident).
    pub fn last_upload_seconds(&self) -> f64 {
        self.last_upload_seconds
    }

    /// Downloads the last frame's τ.
    pub fn download_tau(&self) -> Result<TauBuffer, RenderError> {
        let Some(image) = &self.image else {
            return Err(RenderError::setting("no frame rendered yet"));
        };
        let data = self
            .compute
            .clone_dtoh(&image.tau)
            .map_err(GpuError::from)?;
        Ok(TauBuffer {
            width: image.width,
            height: image.height,
            data,
        })
    }

    /// Tone-maps the last frame on the device and downloads only the image.
    pub fn download_image(
        &mut self,
        tau_scale: f32,
        tone: &super::ToneSettings,
    ) -> Result<image::DynamicImage, RenderError> {
        tone::tone_image(self, tau_scale, tone)
    }
}

fn check_tuning(tuning: &CudaTuning) -> Result<(), RenderError> {
    if !(4..=64).contains(&tuning.tile_px) {
        return Err(RenderError::setting(format!(
            "CUDA tile size {} px must be 4 to 64",
            tuning.tile_px
        )));
    }
    for (what, lanes) in [("medium", tuning.medium_lanes), ("wide", tuning.wide_lanes)] {
        if ![1, 2, 4, 8, 16, 32].contains(&lanes) {
            return Err(RenderError::setting(format!(
                "CUDA {what} lanes {lanes} must be 1, 2, 4, 8, 16 or 32"
            )));
        }
    }
    let finite = |v: f32| v >= 0.0 && v.is_finite();
    if !finite(tuning.direct_cut_px) || !finite(tuning.gpu_border_px) {
        return Err(RenderError::setting(
            "CUDA direct cut and GPU border must be finite numbers >= 0",
        ));
    }
    if tuning.segment == 0 || tuning.wide_segment == 0 || tuning.chunk_particles < 1024 {
        return Err(RenderError::setting(
            "CUDA segments must be > 0 and chunk >= 1024 particles",
        ));
    }
    Ok(())
}

/// Whether `err` means the device ran out of memory.
fn is_out_of_memory(err: &GpuError) -> bool {
    matches!(err, GpuError::OutOfMemory { .. })
        || matches!(err, GpuError::Driver(e)
            if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY)
}
