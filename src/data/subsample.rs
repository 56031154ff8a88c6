//! Deterministic uniform subsampling shared by the snapshot readers (`LoadOptions::max_particles`).
//!
//! Particles are numbered globally across all species in file order (gas, dark, star, other; for
//! multi-file Gadget snapshots file by file within a species). Keeping `keep` of `total`
//! particles, global index `i` is kept when ⌊(i+1)·keep/total⌋ > ⌊i·keep/total⌋. This is a
//! Bresenham-style stride of total/keep: exactly `keep` particles are kept, evenly spread over
//! every species in proportion to its size, and the number kept before index `i` is simply
//! ⌊i·keep/total⌋, so any block of particles can be decoded into its place independently (in
//! parallel, chunk by chunk) without a prefix sum.

use std::ops::Range;

/// Which of `total` globally numbered particles a reader keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subsample {
    total: u64,
    keep: u64,
}

impl Subsample {
    /// Keeps `min(max, total)` of `total` particles (all of them when `max` is `None`).
    pub fn new(total: u64, max: Option<u64>) -> Self {
        let keep = max.map_or(total, |m| m.min(total));
        Self { total, keep }
    }

    /// Number of particles kept in total.
    pub fn kept_total(&self) -> u64 {
        self.keep
    }

    /// Whether every particle is kept.
    pub fn keeps_all(&self) -> bool {
        self.keep == self.total
    }

    /// Number of kept particles among global indices `0..i` (`i ≤ total`).
    pub fn kept_before(&self, i: u64) -> u64 {
        if self.total == 0 || self.keep == self.total {
            return i.min(self.total);
        }
        // u128: i·keep can exceed u64 for 10¹⁰-particle files.
        (u128::from(i.min(self.total)) * u128::from(self.keep) / u128::from(self.total)) as u64
    }

    /// Whether global index `i` is kept.
    pub fn is_kept(&self, i: u64) -> bool {
        i < self.total && self.kept_before(i + 1) > self.kept_before(i)
    }

    /// Number of kept particles among the global indices in `range`.
    pub fn kept_in(&self, range: Range<u64>) -> u64 {
        self.kept_before(range.end) - self.kept_before(range.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_exactly_the_budget_and_counts_agree_with_membership() {
        for (total, keep) in [(10u64, 3u64), (100, 60), (7, 7), (1000, 1), (5, 0), (0, 0)] {
            let sub = Subsample::new(total, Some(keep));
            let kept: Vec<u64> = (0..total).filter(|&i| sub.is_kept(i)).collect();
            assert_eq!(kept.len() as u64, keep.min(total));
            assert_eq!(sub.kept_total(), keep.min(total));
            for i in 0..=total {
                let by_scan = kept.iter().filter(|&&k| k < i).count() as u64;
                assert_eq!(
                    sub.kept_before(i),
                    by_scan,
                    "total {total} keep {keep} i {i}"
                );
            }
        }
    }

    #[test]
    fn a_third_is_every_third_particle() {
        let sub = Subsample::new(9, Some(3));
        let kept: Vec<u64> = (0..9).filter(|&i| sub.is_kept(i)).collect();
        assert_eq!(kept, vec![2, 5, 8]);
        assert_eq!(sub.kept_in(3..9), 2);
    }

    #[test]
    fn no_budget_keeps_all() {
        let sub = Subsample::new(42, None);
        assert!(sub.keeps_all());
        assert!((0..42).all(|i| sub.is_kept(i)));
        assert!(!sub.is_kept(42));
    }
}
