//! Exact histograms of integer pair counts, and compact storage of trial counts.
//!
//! 10⁷ scrambled trials (the no-fit 5σ regime) × 80 bins must fit in memory: counts are kept as
//! `u32` (320 bytes per trial for 80 bins) unless one exceeds it, and each bin's background is an
//! exact histogram, so p-values, fits and plots never sort or copy all trials.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// Widest value range kept dense (512 KiB of multiplicities per bin); a histogram whose samples
/// spread wider switches to a sparse map, so memory follows the distinct values, never the
/// distance between the smallest and the largest.
const DENSE_MAX_RANGE: u64 = 1 << 16;

/// Exact multiplicities of integer values: dense over the range seen so far while that range is
/// at most [`DENSE_MAX_RANGE`] wide, sparse beyond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountHistogram {
    /// `multiplicity[i]` samples of value `lo + i`.
    Dense {
        /// Value of `multiplicity[0]`.
        lo: u64,
        /// Samples per value.
        multiplicity: Vec<u64>,
        /// Samples in all.
        total: u64,
    },
    /// Samples per distinct value.
    Sparse {
        /// Value → samples.
        multiplicity: BTreeMap<u64, u64>,
        /// Samples in all.
        total: u64,
    },
}

impl Default for CountHistogram {
    fn default() -> Self {
        Self::Dense {
            lo: 0,
            multiplicity: Vec::new(),
            total: 0,
        }
    }
}

impl CountHistogram {
    /// Adds one sample.
    pub fn add(&mut self, value: u64) {
        self.add_many(value, 1);
    }

    /// Adds `times` samples of `value`.
    pub fn add_many(&mut self, value: u64, times: u64) {
        if times == 0 {
            return;
        }
        if let Self::Dense {
            lo, multiplicity, ..
        } = self
            && !multiplicity.is_empty()
        {
            let hi = *lo + multiplicity.len() as u64 - 1;
            if value.max(hi) - value.min(*lo) >= DENSE_MAX_RANGE {
                self.make_sparse();
            }
        }
        match self {
            Self::Dense {
                lo,
                multiplicity,
                total,
            } => {
                if multiplicity.is_empty() {
                    *lo = value;
                    multiplicity.push(0);
                } else if value < *lo {
                    // Grow downwards by at least the current length, so repeated growth stays
                    // O(n).
                    let need = (*lo - value) as usize;
                    let grow = need.max(multiplicity.len()).min(*lo as usize);
                    multiplicity.splice(0..0, std::iter::repeat_n(0, grow));
                    *lo -= grow as u64;
                }
                let index = (value - *lo) as usize;
                if index >= multiplicity.len() {
                    multiplicity.resize(index + 1, 0);
                }
                multiplicity[index] += times;
                *total += times;
            }
            Self::Sparse {
                multiplicity,
                total,
            } => {
                *multiplicity.entry(value).or_insert(0) += times;
                *total += times;
            }
        }
    }

    /// Turns a dense histogram into the same samples held sparsely.
    fn make_sparse(&mut self) {
        let multiplicity: BTreeMap<u64, u64> = self.iter().collect();
        let total = self.total();
        *self = Self::Sparse {
            multiplicity,
            total,
        };
    }

    /// Number of samples.
    pub fn total(&self) -> u64 {
        match self {
            Self::Dense { total, .. } | Self::Sparse { total, .. } => *total,
        }
    }

    /// Smallest and largest sample, `None` when empty.
    pub fn range(&self) -> Option<RangeInclusive<u64>> {
        let mut values = self.iter().map(|(v, _)| v);
        let first = values.next()?;
        let last = match self {
            Self::Dense { .. } => values.last().unwrap_or(first),
            Self::Sparse { multiplicity, .. } => {
                multiplicity.keys().next_back().copied().unwrap_or(first)
            }
        };
        Some(first..=last)
    }

    /// The distinct values in ascending order with their multiplicities.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        match self {
            Self::Dense {
                lo, multiplicity, ..
            } => Box::new(
                multiplicity
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| **m > 0)
                    .map(move |(i, &m)| (*lo + i as u64, m)),
            ),
            Self::Sparse { multiplicity, .. } => {
                Box::new(multiplicity.iter().map(|(&v, &m)| (v, m)))
            }
        }
    }

    /// Number of samples ≥ `value`, for repeated queries (O(1) each on a dense histogram,
    /// O(log distinct values) on a sparse one, after one pass).
    pub fn at_least_table(&self) -> AtLeast {
        match self {
            Self::Dense {
                lo, multiplicity, ..
            } => {
                let mut suffix = vec![0; multiplicity.len() + 1];
                for i in (0..multiplicity.len()).rev() {
                    suffix[i] = suffix[i + 1] + multiplicity[i];
                }
                AtLeast::Dense { lo: *lo, suffix }
            }
            Self::Sparse { multiplicity, .. } => {
                let mut values: Vec<(u64, u64)> =
                    multiplicity.iter().map(|(&v, &m)| (v, m)).collect();
                let mut above = 0;
                for entry in values.iter_mut().rev() {
                    above += entry.1;
                    entry.1 = above;
                }
                AtLeast::Sparse(values)
            }
        }
    }
}

/// Suffix sums of a [`CountHistogram`]: how many samples are ≥ a value.
#[derive(Debug, Clone)]
pub enum AtLeast {
    /// Over a dense range.
    Dense {
        /// Value of `suffix[0]`.
        lo: u64,
        /// `suffix[i]` = samples ≥ lo + i; the last entry is 0.
        suffix: Vec<u64>,
    },
    /// (value, samples ≥ value) for each distinct value, ascending.
    Sparse(Vec<(u64, u64)>),
}

impl AtLeast {
    /// Samples ≥ `value`.
    pub fn count(&self, value: u64) -> u64 {
        match self {
            Self::Dense { lo, suffix } => {
                if value <= *lo {
                    return suffix[0];
                }
                let index = ((value - lo) as usize).min(suffix.len() - 1);
                suffix[index]
            }
            Self::Sparse(values) => {
                let first = values.partition_point(|&(v, _)| v < value);
                values.get(first).map_or(0, |&(_, n)| n)
            }
        }
    }
}

/// The counts of a run of consecutive trials, row-major `[trial][cut·bins + bin]`, as `u32`
/// when every count fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialRows {
    /// Every count fits in 32 bits (the usual case: 320 bytes per trial for 80 bins).
    Narrow(Vec<u32>),
    /// Some count does not.
    Wide(Vec<u64>),
}

impl TrialRows {
    /// Packs rows (all of the same length) one after another.
    pub fn pack<'a>(rows: impl Iterator<Item = &'a [u64]> + Clone) -> Self {
        let values = rows.flatten().copied();
        if values.clone().all(|c| u32::try_from(c).is_ok()) {
            Self::Narrow(values.map(|c| c as u32).collect())
        } else {
            Self::Wide(values.collect())
        }
    }

    /// Value `index` of every row, in order.
    pub fn column(&self, width: usize, index: usize) -> Box<dyn Iterator<Item = u64> + '_> {
        match self {
            Self::Narrow(v) => Box::new(v.chunks_exact(width).map(move |r| r[index] as u64)),
            Self::Wide(v) => Box::new(v.chunks_exact(width).map(move |r| r[index])),
        }
    }

    /// Calls `f` with each row, widened to `u64`.
    pub fn for_each_row(&self, width: usize, mut f: impl FnMut(&[u64])) {
        match self {
            Self::Narrow(v) => {
                let mut row = vec![0; width];
                for r in v.chunks_exact(width) {
                    row.iter_mut().zip(r).for_each(|(o, &c)| *o = c as u64);
                    f(&row);
                }
            }
            Self::Wide(v) => v.chunks_exact(width).for_each(f),
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        match self {
            Self::Narrow(v) => v.len() * 4,
            Self::Wide(v) => v.len() * 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_grows_both_ways_and_counts_exactly() {
        let mut h = CountHistogram::default();
        let samples = [50, 52, 49, 10, 52, 70, 0, 52];
        samples.iter().for_each(|&v| h.add(v));
        assert_eq!(h.total(), samples.len() as u64);
        assert_eq!(h.range(), Some(0..=70));
        let mut expected: Vec<u64> = samples.to_vec();
        expected.sort_unstable();
        let expanded: Vec<u64> = h
            .iter()
            .flat_map(|(v, m)| std::iter::repeat_n(v, m as usize))
            .collect();
        assert_eq!(expanded, expected);
        let at_least = h.at_least_table();
        for probe in 0..80 {
            let want = samples.iter().filter(|&&v| v >= probe).count() as u64;
            assert_eq!(at_least.count(probe), want, "probe {probe}");
        }
    }

    #[test]
    fn a_wide_spread_goes_sparse_and_counts_the_same() {
        let samples = [7u64, 5_000_000_000, 7, 12, 3, 5_000_000_000, 1 << 17];
        let mut h = CountHistogram::default();
        samples.iter().for_each(|&v| h.add(v));
        assert!(matches!(h, CountHistogram::Sparse { .. }));
        assert_eq!(h.total(), 7);
        assert_eq!(h.range(), Some(3..=5_000_000_000));
        let expected = vec![(3, 1), (7, 2), (12, 1), (1 << 17, 1), (5_000_000_000, 2)];
        assert_eq!(h.iter().collect::<Vec<_>>(), expected);
        let at_least = h.at_least_table();
        for probe in [0, 3, 4, 7, 8, 12, 13, 1 << 17, 5_000_000_000, 5_000_000_001] {
            let want = samples.iter().filter(|&&v| v >= probe).count() as u64;
            assert_eq!(at_least.count(probe), want, "probe {probe}");
        }
    }

    #[test]
    fn empty_histogram_has_no_range() {
        let h = CountHistogram::default();
        assert_eq!(h.range(), None);
        assert_eq!(h.at_least_table().count(3), 0);
    }

    #[test]
    fn rows_stay_narrow_unless_a_count_needs_64_bits() {
        let rows = [vec![1u64, 2, 3], vec![4, 5, 6]];
        let packed = TrialRows::pack(rows.iter().map(Vec::as_slice));
        assert!(matches!(packed, TrialRows::Narrow(_)));
        assert_eq!(packed.bytes(), 24);
        assert_eq!(packed.column(3, 1).collect::<Vec<_>>(), vec![2, 5]);
        let big = [vec![1u64, u64::from(u32::MAX) + 1, 3]];
        let packed = TrialRows::pack(big.iter().map(Vec::as_slice));
        assert!(matches!(packed, TrialRows::Wide(_)));
        let mut seen = Vec::new();
        packed.for_each_row(3, |r| seen.push(r.to_vec()));
        assert_eq!(seen, vec![big[0].clone()]);
    }
}
