//! Which counting kernel of kernels/twopoint.cu a [`super::count_cuda::CudaPairCounter`] runs,
//! and its launch shape. All kernels give the same (exact) counts; they differ in speed.

/// Threads per block of the counting kernels (their `__launch_bounds__`, `LANE_THREADS`).
pub const COUNT_THREADS: u32 = 128;
/// Counting blocks wanted per launch (all trials), to fill the device.
const MIN_COUNT_BLOCKS: u32 = 4096;
/// Most events one thread (warp for [`CountKernel::PerWarp`]) handles: its u32 counters then see
/// at most 256 × (n − 1) pairs, which fits for n ≤ 2^24 (checked by `cuda_tables`).
pub const MAX_EVENTS_PER_UNIT: u32 = 256;
/// Events per thread of the lanes kernel unless `$HALOSCOPE_TWOPOINT_EVENTS_PER_THREAD` says
/// otherwise: enough that the per-block sum of its 128 counter columns stays a small cost.
const DEFAULT_EVENTS_PER_LANE: u32 = 8;
/// Dynamic shared memory (bytes) above which the lanes kernel must opt in: 48 KiB less its
/// 4,112 static bytes (bin tables and lookup; `ptxas -v`) and a margin.
pub const LANE_SHARED_OPT_IN: u32 = 40 * 1024;
/// Most dynamic shared memory (bytes) the lanes kernel asks for (opting in above the default
/// 48 KiB); more counter columns than that would leave too few blocks per SM to be worth it.
pub const LANE_SHARED_LIMIT: usize = 96 * 1024;

/// Which counting kernel runs (all give the same counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountKernel {
    /// One thread per event with a private shared counter column per thread (no atomics) and no
    /// stored f64 vectors (recomputed for the rare edge re-check).
    PerLane,
    /// [`CountKernel::PerLane`] with u16 counters (flushed before they could wrap): half the
    /// shared memory, so more resident blocks.
    PerLane16,
    /// One warp per event: lanes take consecutive candidates (coalesced, little divergence).
    PerWarp,
    /// One thread per event, shared atomic histograms per warp.
    PerThread,
    /// [`CountKernel::PerThread`] loading 2 candidates before testing them (more loads in
    /// flight), fed by the f32-only scatter like the lanes kernels.
    Batch2,
    /// As [`CountKernel::Batch2`] with 4 candidates per batch.
    Batch4,
    /// [`CountKernel::Batch2`] with the f32 chord² as a fused multiply-add chain.
    Batch2Fma,
    /// [`CountKernel::Batch2Fma`] taking the bin straight from the lookup table where a lookup
    /// cell lies inside one bin's certain band (no bin search, no band check).
    Batch2FmaDirect,
    /// One thread per event computing all its windows' slot runs first (shared run columns),
    /// then walking them in one loop, two candidates per step, with the one-step cell table
    /// (kernels/twopoint_flat.cu); needs the tables' `one_step` property, else runs as
    /// [`CountKernel::Batch2FmaDirect`].
    FlatShared2,
}

/// The counting kernel used unless `$HALOSCOPE_TWOPOINT_KERNEL` says otherwise: the flat
/// shared-run kernel, 0.0888 ms per IC86-2011 trial on an H200 (launches of 512), 1.49× faster
/// than `b2fd` (0.1325; session 4's default, and the fallback when the cell table does not
/// apply). Session 5 measured and removed precomputed global windows (0.106–0.124 ms), the
/// shared-run loop with b2fd's lookup (0.094) and one-step-ahead loads (0.094–0.114;
/// BENCHMARKS.md).
pub const DEFAULT_KERNEL: CountKernel = CountKernel::FlatShared2;

impl CountKernel {
    /// The default, or `$HALOSCOPE_TWOPOINT_KERNEL` (`flats2`, `b2f`, `b2fd`,
    /// `batch4`, `batch2`, `lanes`, `lanes16`, `warp` or `thread`) for benchmarks.
    pub fn from_env() -> Self {
        match std::env::var("HALOSCOPE_TWOPOINT_KERNEL").as_deref() {
            Ok("thread") => Self::PerThread,
            Ok("warp") => Self::PerWarp,
            Ok("lanes") => Self::PerLane,
            Ok("lanes16") => Self::PerLane16,
            Ok("batch2") => Self::Batch2,
            Ok("batch4") => Self::Batch4,
            Ok("b2f") => Self::Batch2Fma,
            Ok("b2fd") => Self::Batch2FmaDirect,
            Ok("flats2") => Self::FlatShared2,
            _ => DEFAULT_KERNEL,
        }
    }

    /// Whether this is one of the lanes kernels (private counter columns).
    pub fn is_lanes(self) -> bool {
        matches!(self, Self::PerLane | Self::PerLane16)
    }

    /// `self`, or [`CountKernel::PerThread`] where a lanes kernel's counter columns
    /// (`levels − 1` × `bins` × 128 counters) would exceed [`LANE_SHARED_LIMIT`], or
    /// [`CountKernel::Batch2FmaDirect`] for the cell-table kernel when a lookup cell may need
    /// more than one bin step (`one_step` false, see `cuda_tables`).
    pub fn fitting(self, n_levels: usize, n_bins: usize, one_step: bool) -> Self {
        if self.is_lanes() && self.shared_bytes(n_levels, n_bins) as usize > LANE_SHARED_LIMIT {
            Self::PerThread
        } else if self.needs_one_step() && !one_step {
            Self::Batch2FmaDirect
        } else {
            self
        }
    }

    /// Whether the kernel decides bins with the one-step cell table (and takes it as its last
    /// argument).
    pub fn needs_one_step(self) -> bool {
        self == Self::FlatShared2
    }

    /// The kernel's entry point.
    pub fn function_name(self) -> &'static str {
        match self {
            Self::PerLane => "tp_count_lanes",
            Self::PerLane16 => "tp_count_lanes16",
            Self::PerWarp => "tp_count_warp",
            Self::PerThread => "tp_count",
            Self::Batch2 => "tp_count_batch2",
            Self::Batch4 => "tp_count_batch4",
            Self::Batch2Fma => "tp_count_b2f",
            Self::Batch2FmaDirect => "tp_count_b2fd",
            Self::FlatShared2 => "tp_count_flats2",
        }
    }

    /// The scatter kernel that feeds it (the lanes kernel needs no f64 slot vectors).
    pub fn scatter_name(self) -> &'static str {
        match self {
            Self::PerLane
            | Self::PerLane16
            | Self::Batch2
            | Self::Batch4
            | Self::Batch2Fma
            | Self::Batch2FmaDirect
            | Self::FlatShared2 => "tp_scatter32",
            Self::PerWarp | Self::PerThread => "tp_scatter",
        }
    }

    /// Whether the kernel reads stored f64 slot vectors.
    pub fn needs_pos64(self) -> bool {
        matches!(self, Self::PerWarp | Self::PerThread)
    }

    /// Dynamic shared memory of one counting block.
    pub fn shared_bytes(self, n_levels: usize, n_bins: usize) -> u32 {
        let bytes = match self {
            Self::PerLane => lane_columns(n_levels, n_bins) * 4,
            Self::PerLane16 => lane_columns(n_levels, n_bins) * 2,
            // One [level][bin] histogram per warp.
            Self::PerWarp
            | Self::PerThread
            | Self::Batch2
            | Self::Batch4
            | Self::Batch2Fma
            | Self::Batch2FmaDirect
            | Self::FlatShared2 => (COUNT_THREADS as usize / 32) * n_levels * n_bins * 4,
        };
        bytes as u32
    }

    /// Blocks per trial (grid.x) for `n` events and `trials` trials per launch.
    pub fn blocks_per_trial(self, n: u32, trials: u32) -> u32 {
        let (events_per_block, most_per_unit) = match self {
            // Enough events per thread that the per-block column sums stay cheap, but at
            // least MIN_COUNT_BLOCKS blocks in all to fill the device.
            Self::PerLane | Self::PerLane16 => (COUNT_THREADS, events_per_lane()),
            // One event per thread: a grid stride of 8 was 1.25× slower on an H200
            // (BENCHMARKS.md, runs 2 and 3).
            Self::PerThread
            | Self::Batch2
            | Self::Batch4
            | Self::Batch2Fma
            | Self::Batch2FmaDirect
            | Self::FlatShared2 => (COUNT_THREADS, 1),
            Self::PerWarp => (COUNT_THREADS / 32, MAX_EVENTS_PER_UNIT),
        };
        let per_unit = n.div_ceil(events_per_block).max(1);
        per_unit
            .min(MIN_COUNT_BLOCKS.div_ceil(trials.max(1)))
            .max(n.div_ceil(events_per_block * most_per_unit))
            .max(1)
    }
}

/// Counters in a lanes kernel's block: (levels − 1) × bins rows of one per thread.
fn lane_columns(n_levels: usize, n_bins: usize) -> usize {
    n_levels.saturating_sub(1) * n_bins * COUNT_THREADS as usize
}

/// Events per thread of the lanes kernel: the default, or
/// `$HALOSCOPE_TWOPOINT_EVENTS_PER_THREAD` (1…256) for benchmarks.
fn events_per_lane() -> u32 {
    std::env::var("HALOSCOPE_TWOPOINT_EVENTS_PER_THREAD")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(DEFAULT_EVENTS_PER_LANE, |v| v.clamp(1, MAX_EVENTS_PER_UNIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_kernel_falls_back_when_its_columns_do_not_fit() {
        // Default: 5 levels × 20 bins → 4 × 20 × 128 × 4 = 40,960 bytes: fits.
        assert_eq!(
            CountKernel::PerLane.fitting(5, 20, true),
            CountKernel::PerLane
        );
        assert_eq!(CountKernel::PerLane.shared_bytes(5, 20), 40_960);
        // 193 counter rows × 512 bytes > 96 KiB; 192 rows fit.
        assert_eq!(
            CountKernel::PerLane.fitting(2, 193, true),
            CountKernel::PerThread
        );
        assert_eq!(
            CountKernel::PerLane.fitting(3, 96, true),
            CountKernel::PerLane
        );
        assert_eq!(
            CountKernel::PerThread.fitting(2, 193, true),
            CountKernel::PerThread
        );
        // The cell-table kernel needs one-step cells, else the direct-lookup kernel runs.
        assert_eq!(
            CountKernel::FlatShared2.fitting(5, 20, true),
            CountKernel::FlatShared2
        );
        assert_eq!(
            CountKernel::FlatShared2.fitting(5, 20, false),
            CountKernel::Batch2FmaDirect
        );
    }

    #[test]
    fn launch_shapes_cover_every_event_within_the_per_thread_cap() {
        for kernel in [
            CountKernel::PerLane,
            CountKernel::PerThread,
            CountKernel::PerWarp,
            CountKernel::Batch2,
            CountKernel::Batch4,
            CountKernel::Batch2Fma,
            CountKernel::FlatShared2,
        ] {
            for (n, trials) in [(1u32, 1u32), (138_322, 128), (138_322, 1), (5_000_000, 512)] {
                let blocks = kernel.blocks_per_trial(n, trials);
                let per_block = match kernel {
                    CountKernel::PerWarp => COUNT_THREADS / 32,
                    _ => COUNT_THREADS,
                };
                let units = blocks * per_block;
                // Grid stride: each unit handles ⌈n / units⌉ events at most.
                assert!(
                    n.div_ceil(units) <= MAX_EVENTS_PER_UNIT,
                    "{kernel:?} {n} {trials}"
                );
                assert!(blocks <= n.div_ceil(per_block), "{kernel:?} {n} {trials}");
            }
        }
        // 138,322 events, 128 trials: 8 events per thread → 136 blocks per trial.
        assert_eq!(CountKernel::PerLane.blocks_per_trial(138_322, 128), 136);
        assert_eq!(CountKernel::PerThread.blocks_per_trial(138_322, 128), 1081);
    }
}
