//! CPU pair counter: declination stripes, RA windows, direct bin index, rayon.
//!
//! Each trial sorts the events of every declination stripe by RA (declinations never change, so
//! the stripes do not either). An event looks for partners in its own stripe (later positions
//! only, so each unordered pair is seen once) and in the stripes above it up to δ + θ_max (early
//! exit in declination), and inside each stripe only in its RA window |Δα| ≤ asin(sin θ_max /
//! cos δ) found by binary search (with wrap at 0/2π). The edge test is exact: see `twopoint/bins.rs`.

use crate::twopoint::bins::{chord2, unit_vector};
use crate::twopoint::counts::cumulative_counts;
use crate::twopoint::{Counts, Prepared, TwoPointError};
use rayon::prelude::*;
use std::f64::consts::{PI, TAU};
use std::ops::Range;

/// Events per unit of parallel work.
const CHUNK: usize = 1024;

/// Per-event data in stripe-then-RA order, rebuilt for each set of RAs.
struct Sorted {
    ra: Vec<f64>,
    pos: Vec<[f64; 3]>,
    level: Vec<u8>,
    window: Vec<Range<u32>>,
}

/// Exact cumulative pair counts for the observed RAs (`None`) or for `ra_override`, given in the
/// prepared (declination-sorted) order, in radians in [0, 2π).
pub fn count_pairs(
    prepared: &Prepared,
    ra_override: Option<&[f64]>,
) -> Result<Counts, TwoPointError> {
    let ra = checked_ra(prepared, ra_override)?;
    let sorted = sort_stripes(prepared, ra);
    let n_levels = prepared.cuts.len() + 1;
    let n_bins = prepared.bins.len();
    // Units of work: (stripe, positions) with at most CHUNK positions each.
    let work: Vec<(usize, Range<usize>)> = (0..prepared.stripe_count())
        .flat_map(|s| {
            let stripe = prepared.stripe_start[s]..prepared.stripe_start[s + 1];
            stripe
                .clone()
                .step_by(CHUNK)
                .map(move |start| (s, start..(start + CHUNK).min(stripe.end)))
        })
        .collect();
    let histogram = work
        .par_iter()
        .fold(
            || vec![0u64; n_levels * n_bins],
            |mut histogram, (stripe, chunk)| {
                count_chunk(prepared, &sorted, *stripe, chunk.clone(), &mut histogram);
                histogram
            },
        )
        .reduce(
            || vec![0u64; n_levels * n_bins],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        );
    Ok(cumulative_counts(prepared, &histogram))
}

/// The RAs to use, checked against the event count and range.
fn checked_ra<'a>(
    prepared: &'a Prepared,
    ra_override: Option<&'a [f64]>,
) -> Result<&'a [f64], TwoPointError> {
    let Some(ra) = ra_override else {
        return Ok(&prepared.ra);
    };
    if ra.len() != prepared.len() {
        return Err(TwoPointError::BadInput(format!(
            "{} RA values for {} events",
            ra.len(),
            prepared.len()
        )));
    }
    if let Some(bad) = ra.iter().find(|a| !(0.0..TAU).contains(*a)) {
        return Err(TwoPointError::BadInput(format!("RA {bad} outside [0, 2π)")));
    }
    Ok(ra)
}

/// Sorts each stripe by RA and gathers what the inner loop reads, in that order.
fn sort_stripes(prepared: &Prepared, ra: &[f64]) -> Sorted {
    let n = prepared.len();
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let mut slices: Vec<&mut [u32]> = Vec::with_capacity(prepared.stripe_count());
    let mut rest: &mut [u32] = &mut perm;
    for s in 0..prepared.stripe_count() {
        let len = prepared.stripe_start[s + 1] - prepared.stripe_start[s];
        let (head, tail) = rest.split_at_mut(len);
        slices.push(head);
        rest = tail;
    }
    slices.par_iter_mut().for_each(|stripe| {
        stripe.sort_unstable_by(|&a, &b| ra[a as usize].total_cmp(&ra[b as usize]).then(a.cmp(&b)))
    });
    let gathered: Vec<(f64, [f64; 3])> = perm
        .par_iter()
        .map(|&e| {
            let e = e as usize;
            let alpha = ra[e];
            let (sin_ra, cos_ra) = alpha.sin_cos();
            let c = prepared.cos_dec[e];
            (alpha, [c * cos_ra, c * sin_ra, prepared.sin_dec[e]])
        })
        .collect();
    let (ra_sorted, pos) = gathered.into_iter().unzip();
    Sorted {
        ra: ra_sorted,
        pos,
        level: perm.iter().map(|&e| prepared.level[e as usize]).collect(),
        window: perm
            .iter()
            .map(|&e| prepared.window_start[e as usize]..prepared.window_start[e as usize + 1])
            .collect(),
    }
}

/// Adds the pairs found from the events at `positions` (all in `stripe`) to `histogram`
/// (`[level][bin]`, level = the smaller cut level of the two events).
fn count_chunk(
    prepared: &Prepared,
    sorted: &Sorted,
    stripe: usize,
    positions: Range<usize>,
    histogram: &mut [u64],
) {
    let bins = &prepared.bins;
    let n_bins = bins.len();
    let limit = bins.chord2_limit();
    for p in positions {
        let level_p = sorted.level[p];
        if level_p == 0 {
            continue;
        }
        let pos_p = sorted.pos[p];
        let alpha = sorted.ra[p];
        let window = sorted.window[p].clone();
        let widths = &prepared.window_half_width[window.start as usize..window.end as usize];
        for (t, &half_width) in (stripe..).zip(widths) {
            let stripe_range = prepared.stripe_start[t]..prepared.stripe_start[t + 1];
            let first = if t == stripe {
                p + 1
            } else {
                stripe_range.start
            };
            let mut visit = |range: Range<usize>| {
                for q in range.start.max(first)..range.end {
                    let c2 = chord2(&pos_p, &sorted.pos[q]);
                    if c2 <= limit {
                        let level = level_p.min(sorted.level[q]) as usize;
                        histogram[level * n_bins + bins.bin_of(c2)] += 1;
                    }
                }
            };
            if half_width >= PI {
                visit(stripe_range);
                continue;
            }
            let ra_stripe = &sorted.ra[stripe_range.clone()];
            let offset = stripe_range.start;
            let index_range = |low: f64, high: f64| {
                let a = ra_stripe.partition_point(|&r| r < low);
                let b = ra_stripe.partition_point(|&r| r <= high);
                offset + a..offset + b.max(a)
            };
            let (low, high) = (alpha - half_width, alpha + half_width);
            if low < 0.0 {
                visit(index_range(0.0, high));
                visit(index_range(low + TAU, TAU));
            } else if high >= TAU {
                visit(index_range(low, TAU));
                visit(index_range(0.0, high - TAU));
            } else {
                visit(index_range(low, high));
            }
        }
    }
}

/// O(N²) reference: every unordered pair, bins by a plain scan. For tests and GPU checks.
pub fn count_pairs_brute_force(
    prepared: &Prepared,
    ra_override: Option<&[f64]>,
) -> Result<Counts, TwoPointError> {
    let ra = checked_ra(prepared, ra_override)?;
    let n_bins = prepared.bins.len();
    let mut histogram = vec![0u64; (prepared.cuts.len() + 1) * n_bins];
    let pos: Vec<[f64; 3]> = ra
        .iter()
        .zip(&prepared.dec)
        .map(|(&a, &d)| unit_vector(a, d))
        .collect();
    for i in 0..pos.len() {
        for j in i + 1..pos.len() {
            if let Some(bin) = prepared.bins.bin_of_by_scan(chord2(&pos[i], &pos[j])) {
                let level = prepared.level[i].min(prepared.level[j]) as usize;
                histogram[level * n_bins + bin] += 1;
            }
        }
    }
    Ok(cumulative_counts(prepared, &histogram))
}

/// Simple reference for large lists: every pair in declination order with the early exit
/// δ_j − δ_i > θ_max only (no stripes, no RA windows), bins by a plain scan, rayon over i.
pub fn count_pairs_dec_sweep(prepared: &Prepared) -> Counts {
    let n_bins = prepared.bins.len();
    let size = (prepared.cuts.len() + 1) * n_bins;
    let reach = prepared.bins.max_angle_rad() + 1e-9;
    let pos: Vec<[f64; 3]> = prepared
        .ra
        .iter()
        .zip(&prepared.dec)
        .map(|(&a, &d)| unit_vector(a, d))
        .collect();
    let histogram = (0..pos.len())
        .into_par_iter()
        .fold(
            || vec![0u64; size],
            |mut histogram, i| {
                for j in i + 1..pos.len() {
                    if prepared.dec[j] - prepared.dec[i] > reach {
                        break;
                    }
                    if let Some(bin) = prepared.bins.bin_of_by_scan(chord2(&pos[i], &pos[j])) {
                        let level = prepared.level[i].min(prepared.level[j]) as usize;
                        histogram[level * n_bins + bin] += 1;
                    }
                }
                histogram
            },
        )
        .reduce(
            || vec![0u64; size],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        );
    cumulative_counts(prepared, &histogram)
}
