//! The boundary between the viewport and the renderer: a request (snapshot, camera, style,
//! size) in, an RGBA image out. The viewport knows nothing of how the image is made; the
//! renderer that makes it (`splotch.rs`) stands above this file.

use super::camera::OrbitCamera;
use crate::data::{Snapshot, SpeciesKind};
use crate::jobs::Progress;
use crate::render::wgpu::FrameTexture;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How one particle family is drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeciesStyle {
    /// Which family.
    #[serde(with = "species_kind_by_name")]
    pub kind: SpeciesKind,
    /// Drawn at all.
    pub enabled: bool,
    /// Field for the splat intensity (`None`: every particle the same).
    pub intensity_field: Option<String>,
    /// Take log10 of the intensity field first.
    pub intensity_log: bool,
    /// Field for the colour (`None`: the intensity field).
    pub color_field: Option<String>,
    /// Take log10 of the colour field first.
    pub color_log: bool,
    /// Palette name.
    pub palette: String,
    /// Colour range (min, max); `None` = from the data.
    pub color_range: Option<[f32; 2]>,
    /// Brightness multiplier.
    pub brightness: f32,
    /// Multiplies every smoothing length.
    pub size_factor: f32,
    /// Kernel support over the file's h, overriding the file's convention (`None`: the file's).
    #[serde(default)]
    pub kernel_support: Option<f32>,
}

/// Default brightness of `kind`. Dark matter and stars have no colour field by default and are
/// drawn white; at 0.3 and 1 they washed the demo's and the Gadget boxes' gas (coloured by
/// density, the colour bar's palette) to pink and white. At 0.1 and 0.25 the palette shows
/// while the dark web and the stars stay visible (checked on the demo, run581.20000 and
/// g2_lcdm_gas_snapshot_003.hdf5 under Xvfb).
pub fn default_brightness(kind: SpeciesKind) -> f32 {
    match kind {
        SpeciesKind::Gas | SpeciesKind::Other => 1.0,
        SpeciesKind::Dark => 0.1,
        SpeciesKind::Star => 0.25,
    }
}

impl SpeciesStyle {
    /// The default style of `kind`: gas coloured by log density where present.
    pub fn default_for(kind: SpeciesKind) -> Self {
        Self {
            kind,
            enabled: true,
            // Gas is drawn by its density where the file has one (any spelling: see
            // `splotch::default_intensity_field`); the others uniformly.
            intensity_field: (kind == SpeciesKind::Gas).then(|| "Density".to_owned()),
            intensity_log: true,
            color_field: None,
            color_log: true,
            palette: match kind {
                SpeciesKind::Gas => "inferno",
                SpeciesKind::Dark => "viridis",
                SpeciesKind::Star => "magma",
                SpeciesKind::Other => "cividis",
            }
            .to_owned(),
            color_range: None,
            brightness: default_brightness(kind),
            size_factor: 1.0,
            kernel_support: None,
        }
    }
}

/// Everything about the look of the render except the camera and the size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewStyle {
    /// One entry per family (all four, present or not, so settings survive a file change).
    pub species: Vec<SpeciesStyle>,
    /// Minimum splat radius in pixels (DESIGN §4, r_min).
    pub min_radius_px: f32,
    /// Render resolution relative to the viewport's physical pixels (1 = native).
    pub resolution_scale: f32,
    /// Automatic exposure (brightness chosen from the image).
    pub auto_exposure: bool,
    /// Exposure multiplier applied on top.
    pub exposure: f32,
    /// Draw the colour bar on the image.
    pub show_color_bar: bool,
    /// Draw the scale bar on the image.
    pub show_scale_bar: bool,
}

impl Default for ViewStyle {
    fn default() -> Self {
        Self {
            species: SpeciesKind::ALL
                .into_iter()
                .map(SpeciesStyle::default_for)
                .collect(),
            min_radius_px: 1.0,
            resolution_scale: 1.0,
            auto_exposure: true,
            exposure: 1.0,
            show_color_bar: true,
            show_scale_bar: true,
        }
    }
}

impl ViewStyle {
    /// The style of `kind`.
    pub fn species(&self, kind: SpeciesKind) -> Option<&SpeciesStyle> {
        self.species.iter().find(|s| s.kind == kind)
    }

    /// The style of `kind`, mutable.
    pub fn species_mut(&mut self, kind: SpeciesKind) -> Option<&mut SpeciesStyle> {
        self.species.iter_mut().find(|s| s.kind == kind)
    }
}

/// What the viewport asks for.
#[derive(Debug, Clone)]
pub struct ViewRequest {
    /// The particles.
    pub snapshot: Arc<Snapshot>,
    /// The view.
    pub camera: OrbitCamera,
    /// The look.
    pub style: ViewStyle,
    /// Image width in pixels.
    pub width_px: u32,
    /// Image height in pixels.
    pub height_px: u32,
}

/// Where the pixels of an 8-bit RGBA image are, row 0 at the top, opaque.
#[derive(Debug, Clone)]
pub enum Pixels {
    /// In host memory: `width_px · height_px · 4` bytes.
    Host(Vec<u8>),
    /// In a texture on the window's wgpu device, where the window shows it as it is.
    Device(FrameTexture),
}

impl Pixels {
    /// The bytes, when they are in host memory.
    pub fn host(&self) -> Option<&[u8]> {
        match self {
            Self::Host(rgba) => Some(rgba),
            Self::Device(_) => None,
        }
    }
}

/// The whole image of `frame` in host memory (this waits for the device: workers and tests
/// only).
fn read_back(frame: &FrameTexture) -> Result<Vec<u8>, String> {
    frame
        .read_rgba((0, 0), (frame.width(), frame.height()))
        .map_err(|err| format!("reading the image back from the device: {err}"))
}

/// An 8-bit RGBA image, row 0 at the top, opaque.
#[derive(Debug, Clone)]
pub struct RenderedImage {
    /// Width in pixels.
    pub width_px: u32,
    /// Height in pixels.
    pub height_px: u32,
    /// The pixels: always in host memory from [`ViewportRenderer::render`].
    pub pixels: Pixels,
    /// The back-end that made it ("cpu", "cuda").
    pub backend: String,
    /// Wall time of the render in seconds.
    pub seconds: f64,
    /// Where that time went, stage by stage (the renderer's stage timers, then the RGBA
    /// image); empty where the renderer keeps none.
    pub stages: Vec<crate::render::StageTime>,
    /// What the colours mean, for the colour bar (`None`: no species is coloured by a field).
    pub legend: Option<Legend>,
}

impl RenderedImage {
    /// The bytes in host memory, read back first where they are on the device (this waits
    /// for the device: workers and tests only).
    pub fn host_rgba(&mut self) -> Result<&mut Vec<u8>, String> {
        if let Pixels::Device(frame) = &self.pixels {
            self.pixels = Pixels::Host(read_back(frame)?);
        }
        match &mut self.pixels {
            Pixels::Host(rgba) => Ok(rgba),
            Pixels::Device(_) => Err("the image stayed on the device".to_owned()),
        }
    }
}

/// The colour bar of a render: a palette spanning a value range.
#[derive(Debug, Clone, PartialEq)]
pub struct Legend {
    /// Palette name.
    pub palette: String,
    /// Value at the bottom of the palette (log10 units under log).
    pub lo: f32,
    /// Value at the top of the palette.
    pub hi: f32,
    /// What the value is ("gas log10 Density").
    pub label: String,
}

/// Something that turns a [`ViewRequest`] into an image. Runs on a worker thread.
pub trait ViewportRenderer: Send {
    /// Name of the back-end shown in the status bar ("cpu", "cuda").
    fn backend_name(&self) -> String;

    /// Renders `request` into host memory ([`Pixels::Host`]); stops early with an error when
    /// `progress` is cancelled.
    fn render(
        &mut self,
        request: &ViewRequest,
        progress: &Progress,
    ) -> Result<RenderedImage, String>;

    /// Renders `request` for the viewport: as [`ViewportRenderer::render`], or left on the
    /// window's wgpu device ([`Pixels::Device`]) by a renderer that draws there.
    fn render_for_window(
        &mut self,
        request: &ViewRequest,
        progress: &Progress,
    ) -> Result<RenderedImage, String> {
        self.render(request, progress)
    }
}

/// Makes renderers: one for the viewport's worker, more for off-screen screenshots.
pub type RendererFactory = Arc<dyn Fn() -> Box<dyn ViewportRenderer> + Send + Sync>;

/// Stores a [`SpeciesKind`] by its name (`gas`, `dark`, ...), so saved settings read as text.
mod species_kind_by_name {
    use crate::data::SpeciesKind;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(kind: &SpeciesKind, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(kind.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SpeciesKind, D::Error> {
        let name = String::deserialize(deserializer)?;
        SpeciesKind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown species `{name}`")))
    }
}
