//! The library's Splotch renderer behind the viewport boundary: a thin adapter over
//! [`render::Renderer`] that maps a [`ViewRequest`] (orbit camera, [`ViewStyle`], size) to
//! [`render::RenderSettings`], tone-maps τ to RGBA and describes the colour bar.

use super::camera::{OrbitCamera, Projection};
use super::viewport_renderer::{
    Legend, Pixels, RenderedImage, RendererFactory, SpeciesStyle, ViewRequest, ViewStyle,
    ViewportRenderer,
};
use crate::backend::{Backend, BackendKind};
use crate::data::{Snapshot, Species, SpeciesKind};
use crate::jobs::Progress;
use crate::render::wgpu::TexturePool;
use crate::render::{
    self, Brightness, Camera, RenderError, RenderSettings, Renderer, RendererOptions, TauBuffer,
    ToneSettings, normalise::Normaliser, tone::tone_value,
};
use rayon::prelude::*;
use std::sync::{Arc, Weak};
use std::time::Instant;

/// The renderer the application uses: the Splotch renderer on the window's back-end.
pub fn default_renderer_factory() -> RendererFactory {
    Arc::new(|| Box::new(SplotchRenderer::best()))
}

/// The Splotch renderer on a resolved back-end, keeping its buffers (and, on CUDA, the
/// resident particle data) across frames. A CUDA failure switches it to the CPU for good, with
/// a warning.
#[derive(Debug, Default)]
pub struct SplotchRenderer {
    renderer: Renderer,
    /// The colour bar of the last frame, kept while the snapshot and the style stay the same:
    /// its range scans the whole colour field, which a camera move leaves alone. The weak
    /// pointer keeps the snapshot's allocation, so no other snapshot can share its address.
    legend: Option<(Weak<Snapshot>, ViewStyle, Option<Legend>)>,
    /// Textures on the window's device that frames made elsewhere (CUDA, the CPU) are written
    /// into for the window ([`ViewportRenderer::render_for_window`]).
    window_textures: TexturePool,
}

impl SplotchRenderer {
    /// A CPU renderer with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The renderer on `backend` (a CUDA start failure falls back by `backend`'s rule).
    pub fn with_backend(backend: Backend) -> Result<Self, RenderError> {
        Ok(Self {
            renderer: Renderer::new(backend, RendererOptions::default())?,
            legend: None,
            window_textures: TexturePool::default(),
        })
    }

    /// The renderer on the window's back-end ([`crate::app::window_backend`]): CUDA when a device opens
    /// and its kernels load, else the window's own wgpu device when it is a hardware adapter
    /// ([`super::wgpu_view::shared_backend`]), else the CPU.
    pub fn best() -> Self {
        let mut backend = crate::app::window_backend();
        if backend.kind() != crate::backend::BackendKind::Cuda
            && let Some(window_device) = super::wgpu_view::shared_backend()
        {
            backend = window_device;
        }
        Self::with_backend(backend).unwrap_or_else(|err| {
            log::warn!("renderer unavailable ({err}); rendering on the CPU");
            Self::new()
        })
    }
}

/// Renderers on `backend` (e.g. the window's wgpu device), the CPU where it fails to start.
pub fn factory_on(backend: Backend) -> RendererFactory {
    Arc::new(move || {
        Box::new(
            SplotchRenderer::with_backend(backend.clone()).unwrap_or_else(|err| {
                log::warn!("renderer unavailable ({err}); rendering on the CPU");
                SplotchRenderer::new()
            }),
        )
    })
}

impl ViewportRenderer for SplotchRenderer {
    fn backend_name(&self) -> String {
        match self.renderer.adapter_label() {
            Some(adapter) => format!("{} on {adapter}", self.renderer.kind().name()),
            None => self.renderer.kind().name().to_owned(),
        }
    }

    fn render(
        &mut self,
        request: &ViewRequest,
        progress: &Progress,
    ) -> Result<RenderedImage, String> {
        let start = Instant::now();
        let settings = render_settings(request)?;
        let extra_scale = extra_scale(&request.style);
        let on_device = matches!(self.renderer.kind(), BackendKind::Cuda | BackendKind::Wgpu);
        let (rgba, stages) = if on_device {
            // Tone map (and auto exposure) on the device: only the 8-bit image comes back.
            let (rgba, stats) = self
                .renderer
                .render_rgba8_scaled(&request.snapshot, &settings, extra_scale, progress)
                .map_err(|e| e.to_string())?;
            (rgba, stats.timings)
        } else {
            let mut stats = self
                .renderer
                .render_frame(&request.snapshot, &settings, progress)
                .map_err(|e| e.to_string())?;
            let tau_scale = if request.style.auto_exposure {
                stats.tau_scale * extra_scale
            } else {
                1.0
            };
            let tone_start = Instant::now();
            let rgba = tau_to_rgba(self.renderer.tau(), tau_scale, &settings.tone);
            stats.add_stage("tone_rgba", tone_start);
            (rgba, stats.timings)
        };
        Ok(RenderedImage {
            width_px: settings.width,
            height_px: settings.height,
            pixels: Pixels::Host(rgba),
            backend: self.backend_name(),
            seconds: start.elapsed().as_secs_f64(),
            stages,
            legend: self.legend_of(request),
        })
    }

    /// On the window's own wgpu device the frame stays there, in a texture the window shows as
    /// it is. Made elsewhere (CUDA, the CPU, or a frame the device cannot finish alone), it is
    /// written into such a texture here, on the render worker, so that the window's thread
    /// never handles its bytes; without a window device it stays in host memory.
    fn render_for_window(
        &mut self,
        request: &ViewRequest,
        progress: &Progress,
    ) -> Result<RenderedImage, String> {
        let on_window_device = self
            .renderer
            .wgpu_context()
            .is_some_and(super::wgpu_view::is_window_device);
        if !on_window_device {
            let image = self.render(request, progress)?;
            return Ok(self.onto_window_device(image));
        }
        let start = Instant::now();
        let settings = render_settings(request)?;
        let frame = self
            .renderer
            .render_texture_scaled(
                &request.snapshot,
                &settings,
                extra_scale(&request.style),
                progress,
            )
            .map_err(|e| e.to_string())?;
        let Some((frame, stats)) = frame else {
            let image = self.render(request, progress)?;
            return Ok(self.onto_window_device(image));
        };
        Ok(RenderedImage {
            width_px: settings.width,
            height_px: settings.height,
            pixels: Pixels::Device(frame),
            backend: self.backend_name(),
            seconds: start.elapsed().as_secs_f64(),
            stages: stats.timings,
            legend: self.legend_of(request),
        })
    }
}

/// What the exposure slider multiplies the τ scale by: under auto exposure the measured scale,
/// else nothing (the slider's value is then the brightness itself).
fn extra_scale(style: &ViewStyle) -> f32 {
    if style.auto_exposure {
        style.exposure.max(0.0)
    } else {
        1.0
    }
}

impl SplotchRenderer {
    /// `image` written into a texture on the window's device, when one was shared and the
    /// image is whole; else (or when the device fails, with a warning) as it is.
    fn onto_window_device(&mut self, mut image: RenderedImage) -> RenderedImage {
        let (Some(context), Pixels::Host(rgba)) =
            (super::wgpu_view::shared_context(), &image.pixels)
        else {
            return image;
        };
        let size = (image.width_px, image.height_px);
        match self.window_textures.upload(&context, size, rgba) {
            Ok(Some(frame)) => image.pixels = Pixels::Device(frame),
            Ok(None) => {}
            Err(err) => log::warn!("the window's device did not take the image ({err})"),
        }
        image
    }

    /// The colour bar of `request`, from the cache when its snapshot and style are unchanged.
    fn legend_of(&mut self, request: &ViewRequest) -> Option<Legend> {
        let same =
            |weak: &Weak<Snapshot>| std::ptr::eq(weak.as_ptr(), Arc::as_ptr(&request.snapshot));
        match &self.legend {
            Some((weak, style, cached)) if same(weak) && *style == request.style => cached.clone(),
            _ => {
                let fresh = legend(&request.snapshot, &request.style);
                let weak = Arc::downgrade(&request.snapshot);
                self.legend = Some((weak, request.style.clone(), fresh.clone()));
                fresh
            }
        }
    }
}

/// The renderer's camera for the orbit camera `camera` and an image of `width`×`height`: the
/// orbit camera keeps a vertical field of view, the renderer a horizontal one, related by
/// tan(fov_x/2) = tan(fov_y/2)·W/H.
pub fn render_camera(camera: &OrbitCamera, width_px: u32, height_px: u32) -> Camera {
    let aspect = f64::from(width_px.max(1)) / f64::from(height_px.max(1));
    let half_y = (0.5 * f64::from(camera.fov_y_deg)).to_radians();
    let fov_x_deg = 2.0 * (half_y.tan() * aspect).atan().to_degrees();
    let to_f64 = |v: [f32; 3]| v.map(f64::from);
    let mut out = Camera::look_at(
        to_f64(camera.eye_world),
        to_f64(camera.look_at_world),
        to_f64(camera.up_world),
        fov_x_deg,
    );
    out.projection = match camera.projection {
        Projection::Perspective => render::Projection::Perspective,
        Projection::Orthographic => render::Projection::Orthographic,
    };
    out
}

/// The field of `species` named `name` (case-insensitive), or `mass`, as the renderer sees it.
fn has_field(species: &Species, name: &str) -> bool {
    name.eq_ignore_ascii_case("mass")
        || species.field(name).is_some()
        || (species.smoothing_lengths.is_some()
            && ["smoothinglength", "smoothinglengths", "hsml", "hsmooth"]
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name)))
}

/// A field name of `species` that is kept only when it exists (so settings made for one file
/// do not break the render of another).
fn existing(species: &Species, name: &Option<String>) -> Option<String> {
    name.as_ref().filter(|n| has_field(species, n)).cloned()
}

/// The renderer's style of one species: the colour follows the intensity field unless another
/// is chosen; a named field the species lacks falls back to its density (gas) or to none.
fn species_settings(species: &Species, style: &SpeciesStyle) -> render::SpeciesStyle {
    let intensity = existing(species, &style.intensity_field).or_else(|| {
        style
            .intensity_field
            .as_ref()
            .and_then(|_| default_intensity_field(species))
    });
    let colour = existing(species, &style.color_field).or_else(|| intensity.clone());
    let mut out = render::SpeciesStyle::new(species.kind);
    out.intensity_log = style.intensity_log && intensity.is_some();
    out.intensity = intensity;
    out.colour_log = style.color_log && colour.is_some();
    out.colour = colour;
    out.colour_range = style
        .color_range
        .filter(|r| r[0].is_finite() && r[1].is_finite() && r[0] <= r[1])
        .map(|r| (r[0], r[1]));
    out.palette.clone_from(&style.palette);
    out.brightness = style.brightness.max(0.0);
    out.size_factor = style.size_factor.max(1e-3);
    out.kernel_support = style.kernel_support.filter(|k| *k > 0.0 && k.is_finite());
    out
}

/// Everything the renderer needs for `request`: enabled species present in the snapshot, the
/// camera, minimum radius and exposure. An error says what to change when nothing is drawn.
pub fn render_settings(request: &ViewRequest) -> Result<RenderSettings, String> {
    let species: Vec<render::SpeciesStyle> = request
        .snapshot
        .species
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| {
            let style = request.style.species(s.kind)?;
            style.enabled.then(|| species_settings(s, style))
        })
        .collect();
    if species.is_empty() {
        return Err("no species is switched on: tick one in the Render panel".to_owned());
    }
    let (w, h) = (request.width_px.max(1), request.height_px.max(1));
    let mut settings = RenderSettings::new(w, h, render_camera(&request.camera, w, h), species);
    settings.min_radius_px = request.style.min_radius_px.max(0.0);
    settings.brightness = if request.style.auto_exposure {
        Brightness::default()
    } else {
        Brightness::Explicit(request.style.exposure.max(0.0))
    };
    settings.tone = ToneSettings::default();
    Ok(settings)
}

/// τ (row 0 at the top) to opaque 8-bit RGBA through the renderer's tone curve.
pub fn tau_to_rgba(tau: &TauBuffer, tau_scale: f32, tone: &ToneSettings) -> Vec<u8> {
    let mut rgba = vec![255u8; tau.data.len() / 3 * 4];
    rgba.par_chunks_mut(4)
        .zip(tau.data.par_chunks(3))
        .for_each(|(out, rgb)| {
            for c in 0..3 {
                out[c] = (tone_value(rgb[c], tau_scale, tone) * 255.0).round() as u8;
            }
        });
    rgba
}

/// The colour bar of the first enabled species coloured by a field: palette and the value
/// range the renderer uses (fixed, or the data's own min/max after the log).
pub fn legend(snapshot: &Snapshot, style: &ViewStyle) -> Option<Legend> {
    for species in snapshot.species.iter().filter(|s| !s.is_empty()) {
        let Some(species_style) = style.species(species.kind).filter(|s| s.enabled) else {
            continue;
        };
        let settings = species_settings(species, species_style);
        let Some(field) = settings.colour.clone() else {
            continue;
        };
        let (lo, hi) = match settings.colour_range {
            Some(range) => range,
            None => {
                let values = render::resolve::field_values(species, &field).ok()?;
                let norm = match values {
                    render::resolve::Values::Slice(v) => {
                        Normaliser::from_values(v, settings.colour_log)
                    }
                    render::resolve::Values::Constant(c) => {
                        Normaliser::from_values(&[c], settings.colour_log)
                    }
                };
                (norm.lo, norm.hi)
            }
        };
        let unit = snapshot
            .unit_label(species.kind, &field)
            .map_or(String::new(), |u| format!(" [{u}]"));
        let label = if settings.colour_log {
            format!("{} log10 {field}{unit}", species.kind)
        } else {
            format!("{} {field}{unit}", species.kind)
        };
        return Some(Legend {
            palette: settings.palette,
            lo,
            hi,
            label,
        });
    }
    None
}

/// Default fields for a species the user has not styled: gas by its density, if any.
pub fn default_intensity_field(species: &Species) -> Option<String> {
    if species.kind != SpeciesKind::Gas {
        return None;
    }
    species
        .field_names()
        .into_iter()
        .find(|n| n.eq_ignore_ascii_case("density") || n.eq_ignore_ascii_case("rho"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::viewport::viewport_renderer::ViewStyle;
    use std::sync::Arc;

    fn demo_request(width_px: u32, height_px: u32) -> ViewRequest {
        let snapshot = crate::data::demo::demo_snapshot(2_000, 7);
        let mut snapshot = snapshot;
        crate::app::files::documents::fill_missing_smoothing(&mut snapshot, &Progress::none())
            .expect("kNN");
        let bounds = crate::app::files::documents::bounds_of(&snapshot).expect("bounds");
        ViewRequest {
            snapshot: Arc::new(snapshot),
            camera: OrbitCamera::home(bounds.0, bounds.1),
            style: ViewStyle::default(),
            width_px,
            height_px,
        }
    }

    #[test]
    fn horizontal_fov_follows_the_aspect_ratio() {
        let camera = OrbitCamera::default();
        // Square image: the same angle both ways.
        assert!((render_camera(&camera, 100, 100).fov_deg - 45.0).abs() < 1e-9);
        // Twice as wide: tan(fov_x/2) = 2·tan(22.5°).
        let wide = render_camera(&camera, 200, 100);
        let expected = 2.0 * (2.0 * 22.5f64.to_radians().tan()).atan().to_degrees();
        assert!((wide.fov_deg - expected).abs() < 1e-9);
        assert_eq!(wide.position, [0.0, 0.0, 3.0]);
        assert_eq!(wide.projection, render::Projection::Perspective);
    }

    #[test]
    fn viewport_render_equals_the_library_render_of_the_same_settings() {
        let request = demo_request(64, 48);
        let mut image = SplotchRenderer::new()
            .render(&request, &Progress::none())
            .expect("renders");
        assert_eq!((image.width_px, image.height_px), (64, 48));
        let settings = render_settings(&request).expect("settings");
        let direct =
            render::render_cpu(&request.snapshot, &settings, &Progress::none()).expect("renders");
        let expected = tau_to_rgba(&direct.tau, direct.stats.tau_scale, &settings.tone);
        assert_eq!(image.pixels.host(), Some(&expected[..]));
        let rgba = image.host_rgba().expect("host");
        assert!(rgba.chunks(4).any(|p| p[0] > 0), "image is black");
        // The demo gas is coloured by log density: the bar shows that range and its unit.
        let legend = image.legend.expect("legend");
        assert_eq!(legend.label, "gas log10 Density [mean density]");
        assert!(legend.lo < legend.hi);
    }

    #[test]
    fn switched_off_species_and_missing_fields_are_handled() {
        let mut request = demo_request(32, 32);
        for s in &mut request.style.species {
            s.enabled = false;
        }
        let err = render_settings(&request).expect_err("nothing to draw");
        assert!(err.contains("Render panel"), "{err}");
        request.style = ViewStyle::default();
        // A field from another file falls back to the gas density, or to uniform and white.
        for s in &mut request.style.species {
            s.intensity_field = Some("NoSuchField".to_owned());
        }
        let settings = render_settings(&request).expect("settings");
        assert_eq!(settings.species.len(), 3);
        let gas = &settings.species[0];
        assert_eq!(gas.kind, SpeciesKind::Gas);
        assert_eq!(gas.intensity.as_deref(), Some("Density"));
        assert_eq!(gas.colour.as_deref(), Some("Density"));
        let dark = &settings.species[1];
        assert_eq!(dark.kind, SpeciesKind::Dark);
        assert_eq!((dark.intensity.clone(), dark.colour.clone()), (None, None));
        assert!(!dark.intensity_log);
    }
}
