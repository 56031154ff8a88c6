//! Exact histograms of integer pair counts, and compact storage of trial counts.
//!
//! 10⁷ scrambled trials (the no-fit 5σ regime) × 80 bins must fit in memory: counts are kept as
//! `u32` (320 bytes per trial for 80 bins) unless one exceeds it, and each bin's background is an
//! exact histogram, so p-values, fits and plots never sort or copy all trials.

use std::ops::RangeInclusive;

/// Exact multiplicities of integer values, dense over the range seen so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountHistogram {
    /// Value of `multiplicity[0]`.
    lo: u64,
    multiplicity: Vec<u64>,
    total: u64,
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
        if self.multiplicity.is_empty() {
            self.lo = value;
            self.multiplicity.push(0);
        } else if value < self.lo {
            // Grow downwards by at least the current length, so repeated growth stays O(n).
            let need = (self.lo - value) as usize;
            let grow = need.max(self.multiplicity.len()).min(self.lo as usize);
            self.multiplicity.splice(0..0, std::iter::repeat_n(0, grow));
            self.lo -= grow as u64;
        }
        let index = (value - self.lo) as usize;
        if index >= self.multiplicity.len() {
            self.multiplicity.resize(index + 1, 0);
        }
        self.multiplicity[index] += times;
        self.total += times;
    }

    /// Number of samples.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Smallest and largest sample, `None` when empty.
    pub fn range(&self) -> Option<RangeInclusive<u64>> {
        let first = self.multiplicity.iter().position(|&m| m > 0)?;
        let last = self.multiplicity.iter().rposition(|&m| m > 0)?;
        Some(self.lo + first as u64..=self.lo + last as u64)
    }

    /// The distinct values in ascending order with their multiplicities.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.multiplicity
            .iter()
            .enumerate()
            .filter(|(_, m)| **m > 0)
            .map(|(i, &m)| (self.lo + i as u64, m))
    }

    /// Number of samples ≥ `value`, for repeated queries (O(1) each after an O(range) pass).
    pub fn at_least_table(&self) -> AtLeast {
        let mut suffix = vec![0; self.multiplicity.len() + 1];
        for i in (0..self.multiplicity.len()).rev() {
            suffix[i] = suffix[i + 1] + self.multiplicity[i];
        }
        AtLeast {
            lo: self.lo,
            suffix,
        }
    }
}

/// Suffix sums of a [`CountHistogram`]: how many samples are ≥ a value.
#[derive(Debug, Clone)]
pub struct AtLeast {
    lo: u64,
    /// `suffix[i]` = samples ≥ lo + i; the last entry is 0.
    suffix: Vec<u64>,
}

impl AtLeast {
    /// Samples ≥ `value`.
    pub fn count(&self, value: u64) -> u64 {
        if value <= self.lo {
            return self.suffix[0];
        }
        let index = ((value - self.lo) as usize).min(self.suffix.len() - 1);
        self.suffix[index]
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
