//! One argument struct per kernel of kernels/render_*.cu, fields in the kernel's parameter
//! order (pushed in declaration order by [`crate::gpu::launch`]). Each doc says which sizes the
//! kernel relies on; the launch sites' `SAFETY` comments say why they hold.

use super::params::{LargeC, SplatC, StyleC, ViewC};
use cudarc::driver::{CudaSlice, CudaView};

crate::kernel_arg_by_value!(ViewC, StyleC, SplatC, LargeC);

crate::kernel_args! {
    /// `classify` (render_classify.cu), one thread per particle, whole warps: the particle
    /// arrays hold `n` particles (3·n positions; intensity and colour only where the style
    /// reads them), keys ≥ n entries, tile_count 2·n_tiles + 1, class_count 4; tau_fixed
    /// holds CHANNELS·W·H values (W×H from the view) for the small splats drawn there.
    pub(super) struct ClassifyArgs<'a> {
        pub(super) view: ViewC,
        pub(super) style: StyleC,
        pub(super) pos: CudaView<'a, f32>,
        pub(super) h: CudaView<'a, f32>,
        pub(super) intensity: CudaView<'a, f32>,
        pub(super) colour: CudaView<'a, f32>,
        pub(super) palette: &'a CudaSlice<f32>,
        pub(super) n: u32,
        pub(super) tile_px: i32,
        pub(super) tiles_x: i32,
        pub(super) n_tiles: u32,
        pub(super) direct_cut_px: f32,
        pub(super) gpu_border_px: f32,
        pub(super) scale: f64,
        pub(super) keys: &'a mut CudaSlice<u32>,
        pub(super) tile_count: &'a mut CudaSlice<u32>,
        pub(super) class_count: &'a mut CudaSlice<u64>,
        pub(super) tau_fixed: &'a mut CudaSlice<u64>,
    }
}

crate::kernel_args! {
    /// `tile_scan` (render_tile_sort.cu), one block of 1024 threads: tile_count, tile_start,
    /// cursor and seg_start hold n_tiles + 1 entries (`n_tiles` here counts both key ranges).
    pub(super) struct TileScanArgs<'a> {
        pub(super) tile_count: &'a CudaSlice<u32>,
        pub(super) n_tiles: u32,
        pub(super) segment: u32,
        pub(super) wide_from: u32,
        pub(super) wide_segment: u32,
        pub(super) tile_start: &'a mut CudaSlice<u32>,
        pub(super) cursor: &'a mut CudaSlice<u32>,
        pub(super) seg_start: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `scatter` (render_tile_sort.cu), one thread per particle: the particle arrays and keys
    /// as for classify; sorted and large hold ≥ n entries; perm (read when has_perm) holds
    /// index_base + n entries.
    pub(super) struct ScatterArgs<'a> {
        pub(super) view: ViewC,
        pub(super) style: StyleC,
        pub(super) pos: CudaView<'a, f32>,
        pub(super) h: CudaView<'a, f32>,
        pub(super) intensity: CudaView<'a, f32>,
        pub(super) colour: CudaView<'a, f32>,
        pub(super) palette: &'a CudaSlice<f32>,
        pub(super) n: u32,
        pub(super) index_base: u32,
        pub(super) keys: &'a CudaSlice<u32>,
        pub(super) cursor: &'a mut CudaSlice<u32>,
        pub(super) sorted: &'a mut CudaSlice<SplatC>,
        pub(super) large: &'a mut CudaSlice<LargeC>,
        pub(super) large_count: &'a mut CudaSlice<u32>,
        pub(super) perm: &'a CudaSlice<u32>,
        pub(super) has_perm: i32,
    }
}

crate::kernel_args! {
    /// `small_splat` (render_small.cu), one thread per particle: the particle arrays and keys as
    /// for classify; tau_fixed holds CHANNELS·W·H values (W×H from the view).
    pub(super) struct SmallArgs<'a> {
        pub(super) view: ViewC,
        pub(super) style: StyleC,
        pub(super) pos: CudaView<'a, f32>,
        pub(super) h: CudaView<'a, f32>,
        pub(super) intensity: CudaView<'a, f32>,
        pub(super) colour: CudaView<'a, f32>,
        pub(super) palette: &'a CudaSlice<f32>,
        pub(super) n: u32,
        pub(super) keys: &'a CudaSlice<u32>,
        pub(super) scale: f64,
        pub(super) tau_fixed: &'a mut CudaSlice<u64>,
    }
}

crate::kernel_args! {
    /// `medium_tiles` (render_medium.cu), one block per (tile, segment) of keys tile_base ..
    /// tile_base + n_tiles: tile_start and seg_start hold tile_base + n_tiles + 1 entries,
    /// sorted the splats they index; shared memory holds the (tile_px + 2·margin)² region;
    /// tau_fixed holds CHANNELS·width·height values.
    pub(super) struct TileArgs<'a> {
        pub(super) sorted: &'a CudaSlice<SplatC>,
        pub(super) tile_start: &'a CudaSlice<u32>,
        pub(super) seg_start: &'a CudaSlice<u32>,
        pub(super) tile_base: u32,
        pub(super) n_tiles: u32,
        pub(super) segment: u32,
        pub(super) tile_px: i32,
        pub(super) tiles_x: i32,
        pub(super) margin: i32,
        pub(super) width: i32,
        pub(super) height: i32,
        pub(super) scale: f64,
        pub(super) tau_fixed: &'a mut CudaSlice<u64>,
    }
}

crate::kernel_args! {
    /// `large_splat` (render_large.cu), one warp per splat: large holds first + n entries;
    /// tau_fixed holds CHANNELS·width·height values.
    pub(super) struct LargeArgs<'a> {
        pub(super) large: &'a CudaSlice<LargeC>,
        pub(super) first: u32,
        pub(super) n: u32,
        pub(super) width: i32,
        pub(super) height: i32,
        pub(super) scale: f64,
        pub(super) tau_fixed: &'a mut CudaSlice<u64>,
    }
}

crate::kernel_args! {
    /// `compose` (render_compose.cu), one thread per value: tau_cpu and tau hold n values,
    /// tau_fixed n (channels 3) or n / 3 (channels 1); tau_cpu is read only when has_cpu.
    pub(super) struct ComposeArgs<'a> {
        pub(super) tau_fixed: &'a CudaSlice<u64>,
        pub(super) tau_cpu: &'a CudaSlice<f32>,
        pub(super) has_cpu: i32,
        pub(super) channels: i32,
        pub(super) n: u64,
        pub(super) inv_scale: f64,
        pub(super) tau: &'a mut CudaSlice<f32>,
    }
}

crate::kernel_args! {
    /// `tone8` (render_compose.cu), one thread per pixel: out holds `pixels` pixels of
    /// `out_channels` (3 or 4) bytes, tau three values a pixel.
    pub(super) struct Tone8Args<'a> {
        pub(super) tau: &'a CudaSlice<f32>,
        pub(super) pixels: u64,
        pub(super) out_channels: i32,
        pub(super) tau_scale: f32,
        pub(super) gamma: f32,
        pub(super) contrast: f32,
        pub(super) out: &'a mut CudaSlice<u8>,
    }
}

crate::kernel_args! {
    /// `tone16` (render_compose.cu), one thread per value: tau and out hold n values.
    pub(super) struct Tone16Args<'a> {
        pub(super) tau: &'a CudaSlice<f32>,
        pub(super) n: u64,
        pub(super) tau_scale: f32,
        pub(super) gamma: f32,
        pub(super) contrast: f32,
        pub(super) out: &'a mut CudaSlice<u16>,
    }
}

crate::kernel_args! {
    /// `order_bounds` (render_order.cu), a grid-stride loop: pos holds 3·n floats, bounds 6.
    pub(super) struct OrderBoundsArgs<'a> {
        pub(super) pos: &'a CudaSlice<f32>,
        pub(super) n: u32,
        pub(super) bounds: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `order_keys` (render_order.cu), one thread per particle: pos holds 3·n floats, bounds 6,
    /// keys n; counts 2^(3·bits).
    pub(super) struct OrderKeysArgs<'a> {
        pub(super) pos: &'a CudaSlice<f32>,
        pub(super) n: u32,
        pub(super) bounds: &'a CudaSlice<u32>,
        pub(super) bits: i32,
        pub(super) keys: &'a mut CudaSlice<u32>,
        pub(super) counts: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `order_scan` (render_order.cu), one block of 1024 threads: counts and cursor hold n.
    pub(super) struct OrderScanArgs<'a> {
        pub(super) counts: &'a CudaSlice<u32>,
        pub(super) n: u32,
        pub(super) cursor: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `order_scatter` (render_order.cu), one thread per particle: inputs and outputs hold n
    /// particles (3·n positions), the first n_extra extra arrays too; cursor holds the
    /// exclusive prefix sums of the cell counts of `keys` (n entries); perm n.
    pub(super) struct OrderScatterArgs<'a> {
        pub(super) pos: &'a CudaSlice<f32>,
        pub(super) h: &'a CudaSlice<f32>,
        pub(super) extra0: &'a CudaSlice<f32>,
        pub(super) extra1: &'a CudaSlice<f32>,
        pub(super) n_extra: i32,
        pub(super) n: u32,
        pub(super) keys: &'a CudaSlice<u32>,
        pub(super) cursor: &'a mut CudaSlice<u32>,
        pub(super) out_pos: &'a mut CudaSlice<f32>,
        pub(super) out_h: &'a mut CudaSlice<f32>,
        pub(super) out_extra0: &'a mut CudaSlice<f32>,
        pub(super) out_extra1: &'a mut CudaSlice<f32>,
        pub(super) perm: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `exposure_hist` (render_compose.cu), one thread per pixel: tau holds 3·pixels values,
    /// hist 2^16 counts.
    pub(super) struct ExposureHistArgs<'a> {
        pub(super) tau: &'a CudaSlice<f32>,
        pub(super) pixels: u64,
        pub(super) low_pass: i32,
        pub(super) high: u32,
        pub(super) hist: &'a mut CudaSlice<u32>,
    }
}
