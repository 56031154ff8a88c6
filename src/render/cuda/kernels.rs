//! The renderer's CUDA kernels (kernels/render_*.cu), compiled by NVRTC for the device.

use super::launch::WIDE_BLOCK;
use super::tuning::{
    GREY_DIRECT_IN_CLASSIFY, GREY_MEDIUM_MIN_BLOCKS, GREY_MEDIUM_SPLIT_ATOMICS, MEDIUM_LANES,
    RGB_DIRECT_IN_CLASSIFY, RGB_DIRECT_WINDOW_PX, RGB_MEDIUM_RED_MIN_BLOCKS, SPLIT_SHARED_ATOMICS,
    WIDE_LANES,
};
use crate::gpu::{BLOCK, GpuDevice, GpuError};
use cudarc::driver::{CudaFunction, CudaModule};
use std::sync::Arc;

/// Shared device code, prepended to every kernel file that projects or splats.
const COMMON: &str = include_str!("../../../kernels/render_common.cuh");
const CLASSIFY: &str = include_str!("../../../kernels/render_classify.cu");
const TILE_SORT: &str = include_str!("../../../kernels/render_tile_sort.cu");
const SMALL: &str = include_str!("../../../kernels/render_small.cu");
const MEDIUM: &str = include_str!("../../../kernels/render_medium.cu");
const LARGE: &str = include_str!("../../../kernels/render_large.cu");
const WIDE: &str = include_str!("../../../kernels/render_wide.cu");
const COMPOSE: &str = include_str!("../../../kernels/render_compose.cu");
const ORDER: &str = include_str!("../../../kernels/render_order.cu");

/// The splatting kernels for one number of accumulated channels.
#[derive(Debug)]
pub(crate) struct SplatKernels {
    /// Fixed-point values per pixel (3, or 1 for grey frames).
    pub(crate) channels: u32,
    /// Classification (render_classify.cu after render_small.cu), drawing the small splats at
    /// once where `small` is None.
    pub(crate) classify: CudaFunction,
    /// The small splats' own pass, where classify does not draw them.
    pub(crate) small: Option<CudaFunction>,
    /// The medium tile pass with 64-bit-word shared sums.
    pub(crate) medium: CudaFunction,
    /// The tile kernel compiled with the wide pass's lane count, 64-bit-word sums.
    pub(crate) wide: CudaFunction,
    /// The two tile passes with three-part shared sums (12 bytes a value), used where their
    /// region fits in shared memory ([`super::launch::tile_pass`]). The wide one is
    /// render_wide.cu's `wide_tiles` in RGB frames, the tile kernel in grey ones.
    pub(crate) medium_red: CudaFunction,
    pub(crate) wide_red: CudaFunction,
    /// Spare pixels `wide_red` needs past its region (`wide_tiles`: one per lane of a warp).
    pub(crate) wide_red_spare_px: usize,
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
    pub(crate) exposure_hist: CudaFunction,
}

fn function(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction, GpuError> {
    module.load_function(name).map_err(GpuError::from)
}

impl SplatKernels {
    fn load(device: &GpuDevice, channels: u32) -> Result<Self, GpuError> {
        // One module per (file, lanes, atomics, sums, launch bounds); `(threads, min_blocks)`
        // puts __launch_bounds__(threads, min_blocks) on the tile kernel, threads 0 = none.
        let build =
            |file: &str, body: &str, lanes: u32, split: bool, red: bool, (threads, min_blocks)| {
                let (split, red) = (u32::from(split), u32::from(red));
                let bounds = if threads > 0 {
                    format!("__launch_bounds__({threads}, {min_blocks})")
                } else {
                    String::new()
                };
                device.module(
                    &format!(
                        "{file} (channels {channels}, lanes {lanes}, split {split}, red {red}, \
                         bounds {threads} x {min_blocks})"
                    ),
                    &format!(
                        "#define CHANNELS {channels}\n#define SPLIT_SHARED_ATOMICS {split}\n\
                         #define MEDIUM_LANES {lanes}\n#define RED_SUMS {red}\n\
                         #define TILE_LAUNCH_BOUNDS {bounds}\n{COMMON}\n{body}"
                    ),
                )
            };
        let grey = channels == 1;
        let medium_split = if grey {
            GREY_MEDIUM_SPLIT_ATOMICS
        } else {
            SPLIT_SHARED_ATOMICS
        };
        let medium_bounds = |min_blocks: u32| (BLOCK, min_blocks);
        let (medium_min_blocks, medium_red_min_blocks) = if grey {
            (
                medium_bounds(GREY_MEDIUM_MIN_BLOCKS),
                medium_bounds(GREY_MEDIUM_MIN_BLOCKS),
            )
        } else {
            ((0, 0), medium_bounds(RGB_MEDIUM_RED_MIN_BLOCKS))
        };
        // The wide pass launches WIDE_BLOCK threads a block: the bound keeps the compiler at
        // 64 registers or fewer, or the launch would fail for lack of registers.
        let wide_bounds = (WIDE_BLOCK, 1);
        let (direct, window) = if grey {
            (GREY_DIRECT_IN_CLASSIFY, 0)
        } else {
            (RGB_DIRECT_IN_CLASSIFY, RGB_DIRECT_WINDOW_PX)
        };
        let classify = build(
            "render_classify.cu",
            &format!(
                "#define DIRECT_IN_CLASSIFY {}\n#define BLOCK_WINDOW_PX {window}\n{SMALL}\n{CLASSIFY}",
                u32::from(direct)
            ),
            1,
            SPLIT_SHARED_ATOMICS,
            false,
            (0, 0),
        )?;
        let medium = build(
            "render_medium.cu",
            MEDIUM,
            MEDIUM_LANES,
            medium_split,
            false,
            medium_min_blocks,
        )?;
        let wide = build(
            "render_medium.cu",
            MEDIUM,
            WIDE_LANES,
            SPLIT_SHARED_ATOMICS,
            false,
            wide_bounds,
        )?;
        // The three-part sums use no 64-bit shared atomic: the split choice does not matter.
        let medium_red = build(
            "render_medium.cu",
            MEDIUM,
            MEDIUM_LANES,
            false,
            true,
            medium_red_min_blocks,
        )?;
        // RGB frames: render_wide.cu's walk of each box as one run of pixels, where the tile
        // kernel left lanes idle past a box's columns. Measured on an H200 beside main 8ff039c
        // in one call: 10^8 particles at 2048², R0 = 16, the RGB wide pass 141.4 -> 130.4 ms
        // (frame 149.2-149.3 -> 138.3 ms); the Splotch kit's 10^7 file at F = 1, 7.15 -> 6.55
        // ms. Grey frames keep the tile kernel: with one value a pixel the walk's address and
        // weight set-up cost more than the idle lanes (a first version of the walk: grey wide
        // pass 73 -> 105 ms).
        let (wide_file, wide_body, wide_name, wide_red_spare_px) = if grey {
            ("render_medium.cu", MEDIUM.to_owned(), "medium_tiles", 0)
        } else {
            (
                "render_wide.cu",
                format!("{MEDIUM}\n{WIDE}"),
                "wide_tiles",
                32,
            )
        };
        let wide_red = build(wide_file, &wide_body, WIDE_LANES, false, true, wide_bounds)?;
        let large = build(
            "render_large.cu",
            LARGE,
            1,
            SPLIT_SHARED_ATOMICS,
            false,
            (0, 0),
        )?;
        Ok(Self {
            channels,
            small: if direct {
                None
            } else {
                Some(function(&classify, "small_splat")?)
            },
            classify: function(&classify, "classify")?,
            medium: function(&medium, "medium_tiles")?,
            wide: function(&wide, "medium_tiles")?,
            medium_red: function(&medium_red, "medium_tiles")?,
            wide_red: function(&wide_red, wide_name)?,
            wide_red_spare_px,
            large: function(&large, "large_splat")?,
        })
    }
}

impl Kernels {
    /// Compiles (or loads from the cache) every kernel.
    pub(crate) fn load(device: &GpuDevice) -> Result<Self, GpuError> {
        let with_common = |body: &str| format!("{COMMON}\n{body}");
        let sort = device.module("render_tile_sort.cu", &with_common(TILE_SORT))?;
        let compose = device.module("render_compose.cu", COMPOSE)?;
        let order = device.module("render_order.cu", ORDER)?;
        Ok(Self {
            tile_scan: function(&sort, "tile_scan")?,
            scatter: function(&sort, "scatter")?,
            rgb: SplatKernels::load(device, 3)?,
            grey: SplatKernels::load(device, 1)?,
            order: OrderKernels {
                bounds: function(&order, "order_bounds")?,
                keys: function(&order, "order_keys")?,
                scan: function(&order, "order_scan")?,
                scatter: function(&order, "order_scatter")?,
            },
            compose: function(&compose, "compose")?,
            tone8: function(&compose, "tone8")?,
            tone16: function(&compose, "tone16")?,
            exposure_hist: function(&compose, "exposure_hist")?,
        })
    }
}
