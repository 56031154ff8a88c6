//! The renderer's CUDA kernels (kernels/render_*.cu), compiled by NVRTC for the device.

use crate::gpu::{GpuDevice, GpuError};
use cudarc::driver::CudaFunction;

/// Shared device code, prepended to every kernel file that projects or splats.
const COMMON: &str = include_str!("../../../kernels/render_common.cuh");
const CLASSIFY: &str = include_str!("../../../kernels/render_classify.cu");
const TILE_SORT: &str = include_str!("../../../kernels/render_tile_sort.cu");
const SMALL: &str = include_str!("../../../kernels/render_small.cu");
const MEDIUM: &str = include_str!("../../../kernels/render_medium.cu");
const LARGE: &str = include_str!("../../../kernels/render_large.cu");
const COMPOSE: &str = include_str!("../../../kernels/render_compose.cu");

/// Every kernel function of the pipeline.
#[derive(Debug)]
pub(crate) struct Kernels {
    pub(crate) classify: CudaFunction,
    pub(crate) tile_scan: CudaFunction,
    pub(crate) scatter: CudaFunction,
    pub(crate) small: CudaFunction,
    pub(crate) medium: CudaFunction,
    pub(crate) large: CudaFunction,
    pub(crate) compose: CudaFunction,
    pub(crate) tone8: CudaFunction,
    pub(crate) tone16: CudaFunction,
}

impl Kernels {
    /// Compiles (or loads from the cache) every kernel; `medium_lanes` threads share a splat in
    /// the tile kernel.
    pub(crate) fn load(device: &GpuDevice, medium_lanes: u32) -> Result<Self, GpuError> {
        let with_common = |body: &str| format!("{COMMON}\n{body}");
        let classify = device.module("render_classify.cu", &with_common(CLASSIFY))?;
        let sort = device.module("render_tile_sort.cu", &with_common(TILE_SORT))?;
        let small = device.module("render_small.cu", &with_common(SMALL))?;
        let medium_source = format!("#define MEDIUM_LANES {medium_lanes}\n{COMMON}\n{MEDIUM}");
        let medium = device.module(
            &format!("render_medium.cu (lanes {medium_lanes})"),
            &medium_source,
        )?;
        let large = device.module("render_large.cu", &with_common(LARGE))?;
        let compose = device.module("render_compose.cu", COMPOSE)?;
        let function = |module: &std::sync::Arc<cudarc::driver::CudaModule>, name: &str| {
            module.load_function(name).map_err(GpuError::from)
        };
        Ok(Self {
            classify: function(&classify, "classify")?,
            tile_scan: function(&sort, "tile_scan")?,
            scatter: function(&sort, "scatter")?,
            small: function(&small, "small_splat")?,
            medium: function(&medium, "medium_tiles")?,
            large: function(&large, "large_splat")?,
            compose: function(&compose, "compose")?,
            tone8: function(&compose, "tone8")?,
            tone16: function(&compose, "tone16")?,
        })
    }
}
