//! The wgpu twin of [`super::cpu`]: the Splotch model on any GPU wgpu drives (Vulkan, Metal,
//! DirectX 12), with its WGSL shader in `shaders/splat.wgsl`.
//!
//! Method: every particle is one instance of a triangle covering its footprint box, rasterised
//! with additive blending (one + one) into an Rgba32Float target; the fragment shader applies
//! the disc test and the Gaussian weight. The fixed-function blender sums in f32 without
//! atomics or sorting, whatever the splat size, so one pass serves small, medium and large
//! splats alike, and the same code runs on every adapter with `FLOAT32_BLENDABLE` (Vulkan on
//! NVIDIA, AMD, Intel and lavapipe, Metal, DirectX 12). The sum's order is the rasteriser's, so
//! τ matches the CPU reference within f32 rounding (DESIGN §4's ‖Δ‖/‖ref‖ < 1e-4), not bit for
//! bit. The data stay resident between frames in chunks that respect
//! `max_storage_buffer_binding_size`; when they do not fit they are streamed chunk by chunk.
//! Images larger than the tile limit (or the adapter's `max_texture_dimension_2d`) are drawn
//! tile by tile.

mod context;
mod data;
mod error;
mod frame;

pub use context::{REQUIRED_FEATURES, WgpuContext};
pub use error::WgpuError;

use super::{
    Brightness, RenderError, RenderOutput, RenderSettings, RenderStats, StageTime, TauBuffer,
};
use crate::data::Snapshot;
use crate::jobs::Progress;
use data::{ChunkBuffers, DataKey, PreparedSpecies};
use std::time::Instant;

/// The WGSL source of the splat pipeline, built into the binary.
pub const SPLAT_SHADER: &str = include_str!("../../../shaders/splat.wgsl");
/// The WGSL source of the device tone map (8 bits).
pub const TONE_SHADER: &str = include_str!("../../../shaders/tone.wgsl");

/// Sizes the wgpu renderer works in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgpuTuning {
    /// Most particles per chunk (also bounded by the adapter's binding and buffer limits).
    pub chunk_particles: usize,
    /// Most pixels per side of one render target (also bounded by the adapter's texture
    /// limit); larger images are drawn in tiles.
    pub tile_side: u32,
}

impl Default for WgpuTuning {
    fn default() -> Self {
        Self {
            chunk_particles: 1 << 24,
            tile_side: 4096,
        }
    }
}

/// The wgpu renderer: the pipeline, the resident particle data and the target, reused across
/// frames.
pub struct WgpuRenderer {
    context: WgpuContext,
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    tone_pipeline: wgpu::ComputePipeline,
    tone_layout: wgpu::BindGroupLayout,
    packed: Option<(u64, wgpu::Buffer)>,
    chunk_particles: usize,
    tile_side: u32,
    prepared: Option<(DataKey, Vec<PreparedSpecies>)>,
    resident: Option<Vec<Vec<ChunkBuffers>>>,
    stream: Option<ChunkBuffers>,
    target: Option<(u32, u32, wgpu::Texture)>,
    readback: Option<(u64, wgpu::Buffer)>,
    last_upload_seconds: f64,
    exposure_scratch: Vec<f32>,
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

fn storage_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::VERTEX,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only: true },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

impl WgpuRenderer {
    /// Compiles the pipeline on `context`'s device.
    pub fn new(context: WgpuContext, tuning: WgpuTuning) -> Result<Self, WgpuError> {
        let device = &context.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("shaders/splat.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SPLAT_SHADER.into()),
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("splat"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                storage_entry(1),
                storage_entry(2),
                storage_entry(3),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("splat"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("splat"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            // One triangle per instance.
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: wgpu::TextureFormat::Rgba32Float,
                    blend: Some(wgpu::BlendState {
                        color: add,
                        alpha: add,
                    }),
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        let (tone_pipeline, tone_layout) = tone_pipeline(device);
        if let Some(err) = pollster::block_on(scope.pop()) {
            return Err(WgpuError::Device {
                message: format!("shaders: {err}"),
            });
        }
        let limits = &context.limits;
        let binding_particles =
            (limits.max_storage_buffer_binding_size / data::POS_H_BYTES) as usize;
        let buffer_particles = (limits.max_buffer_size / data::POS_H_BYTES) as usize;
        let chunk_particles = tuning
            .chunk_particles
            .min(binding_particles)
            .min(buffer_particles)
            .max(1);
        let tile_side = tuning.tile_side.min(limits.max_texture_dimension_2d).max(1);
        Ok(Self {
            context,
            pipeline,
            layout,
            tone_pipeline,
            tone_layout,
            packed: None,
            chunk_particles,
            tile_side,
            prepared: None,
            resident: None,
            stream: None,
            target: None,
            readback: None,
            last_upload_seconds: 0.0,
            exposure_scratch: Vec::new(),
        })
    }

    /// The device context.
    pub fn context(&self) -> &WgpuContext {
        &self.context
    }

    /// Particles per chunk in use (after the adapter's limits).
    pub fn chunk_particles(&self) -> usize {
        self.chunk_particles
    }

    /// Pixels per tile side in use (after the adapter's limits).
    pub fn tile_side(&self) -> u32 {
        self.tile_side
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

    /// The render target of a tile, reused while its size holds.
    fn target(&mut self, width: u32, height: u32) -> Result<wgpu::Texture, WgpuError> {
        if let Some((w, h, texture)) = &self.target
            && (*w, *h) == (width, height)
        {
            return Ok(texture.clone());
        }
        let device = &self.context.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("tau"),
            size: wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba32Float,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        if pollster::block_on(scope.pop()).is_some() {
            return Err(WgpuError::OutOfMemory {
                what: format!("a {width}x{height} Rgba32Float target"),
            });
        }
        self.target = Some((width, height, texture.clone()));
        Ok(texture)
    }

    /// The device buffer of packed RGBA8 pixels, at least `size` bytes.
    fn packed(&mut self, size: u64) -> Result<wgpu::Buffer, WgpuError> {
        if let Some((have, buffer)) = &self.packed
            && *have >= size
        {
            return Ok(buffer.clone());
        }
        let buffer = self.context.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rgba8"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        self.packed = Some((size, buffer.clone()));
        Ok(buffer)
    }

    /// The readback buffer, at least `size` bytes.
    fn readback(&mut self, size: u64) -> Result<wgpu::Buffer, WgpuError> {
        if let Some((have, buffer)) = &self.readback
            && *have >= size
        {
            return Ok(buffer.clone());
        }
        let device = &self.context.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tau readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if pollster::block_on(scope.pop()).is_some() {
            return Err(WgpuError::OutOfMemory {
                what: format!("{} MiB of readback buffer", size >> 20),
            });
        }
        self.readback = Some((size, buffer.clone()));
        Ok(buffer)
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
        let prepared = data::prepare(snapshot, settings, progress)?;
        let mut resident = Vec::new();
        let mut fits = true;
        'species: for species in &prepared {
            let mut chunks = Vec::new();
            for first in (0..species.n).step_by(self.chunk_particles) {
                let range = first..species.n.min(first + self.chunk_particles);
                match data::alloc_chunk(&self.context, range.len()) {
                    Ok(chunk) => {
                        data::write_chunk(&self.context, species, range, &chunk);
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
        self.resident = fits.then_some(resident);
        self.prepared = Some((key, prepared));
        self.context.finish()?;
        self.last_upload_seconds = start.elapsed().as_secs_f64();
        Ok(())
    }

    /// Renders one frame under an explicit brightness and tone-maps it on the device to 8 bits,
    /// reading back only the image (`None`: auto exposure or 16 bits, which need τ on the CPU).
    pub fn render_image8(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<Option<(image::DynamicImage, RenderStats)>, RenderError> {
        let tone = &settings.tone;
        if !matches!(settings.brightness, Brightness::Explicit(_))
            || tone.bits != super::BitDepth::Eight
        {
            return Ok(None);
        }
        let start = Instant::now();
        let (view, brightness) = crate::render::resolve::checked_frame(settings)?;
        crate::render::resolve::validate_settings(snapshot, settings)?;
        self.load(snapshot, settings, progress)?;
        let upload = start.elapsed().as_secs_f64();
        let splat_start = Instant::now();
        let species = frame::frame_species(self, &settings.species)?;
        let (width, height) = (settings.width, settings.height);
        let mut rgb = vec![0u8; width as usize * height as usize * 3];
        for tile in frame::tiles(width, height, self.tile_side) {
            if progress.is_cancelled() {
                return Err(RenderError::Cancelled);
            }
            let encoder = frame::draw_tile(self, &view, brightness, &species, tile)?;
            let params = [1.0, tone.gamma, tone.contrast];
            frame::read_back_image(self, encoder, tile, params, &mut rgb, width)?;
        }
        let image = image::RgbImage::from_raw(width, height, rgb)
            .map(image::DynamicImage::ImageRgb8)
            .ok_or_else(|| RenderError::setting("image buffer size"))?;
        let stats = RenderStats {
            particles: self.particles(),
            counts: Default::default(),
            brightness,
            auto_exposure: false,
            tau_scale: 1.0,
            timings: vec![
                StageTime {
                    stage: "upload",
                    seconds: upload,
                },
                StageTime {
                    stage: "splat_tone_download",
                    seconds: splat_start.elapsed().as_secs_f64(),
                },
            ],
            seconds: start.elapsed().as_secs_f64(),
        };
        Ok(Some((image, stats)))
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
        let mut tau = TauBuffer::new(settings.width, settings.height);
        for tile in frame::tiles(settings.width, settings.height, self.tile_side) {
            if progress.is_cancelled() {
                return Err(RenderError::Cancelled);
            }
            let encoder = frame::draw_tile(self, &view, brightness, &species, tile)?;
            frame::read_back_tau(self, encoder, tile, &mut tau)?;
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

/// The device tone map's pipeline and layout.
fn tone_pipeline(device: &wgpu::Device) -> (wgpu::ComputePipeline, wgpu::BindGroupLayout) {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("shaders/tone.wgsl"),
        source: wgpu::ShaderSource::Wgsl(TONE_SHADER.into()),
    });
    let compute = wgpu::ShaderStages::COMPUTE;
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("tone"),
        entries: &[
            wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: compute,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            },
            wgpu::BindGroupLayoutEntry {
                binding: 1,
                visibility: compute,
                ty: wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Float { filterable: false },
                    view_dimension: wgpu::TextureViewDimension::D2,
                    multisampled: false,
                },
                count: None,
            },
            wgpu::BindGroupLayoutEntry {
                binding: 2,
                visibility: compute,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: false },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            },
        ],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("tone"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("tone8"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("tone8"),
        compilation_options: Default::default(),
        cache: None,
    });
    (pipeline, layout)
}
