//! The CUDA side of [`crate::render::Renderer`]: one device's renderer, or several devices'
//! summed ([`MultiCudaRenderer`]), behind the calls the faces make.

use super::super::{CudaRenderer, CudaTuning};
use super::MultiCudaRenderer;
use crate::data::Snapshot;
use crate::gpu::{GpuDevice, GpuError};
use crate::jobs::Progress;
use crate::render::{
    LargeSplats, RenderError, RenderOutput, RenderSettings, RenderStats, ToneSettings,
};
use std::sync::Arc;

/// One CUDA device's renderer, or several devices sharing every frame.
#[derive(Debug)]
pub enum CudaSet {
    /// One device.
    One(Box<CudaRenderer>),
    /// Several devices, their images summed exactly.
    Several(Box<MultiCudaRenderer>),
}

impl CudaSet {
    /// Several devices when `devices` names more than one and large splats are drawn on the
    /// GPU (CPU large splats are summed in f32: those frames stay on the first device), else
    /// the first device.
    pub fn new(devices: &[Arc<GpuDevice>], tuning: CudaTuning) -> Result<Self, RenderError> {
        let Some(first) = devices.first() else {
            return Err(RenderError::setting("no CUDA device"));
        };
        if devices.len() > 1 && tuning.large == LargeSplats::Gpu {
            return Ok(Self::Several(Box::new(MultiCudaRenderer::new(
                devices, tuning,
            )?)));
        }
        if devices.len() > 1 {
            log::warn!("large splats on the CPU: rendering on the first CUDA device only");
        }
        Ok(Self::One(Box::new(CudaRenderer::new(
            first.clone(),
            tuning,
        )?)))
    }

    /// [`CudaRenderer::prepare`] on every device, each reserving `reserve_bytes` (several
    /// devices hold a share each: the reserve only has to cover the largest).
    pub fn prepare(&mut self, reserve_bytes: usize) -> Result<(), GpuError> {
        match self {
            Self::One(c) => c.prepare(reserve_bytes),
            Self::Several(m) => m.prepare(reserve_bytes),
        }
    }

    /// How many devices share a frame.
    pub fn device_count(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Several(m) => m.device_count(),
        }
    }

    /// Whether the particle data are resident (on every device).
    pub fn is_resident(&self) -> bool {
        match self {
            Self::One(c) => c.is_resident(),
            Self::Several(m) => m.is_resident(),
        }
    }

    /// Seconds the last data upload took (0 when the data were resident already).
    pub fn last_upload_seconds(&self) -> f64 {
        match self {
            Self::One(c) => c.last_upload_seconds(),
            Self::Several(m) => m.last_upload_seconds(),
        }
    }

    /// Renders one frame and downloads τ (see [`CudaRenderer::render`]).
    pub fn render(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderOutput, RenderError> {
        match self {
            Self::One(c) => c.render(snapshot, settings, progress),
            Self::Several(m) => m.render(snapshot, settings, progress),
        }
    }

    /// Renders one frame into the (first) device's τ (see [`CudaRenderer::render_frame`]).
    pub fn render_frame(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderStats, RenderError> {
        match self {
            Self::One(c) => c.render_frame(snapshot, settings, progress),
            Self::Several(m) => m.render_frame(snapshot, settings, progress),
        }
    }

    /// The auto-exposure brightness of the last frame, measured on the (first) device.
    pub fn auto_brightness(
        &mut self,
        percentile: f32,
        target_value: f32,
    ) -> Result<f32, RenderError> {
        match self {
            Self::One(c) => c.auto_brightness(percentile, target_value),
            Self::Several(m) => m.auto_brightness(percentile, target_value),
        }
    }

    /// Tone-maps the last frame on the (first) device and downloads only the image.
    pub fn download_image(
        &mut self,
        tau_scale: f32,
        tone: &ToneSettings,
    ) -> Result<image::DynamicImage, RenderError> {
        match self {
            Self::One(c) => c.download_image(tau_scale, tone),
            Self::Several(m) => m.download_image(tau_scale, tone),
        }
    }

    /// Tone-maps the last frame on the (first) device and downloads its 8-bit RGBA image.
    pub fn download_rgba(
        &mut self,
        tau_scale: f32,
        tone: &ToneSettings,
    ) -> Result<Vec<u8>, RenderError> {
        match self {
            Self::One(c) => c.download_rgba(tau_scale, tone),
            Self::Several(m) => m.download_rgba(tau_scale, tone),
        }
    }
}
