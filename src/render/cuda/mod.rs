//! The CUDA twin of [`super::cpu`]: the GPU Splotch pipeline of Rivi et al. (2014) with the
//! small/medium/large split (DESIGN §4, §7).
//!
//! Per frame and chunk of particles: (1) data are resident on the device, or uploaded through
//! pinned staging buffers; (2) `classify`, one thread per particle, mirrors
//! [`super::project_particle`] and writes a key (tile id, small, large, inactive) and the tile
//! histogram; (3) large splats are compacted by `scatter` and copied back to CPU threads (the
//! tiled CPU splatter) while the GPU works, or drawn on the GPU (a wide-border tile pass, and
//! `large_splat` for the rest); (4) `small_splat` adds each small particle at its pixel; (5)
//! `tile_scan` + `scatter` counting-sort the medium splats by tile and `medium_tiles` renders
//! each tile in shared memory with a border; (6) `compose` adds the CPU τ and `tone8`/`tone16`
//! tone-map, so only the image comes back.
//!
//! τ is accumulated in 64-bit fixed point (value·2^k) with integer atomics: the sum does not
//! depend on the order of the additions, so frames are bit-for-bit deterministic and chunked
//! renders equal unchunked ones. k is chosen per frame from a bound on every pixel's τ
//! (K_A·brightness·Σ 1/h), leaving two bits of headroom in 64.

mod args;
mod buffers;
mod data;
mod exposure;
mod frame;
mod kernels;
mod launch;
mod log10;
mod multi;
mod params;
mod passes;
mod reorder;
mod staged;
mod tone;
mod tuning;

pub use multi::{CudaSet, MultiCudaRenderer, RanksFrame, render_ranks_cuda};
pub use tuning::CudaTuning;

use super::{RenderError, RenderOutput, RenderSettings, RenderStats, TauBuffer};
use crate::data::Snapshot;
use crate::gpu::PinnedStaging;
use crate::gpu::{GpuDevice, GpuError};
use crate::jobs::Progress;
use crate::render::cpu::Splatter;
use buffers::{ImageBuffers, Scratch};
use cudarc::driver::CudaStream;
use data::{DataKey, LoadedSpecies};
use kernels::Kernels;
use std::sync::Arc;
use std::time::Instant;

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
    staging: PinnedStaging,
    log10: log10::DeviceLog10,
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
        let kernels = Kernels::load(&device)?;
        let compute = device.context().new_stream().map_err(GpuError::from)?;
        let copy = device.context().new_stream().map_err(GpuError::from)?;
        let staging = PinnedStaging::new(&copy)?;
        let log10 = log10::DeviceLog10::load(&device)?;
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
            log10,
            splatter: Splatter::new(),
            cpu_tau: TauBuffer::default(),
            exposure_scratch: Vec::new(),
            last_upload_seconds: 0.0,
        })
    }

    /// Does the first upload's data-independent work ahead of it, for a caller that has time
    /// to spare (a snapshot still loading): the device log10's check against the host's bits,
    /// and `reserve_bytes` of device memory mapped into the pool ([`crate::gpu::reserve_pool`];
    /// a process that renders and exits). A reserve the device cannot give is skipped: the
    /// upload allocates as it would have.
    pub fn prepare(&mut self, reserve_bytes: usize) -> Result<(), GpuError> {
        self.log10.matches_host(&self.copy)?;
        match crate::gpu::reserve_pool(&self.copy, reserve_bytes) {
            Err(err) if err.is_out_of_memory() => Ok(()),
            other => other,
        }
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

    /// Whether resident uploads take a log field's log10 on the device (the kernel gave the
    /// host's bits on the probe values); None until an upload needed one.
    pub fn device_log10(&self) -> Option<bool> {
        self.log10.checked()
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

    /// The auto-exposure brightness of the last frame, measured on the device (equal to
    /// [`super::exposure::auto_brightness`] of its τ; only two histograms come back).
    pub fn auto_brightness(
        &mut self,
        percentile: f32,
        target_value: f32,
    ) -> Result<f32, RenderError> {
        exposure::device_auto_brightness(self, percentile, target_value)
    }

    /// Tone-maps the last frame on the device and downloads only the image.
    pub fn download_image(
        &mut self,
        tau_scale: f32,
        tone: &super::ToneSettings,
    ) -> Result<image::DynamicImage, RenderError> {
        tone::tone_image(self, tau_scale, tone)
    }

    /// Tone-maps the last frame on the device and downloads its 8-bit RGBA image (opaque).
    pub fn download_rgba(
        &mut self,
        tau_scale: f32,
        tone: &super::ToneSettings,
    ) -> Result<Vec<u8>, RenderError> {
        tone::tone_rgba(self, tau_scale, tone)
    }
}

fn check_tuning(tuning: &CudaTuning) -> Result<(), RenderError> {
    if tuning.chunk_particles < 1024 {
        return Err(RenderError::setting(
            "CUDA chunks must hold >= 1024 particles",
        ));
    }
    Ok(())
}
