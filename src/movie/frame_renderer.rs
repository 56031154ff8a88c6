//! The frames of a movie on the resolved back-end: one [`Renderer`] whose particle
//! data stay resident on the device from the first frame to the last (large splats on the GPU,
//! since the CPU threads write and encode the frames), or whose CPU buffers are reused. Used by
//! `haloscope movie` and `haloscope bench movie`; only the camera (and the path's brightness)
//! change from frame to frame.
//!
//! The exposure is fixed from the path's first frame: under auto exposure the brightness that
//! frame would get is measured once and every frame uses it (times the path's `brightness`), so
//! the picture does not flicker as particles enter and leave the view.

use super::interpolate::PathSample;
use crate::backend::{Backend, BackendKind};
use crate::data::Snapshot;
use crate::jobs::Progress;
use crate::render::resolve::validate_settings;
use crate::render::smoothing::knn_smoothing_lengths;
use crate::render::{
    BitDepth, Brightness, LargeSplats, RenderError, RenderSettings, Renderer, RendererOptions,
};
use image::RgbImage;

/// The renderer's options for movies: large splats on the GPU.
const MOVIE_RENDERER_OPTIONS: RendererOptions = RendererOptions {
    large: LargeSplats::Gpu,
};

/// Renders the frames of one movie: 8-bit RGB images of `settings`' size, seen from each
/// [`PathSample`]'s camera, on CUDA (data resident across frames) or on the CPU.
pub struct FrameRenderer {
    renderer: Renderer,
    settings: RenderSettings,
    /// Brightness of every frame before the path's own multiplier: the first frame's auto
    /// exposure, or the explicit brightness of `settings`.
    base_brightness: f32,
}

impl std::fmt::Debug for FrameRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameRenderer")
            .field("backend", &self.backend())
            .field("base_brightness", &self.base_brightness)
            .field("fallback_reason", &self.fallback_reason())
            .finish_non_exhaustive()
    }
}

impl FrameRenderer {
    /// Checks `settings`, starts the renderer on `backend` and renders the first frame
    /// (`first`) once to fix the exposure (on CUDA this uploads the particles). A CUDA failure
    /// goes on on the CPU where `backend`'s rule allows it (one warning line). Species without
    /// smoothing lengths get kNN ones on every CPU frame: call
    /// [`fill_missing_smoothing_lengths`] first. Frames are 8-bit whatever `settings.tone.bits`.
    pub fn new(
        snapshot: &Snapshot,
        mut settings: RenderSettings,
        first: &PathSample,
        backend: Backend,
        progress: &Progress,
    ) -> Result<Self, RenderError> {
        settings.tone.bits = BitDepth::Eight;
        settings.camera = first.pose.to_render_camera();
        validate_settings(snapshot, &settings)?;
        let mut renderer = Renderer::new(backend, MOVIE_RENDERER_OPTIONS)?;
        let base_brightness = match settings.brightness {
            Brightness::Explicit(b) => b,
            Brightness::Auto { .. } => {
                renderer
                    .render_frame(snapshot, &settings, progress)?
                    .tau_scale
            }
        };
        Ok(Self {
            renderer,
            settings,
            base_brightness,
        })
    }

    /// The back-end rendering the next frame.
    pub fn backend(&self) -> BackendKind {
        self.renderer.kind()
    }

    /// Why the CPU renders although CUDA was asked for or looked for (`None`: it was not, or
    /// CUDA renders).
    pub fn fallback_reason(&self) -> Option<&str> {
        self.renderer.fallback_reason()
    }

    /// Whether the particle data are resident on the device (CUDA only).
    pub fn is_resident(&self) -> bool {
        self.renderer.is_resident()
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
        let (image, _) = self
            .renderer
            .render_image(snapshot, &self.settings, &Progress::none())?;
        Ok(image.into_rgb8())
    }
}

/// Computes kNN smoothing lengths (k = `settings.knn`, periodic where the snapshot's box is) for
/// every drawn species that has none, once, so that frames do not each compute them.
pub fn fill_missing_smoothing_lengths(
    snapshot: &mut Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<(), RenderError> {
    let box_size = snapshot.header.periodic_box();
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
