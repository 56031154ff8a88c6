//! The renderer's CUDA kernels (kernels/render_*.cu), compiled by NVRTC for the device.

use super::CudaTuning;
use crate::gpu::{GpuDevice, GpuError};
use cudarc::driver::{CudaFunction, CudaModule};
use std::sync::Arc;

/// Shared device code, prepended to every kernel file that projects or splats.
const COMMON: &str = include_str!("../../../kernels/render_common.cuh");
const CLASSIFY: &str = include_str!("../../../kernels/render_classify.cu");
const TILE_SORT: &str = include_str!("../../../kernels/render_tile_sort.cu");
const SMALL: &str = include_str!("../../../kernels/render_small.cu");
const MEDIUM: &str = include_str!("../../../kernels/render_medium.cu");
const LARGE: &str = include_str!("../../../kernels/render_large.cu");
const COMPOSE: &str = include_str!("../../../kernels/render_compose.cu");
const ORDER: &str = include_str!("../../../kernels/render_order.cu");

/// The splatting kernels for one number of accumulated channels.
#[derive(Debug)]
pub(crate) struct SplatKernels {
    /// Fixed-point values per pixel (3, or 1 for grey frames).
    pub(crate) channels: u32,
    pub(crate) small: CudaFunction,
    pub(crate) medium: CudaFunction,
    /// The tile kernel compiled with the wide pass's lane count.
    pub(crate) wide: CudaFunction,
    /// The two tile passes with three-part shared sums (`CudaTuning::red_shared_sums`).
    pub(crate) medium_red: Option<CudaFunction>,
    pub(crate) wide_red: Option<CudaFunction>,
    /// The second pass of the border buffers (`CudaTuning::border_buffers`).
    pub(crate) combine: CudaFunction,
    pub(crate) large: CudaFunction,
}

/// The device-side Morton reorder at upload (kernels/render_order.cu).
#[derive(Debug)]
pub(crate) struct OrderKernels {
    pub(crate) bounds: CudaFunction,
    pub(crate) keys: CudaFunction,
    pub(crate) scan: CudaFunction,
    pub(crate) scatter: CudaFunction,
}

/// Every kernel function of the pipeline.
#[derive(Debug)]
pub(crate) struct Kernels {
    pub(crate) classify: CudaFunction,
    pub(crate) tile_scan: CudaFunction,
    pub(crate) scatter: CudaFunction,
    /// RGB accumulation (any frame).
    pub(crate) rgb: SplatKernels,
    /// One channel (frames whose species all lack a colour field).
    pub(crate) grey: SplatKernels,
    pub(crate) order: OrderKernels,
    pub(crate) compose: CudaFunction,
    pub(crate) tone8: CudaFunction,
    pub(crate) tone16: CudaFunction,
}

fn function(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction, GpuError> {
    module.load_function(name).map_err(GpuError::from)
}

impl SplatKernels {
    fn load(device: &GpuDevice, tuning: &CudaTuning, channels: u32) -> Result<Self, GpuError> {
        let sep = u32::from(tuning.separable_weights);
        // `min_blocks`: __launch_bounds__(256, min_blocks) on the tile kernel, 0 = none.
        let build =
            |file: &str, body: &str, lanes: u32, split: bool, red: bool, min_blocks: u32| {
                let (split, red) = (u32::from(split), u32::from(red));
                let bounds = if min_blocks > 0 {
                    format!("__launch_bounds__(256, {min_blocks})")
                } else {
                    String::new()
                };
                device.module(
                &format!(
                    "{file} (channels {channels}, lanes {lanes}, split {split}, separable {sep}, \
                     red {red}, min blocks {min_blocks})"
                ),
                &format!(
                    "#define CHANNELS {channels}\n#define SPLIT_SHARED_ATOMICS {split}\n\
                     #define MEDIUM_LANES {lanes}\n#define SEPARABLE_WEIGHTS {sep}\n\
                     #define RED_SUMS {red}\n#define TILE_LAUNCH_BOUNDS {bounds}\n{COMMON}\n{body}"
                ),
            )
            };
        // The medium pass of grey frames has its own atomics choice (measured per pass).
        let medium_split = if channels == 1 {
            tuning.grey_medium_split_atomics
        } else {
            tuning.split_shared_atomics
        };
        let wide_split = tuning.split_shared_atomics;
        let small = build("render_small.cu", SMALL, 1, wide_split, false, 0)?;
        let (medium_lanes, wide_lanes) = (tuning.medium_lanes, tuning.wide_lanes);
        // Launch bounds only on a medium module of its own (256-thread blocks; the wide pass
        // launches 1024) and for grey frames (CudaTuning::grey_medium_min_blocks).
        let min_blocks = |shares_wide: bool| {
            if channels == 1 && !shares_wide {
                tuning.grey_medium_min_blocks
            } else {
                0
            }
        };
        let shares_word = wide_lanes == medium_lanes && medium_split == wide_split;
        let medium = build(
            "render_medium.cu",
            MEDIUM,
            medium_lanes,
            medium_split,
            false,
            min_blocks(shares_word),
        )?;
        let wide = if shares_word {
            medium.clone()
        } else {
            build("render_medium.cu", MEDIUM, wide_lanes, wide_split, false, 0)?
        };
        let (medium_red, wide_red) = if tuning.red_shared_sums {
            let shares_red = wide_lanes == medium_lanes;
            let m = build(
                "render_medium.cu",
                MEDIUM,
                medium_lanes,
                false,
                true,
                min_blocks(shares_red),
            )?;
            let w = if shares_red {
                m.clone()
            } else {
                build("render_medium.cu", MEDIUM, wide_lanes, false, true, 0)?
            };
            (
                Some(function(&m, "medium_tiles")?),
                Some(function(&w, "medium_tiles")?),
            )
        } else {
            (None, None)
        };
        let large = build("render_large.cu", LARGE, 1, wide_split, false, 0)?;
        Ok(Self {
            channels,
            small: function(&small, "small_splat")?,
            medium: function(&medium, "medium_tiles")?,
            wide: function(&wide, "medium_tiles")?,
            medium_red,
            wide_red,
            combine: function(&medium, "combine_borders")?,
            large: function(&large, "large_splat")?,
        })
    }
}

impl Kernels {
    /// Compiles (or loads from the cache) every kernel for `tuning` (lane counts, atomics).
    pub(crate) fn load(device: &GpuDevice, tuning: &CudaTuning) -> Result<Self, GpuError> {
        let with_common = |body: &str| format!("{COMMON}\n{body}");
        let classify = device.module("render_classify.cu", &with_common(CLASSIFY))?;
        let sort = device.module("render_tile_sort.cu", &with_common(TILE_SORT))?;
        let compose = device.module("render_compose.cu", COMPOSE)?;
        let order = device.module("render_order.cu", ORDER)?;
        Ok(Self {
            classify: function(&classify, "classify")?,
            tile_scan: function(&sort, "tile_scan")?,
            scatter: function(&sort, "scatter")?,
            rgb: SplatKernels::load(device, tuning, 3)?,
            grey: SplatKernels::load(device, tuning, 1)?,
            order: OrderKernels {
                bounds: function(&order, "order_bounds")?,
                keys: function(&order, "order_keys")?,
                scan: function(&order, "order_scan")?,
                scatter: function(&order, "order_scatter")?,
            },
            compose: function(&compose, "compose")?,
            tone8: function(&compose, "tone8")?,
            tone16: function(&compose, "tone16")?,
        })
    }
}
