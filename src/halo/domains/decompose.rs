//! The spatial decomposition: slabs along one axis balanced by particle count, and which
//! particles each slab owns and sees as ghosts (those within one linking length of it, by
//! minimum image in a periodic box).

use crate::halo::cuda::point_bounds;
use crate::halo::periodic::BoxFrame;
use rayon::prelude::*;

/// Histogram bins per domain used to place the balanced cuts.
const BINS_PER_DOMAIN: usize = 4096;

/// Particles per task of the parallel passes.
const CHUNK: usize = 1 << 16;

/// The most particles the histogram that places the cuts reads: beyond, an even sample of
/// about this many (one in `stride`), whose cuts balance the slabs to a small fraction of a
/// percent at a fraction of a full pass's cost.
const HISTOGRAM_SAMPLES: usize = 1 << 20;

/// A box's lower and upper corners.
pub type BoxCorners = ([f32; 3], [f32; 3]);

/// Slabs along `axis`: domain `d` owns the particles whose coordinate (wrapped into the frame
/// when periodic) lies in `[lower(d), upper(d))`, and sees as ghosts the others within `ghost`
/// of that interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Decomposition {
    /// The axis cut (0, 1 or 2).
    pub axis: usize,
    /// The `D − 1` inner cuts, ascending.
    pub cuts: Vec<f64>,
    /// The periodic frame, `None` for open boundaries.
    pub frame: Option<BoxFrame>,
    /// Width of the ghost layer: the linking length and a relative margin for rounding (more
    /// ghosts only add true links, fewer would lose some).
    pub ghost: f64,
}

/// One domain's particles: owned and ghosts, in increasing index order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DomainMembers {
    /// Indices into the decomposed particle array, increasing.
    pub indices: Vec<u32>,
    /// Per entry of `indices`: whether this domain owns it (else it is a ghost).
    pub owned: Vec<bool>,
}

impl Decomposition {
    /// `n_domains` slabs along the longest axis of the data (x in a periodic box) holding about
    /// equal numbers of `positions`, with a ghost layer for `linking_length`.
    pub fn balanced(
        positions: &[[f32; 3]],
        n_domains: usize,
        linking_length: f64,
        frame: Option<BoxFrame>,
    ) -> Self {
        Self::balanced_with_bounds(positions, n_domains, linking_length, frame).0
    }

    /// [`Self::balanced`], and the bounding box of `positions` it measured for open boundaries
    /// (`None` in a periodic box, which cuts x over the frame and needs none).
    pub fn balanced_with_bounds(
        positions: &[[f32; 3]],
        n_domains: usize,
        linking_length: f64,
        frame: Option<BoxFrame>,
    ) -> (Self, Option<BoxCorners>) {
        let measured = frame.is_none().then(|| point_bounds(positions));
        let (lo, hi) = measured.map_or(([0.0; 3], [0.0; 3]), |(lo, hi)| {
            (lo.map(f64::from), hi.map(f64::from))
        });
        let (axis, lo, hi) = axis_range(lo, hi, frame);
        let bins = histogram_bins(n_domains);
        let stride = positions.len().div_ceil(HISTOGRAM_SAMPLES).max(1);
        let histogram = histogram_every(positions, stride, axis, frame, lo, hi, bins);
        let decomposition =
            Self::from_histogram(axis, lo, hi, &histogram, n_domains, linking_length, frame);
        (decomposition, measured)
    }

    /// The slabs whose cuts split `histogram` (counts of `bins` equal bins over `[lo, hi]` along
    /// `axis`, from [`histogram`], summed over every process) into `n_domains` about equal parts.
    pub fn from_histogram(
        axis: usize,
        lo: f64,
        hi: f64,
        histogram: &[u64],
        n_domains: usize,
        linking_length: f64,
        frame: Option<BoxFrame>,
    ) -> Self {
        let n_domains = n_domains.max(1);
        let ghost = linking_length * (1.0 + 1e-9) + f64::EPSILON * linking_length;
        let bins = histogram.len();
        if n_domains == 1 || bins == 0 || hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
            return Self {
                axis,
                cuts: vec![hi; n_domains - 1],
                frame,
                ghost,
            };
        }
        let width = (hi - lo) / bins as f64;
        let n: u64 = histogram.iter().sum();
        let mut cuts = Vec::with_capacity(n_domains - 1);
        let mut below = 0u64;
        let mut bin = 0usize;
        for k in 1..n_domains as u64 {
            let target = (n * k).div_ceil(n_domains as u64);
            while bin < bins && below + histogram[bin] <= target {
                below += histogram[bin];
                bin += 1;
            }
            // The cut at the nearer edge of the bin that crosses the target.
            if bin < bins && target - below > histogram[bin] / 2 {
                below += histogram[bin];
                bin += 1;
            }
            cuts.push(if bin >= bins {
                hi
            } else {
                lo + width * bin as f64
            });
        }
        Self {
            axis,
            cuts,
            frame,
            ghost,
        }
    }

    /// Number of domains.
    pub fn n_domains(&self) -> usize {
        self.cuts.len() + 1
    }

    /// The coordinate that decides ownership: along `axis`, wrapped into the frame.
    pub fn coordinate(&self, p: &[f32; 3]) -> f64 {
        let x = f64::from(p[self.axis]);
        self.frame.map_or(x, |frame| frame.wrap(x))
    }

    /// The domain that owns coordinate `x`.
    pub fn owner_of(&self, x: f64) -> usize {
        self.cuts.partition_point(|&cut| cut <= x)
    }

    /// The domain that owns particle `p`.
    pub fn owner(&self, p: &[f32; 3]) -> usize {
        self.owner_of(self.coordinate(p))
    }

    /// Lower and upper edge of domain `d` (infinite at the open ends).
    fn interval(&self, d: usize) -> (f64, f64) {
        let (first, last) = match self.frame {
            Some(frame) => (frame.lower, frame.upper()),
            None => (f64::NEG_INFINITY, f64::INFINITY),
        };
        let lower = if d == 0 { first } else { self.cuts[d - 1] };
        let upper = self.cuts.get(d).copied().unwrap_or(last);
        (lower, upper)
    }

    /// Whether `x` (owned elsewhere) is within the ghost layer of domain `d`.
    fn is_ghost_of(&self, x: f64, d: usize) -> bool {
        let (lower, upper) = self.interval(d);
        let gap = match self.frame {
            Some(frame) => {
                if upper - lower + 2.0 * self.ghost >= frame.size {
                    return true;
                }
                (lower - x)
                    .rem_euclid(frame.size)
                    .min((x - upper).rem_euclid(frame.size))
            }
            None if x < lower => lower - x,
            None => x - upper,
        };
        gap <= self.ghost
    }

    /// Whether `x`, owned by `owner`, is a ghost of no domain, decided without the periodic
    /// remainders: more than 1.5 ghost widths (a margin over their rounding) from both edges
    /// of its own slab, every other slab lying beyond those edges, and no slab so wide that it
    /// sees the whole box.
    fn deep_inside(&self, x: f64, owner: usize) -> bool {
        let (lower, upper) = self.interval(owner);
        let margin = 1.5 * self.ghost;
        if !(x - lower > margin && upper - x > margin) {
            return false;
        }
        match self.frame {
            None => true,
            Some(frame) => (0..self.n_domains()).all(|d| {
                let (lower, upper) = self.interval(d);
                upper - lower + 2.0 * self.ghost < frame.size
            }),
        }
    }

    /// The domains other than `owner` for which coordinate `x` is a ghost, walking outwards
    /// from the owner in both directions until a domain is out of reach.
    pub fn ghost_domains(&self, x: f64, owner: usize, out: &mut Vec<usize>) {
        out.clear();
        if self.deep_inside(x, owner) {
            return;
        }
        let n = self.n_domains();
        let periodic = self.frame.is_some();
        for step in [1isize, -1] {
            for k in 1..n as isize {
                let d = owner as isize + step * k;
                let d = if periodic {
                    d.rem_euclid(n as isize) as usize
                } else if d < 0 || d >= n as isize {
                    break;
                } else {
                    d as usize
                };
                if d == owner || !self.is_ghost_of(x, d) {
                    break;
                }
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
    }

    /// Every domain's owned and ghost particles of `positions`, in increasing index order.
    pub fn members(&self, positions: &[[f32; 3]]) -> Vec<DomainMembers> {
        let n_domains = self.n_domains();
        let parts: Vec<Vec<DomainMembers>> = positions
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(chunk, points)| {
                let mut domains = vec![DomainMembers::default(); n_domains];
                let mut ghosts = Vec::new();
                for (offset, p) in points.iter().enumerate() {
                    let index = (chunk * CHUNK + offset) as u32;
                    let x = self.coordinate(p);
                    let owner = self.owner_of(x);
                    self.ghost_domains(x, owner, &mut ghosts);
                    ghosts.push(owner);
                    ghosts.sort_unstable();
                    for &d in &ghosts {
                        domains[d].indices.push(index);
                        domains[d].owned.push(d == owner);
                    }
                }
                domains
            })
            .collect();
        (0..n_domains)
            .into_par_iter()
            .map(|d| {
                let total = parts.iter().map(|p| p[d].indices.len()).sum();
                let mut members = DomainMembers {
                    indices: Vec::with_capacity(total),
                    owned: Vec::with_capacity(total),
                };
                for part in &parts {
                    members.indices.extend_from_slice(&part[d].indices);
                    members.owned.extend_from_slice(&part[d].owned);
                }
                members
            })
            .collect()
    }
}

/// Histogram bins for `n_domains` slabs.
pub fn histogram_bins(n_domains: usize) -> usize {
    BINS_PER_DOMAIN * n_domains.max(1)
}

/// Per-axis minimum and maximum of `positions` (infinite when there are none).
pub fn bounds(positions: &[[f32; 3]]) -> ([f64; 3], [f64; 3]) {
    let (lo, hi) = point_bounds(positions);
    (lo.map(f64::from), hi.map(f64::from))
}

/// The axis cut and its range: x over the frame in a periodic box, else the axis of the
/// largest extent of the bounds `lo`..`hi` (the first on ties).
pub fn axis_range(lo: [f64; 3], hi: [f64; 3], frame: Option<BoxFrame>) -> (usize, f64, f64) {
    match frame {
        Some(frame) => (0, frame.lower, frame.upper()),
        None => {
            let extent = |axis: usize| hi[axis] - lo[axis];
            let axis = (0..3)
                .max_by(|&a, &b| extent(a).total_cmp(&extent(b)).then(b.cmp(&a)))
                .unwrap_or(0);
            (axis, lo[axis], hi[axis])
        }
    }
}

/// Counts of `positions` in `bins` equal bins over `[lo, hi]` along `axis` (coordinates wrapped
/// into `frame` when periodic; the ends clamp into the first and last bin).
pub fn histogram(
    positions: &[[f32; 3]],
    axis: usize,
    frame: Option<BoxFrame>,
    lo: f64,
    hi: f64,
    bins: usize,
) -> Vec<u64> {
    histogram_every(positions, 1, axis, frame, lo, hi, bins)
}

/// [`histogram`] of every `stride`-th position (from the first).
fn histogram_every(
    positions: &[[f32; 3]],
    stride: usize,
    axis: usize,
    frame: Option<BoxFrame>,
    lo: f64,
    hi: f64,
    bins: usize,
) -> Vec<u64> {
    let width = (hi - lo) / bins as f64;
    let stride = stride.max(1);
    positions
        .par_chunks(CHUNK * stride)
        .map(|chunk| {
            let mut counts = vec![0u64; bins];
            for p in chunk.iter().step_by(stride) {
                let x = f64::from(p[axis]);
                let x = frame.map_or(x, |frame| frame.wrap(x));
                let bin = ((x - lo) / width).max(0.0) as usize;
                counts[bin.min(bins - 1)] += 1;
            }
            counts
        })
        .reduce(
            || vec![0u64; bins],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                a
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_hold_equal_counts_and_ghosts_wrap_around_the_box() {
        let positions: Vec<[f32; 3]> = (0..1000).map(|i| [i as f32 / 1000.0, 0.5, 0.5]).collect();
        let frame = BoxFrame {
            lower: 0.0,
            size: 1.0,
        };
        let dec = Decomposition::balanced(&positions, 4, 0.01, Some(frame));
        let members = dec.members(&positions);
        let owned: Vec<usize> = members
            .iter()
            .map(|m| m.owned.iter().filter(|&&o| o).count())
            .collect();
        assert_eq!(owned.iter().sum::<usize>(), 1000);
        assert!(owned.iter().all(|&c| (240..=260).contains(&c)), "{owned:?}");
        // x = 0.995 is owned by the last slab and a ghost of the first (0.005 across the edge).
        let first = &members[0];
        let at = first.indices.iter().position(|&i| i == 995);
        assert_eq!(at.map(|k| first.owned[k]), Some(false));
        assert!(!members[1].indices.contains(&995));
    }

    #[test]
    fn open_boundaries_have_no_wrap() {
        let positions: Vec<[f32; 3]> = (0..100).map(|i| [0.5, i as f32, 0.0]).collect();
        let dec = Decomposition::balanced(&positions, 2, 1.5, None);
        assert_eq!(dec.axis, 1);
        let members = dec.members(&positions);
        assert!(!members[0].indices.contains(&99));
        assert!(!members[1].indices.contains(&0));
        // Each side sees one or two of the other's nearest particles.
        assert!(members[0].owned.iter().filter(|&&o| !o).count() <= 2);
    }
}
