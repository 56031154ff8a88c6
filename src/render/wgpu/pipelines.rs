//! The compute pipelines of the wgpu renderer, compiled once per device: the splat passes of
//! `shaders/splat.wgsl` (classify, scatter, tiles), after the τ declaration of
//! `shaders/tau_u64.wgsl` where the device has 64-bit storage atomics, else of
//! `shaders/tau_pairs.wgsl`, share one bind group layout; the tone map and the τ resolve of
//! `shaders/tone.wgsl` and the histograms of `shaders/exposure.wgsl` another.

use super::error::WgpuError;

/// The WGSL source of the splat passes, built into the binary.
pub const SPLAT_SHADER: &str = include_str!("../../../shaders/splat.wgsl");
/// τ as u32 pairs with 32-bit atomics (every adapter), put before [`SPLAT_SHADER`].
pub const TAU_PAIRS_SHADER: &str = include_str!("../../../shaders/tau_pairs.wgsl");
/// τ as u64 words with 64-bit atomics, put before [`SPLAT_SHADER`] where the device has them.
pub const TAU_U64_SHADER: &str = include_str!("../../../shaders/tau_u64.wgsl");
/// The device features the u64 τ needs.
pub const INT64_ATOMICS: wgpu::Features =
    wgpu::Features::SHADER_INT64.union(wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS);
/// The WGSL source of the device tone map and τ resolve.
pub const TONE_SHADER: &str = include_str!("../../../shaders/tone.wgsl");
/// The WGSL source of the device auto exposure's histograms.
pub const EXPOSURE_SHADER: &str = include_str!("../../../shaders/exposure.wgsl");

/// Invocations per workgroup of the per-particle passes (`GROUP` in splat.wgsl).
pub(crate) const GROUP: u32 = 256;
/// Screen tile side in pixels (`TILE` in splat.wgsl).
pub(crate) const TILE: u32 = 16;

/// Which of wgpu's runtime checks the splat passes' shader module is compiled with (all by
/// default; see `WgpuTuning::runtime_checks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RuntimeChecks {
    /// Index clamps on arrays (and on buffers where the driver is not robust).
    pub(crate) bounds: bool,
    /// A counter in every loop that ends it after 2^64 rounds.
    pub(crate) loop_bounding: bool,
    /// Guards on integer division and remainder against a zero divisor.
    pub(crate) int_div: bool,
}

impl Default for RuntimeChecks {
    fn default() -> Self {
        Self {
            bounds: true,
            loop_bounding: true,
            int_div: true,
        }
    }
}

impl RuntimeChecks {
    /// The checks from a bit mask: 1 bounds, 2 loop bounding, 4 integer division.
    pub(crate) fn from_bits(bits: u32) -> Self {
        Self {
            bounds: bits & 1 != 0,
            loop_bounding: bits & 2 != 0,
            int_div: bits & 4 != 0,
        }
    }

    fn wgpu(self) -> wgpu::ShaderRuntimeChecks {
        let mut checks = wgpu::ShaderRuntimeChecks::checked();
        checks.bounds_checks = self.bounds;
        checks.force_loop_bounding = self.loop_bounding;
        checks.int_div_checks = self.int_div;
        checks
    }
}

/// Every pipeline of the renderer.
pub(crate) struct Pipelines {
    /// Whether the splat passes add τ with 64-bit atomics.
    pub(crate) int64_atomics: bool,
    /// The splat passes' bindings (splat.wgsl, group 0).
    pub(crate) splat_layout: wgpu::BindGroupLayout,
    /// Projection, small splats, tile counts.
    pub(crate) classify: wgpu::ComputePipeline,
    /// The tile lists of one band.
    pub(crate) scatter: wgpu::ComputePipeline,
    /// One workgroup per list segment.
    pub(crate) tiles: wgpu::ComputePipeline,
    /// The same with the fixed-point scale folded into rgb (`FOLD`), when the tuning asks.
    pub(crate) tiles_folded: Option<wgpu::ComputePipeline>,
    /// The pixel passes' bindings (tone.wgsl and exposure.wgsl, group 0).
    pub(crate) tone_layout: wgpu::BindGroupLayout,
    /// The 8-bit tone map.
    pub(crate) tone8: wgpu::ComputePipeline,
    /// τ as f32.
    pub(crate) resolve: wgpu::ComputePipeline,
    /// Auto exposure, first histogram.
    pub(crate) histogram_high: wgpu::ComputePipeline,
    /// Auto exposure, second histogram.
    pub(crate) histogram_low: wgpu::ComputePipeline,
}

pub(super) fn uniform_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

pub(super) fn storage_entry(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

pub(super) fn compute(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    module: &wgpu::ShaderModule,
    entry: &str,
) -> wgpu::ComputePipeline {
    compute_with(device, layout, module, entry, &Default::default())
}

/// The variant of the tiles pass (splat.wgsl's `QUADS`, `FOLD`, `CARRY`, `INTFIX`, `FOLDK` and
/// `WIDE`, and whether the driver zeroes its workgroup memory first; the pass writes all it
/// reads, so that is not needed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TilesVariant {
    pub(crate) quads: bool,
    pub(crate) fold: bool,
    pub(crate) zero_init: bool,
    pub(crate) carry: bool,
    pub(crate) intfix: bool,
    pub(crate) foldk: bool,
    /// splat.wgsl's `WIDE` (0: off): honoured in the folded pipeline with 64-bit τ only.
    pub(crate) wide: u32,
    /// splat.wgsl's `LANES`: invocations per medium splat, a power of two from 1 to 32 (so that
    /// a group's lanes lie in one 256-invocation workgroup and, on NVIDIA, one warp).
    pub(crate) lanes: u32,
    /// splat.wgsl's `CORDER`: a batch's medium splats in order of cost.
    pub(crate) corder: bool,
}

fn tiles_pipeline(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    module: &wgpu::ShaderModule,
    variant: TilesVariant,
    fold: bool,
    int64: bool,
) -> wgpu::ComputePipeline {
    let flag = |on: bool| if on { 1.0 } else { 0.0 };
    // WIDE's u64 sums exist only after tau_u64.wgsl, and its 2^k scale only in the folded pass.
    let wide = if fold && int64 { variant.wide } else { 0 };
    let constants = [
        ("QUADS", flag(variant.quads)),
        ("FOLD", flag(fold)),
        ("CARRY", flag(variant.carry)),
        ("INTFIX", flag(variant.intfix)),
        ("FOLDK", flag(variant.foldk)),
        ("WIDE", f64::from(wide)),
        ("LANES", f64::from(variant.lanes)),
        ("CORDER", flag(variant.corder)),
    ];
    let options = wgpu::PipelineCompilationOptions {
        constants: &constants,
        zero_initialize_workgroup_memory: variant.zero_init,
    };
    compute_with(device, layout, module, "tiles", &options)
}

fn compute_with(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    module: &wgpu::ShaderModule,
    entry: &str,
    options: &wgpu::PipelineCompilationOptions<'_>,
) -> wgpu::ComputePipeline {
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(entry),
        bind_group_layouts: &[Some(layout)],
        immediate_size: 0,
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: Some(&pipeline_layout),
        module,
        entry_point: Some(entry),
        compilation_options: options.clone(),
        cache: None,
    })
}

impl Pipelines {
    /// Compiles the shaders on `device`, with 64-bit τ atomics when `int64_atomics` and the
    /// device has [`INT64_ATOMICS`], and the tiles pass as `tiles` says; a shader or layout the
    /// device rejects is an error.
    pub(crate) fn new(
        device: &wgpu::Device,
        int64_atomics: bool,
        tiles: TilesVariant,
        checks: RuntimeChecks,
    ) -> Result<Self, WgpuError> {
        let int64_atomics = int64_atomics && device.features().contains(INT64_ATOMICS);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let tau = if int64_atomics {
            TAU_U64_SHADER
        } else {
            TAU_PAIRS_SHADER
        };
        let splat_source = wgpu::ShaderModuleDescriptor {
            label: Some("shaders/splat.wgsl"),
            source: wgpu::ShaderSource::Wgsl(format!("{tau}\n{SPLAT_SHADER}").into()),
        };
        let splat = if checks == RuntimeChecks::default() {
            device.create_shader_module(splat_source)
        } else {
            // SAFETY: wgpu's checks guard against out-of-bounds indices, endless loops and
            // integer division by zero. splat.wgsl indexes its workgroup arrays below their
            // lengths by construction (batch slots < 256, sums < 3·TILE², pool slots <
            // POOL_SLOTS), its buffers within the bound sizes the host computes (draw.rs), and
            // its loops end (each counts up to a bound, `pool_slot` to POOL_PROBES; its retry
            // after a spurious weak exchange ends once an exchange succeeds or sees another
            // value); every divisor is a non-zero constant, a box width ≥ 1 or the grid's
            // tiles across ≥ 1.
            unsafe { device.create_shader_module_trusted(splat_source, checks.wgpu()) }
        };
        let splat_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("splat"),
            entries: &[
                uniform_entry(0),
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(3, true),
                storage_entry(4, false),
                storage_entry(5, false),
                storage_entry(6, false),
                storage_entry(7, true),
                storage_entry(8, false),
                uniform_entry(9),
            ],
        });
        let tone = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("shaders/tone.wgsl"),
            source: wgpu::ShaderSource::Wgsl(TONE_SHADER.into()),
        });
        let tone_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("tone"),
            entries: &[
                uniform_entry(0),
                storage_entry(1, true),
                storage_entry(2, false),
            ],
        });
        let exposure = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("shaders/exposure.wgsl"),
            source: wgpu::ShaderSource::Wgsl(EXPOSURE_SHADER.into()),
        });
        let pipelines = Self {
            int64_atomics,
            classify: compute(device, &splat_layout, &splat, "classify"),
            scatter: compute(device, &splat_layout, &splat, "scatter"),
            tiles: tiles_pipeline(device, &splat_layout, &splat, tiles, false, int64_atomics),
            tiles_folded: tiles
                .fold
                .then(|| tiles_pipeline(device, &splat_layout, &splat, tiles, true, int64_atomics)),
            tone8: compute(device, &tone_layout, &tone, "tone8"),
            resolve: compute(device, &tone_layout, &tone, "resolve"),
            histogram_high: compute(device, &tone_layout, &exposure, "histogram_high"),
            histogram_low: compute(device, &tone_layout, &exposure, "histogram_low"),
            splat_layout,
            tone_layout,
        };
        if let Some(err) = pollster::block_on(scope.pop()) {
            return Err(WgpuError::Device {
                message: format!("shaders: {err}"),
            });
        }
        Ok(pipelines)
    }
}

impl Pipelines {
    /// The tiles pass for a frame of fixed-point exponent `fixed_exponent`: the folded one
    /// where it was compiled and is exact there.
    pub(crate) fn tiles_for(&self, fixed_exponent: i32) -> &wgpu::ComputePipeline {
        match &self.tiles_folded {
            Some(folded) if super::frame::fold_exact(fixed_exponent) => folded,
            _ => &self.tiles,
        }
    }
}

/// A dispatch of `groups` workgroups as (x, y): x at most 32 768 (the shaders rebuild the linear
/// index from `num_workgroups`), since one dimension holds at most 65 535.
pub(crate) fn groups_2d(groups: u32) -> (u32, u32) {
    const ROW: u32 = 32_768;
    if groups <= ROW {
        (groups.max(1), 1)
    } else {
        (ROW, groups.div_ceil(ROW))
    }
}
