//! Two-point autocorrelation of event lists: pair counts, scrambled trials, significance.
//!
//! Flow (DESIGN §6): [`prepare`] sorts the events by declination and precomputes everything that
//! trials do not change; [`count_pairs`] gives exact cumulative pair counts for every angle bin
//! and energy cut, for the observed RAs or for scrambled ones; [`run_trials`] streams scrambled
//! trials in batches (Philox keyed by (seed, trial, event)) into an [`Analysis`], which turns
//! observed and background counts into per-bin statistics.
//!
//! The CPU back-end lives in `count_cpu.rs`; the CUDA twin (`count_cuda.rs`, kernels in
//! kernels/twopoint.cu) takes the same [`Prepared`] and gives identical [`Counts`];
//! [`CountBackend`] picks one for observed counts and trials.

pub mod bins;
pub mod count_cpu;
pub mod count_cuda;
pub mod count_cuda_kernel;
pub mod cuda_tables;
pub mod cuts;
pub mod histogram;
pub mod philox;
mod prepared;
pub mod stats;
pub mod trials;
pub mod trials_cuda;

pub use bins::AngleBins;
pub use count_cpu::{count_pairs, count_pairs_brute_force, count_pairs_dec_sweep};
pub use cuts::{CutLevels, EnergyCut};
pub use histogram::CountHistogram;
pub use prepared::{Prepared, prepare};
pub use stats::{Analysis, BinStats, FitKind, Summary};
pub use trials::{TrialBatch, run_trials, scrambled_ra};
pub use trials_cuda::{CountBackend, count_observed, run_trials_cuda, run_trials_on};

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

/// Exact cumulative pair counts: `count(cut, bin)` = unordered pairs with Ψ ≤ θ_bin whose two
/// events both pass the cut. Cuts in the configuration's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Number of bins.
    pub n_bins: usize,
    /// Number of cuts.
    pub n_cuts: usize,
    /// Row-major `[cut][bin]`.
    pub values: Vec<u64>,
}

impl Counts {
    /// Zero counts.
    pub fn zeros(n_cuts: usize, n_bins: usize) -> Self {
        Self {
            n_bins,
            n_cuts,
            values: vec![0; n_cuts * n_bins],
        }
    }

    /// The count for one cut and bin.
    pub fn get(&self, cut: usize, bin: usize) -> u64 {
        self.values[cut * self.n_bins + bin]
    }

    /// The cumulative counts of one cut, one per bin.
    pub fn cut(&self, cut: usize) -> &[u64] {
        &self.values[cut * self.n_bins..(cut + 1) * self.n_bins]
    }
}
