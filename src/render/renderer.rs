//! The one persistent renderer of every face (`haloscope render`, the window, movies and the
//! benches): built from a resolved [`Backend`], it keeps its buffers and, on CUDA, the particle
//! data resident on the device between frames. A CUDA or wgpu failure goes on on the CPU for
//! good where the back-end's rule allows it ([`Backend::falls_back_after`]), with one warning.

use super::cpu::{CpuRenderer, SplatProfile};
use super::cuda::{CudaSet, CudaTuning};
use super::options::RendererOptions;
use super::wgpu::{WgpuRenderer, WgpuTuning};
use super::{Brightness, RenderError, RenderOutput, RenderSettings, RenderStats, TauBuffer};
use crate::backend::{Backend, BackendKind};
use crate::data::Snapshot;
use crate::jobs::Progress;
use std::time::Instant;

/// Renders frames on the resolved back-end, reusing every buffer across frames.
pub struct Renderer {
    backend: Backend,
    options: RendererOptions,
    cpu: CpuRenderer,
    /// One CUDA device, or several sharing every frame (`--devices`).
    cuda: Option<Box<CudaSet>>,
    wgpu: Option<Box<WgpuRenderer>>,
    /// τ of the last frame (row 0 at the top), downloaded where CUDA made it.
    tau: TauBuffer,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("kind", &self.kind())
            .field("fallback_reason", &self.fallback_reason())
            .finish_non_exhaustive()
    }
}

impl Default for Renderer {
    fn default() -> Self {
        Self::cpu()
    }
}

impl Renderer {
    /// The renderer on `backend`; on CUDA this compiles the kernels, and a failure there goes
    /// on on the CPU where `backend`'s rule allows it (else it is the error).
    pub fn new(backend: Backend, options: RendererOptions) -> Result<Self, RenderError> {
        let devices = backend.devices();
        let cuda =
            (!devices.is_empty()).then(|| CudaSet::new(devices, CudaTuning::for_options(options)));
        Self::with_cuda(backend, options, cuda)
    }

    /// [`Self::new`] with the CUDA renderer on `backend`'s devices already started (or failed
    /// to start), as [`super::start::RendererStart`] does on a thread of its own.
    pub(super) fn with_cuda(
        backend: Backend,
        options: RendererOptions,
        cuda: Option<Result<CudaSet, RenderError>>,
    ) -> Result<Self, RenderError> {
        let mut renderer = Self {
            backend,
            options,
            ..Self::cpu()
        };
        match cuda {
            Some(Ok(cuda)) => renderer.cuda = Some(Box::new(cuda)),
            Some(Err(err)) => renderer.fall_back_after(err, "the CUDA renderer failed to start")?,
            None => {}
        }
        if let Some(context) = renderer.backend.wgpu_context().cloned() {
            match WgpuRenderer::new(context, WgpuTuning::default().with_env_overrides()) {
                Ok(wgpu) => renderer.wgpu = Some(Box::new(wgpu)),
                Err(err) => {
                    renderer.fall_back_after(err.into(), "the wgpu renderer failed to start")?
                }
            }
        }
        Ok(renderer)
    }

    /// The CPU renderer with empty buffers.
    pub fn cpu() -> Self {
        Self {
            backend: Backend::cpu(),
            options: RendererOptions::default(),
            cpu: CpuRenderer::new(),
            cuda: None,
            wgpu: None,
            tau: TauBuffer::default(),
        }
    }

    /// The back-end that made the last frame (and makes the next one).
    pub fn kind(&self) -> BackendKind {
        if self.cuda.is_some() {
            BackendKind::Cuda
        } else if self.wgpu.is_some() {
            BackendKind::Wgpu
        } else {
            BackendKind::Cpu
        }
    }

    /// How many CUDA devices share each frame (0 unless CUDA renders).
    pub fn cuda_device_count(&self) -> usize {
        self.cuda.as_ref().map_or(0, |cuda| cuda.device_count())
    }

    /// The wgpu adapter's name and API, when wgpu renders.
    pub fn adapter_label(&self) -> Option<String> {
        self.wgpu.as_ref().map(|w| w.context().adapter_label())
    }

    /// The resolved back-end (switched to the CPU after a fallback).
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Why the CPU renders although CUDA was asked for or looked for (`None`: it was not, or
    /// CUDA renders).
    pub fn fallback_reason(&self) -> Option<&str> {
        self.backend.fallback_reason()
    }

    /// The options it was made with.
    pub fn options(&self) -> RendererOptions {
        self.options
    }

    /// Whether the particle data are resident on the device (CUDA or wgpu).
    pub fn is_resident(&self) -> bool {
        self.cuda.as_ref().is_some_and(|cuda| cuda.is_resident())
            || self.wgpu.as_ref().is_some_and(|wgpu| wgpu.is_resident())
    }

    /// Seconds the last frame spent uploading particle data to the device (0 when they were
    /// resident already); `None` on the CPU, which reads the snapshot in place.
    pub fn last_upload_seconds(&self) -> Option<f64> {
        match (&self.cuda, &self.wgpu) {
            (Some(cuda), _) => Some(cuda.last_upload_seconds()),
            (None, Some(wgpu)) => Some(wgpu.last_upload_seconds()),
            (None, None) => None,
        }
    }

    /// Where the CPU splatter's time went in the last frame (the CPU back-end only).
    pub fn cpu_splat_profile(&self) -> Option<SplatProfile> {
        (self.kind() == BackendKind::Cpu).then(|| self.cpu.splat_profile())
    }

    /// τ of the last frame of [`Renderer::render_frame`].
    pub fn tau(&self) -> &TauBuffer {
        &self.tau
    }

    /// Renders one frame into the renderer's τ ([`Renderer::tau`]). Under auto exposure τ is
    /// the one at brightness 1 and `stats.tau_scale` holds the brightness to tone-map with.
    pub fn render_frame(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderStats, RenderError> {
        if let Some(cuda) = &mut self.cuda {
            match cuda.render(snapshot, settings, progress) {
                Ok(output) => {
                    self.tau = output.tau;
                    return Ok(output.stats);
                }
                Err(err) => self.fall_back_after(err, "CUDA render failed")?,
            }
        }
        if let Some(wgpu) = &mut self.wgpu {
            match wgpu.render(snapshot, settings, progress) {
                Ok(output) => {
                    self.tau = output.tau;
                    return Ok(output.stats);
                }
                Err(err) => self.fall_back_after(err, "wgpu render failed")?,
            }
        }
        self.cpu
            .render_into(snapshot, settings, progress, &mut self.tau)
    }

    /// Renders one frame and hands over its τ (the next frame allocates a new one).
    pub fn render(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderOutput, RenderError> {
        let stats = self.render_frame(snapshot, settings, progress)?;
        Ok(RenderOutput {
            tau: std::mem::take(&mut self.tau),
            stats,
        })
    }

    /// Renders one frame and tone-maps it with `settings.tone` (exposure applied). On CUDA the
    /// image is tone-mapped on the device and only the image comes back (auto exposure is
    /// measured on the device too, stage `exposure`); that tone map and download are the stage
    /// `tone_download` of the stats, and count in their `seconds`. [`Renderer::tau`] is not
    /// updated on CUDA, nor on the CPU at 8 bits with an explicit brightness (there each tile is
    /// tone-mapped as it is drawn, in the stage `splat`, and no τ is made).
    pub fn render_image(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<(image::DynamicImage, RenderStats), RenderError> {
        self.render_image_scaled(snapshot, settings, 1.0, progress)
    }

    /// [`Renderer::render_image`] with the tone map's τ scale multiplied by `extra_scale` (the
    /// window's exposure slider on top of auto exposure); `stats.tau_scale` excludes it.
    pub fn render_image_scaled(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
    ) -> Result<(image::DynamicImage, RenderStats), RenderError> {
        let on_cuda =
            self.cuda_image(snapshot, settings, extra_scale, progress, |cuda, scale| {
                cuda.download_image(scale, &settings.tone)
            })?;
        if let Some(frame) = on_cuda {
            return Ok(frame);
        }
        if let Some(wgpu) = &mut self.wgpu {
            match wgpu.render_image8(snapshot, settings, extra_scale, progress) {
                Ok(Some(frame)) => return Ok(frame),
                Ok(None) => {}
                Err(err) => self.fall_back_after(err, "wgpu render failed")?,
            }
        }
        let cpu_only = self.cuda.is_none() && self.wgpu.is_none();
        if cpu_only
            && settings.tone.bits == super::BitDepth::Eight
            && matches!(settings.brightness, Brightness::Explicit(_))
        {
            // Each tile tone-mapped as it is drawn (the τ scale of an explicit brightness is
            // 1, known before drawing): no frame-sized τ is made; `self.tau` keeps the last
            // frame's.
            let mut pixels = Vec::new();
            let stats = self.cpu.render_image8_into(
                snapshot,
                settings,
                extra_scale,
                progress,
                &mut pixels,
            )?;
            let (width, height) = (settings.width, settings.height);
            let image = image::RgbImage::from_raw(width, height, pixels)
                .map(image::DynamicImage::ImageRgb8)
                .ok_or_else(|| {
                    RenderError::setting(format!("the CPU drew no {width}x{height} image"))
                })?;
            return Ok((image, stats));
        }
        // wgpu at 16 bits or under auto exposure of a tiled image (and the CPU under auto
        // exposure or at 16 bits) tone-map τ on the CPU.
        let mut stats = self.render_frame(snapshot, settings, progress)?;
        let start = Instant::now();
        let image = super::tone_map(&self.tau, stats.tau_scale * extra_scale, &settings.tone);
        stats.add_stage("tone", start);
        Ok((image, stats))
    }

    /// [`Renderer::render_image_scaled`] at 8 bits as opaque RGBA bytes, the window's texture
    /// layout (`settings.tone.bits` is ignored). CUDA and wgpu write RGBA on the device, so no
    /// pixel is rearranged on the host; elsewhere (the CPU, or wgpu's auto exposure of a tiled
    /// image) the RGB image is widened here (stage `rgba`).
    pub fn render_rgba8_scaled(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
    ) -> Result<(Vec<u8>, RenderStats), RenderError> {
        let mut settings = settings.clone();
        settings.tone.bits = super::BitDepth::Eight;
        let on_cuda =
            self.cuda_image(snapshot, &settings, extra_scale, progress, |cuda, scale| {
                cuda.download_rgba(scale, &settings.tone)
            })?;
        if let Some(frame) = on_cuda {
            return Ok(frame);
        }
        if let Some(wgpu) = &mut self.wgpu {
            match wgpu.render_rgba8(snapshot, &settings, extra_scale, progress) {
                Ok(Some(frame)) => return Ok(frame),
                Ok(None) => {}
                Err(err) => self.fall_back_after(err, "wgpu render failed")?,
            }
        }
        let (image, mut stats) =
            self.render_image_scaled(snapshot, &settings, extra_scale, progress)?;
        let start = Instant::now();
        let rgba = super::tone::rgb_to_rgba(&image.into_rgb8());
        stats.add_stage("rgba", start);
        Ok((rgba, stats))
    }

    /// [`Renderer::render_rgba8_scaled`] left on the wgpu device, in a texture of the renderer's
    /// pool: `None` when wgpu does not render (or cannot make this frame on the device, or failed
    /// and the CPU takes over), and the caller renders to host memory instead.
    pub fn render_texture_scaled(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
    ) -> Result<Option<(super::wgpu::FrameTexture, RenderStats)>, RenderError> {
        let Some(wgpu) = &mut self.wgpu else {
            return Ok(None);
        };
        let mut settings = settings.clone();
        settings.tone.bits = super::BitDepth::Eight;
        match wgpu.render_texture(snapshot, &settings, extra_scale, progress) {
            Ok(frame) => Ok(frame),
            Err(err) => self
                .fall_back_after(err, "wgpu render failed")
                .map(|()| None),
        }
    }

    /// The wgpu device the renderer draws on, when wgpu renders.
    pub fn wgpu_context(&self) -> Option<&super::wgpu::WgpuContext> {
        self.wgpu.as_ref().map(|w| w.context())
    }

    /// The CUDA frame of [`Renderer::render_image_scaled`]: render, auto exposure on the device
    /// (stage `exposure`), then `download` of the image at the τ scale (stage
    /// `tone_download`). `None` without CUDA, or when CUDA failed and the CPU takes over.
    fn cuda_image<T>(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        extra_scale: f32,
        progress: &Progress,
        download: impl FnOnce(&mut CudaSet, f32) -> Result<T, RenderError>,
    ) -> Result<Option<(T, RenderStats)>, RenderError> {
        let Some(cuda) = &mut self.cuda else {
            return Ok(None);
        };
        let stats = cuda.render_frame(snapshot, settings, progress);
        let attempt = stats.and_then(|mut stats| {
            let start = Instant::now();
            if let Brightness::Auto {
                percentile,
                target_value,
            } = settings.brightness
            {
                stats.tau_scale = cuda.auto_brightness(percentile, target_value)?;
                stats.brightness = stats.tau_scale;
                stats.add_stage("exposure", start);
            }
            let start = Instant::now();
            let image = download(cuda, stats.tau_scale * extra_scale)?;
            stats.add_stage("tone_download", start);
            Ok((image, stats))
        });
        match attempt {
            Ok(frame) => Ok(Some(frame)),
            Err(err) => {
                self.fall_back_after(err, "CUDA render failed")?;
                Ok(None)
            }
        }
    }

    /// After CUDA or wgpu failed with `err` (while doing `what`): the CPU renders from now on
    /// when the back-end's rule allows it (one warning), else `err` is returned.
    fn fall_back_after(&mut self, err: RenderError, what: &str) -> Result<(), RenderError> {
        let allowed = match &err {
            RenderError::Gpu(gpu) => self.backend.falls_back_after(gpu),
            RenderError::Wgpu(wgpu) => self.backend.falls_back_after(wgpu),
            _ => false,
        };
        if !allowed {
            return Err(err);
        }
        self.backend.fall_back(format!("{what} ({err})"));
        self.cuda = None;
        self.wgpu = None;
        Ok(())
    }
}
