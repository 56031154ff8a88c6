//! Pair counts as both back-ends give them: per-level histograms turned into exact cumulative
//! counts per cut, and the counts of a run of trials.

use super::Prepared;
use std::ops::Range;

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

/// Turns a `[level][bin]` pair histogram (a pair's level is the smaller of its two events'
/// levels) into cumulative counts per cut, in the configuration's order.
pub fn cumulative_counts(prepared: &Prepared, histogram: &[u64]) -> Counts {
    let n_bins = prepared.bins.len();
    let n_cuts = prepared.cuts.len();
    let mut counts = Counts::zeros(n_cuts, n_bins);
    for cut in 0..n_cuts {
        let position = prepared.levels.position_of_cut[cut];
        let mut running = 0u64;
        for bin in 0..n_bins {
            // Pairs whose smaller level exceeds this cut's position pass it.
            running += (position + 1..=n_cuts)
                .map(|level| histogram[level * n_bins + bin])
                .sum::<u64>();
            counts.values[cut * n_bins + bin] = running;
        }
    }
    counts
}

/// The counts of a run of consecutive trials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialBatch {
    /// Index of the first trial in this batch.
    pub first_trial: u64,
    /// Counts of trials `first_trial`, `first_trial + 1`, … in order.
    pub counts: Vec<Counts>,
}

impl TrialBatch {
    /// The trial indices covered.
    pub fn trials(&self) -> Range<u64> {
        self.first_trial..self.first_trial + self.counts.len() as u64
    }
}
