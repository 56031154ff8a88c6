//! The frames of a movie on the resolved back-end (issue 8): one [`CudaRenderer`] whose particle
//! data stay resident on the device from the first frame to the last, or one [`CpuRenderer`]
//! reusing its buffers. Used by `haloscope movie`, `haloscope bench movie` and the GUI's movie
//! export; only the camera (and the path's brightness) change from frame to frame.
//!
//! The exposure is fixed from the path's first frame: under auto exposure the brightness that
//! frame would get is measured once and every frame uses it (times the path's `brightness`), so
//! the picture does not flicker as particles enter and leave the view.

use super::interpolate::PathSample;
use crate::data::Snapshot;
use crate::gpu::{BackendChoice, GpuDevice, GpuError, ResolvedBackend, resolve_backend};
use crate::jobs::Progress;
use crate::render::cpu::validate_settings;
use crate::render::smoothing::knn_smoothing_lengths;
use crate::render::{
    BitDepth, Brightness, CpuRenderer, CudaRenderer, CudaTuning, LargePath, RenderBackend,
    RenderError, RenderSettings, TauBuffer, tone_map,
};
use image::RgbImage;
use std::sync::Arc;

/// CUDA tuning for movies: the defaults, but large splats on the GPU. On the GPU host the CPU
/// threads are busy writing PNGs and encoding H.264, and even idle they splat large particles
/// 28× slower than the wide-border GPU pass (BENCHMARKS-rgpu.md, "Large splats").
pub const MOVIE_CUDA_TUNING: CudaTuning = CudaTuning {
    large: LargePath::Gpu,
    ..CudaTuning::DEFAULT
};

/// The back-end doing the work, with its buffers.
enum Engine {
    Cpu {
        renderer: CpuRenderer,
        tau: TauBuffer,
    },
    Cuda(Box<CudaRenderer>),
}

/// Renders the frames of one movie: 8-bit RGB images of `settings`' size, seen from each
/// [`PathSample`]'s camera, on CUDA (data resident across frames) or on the CPU.
pub struct FrameRenderer {
    engine: Engine,
    choice: BackendChoice,
    settings: RenderSettings,
    /// Brightness of every frame before the path's own multiplier: the first frame's auto
    /// exposure, or the explicit brightness of `settings`.
    base_brightness: f32,
    fallback_reason: Option<String>,
}

impl std::fmt::Debug for FrameRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameRenderer")
            .field("backend", &self.backend())
            .field("base_brightness", &self.base_brightness)
            .field("fallback_reason", &self.fallback_reason)
            .finish_non_exhaustive()
    }
}

impl FrameRenderer {
    /// Checks `settings`, opens the back-end `choice` asks for and renders the first frame
    /// (`first`) once to fix the exposure (on CUDA this uploads the particles). `Auto` falls
    /// back to the CPU with one warning line when no device opens or the CUDA renderer fails;
    /// `Cuda` is an error then, except when the device runs out of memory (CPU, with a
    /// warning). Species without smoothing lengths get kNN ones on every CPU frame: call
    /// [`fill_missing_smoothing_lengths`] first. Frames are 8-bit whatever `settings.tone.bits`.
    pub fn new(
        snapshot: &Snapshot,
        mut settings: RenderSettings,
        first: &PathSample,
        choice: BackendChoice,
        progress: &Progress,
    ) -> Result<Self, RenderError> {
        settings.tone.bits = BitDepth::Eight;
        settings.camera = first.pose.to_render_camera();
        validate_settings(snapshot, &settings)?;
        let mut renderer = Self {
            engine: cpu_engine(),
            choice,
            settings,
            base_brightness: 1.0,
            fallback_reason: None,
        };
        match resolve_backend(choice)? {
            ResolvedBackend::Cpu {
                fallback_reason: Some(reason),
            } => renderer.fall_back(format!("no CUDA device ({reason})")),
            ResolvedBackend::Cpu {
                fallback_reason: None,
            } => {}
            ResolvedBackend::Cuda(device) => match open_cuda(device) {
                Ok(cuda) => renderer.engine = Engine::Cuda(Box::new(cuda)),
                Err(err) if falls_back(choice, &err) => {
                    renderer.fall_back(format!("the CUDA renderer failed to start ({err})"));
                }
                Err(err) => return Err(err),
            },
        }
        renderer.base_brightness = match renderer.settings.brightness {
            Brightness::Explicit(b) => b,
            Brightness::Auto { .. } => renderer.first_exposure(snapshot, progress)?,
        };
        Ok(renderer)
    }

    /// The back-end rendering the next frame.
    pub fn backend(&self) -> RenderBackend {
        match self.engine {
            Engine::Cpu { .. } => RenderBackend::Cpu,
            Engine::Cuda(_) => RenderBackend::Cuda,
        }
    }

    /// Why the CPU renders although CUDA was asked for or looked for (`None`: it was not, or
    /// CUDA renders).
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// Whether the particle data are resident on the device (CUDA only).
    pub fn is_resident(&self) -> bool {
        match &self.engine {
            Engine::Cuda(cuda) => cuda.is_resident(),
            Engine::Cpu { .. } => false,
        }
    }

    /// The brightness every frame uses before the path's `brightness` multiplier.
    pub fn base_brightness(&self) -> f32 {
        self.base_brightness
    }

    /// The settings of every frame (the camera is the last frame's).
    pub fn settings(&self) -> &RenderSettings {
        &self.settings
    }

    /// One frame: the camera of `sample`, brightness `base × sample.settings.brightness`.
    /// A CUDA failure that [`FrameRenderer::new`] would have fallen back from switches to the
    /// CPU for this and every later frame (one warning line).
    pub fn frame(
        &mut self,
        snapshot: &Snapshot,
        sample: &PathSample,
    ) -> Result<RgbImage, RenderError> {
        self.settings.camera = sample.pose.to_render_camera();
        let scale = sample.settings.brightness.unwrap_or(1.0) as f32;
        self.settings.brightness = Brightness::Explicit(self.base_brightness * scale);
        if let Engine::Cuda(cuda) = &mut self.engine {
            let attempt = cuda
                .render_frame(snapshot, &self.settings, &Progress::none())
                .and_then(|_| cuda.download_image(1.0, &self.settings.tone));
            match attempt {
                Ok(image) => return Ok(image.into_rgb8()),
                Err(err) if falls_back(self.choice, &err) => {
                    self.fall_back(format!("a CUDA frame failed ({err})"));
                }
                Err(err) => return Err(err),
            }
        }
        let Engine::Cpu { renderer, tau } = &mut self.engine else {
            return Err(RenderError::setting(
                "no CPU renderer after the CUDA fallback",
            ));
        };
        let stats = renderer.render_into(snapshot, &self.settings, &Progress::none(), tau)?;
        Ok(tone_map(tau, stats.tau_scale, &self.settings.tone).into_rgb8())
    }

    /// The auto exposure of the first frame (settings' camera), falling back to the CPU when
    /// the CUDA render fails and the choice allows it.
    fn first_exposure(
        &mut self,
        snapshot: &Snapshot,
        progress: &Progress,
    ) -> Result<f32, RenderError> {
        if let Engine::Cuda(cuda) = &mut self.engine {
            match cuda.render(snapshot, &self.settings, progress) {
                Ok(output) => return Ok(output.stats.tau_scale),
                Err(err) if falls_back(self.choice, &err) => {
                    self.fall_back(format!("the first CUDA frame failed ({err})"));
                }
                Err(err) => return Err(err),
            }
        }
        let Engine::Cpu { renderer, tau } = &mut self.engine else {
            return Err(RenderError::setting(
                "no CPU renderer after the CUDA fallback",
            ));
        };
        Ok(renderer
            .render_into(snapshot, &self.settings, progress, tau)?
            .tau_scale)
    }

    /// Renders on the CPU from now on, saying why once.
    fn fall_back(&mut self, reason: String) {
        log::warn!("{reason}; rendering the movie on the CPU");
        self.engine = cpu_engine();
        self.fallback_reason = Some(reason);
    }
}

fn cpu_engine() -> Engine {
    Engine::Cpu {
        renderer: CpuRenderer::new(),
        tau: TauBuffer::default(),
    }
}

fn open_cuda(device: GpuDevice) -> Result<CudaRenderer, RenderError> {
    CudaRenderer::new(Arc::new(device), MOVIE_CUDA_TUNING)
}

/// Whether a CUDA failure `err` falls back to the CPU under `choice`: under `Auto` every GPU
/// error does, under `Cuda` only running out of device memory (as `render::render` decides).
pub fn falls_back(choice: BackendChoice, err: &RenderError) -> bool {
    match err {
        RenderError::Gpu(gpu) => choice == BackendChoice::Auto || is_out_of_memory(gpu),
        _ => false,
    }
}

/// Whether `err` means the device ran out of memory (our own check or the driver's code).
fn is_out_of_memory(err: &GpuError) -> bool {
    matches!(err, GpuError::OutOfMemory { .. })
        || matches!(err, GpuError::Driver(e)
            if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY)
}

/// Computes kNN smoothing lengths (k = `settings.knn`, periodic where the snapshot's box is) for
/// every drawn species that has none, once, so that frames do not each compute them.
pub fn fill_missing_smoothing_lengths(
    snapshot: &mut Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<(), RenderError> {
    let box_size = snapshot
        .header
        .box_size
        .filter(|_| snapshot.header.periodic);
    for style in &settings.species {
        if let Some(species) = snapshot.species_mut(style.kind)
            && species.smoothing_lengths.is_none()
            && !species.is_empty()
        {
            let h = knn_smoothing_lengths(&species.positions, settings.knn, box_size, progress)?;
            species.smoothing_lengths = Some(h);
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "frame_renderer_tests.rs"]
mod tests;
