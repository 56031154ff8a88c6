//! The kernels of kernels/twopoint*.cu that a [`super::CudaPairCounter`] runs, their launch
//! shapes, and one typed argument struct per kernel (fields in the kernel's parameter order).

use cudarc::driver::{CudaSlice, LaunchArgs};

/// Threads per block of the counting kernels (their `__launch_bounds__`, `FLAT_THREADS`).
pub const COUNT_THREADS: u32 = 128;

/// Which counting kernel runs. Both give the same (exact) counts; the flat kernel is faster
/// (0.0888 ms per IC86-2011 trial on an H200 in launches of 512, against 0.1325 ms), but its
/// one-step cell table is only valid for some bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountKernel {
    /// `tp_count_b2fd` (kernels/twopoint_fma.cu): two candidates loaded per step, FMA chord²,
    /// the bin straight from the lookup table where a cell lies inside one bin's certain band,
    /// else a bin search. Valid for every table.
    Direct,
    /// `tp_count_flats2` (kernels/twopoint_flat.cu): every window's slot runs first, then one
    /// loop over them two candidates per step, the bin from the one-step cell table. Valid only
    /// where the tables are `one_step`.
    Flat,
}

impl CountKernel {
    /// The kernel for tables whose lookup cells need at most one bin step (`one_step`, see
    /// `tables.rs`) or not: the flat kernel where its cell table decides, else the direct one.
    pub fn for_tables(one_step: bool) -> Self {
        if one_step { Self::Flat } else { Self::Direct }
    }

    /// `self` where its tables allow it, else [`CountKernel::Direct`] (valid everywhere).
    pub fn fitting(self, one_step: bool) -> Self {
        if self == Self::Flat && !one_step {
            Self::Direct
        } else {
            self
        }
    }

    /// The kernel's entry point.
    pub fn function_name(self) -> &'static str {
        match self {
            Self::Direct => "tp_count_b2fd",
            Self::Flat => "tp_count_flats2",
        }
    }

    /// Dynamic shared memory of one counting block: one `[level][bin]` u32 histogram per warp.
    pub fn shared_bytes(n_levels: usize, n_bins: usize) -> u32 {
        ((COUNT_THREADS as usize / 32) * n_levels * n_bins * 4) as u32
    }

    /// Blocks per trial (grid.x) for `n` events: one event per thread (a grid stride of 8
    /// events per thread was 1.25× slower on an H200).
    pub fn blocks_per_trial(n: u32) -> u32 {
        n.div_ceil(COUNT_THREADS).max(1)
    }
}

crate::kernel_args! {
    /// `tp_scramble`: one thread per (event, trial) on a grid of ⌈n / 256⌉ × trials blocks.
    /// `grid_per_degree` 0 scrambles on the continuum, else on the grid of 1/grid_per_degree°.
    /// Relies on: `ra_observed`, `stripe_of_event` of n events; `stripe_cell_base` of
    /// stripes + 1 and `stripe_inv_cell_width` of stripes entries; `ra_out`, `cell_out`,
    /// `rank_out` of trials·n and `cell_count` (zeroed) of trials·total_cells.
    pub(super) struct ScrambleArgs<'a> {
        pub(super) n: u32,
        pub(super) seed: u64,
        pub(super) first_trial: u64,
        pub(super) use_observed: u32,
        pub(super) grid_per_degree: u32,
        pub(super) ra_observed: &'a CudaSlice<f64>,
        pub(super) stripe_of_event: &'a CudaSlice<u32>,
        pub(super) stripe_cell_base: &'a CudaSlice<u32>,
        pub(super) stripe_inv_cell_width: &'a CudaSlice<f64>,
        pub(super) total_cells: u32,
        pub(super) ra_out: &'a mut CudaSlice<f64>,
        pub(super) cell_out: &'a mut CudaSlice<u32>,
        pub(super) rank_out: &'a mut CudaSlice<u32>,
        pub(super) cell_count: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `tp_scan`: one block per trial. Relies on: `cell_count` of trials·total_cells and
    /// `cell_start` of trials·(total_cells + 1).
    pub(super) struct ScanArgs<'a> {
        pub(super) total_cells: u32,
        pub(super) cell_count: &'a CudaSlice<u32>,
        pub(super) cell_start: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `tp_scatter32`: one thread per (event, trial) on a grid of ⌈n / 256⌉ × trials blocks.
    /// Relies on: `ra`, `cell`, `rank` of trials·n; `cell_start` of trials·(total_cells + 1);
    /// `cos_dec`, `sin_dec`, `level` of n; `pos32` of trials·n `SlotPos` (4 words each) and
    /// `slot_event` of trials·n.
    pub(super) struct ScatterArgs<'a> {
        pub(super) n: u32,
        pub(super) total_cells: u32,
        pub(super) ra: &'a CudaSlice<f64>,
        pub(super) cell: &'a CudaSlice<u32>,
        pub(super) rank: &'a CudaSlice<u32>,
        pub(super) cell_start: &'a CudaSlice<u32>,
        pub(super) cos_dec: &'a CudaSlice<f64>,
        pub(super) sin_dec: &'a CudaSlice<f64>,
        pub(super) level: &'a CudaSlice<u32>,
        pub(super) pos32: &'a mut CudaSlice<f32>,
        pub(super) slot_event: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `tp_count_b2fd` (`BATCHED_PARAMS` of kernels/twopoint.cu), grid ⌈n / 128⌉ × trials of
    /// [`COUNT_THREADS`] threads with [`CountKernel::shared_bytes`] of dynamic shared memory.
    /// Relies on: the slot buffers (`pos32`, `slot_event`, `ra`) of trials·n, `cell_start` of
    /// trials·(total_cells + 1); per-event `cos_dec`, `sin_dec`, `stripe_of_event` (n) and
    /// `window_start` (n + 1) with `window_half_width` as it indexes; `stripe_cell_base`
    /// (stripes + 1), `stripe_inv_cell_width` (stripes); n_bins ≤ `MAX_BINS` entries of
    /// `inside32`, `outside32`, `chord2_max`, `ambiguity`; `lut` of lut_cells + 1 ≤
    /// `MAX_LUT_CELLS` + 1; `histogram` of trials·n_levels·n_bins; `ambiguous` of
    /// 4·ambiguous_capacity words.
    pub(super) struct CountArgs<'a> {
        pub(super) n: u32,
        pub(super) total_cells: u32,
        pub(super) n_bins: u32,
        pub(super) n_levels: u32,
        pub(super) pos32: &'a CudaSlice<f32>,
        pub(super) cos_dec: &'a CudaSlice<f64>,
        pub(super) sin_dec: &'a CudaSlice<f64>,
        pub(super) slot_event: &'a CudaSlice<u32>,
        pub(super) ra: &'a CudaSlice<f64>,
        pub(super) cell_start: &'a CudaSlice<u32>,
        pub(super) stripe_of_event: &'a CudaSlice<u32>,
        pub(super) window_start: &'a CudaSlice<u32>,
        pub(super) window_half_width: &'a CudaSlice<f64>,
        pub(super) stripe_cell_base: &'a CudaSlice<u32>,
        pub(super) stripe_inv_cell_width: &'a CudaSlice<f64>,
        pub(super) inside32: &'a CudaSlice<f32>,
        pub(super) outside32: &'a CudaSlice<f32>,
        pub(super) chord2_max: &'a CudaSlice<f64>,
        pub(super) ambiguity: &'a CudaSlice<f64>,
        pub(super) lut: &'a CudaSlice<u16>,
        pub(super) lut_cells: u32,
        pub(super) lut_scale: f32,
        pub(super) histogram: &'a mut CudaSlice<u64>,
        pub(super) ambiguous_count: &'a mut CudaSlice<u32>,
        pub(super) ambiguous_capacity: u32,
        pub(super) ambiguous: &'a mut CudaSlice<u32>,
    }
}

/// [`CountArgs`] pushes its fields in place, so that the flat kernel's struct can start with it
/// as the kernel's parameter list starts with `BATCHED_PARAMS`.
impl<'b, 'a: 'b> crate::gpu::KernelArg<'b> for CountArgs<'a> {
    fn push_to(&'b mut self, args: &mut LaunchArgs<'b>) {
        crate::gpu::KernelArgs::push_all(self, args);
    }
}

crate::kernel_args! {
    /// `tp_count_flats2`: [`CountArgs`] (same grid, shared memory and sizes), then the one-step
    /// cell table of `MAX_LUT_CELLS + 1` float4 (valid only where the tables are `one_step`).
    pub(super) struct FlatCountArgs<'a> {
        pub(super) batched: CountArgs<'a>,
        pub(super) cell_table: &'a CudaSlice<f32>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flat_kernel_runs_only_on_one_step_tables() {
        assert_eq!(CountKernel::for_tables(true), CountKernel::Flat);
        assert_eq!(CountKernel::for_tables(false), CountKernel::Direct);
        assert_eq!(CountKernel::Flat.fitting(false), CountKernel::Direct);
        assert_eq!(CountKernel::Direct.fitting(true), CountKernel::Direct);
        // Default bins and cuts: 4 warps × 5 levels × 20 bins × 4 bytes.
        assert_eq!(CountKernel::shared_bytes(5, 20), 1600);
    }

    #[test]
    fn launch_shapes_give_every_event_one_thread() {
        for n in [1u32, 127, 128, 129, 138_322, 5_000_000] {
            let blocks = CountKernel::blocks_per_trial(n);
            assert!(blocks * COUNT_THREADS >= n, "{n}");
            assert!((blocks - 1) * COUNT_THREADS < n, "{n}");
        }
        assert_eq!(CountKernel::blocks_per_trial(0), 1);
        // 138,322 events: 1081 blocks per trial, whatever the trials per launch.
        assert_eq!(CountKernel::blocks_per_trial(138_322), 1081);
    }
}
