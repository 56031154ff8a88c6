//! Two-point autocorrelation of event lists: pair counts, scrambled trials, significance.
//!
//! Flow (DESIGN §6): [`prepare`] sorts the events by declination and precomputes everything that
//! trials do not change; [`count_observed`] gives exact cumulative pair counts for every angle
//! bin and energy cut; [`run_trials_on`] streams scrambled trials in batches (Philox keyed by
//! (seed, trial, event)) into an [`Analysis`], which turns observed and background counts into
//! per-bin statistics. [`TwoPointRun`] is that loop as the CLI and the window run it.
//!
//! Two back-ends, picked by the crate's [`crate::backend::Backend`]: `cpu/` (stripes, RA
//! windows, rayon) and `cuda/` (kernels/twopoint*.cu), which takes the same [`Prepared`] and
//! gives identical [`Counts`]. The model both share (bins, cuts, Philox, preparation, counts,
//! statistics) sits at this level.

pub mod analysis;
pub mod bins;
pub mod counts;
pub mod cpu;
pub mod cuda;
pub mod cuts;
mod gamma_lanes;
pub mod grid;
pub mod histogram;
pub mod ks;
pub mod philox;
mod prepared;
pub mod ranks;
pub mod significance;
pub mod spread;
pub mod stats;

pub use analysis::{Batches, TwoPointRun, count_observed, default_batch, run_trials_on};
pub use bins::AngleBins;
pub use counts::{Counts, TrialBatch};
pub use cpu::{
    count_pairs, count_pairs_brute_force, count_pairs_dec_sweep, run_trials, scrambled_ra,
    scrambled_ra_on,
};
pub use cuda::{run_trials_cuda, run_trials_cuda_devices};
pub use cuts::{CutLevels, EnergyCut};
pub use grid::{
    CoordinateGrid, Scramble, ScrambleChoice, bin_edges_on_grid, detect_grid, edges_on_grid_note,
    scramble_note,
};
pub use histogram::CountHistogram;
pub use prepared::{Prepared, prepare};
pub use significance::{BinSignificance, FittedExtrapolation, PostTrialSignificance};
pub use stats::{Analysis, BinStats, FitKind, Summary};

/// What to count: angle bins and energy-cut fractions.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoPointConfig {
    /// Bin step in degrees (θ_k = step·k).
    pub bin_step_deg: f64,
    /// Number of bins.
    pub bin_count: usize,
    /// Energy-cut fractions in (0, 1]; 1 is "all events".
    pub cut_fractions: Vec<f64>,
}

impl Default for TwoPointConfig {
    /// DESIGN §6: 20 bins of 0.25°, cuts all / top 10 % / top 1 % / top 0.1 %.
    fn default() -> Self {
        Self {
            bin_step_deg: 0.25,
            bin_count: 20,
            cut_fractions: vec![1.0, 0.1, 0.01, 0.001],
        }
    }
}

/// Why a two-point computation could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TwoPointError {
    /// The event list is empty.
    #[error("no events")]
    NoEvents,
    /// A configuration value is out of range.
    #[error("{0}")]
    Config(String),
    /// An RA override has the wrong length or values.
    #[error("{0}")]
    BadInput(String),
    /// The user cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The CUDA back-end failed (driver, compile or memory).
    #[error("CUDA: {0}")]
    Gpu(String),
    /// Another rank of an MPI job failed (it reports its own error).
    #[error("another MPI rank failed (its error is on that rank's output)")]
    OtherRank,
}

impl From<crate::gpu::GpuError> for TwoPointError {
    fn from(err: crate::gpu::GpuError) -> Self {
        Self::Gpu(err.to_string())
    }
}

impl From<cudarc::driver::DriverError> for TwoPointError {
    fn from(err: cudarc::driver::DriverError) -> Self {
        crate::gpu::GpuError::Driver(err).into()
    }
}

impl From<crate::jobs::Cancelled> for TwoPointError {
    fn from(_: crate::jobs::Cancelled) -> Self {
        Self::Cancelled
    }
}
