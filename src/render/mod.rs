//! Splotch renderer: camera, palettes, projection and classification, CPU splatter, tone mapping.
//!
//! Pipeline (DESIGN §4): per species, normalise intensity and colour ([`normalise`]),
//! project, size and classify every particle ([`project::project_particle`], the single source of
//! truth for the maths), splat into an additive f32 RGB τ buffer ([`cpu::Splatter`]), pick
//! the exposure ([`exposure`]), then 1 − exp(−τ), gamma/contrast and quantisation ([`tone`]).
//!
//! Entry points: [`Renderer`] (the resolved back-end, reusing every buffer and the resident data
//! across frames), [`render_cpu`] (one CPU frame), [`tone::tone_map`], [`png::save_png`],
//! [`npy::write_tau_npy`].

pub mod camera;
pub mod colormaps;
pub mod cpu;
pub mod cuda;
pub mod exposure;
pub mod fits;
pub mod knn;
pub mod log10;
pub mod normalise;
pub mod npy;
pub mod options;
pub mod palette;
pub mod png;
pub mod project;
pub mod ranks;
pub mod renderer;
pub mod resolve;
pub mod smoothing;
pub mod start;
pub mod synthetic;
pub mod tau;
pub mod tone;
pub mod wgpu;

pub use camera::{Bounds, Camera, Projection};
pub use cpu::{CpuRenderer, render_cpu};
pub use cpu::{Splatter, splat_into};
pub use cuda::{CudaRenderer, CudaTuning};
pub use options::{LargeSplats, RendererOptions};
pub use palette::Palette;
pub use project::{ParticleClass, Splat, ViewParams, project_particle};
pub use renderer::Renderer;
pub use start::RendererStart;
pub use tau::TauBuffer;
pub use tone::{BitDepth, ToneSettings, tone_map};

use crate::data::SpeciesKind;
use std::path::PathBuf;

/// Why a render could not be made. Messages name the setting, species, field or file.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// Width or height is zero or too large.
    #[error("image size {width}x{height} is invalid: each side must be 1 to 32768 pixels")]
    ImageSize {
        /// Requested width.
        width: u32,
        /// Requested height.
        height: u32,
    },
    /// The camera cannot define a view.
    #[error("camera: {0}")]
    Camera(String),
    /// A style names a species the snapshot does not have.
    #[error("no species '{name}' in the snapshot (present: {present})")]
    UnknownSpecies {
        /// The species asked for.
        name: String,
        /// The species present.
        present: String,
    },
    /// A style names a dataset the reader left out (several values per particle).
    #[error("species {species}: {why}")]
    FieldLeftOut {
        /// Species name.
        species: String,
        /// Which dataset, its shape and the rule.
        why: String,
    },
    /// The field asked for does not exist.
    #[error("species {species} has no field '{field}' (fields: {available})")]
    UnknownField {
        /// The species.
        species: String,
        /// The field asked for.
        field: String,
        /// The fields it has.
        available: String,
    },
    /// A palette name that is not known.
    #[error("unknown palette '{name}' (known: {known})")]
    UnknownPalette {
        /// The name asked for.
        name: String,
        /// Every known name.
        known: String,
    },
    /// A setting out of range.
    #[error("{message}")]
    Setting {
        /// What is wrong with which setting.
        message: String,
    },
    /// Writing or reading an output file failed.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// Encoding or decoding an image or array failed.
    #[error("{}: {message}", path.display())]
    Encode {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The job was cancelled.
    #[error("rendering cancelled")]
    Cancelled,
    /// The CUDA back-end failed (no device, compile error, out of memory, driver error).
    /// Not a `#[source]`: the message already holds the GPU error, which `{:#}` would repeat.
    #[error("CUDA: {0}")]
    Gpu(crate::gpu::GpuError),
    /// An output was refused or could not be written (crate::output's rule).
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    /// The wgpu back-end failed (no adapter, missing feature, out of memory, device lost).
    #[error("wgpu: {0}")]
    Wgpu(wgpu::WgpuError),
}

impl From<crate::backend::BackendError> for RenderError {
    fn from(err: crate::backend::BackendError) -> Self {
        match err {
            crate::backend::BackendError::Cuda(err) => Self::Gpu(err),
            crate::backend::BackendError::Wgpu(err) => Self::Wgpu(err),
        }
    }
}

impl From<wgpu::WgpuError> for RenderError {
    fn from(err: wgpu::WgpuError) -> Self {
        Self::Wgpu(err)
    }
}

impl From<crate::gpu::GpuError> for RenderError {
    fn from(err: crate::gpu::GpuError) -> Self {
        Self::Gpu(err)
    }
}

impl RenderError {
    /// A [`RenderError::Camera`].
    pub fn camera(message: impl Into<String>) -> Self {
        Self::Camera(message.into())
    }

    /// A [`RenderError::Setting`].
    pub fn setting(message: impl Into<String>) -> Self {
        Self::Setting {
            message: message.into(),
        }
    }
}

/// How one species is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeciesStyle {
    /// Which family.
    pub kind: SpeciesKind,
    /// Field giving the intensity (matched case-insensitively; `mass` and `SmoothingLength`
    /// always work where present); `None`: n = 1 for every particle.
    pub intensity: Option<String>,
    /// log10 of the intensity before normalising.
    pub intensity_log: bool,
    /// Fixed (lo, hi) for the intensity, in log10 units under log; `None`: from the data.
    pub intensity_range: Option<(f32, f32)>,
    /// Field giving the palette coordinate; `None`: colour (1, 1, 1).
    pub colour: Option<String>,
    /// log10 of the colour value before normalising.
    pub colour_log: bool,
    /// Fixed (lo, hi) for the colour value; `None`: from the data.
    pub colour_range: Option<(f32, f32)>,
    /// Palette name (see [`palette::palette_names`]).
    pub palette: String,
    /// Emission multiplier of this species (≥ 0).
    pub brightness: f32,
    /// Radius multiplier (> 0).
    pub size_factor: f32,
    /// Kernel support radius in units of the file's h, overriding the file's convention (1 =
    /// Gadget's h, 2 = tipsy's 2h); `None`: the file's. Estimated (kNN) lengths ignore it.
    pub kernel_support: Option<f32>,
}

impl SpeciesStyle {
    /// White, n = 1, default palette, brightness and size factor 1.
    pub fn new(kind: SpeciesKind) -> Self {
        Self {
            kind,
            intensity: None,
            intensity_log: false,
            intensity_range: None,
            colour: None,
            colour_log: false,
            colour_range: None,
            palette: palette::DEFAULT_PALETTE.to_owned(),
            brightness: 1.0,
            size_factor: 1.0,
            kernel_support: None,
        }
    }
}

/// Global brightness: chosen from the image, or given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Brightness {
    /// The `percentile` (0–100) of the non-zero τ maps to display value `target_value`.
    Auto {
        /// Percentile of lit pixels, e.g. 99.5.
        percentile: f32,
        /// Display value 1 − exp(−B·τ_p) in (0, 1), e.g. 0.9.
        target_value: f32,
    },
    /// Multiplies every emission; included in τ.
    Explicit(f32),
}

impl Default for Brightness {
    fn default() -> Self {
        Self::Auto {
            percentile: exposure::DEFAULT_PERCENTILE,
            target_value: exposure::DEFAULT_TARGET_VALUE,
        }
    }
}

/// Everything a render needs besides the particles. Plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderSettings {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// The view.
    pub camera: Camera,
    /// Species drawn, all adding into the same τ.
    pub species: Vec<SpeciesStyle>,
    /// Minimum radius r_min in pixels (0 = none).
    pub min_radius_px: f32,
    /// Tile guard band in pixels: R ≥ border is "large".
    pub border_px: f32,
    /// Auto or explicit brightness.
    pub brightness: Brightness,
    /// Gamma, contrast, bits.
    pub tone: ToneSettings,
    /// k for smoothing lengths of species that have none.
    pub knn: usize,
}

impl RenderSettings {
    /// Defaults (r_min 1 px, border 8 px, auto exposure, plain tone, k = 32) for `species`.
    pub fn new(width: u32, height: u32, camera: Camera, species: Vec<SpeciesStyle>) -> Self {
        Self {
            width,
            height,
            camera,
            species,
            min_radius_px: project::DEFAULT_MIN_RADIUS_PX,
            border_px: project::DEFAULT_BORDER_PX,
            brightness: Brightness::default(),
            tone: ToneSettings::default(),
            knn: smoothing::DEFAULT_KNN,
        }
    }
}

/// Particles per class (DESIGN §4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClassCounts {
    /// Dropped.
    pub inactive: u64,
    /// One pixel.
    pub small: u64,
    /// R < border, centre on the image.
    pub medium: u64,
    /// R ≥ border or centre off the image.
    pub large: u64,
}

impl ClassCounts {
    /// Counts one particle.
    pub fn add(&mut self, class: ParticleClass) {
        match class {
            ParticleClass::Inactive => self.inactive += 1,
            ParticleClass::Small => self.small += 1,
            ParticleClass::Medium => self.medium += 1,
            ParticleClass::Large => self.large += 1,
        }
    }

    /// Sum of two counts.
    pub fn merged(self, other: Self) -> Self {
        Self {
            inactive: self.inactive + other.inactive,
            small: self.small + other.small,
            medium: self.medium + other.medium,
            large: self.large + other.large,
        }
    }

    /// Small + medium + large.
    pub fn active(&self) -> u64 {
        self.small + self.medium + self.large
    }
}

/// Wall time of one stage.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StageTime {
    /// "normalise", "smoothing", "project", "splat" or "exposure".
    pub stage: &'static str,
    /// Seconds.
    pub seconds: f64,
}

/// Facts about a finished render.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RenderStats {
    /// Particles considered (all drawn species).
    pub particles: u64,
    /// Per-class counts.
    pub counts: ClassCounts,
    /// Global brightness used (auto-exposure result, or the explicit value).
    pub brightness: f32,
    /// Whether `brightness` came from auto exposure.
    pub auto_exposure: bool,
    /// Factor to apply to τ before 1 − exp: the auto brightness, or 1 when explicit (already
    /// inside τ).
    pub tau_scale: f32,
    /// Per-stage wall times.
    pub timings: Vec<StageTime>,
    /// Total wall time in seconds.
    pub seconds: f64,
}

impl RenderStats {
    /// Records `stage`, from `start` until now, in the timings and in the total.
    pub fn add_stage(&mut self, stage: &'static str, start: std::time::Instant) {
        let seconds = start.elapsed().as_secs_f64();
        self.timings.push(StageTime { stage, seconds });
        self.seconds += seconds;
    }
}

/// A render: τ (row 0 at the top; at brightness 1 under auto exposure) and its facts.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderOutput {
    /// Optical depth, f32 RGB.
    pub tau: TauBuffer,
    /// Counts, brightness, timings.
    pub stats: RenderStats,
}

impl RenderOutput {
    /// The tone-mapped image (exposure applied).
    pub fn image(&self, tone: &ToneSettings) -> image::DynamicImage {
        tone_map(&self.tau, self.stats.tau_scale, tone)
    }
}
