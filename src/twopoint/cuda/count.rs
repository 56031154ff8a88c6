//! CUDA pair counter: batches of scrambled trials (or the observed RAs) counted on the GPU with
//! the kernels of kernels/twopoint*.cu, giving exactly the CPU's [`Counts`].
//!
//! Per launch of `b` trials (trial = blockIdx.y): counting sort of the events into (dec stripe,
//! RA cell) buckets, unit vectors to slots, then one thread per slot scans its window cells
//! (counting kernels and their arguments: `kernel.rs`; where the tables allow it, each thread
//! computes all its windows' slot runs first, then walks them in one loop, two candidates per
//! step). The static per-event data (declinations, cut levels, search windows, bin tables) is
//! uploaded once per [`CudaPairCounter`]. Pairs whose f64 c² lies within a few ulps of a bin
//! edge come back as a short list that the host decides with the CPU's arithmetic (see
//! `tables.rs`).

use super::kernel::{
    COUNT_THREADS, CountArgs, CountKernel, FlatCountArgs, ScanArgs, ScatterArgs, ScrambleArgs,
};
use super::tables::{CudaTables, cuda_tables};
use crate::gpu::{self, GpuDevice, GpuError};
use crate::twopoint::bins::chord2;
use crate::twopoint::counts::cumulative_counts;
use crate::twopoint::{Counts, Prepared, TwoPointError};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig};
use std::ops::Range;
use std::sync::Arc;

/// The kernel source (the two counting kernels appended, as they use twopoint.cu's helpers),
/// compiled by NVRTC on first use.
const SOURCE: &str = concat!(
    include_str!("../../../kernels/twopoint.cu"),
    "\n",
    include_str!("../../../kernels/twopoint_fma.cu"),
    "\n",
    include_str!("../../../kernels/twopoint_flat.cu")
);
/// Threads per block of the per-event kernels.
const EVENT_THREADS: u32 = 256;
/// Threads of the one-block-per-trial prefix sum.
const SCAN_THREADS: u32 = 1024;
/// Default cap on trials per launch (grid.y).
pub const DEFAULT_TRIALS_PER_LAUNCH: usize = 128;
/// Initial capacity of the list of pairs left to the host.
const INITIAL_AMBIGUOUS: usize = 4096;

/// Device copies of the data that trials do not change.
struct Static {
    ra_observed: CudaSlice<f64>,
    cos_dec: CudaSlice<f64>,
    sin_dec: CudaSlice<f64>,
    window_start: CudaSlice<u32>,
    window_half_width: CudaSlice<f64>,
    stripe_of_event: CudaSlice<u32>,
    level: CudaSlice<u32>,
    stripe_cell_base: CudaSlice<u32>,
    stripe_inv_cell_width: CudaSlice<f64>,
    inside32: CudaSlice<f32>,
    outside32: CudaSlice<f32>,
    chord2_max: CudaSlice<f64>,
    ambiguity: CudaSlice<f64>,
    lut: CudaSlice<u16>,
    /// The one-step decision table (`float4` per lookup cell) of [`CountKernel::Flat`].
    cell_table: CudaSlice<f32>,
}

/// Per-launch work space for `capacity` trials.
struct Work {
    ra: CudaSlice<f64>,
    cell: CudaSlice<u32>,
    rank: CudaSlice<u32>,
    /// `SlotPos` records (x, y, z as f32, level as u32 bits): 4 words per slot.
    pos32: CudaSlice<f32>,
    slot_event: CudaSlice<u32>,
    cell_count: CudaSlice<u32>,
    cell_start: CudaSlice<u32>,
    histogram: CudaSlice<u64>,
    ambiguous_count: CudaSlice<u32>,
    ambiguous: CudaSlice<u32>,
    ambiguous_capacity: usize,
}

/// The kernels of one launch (`count` as [`CudaPairCounter::kernel`] says).
struct Kernels {
    scramble: CudaFunction,
    scan: CudaFunction,
    scatter: CudaFunction,
    count: CudaFunction,
}

/// Which RAs a launch uses.
#[derive(Debug, Clone, Copy)]
enum RaSource {
    /// The prepared (observed) RAs; one trial.
    Observed,
    /// Philox-scrambled RAs of trials `first..first + count` for `seed`.
    Scrambled { seed: u64, first: u64 },
}

/// A CUDA pair counter bound to one prepared event list.
pub struct CudaPairCounter<'p> {
    prepared: &'p Prepared,
    tables: CudaTables,
    stream: Arc<CudaStream>,
    kernels: Kernels,
    statics: Static,
    work: Work,
    trials_per_launch: usize,
    pairs_left_to_host: u64,
    kernel: CountKernel,
}

impl std::fmt::Debug for CudaPairCounter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaPairCounter")
            .field("events", &self.prepared.len())
            .field("trials_per_launch", &self.trials_per_launch)
            .finish()
    }
}

/// Bytes of work space one trial needs: per event its RA, cell, rank, slot record and slot
/// event; per cell its count and start; the histogram.
fn bytes_per_trial(n: usize, cells: usize, n_hist: usize) -> usize {
    n * (8 + 4 + 4 + 16 + 4) + cells * 8 + n_hist * 8
}

impl<'p> CudaPairCounter<'p> {
    /// Compiles the kernels (cached), uploads `prepared`'s static data and allocates work space
    /// for up to [`DEFAULT_TRIALS_PER_LAUNCH`] trials per launch (fewer if memory is short).
    pub fn new(device: &GpuDevice, prepared: &'p Prepared) -> Result<Self, TwoPointError> {
        Self::with_trials_per_launch(device, prepared, DEFAULT_TRIALS_PER_LAUNCH)
    }

    /// As [`Self::new`] with at most `trials_per_launch` trials in one launch.
    pub fn with_trials_per_launch(
        device: &GpuDevice,
        prepared: &'p Prepared,
        trials_per_launch: usize,
    ) -> Result<Self, TwoPointError> {
        let tables = cuda_tables(prepared)?;
        let kernel = CountKernel::for_tables(tables.one_step);
        let stream = device.stream().clone();
        Self::with_tables(
            device,
            prepared,
            trials_per_launch,
            tables,
            (kernel, stream),
        )
    }

    /// As [`Self::with_trials_per_launch`] on a stream of its own, so that two counters on one
    /// device overlap one's host work (downloads, edge decisions, cumulative counts) with the
    /// other's kernels.
    pub fn on_own_stream(
        device: &GpuDevice,
        prepared: &'p Prepared,
        trials_per_launch: usize,
    ) -> Result<Self, TwoPointError> {
        let tables = cuda_tables(prepared)?;
        let kernel = CountKernel::for_tables(tables.one_step);
        let stream = device.context().new_stream()?;
        Self::with_tables(
            device,
            prepared,
            trials_per_launch,
            tables,
            (kernel, stream),
        )
    }

    /// As [`Self::with_trials_per_launch`] with counting kernel `kernel` where the tables allow
    /// it (see [`CountKernel::fitting`]): a test hook, so that the GPU tests can run the direct
    /// kernel on inputs where the flat one would be chosen.
    #[doc(hidden)]
    pub fn with_kernel(
        device: &GpuDevice,
        prepared: &'p Prepared,
        trials_per_launch: usize,
        kernel: CountKernel,
    ) -> Result<Self, TwoPointError> {
        let tables = cuda_tables(prepared)?;
        let kernel = kernel.fitting(tables.one_step);
        let stream = device.stream().clone();
        Self::with_tables(
            device,
            prepared,
            trials_per_launch,
            tables,
            (kernel, stream),
        )
    }

    /// Loads the kernels, uploads the static data and allocates the work space; every copy
    /// and launch goes to `stream`.
    fn with_tables(
        device: &GpuDevice,
        prepared: &'p Prepared,
        trials_per_launch: usize,
        tables: CudaTables,
        (kernel, stream): (CountKernel, Arc<CudaStream>),
    ) -> Result<Self, TwoPointError> {
        let module = device.module("twopoint.cu", SOURCE)?;
        let load = |name: &str| module.load_function(name).map_err(GpuError::from);
        let kernels = Kernels {
            scramble: load("tp_scramble")?,
            scan: load("tp_scan")?,
            scatter: load("tp_scatter32")?,
            count: load(kernel.function_name())?,
        };
        let up_f64 = |v: &[f64]| stream.clone_htod(v);
        let up_u32 = |v: &[u32]| stream.clone_htod(v);
        let statics = Static {
            ra_observed: up_f64(&prepared.ra)?,
            cos_dec: up_f64(&prepared.cos_dec)?,
            sin_dec: up_f64(&prepared.sin_dec)?,
            window_start: up_u32(&prepared.window_start)?,
            window_half_width: up_f64(&prepared.window_half_width)?,
            stripe_of_event: up_u32(&tables.stripe_of_event)?,
            level: up_u32(&tables.level)?,
            stripe_cell_base: up_u32(&tables.stripe_cell_base)?,
            stripe_inv_cell_width: up_f64(&tables.stripe_inv_cell_width)?,
            inside32: stream.clone_htod(&tables.inside32)?,
            outside32: stream.clone_htod(&tables.outside32)?,
            chord2_max: up_f64(&prepared.bins.chord2_max)?,
            ambiguity: up_f64(&tables.ambiguity)?,
            lut: stream.clone_htod(&tables.lut)?,
            cell_table: stream.clone_htod(&tables.cell_table)?,
        };
        let n = prepared.len();
        let n_hist = (prepared.cuts.len() + 1) * prepared.bins.len();
        let per_trial = bytes_per_trial(n, tables.total_cells(), n_hist);
        let (free, _) = device.memory()?;
        let fits = (free / 2 / per_trial.max(1)).max(1);
        let trials_per_launch = trials_per_launch.clamp(1, 65_535).min(fits);
        let work = alloc_work(&stream, n, tables.total_cells(), n_hist, trials_per_launch)?;
        Ok(Self {
            prepared,
            tables,
            stream,
            kernels,
            statics,
            work,
            trials_per_launch,
            pairs_left_to_host: 0,
            kernel,
        })
    }

    /// Most trials counted in one launch.
    pub fn trials_per_launch(&self) -> usize {
        self.trials_per_launch
    }

    /// The counting kernel in use.
    pub fn kernel(&self) -> CountKernel {
        self.kernel
    }

    /// Pairs so far whose edge decision the GPU left to the host (diagnostics).
    pub fn pairs_left_to_host(&self) -> u64 {
        self.pairs_left_to_host
    }

    /// Exact cumulative counts of the observed RAs (as `count_pairs(prepared, None)`).
    pub fn observed(&mut self) -> Result<Counts, TwoPointError> {
        let mut counts = self.launch(RaSource::Observed, 1)?;
        counts
            .pop()
            .ok_or_else(|| TwoPointError::Gpu("no counts".into()))
    }

    /// Exact cumulative counts of scrambled trials `trials` for `seed`, in trial order; each
    /// equals `count_pairs(prepared, Some(&scrambled_ra_on(prepared.scramble, n, seed, trial)))`.
    pub fn trials(&mut self, seed: u64, trials: Range<u64>) -> Result<Vec<Counts>, TwoPointError> {
        let mut all = Vec::with_capacity(trials.end.saturating_sub(trials.start) as usize);
        let mut first = trials.start;
        while first < trials.end {
            let count = (trials.end - first).min(self.trials_per_launch as u64);
            all.extend(self.launch(RaSource::Scrambled { seed, first }, count as usize)?);
            first += count;
        }
        Ok(all)
    }

    /// Test hook: multiplies the f64 ambiguity bands by `factor` and sets the host list's
    /// capacity, so that tests can drive many pairs through the host path and its regrowth.
    #[doc(hidden)]
    pub fn widen_ambiguity_for_tests(
        &mut self,
        factor: f64,
        capacity: usize,
    ) -> Result<(), TwoPointError> {
        let widened: Vec<f64> = self.tables.ambiguity.iter().map(|a| a * factor).collect();
        self.statics.ambiguity = self.stream.clone_htod(&widened)?;
        self.work.ambiguous = self.stream.alloc_zeros(4 * capacity.max(1))?;
        self.work.ambiguous_capacity = capacity.max(1);
        Ok(())
    }

    /// Counts `count` trials (≤ trials per launch) from `source`.
    fn launch(&mut self, source: RaSource, count: usize) -> Result<Vec<Counts>, TwoPointError> {
        loop {
            self.enqueue(source, count)?;
            let found = self.stream.clone_dtoh(&self.work.ambiguous_count)?[0] as usize;
            if found <= self.work.ambiguous_capacity {
                return self.finish(source, count, found);
            }
            // Too many pairs for the list: grow it and count again (never in practice).
            let capacity = found.next_power_of_two();
            self.work.ambiguous = self.stream.alloc_zeros(4 * capacity)?;
            self.work.ambiguous_capacity = capacity;
        }
    }

    /// Queues the four kernels of one launch.
    fn enqueue(&mut self, source: RaSource, count: usize) -> Result<(), TwoPointError> {
        let prepared = self.prepared;
        let n = prepared.len() as u32;
        let cells = self.tables.total_cells() as u32;
        let n_bins = prepared.bins.len() as u32;
        let n_levels = prepared.cuts.len() as u32 + 1;
        let n_hist = (n_bins * n_levels) as usize;
        let trials = count as u32;
        let (use_observed, seed, first) = match source {
            RaSource::Observed => (1u32, 0u64, 0u64),
            RaSource::Scrambled { seed, first } => (0u32, seed, first),
        };
        let (s, st, w) = (&self.stream, &self.statics, &mut self.work);
        s.memset_zeros(&mut w.cell_count.slice_mut(..count * cells as usize))?;
        s.memset_zeros(&mut w.histogram.slice_mut(..count * n_hist))?;
        s.memset_zeros(&mut w.ambiguous_count)?;
        let per_event = LaunchConfig {
            grid_dim: (n.div_ceil(EVENT_THREADS), trials, 1),
            block_dim: (EVENT_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let scramble = ScrambleArgs {
            n,
            seed,
            first_trial: first,
            use_observed,
            grid_per_degree: prepared.scramble.grid_per_degree(),
            ra_observed: &st.ra_observed,
            stripe_of_event: &st.stripe_of_event,
            stripe_cell_base: &st.stripe_cell_base,
            stripe_inv_cell_width: &st.stripe_inv_cell_width,
            total_cells: cells,
            ra_out: &mut w.ra,
            cell_out: &mut w.cell,
            rank_out: &mut w.rank,
            cell_count: &mut w.cell_count,
        };
        // SAFETY: ScrambleArgs follows tp_scramble's parameters; grid.y = count ≤ the work
        // space's trial capacity; every buffer holds capacity·n events or capacity·cells cells;
        // indices come from the static tables built for this `prepared` (stripes < stripe
        // count, cells < total cells).
        unsafe { gpu::launch(s, &self.kernels.scramble, per_event, scramble) }?;

        let scan = LaunchConfig {
            grid_dim: (1, trials, 1),
            block_dim: (SCAN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let scan_args = ScanArgs {
            total_cells: cells,
            cell_count: &w.cell_count,
            cell_start: &mut w.cell_start,
        };
        // SAFETY: ScanArgs follows tp_scan's parameters; one block per trial reads `cells`
        // counts and writes `cells + 1` starts of its own trial; the buffers hold capacity·cells
        // and capacity·(cells + 1).
        unsafe { gpu::launch(s, &self.kernels.scan, scan, scan_args) }?;

        let scatter = ScatterArgs {
            n,
            total_cells: cells,
            ra: &w.ra,
            cell: &w.cell,
            rank: &w.rank,
            cell_start: &w.cell_start,
            cos_dec: &st.cos_dec,
            sin_dec: &st.sin_dec,
            level: &st.level,
            pos32: &mut w.pos32,
            slot_event: &mut w.slot_event,
        };
        // SAFETY: ScatterArgs follows tp_scatter32's parameters; slot = cell start + rank < n
        // by construction of the counting sort; buffers hold capacity·n slots (pos32: 4 words
        // each).
        unsafe { gpu::launch(s, &self.kernels.scatter, per_event, scatter) }?;

        let count_config = LaunchConfig {
            grid_dim: (CountKernel::blocks_per_trial(n), trials, 1),
            block_dim: (COUNT_THREADS, 1, 1),
            shared_mem_bytes: CountKernel::shared_bytes(n_levels as usize, n_bins as usize),
        };
        let batched = CountArgs {
            n,
            total_cells: cells,
            n_bins,
            n_levels,
            pos32: &w.pos32,
            cos_dec: &st.cos_dec,
            sin_dec: &st.sin_dec,
            slot_event: &w.slot_event,
            ra: &w.ra,
            cell_start: &w.cell_start,
            stripe_of_event: &st.stripe_of_event,
            window_start: &st.window_start,
            window_half_width: &st.window_half_width,
            stripe_cell_base: &st.stripe_cell_base,
            stripe_inv_cell_width: &st.stripe_inv_cell_width,
            inside32: &st.inside32,
            outside32: &st.outside32,
            chord2_max: &st.chord2_max,
            ambiguity: &st.ambiguity,
            lut: &st.lut,
            lut_cells: (self.tables.lut.len() - 1) as u32,
            lut_scale: self.tables.lut_scale,
            histogram: &mut w.histogram,
            ambiguous_count: &mut w.ambiguous_count,
            ambiguous_capacity: w.ambiguous_capacity as u32,
            ambiguous: &mut w.ambiguous,
        };
        // SAFETY: CountArgs follows BATCHED_PARAMS and FlatCountArgs adds tp_count_flats2's cell
        // table (LUT_CELLS + 1 float4), passed only to that kernel, which runs only on one-step
        // tables (CountKernel::fitting); n_bins ≤ MAX_BINS and lut_cells ≤ MAX_LUT_CELLS
        // (checked by cuda_tables); dynamic shared memory is the per-warp histograms the kernels
        // index; one event per thread (blocks_per_trial) keeps the u32 counters from wrapping
        // (n ≤ 2^24, checked by cuda_tables); the kernel writes at most `ambiguous_capacity`
        // list entries and count·n_hist histogram words.
        unsafe {
            match self.kernel {
                CountKernel::Direct => gpu::launch(s, &self.kernels.count, count_config, batched),
                CountKernel::Flat => {
                    let flat = FlatCountArgs {
                        batched,
                        cell_table: &st.cell_table,
                    };
                    gpu::launch(s, &self.kernels.count, count_config, flat)
                }
            }
        }?;
        Ok(())
    }

    /// Downloads the histograms, decides the listed pairs on the host, returns cumulative counts.
    fn finish(
        &mut self,
        source: RaSource,
        count: usize,
        found: usize,
    ) -> Result<Vec<Counts>, TwoPointError> {
        let prepared = self.prepared;
        let n_bins = prepared.bins.len();
        let n_hist = (prepared.cuts.len() + 1) * n_bins;
        let mut histogram = self
            .stream
            .clone_dtoh(&self.work.histogram.slice(..count * n_hist))?;
        if found > 0 {
            let list = self
                .stream
                .clone_dtoh(&self.work.ambiguous.slice(..4 * found))?;
            for entry in list.chunks_exact(4) {
                let [b, p, q, level] = [entry[0], entry[1], entry[2], entry[3]];
                let ra_of = |e: u32| match source {
                    RaSource::Observed => prepared.ra[e as usize],
                    RaSource::Scrambled { seed, first } => {
                        prepared.scramble.ra_of(seed, first + u64::from(b), e)
                    }
                };
                let c2 = chord2(
                    &cpu_position(prepared, p, ra_of(p)),
                    &cpu_position(prepared, q, ra_of(q)),
                );
                if c2 <= prepared.bins.chord2_limit() {
                    let index =
                        b as usize * n_hist + level as usize * n_bins + prepared.bins.bin_of(c2);
                    histogram[index] += 1;
                }
            }
            self.pairs_left_to_host += found as u64;
        }
        Ok(histogram
            .chunks_exact(n_hist)
            .map(|h| cumulative_counts(prepared, h))
            .collect())
    }
}

/// The unit vector of prepared event `e` at RA `ra`, with cpu/count.rs's exact operations.
fn cpu_position(prepared: &Prepared, e: u32, ra: f64) -> [f64; 3] {
    let e = e as usize;
    let (sin_ra, cos_ra) = ra.sin_cos();
    let c = prepared.cos_dec[e];
    [c * cos_ra, c * sin_ra, prepared.sin_dec[e]]
}

/// Allocates work space for `trials` trials.
fn alloc_work(
    stream: &Arc<CudaStream>,
    n: usize,
    cells: usize,
    n_hist: usize,
    trials: usize,
) -> Result<Work, TwoPointError> {
    let slots = n * trials;
    let too_big = |bytes: usize| GpuError::OutOfMemory {
        requested_bytes: bytes,
    };
    let alloc_u32 = |len: usize| stream.alloc_zeros::<u32>(len).map_err(|_| too_big(len * 4));
    Ok(Work {
        ra: stream.alloc_zeros(slots).map_err(|_| too_big(slots * 8))?,
        cell: alloc_u32(slots)?,
        rank: alloc_u32(slots)?,
        pos32: stream
            .alloc_zeros(4 * slots)
            .map_err(|_| too_big(slots * 16))?,
        slot_event: alloc_u32(slots)?,
        cell_count: alloc_u32(cells * trials)?,
        cell_start: alloc_u32((cells + 1) * trials)?,
        histogram: stream
            .alloc_zeros(n_hist * trials)
            .map_err(|_| too_big(n_hist * trials * 8))?,
        ambiguous_count: alloc_u32(1)?,
        ambiguous: alloc_u32(4 * INITIAL_AMBIGUOUS)?,
        ambiguous_capacity: INITIAL_AMBIGUOUS,
    })
}

/// Compiles (or loads from the disk cache) the counting kernels on `device`, so that a caller
/// can do it while the events are still being read; later counters take the module from the
/// device's cache.
pub fn load_kernels(device: &GpuDevice) -> Result<(), TwoPointError> {
    device.module("twopoint.cu", SOURCE)?;
    Ok(())
}

/// Exact cumulative pair counts of the observed RAs on `device` (one-off; build a
/// [`CudaPairCounter`] to also run trials without re-uploading).
pub fn count_pairs_cuda(device: &GpuDevice, prepared: &Prepared) -> Result<Counts, TwoPointError> {
    CudaPairCounter::with_trials_per_launch(device, prepared, 1)?.observed()
}
