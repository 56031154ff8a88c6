//! From friends-of-friends sets to the halo catalogue: order, labels, masses, centres, radii.
//!
//! Two steps, both parallel (rayon) and deterministic for any thread count:
//! 1. [`partition`]: set sizes and smallest members (one packed atomic word per set), the kept
//!    sets ordered by size descending then smallest member, and per-particle labels. The CUDA
//!    back-end does this step on the device (`cuda/partition.rs`) and hands over the same
//!    [`Partition`].
//! 2. [`build_from_partition`]: a counting sort of the labelled particles by halo (members in
//!    index order), then each halo's sums in member-index order, halos in parallel. Every float
//!    sum is taken in the same order as a sequential pass over the particles, so the results are
//!    bit-identical to the single-threaded catalogue and independent of the thread count.

use super::periodic::BoxFrame;
use crate::data::Masses;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// One halo of the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct Halo {
    /// Number of member particles.
    pub size: usize,
    /// Smallest member index (position within the selected particles).
    pub min_index: usize,
    /// Sum of the member masses (float64).
    pub mass: f64,
    /// Mass-weighted centre; periodic: members unwrapped around the smallest-index member, the
    /// centre wrapped back into the box frame.
    pub com: [f64; 3],
    /// Mass-weighted mean velocity, where velocities exist.
    pub velocity: Option<[f64; 3]>,
    /// Largest member distance from `com` (minimum image when periodic).
    pub radius_max: f64,
    /// Root-mean-square member distance from `com` (unweighted).
    pub radius_rms: f64,
}

/// The catalogue and per-particle labels built from set ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    /// Halos by size descending, ties by smallest member index.
    pub halos: Vec<Halo>,
    /// Per particle: index of its halo in `halos`, or −1; `None` when labels were not asked
    /// for (the CUDA back-end then skips their 4-byte-per-particle download).
    pub labels: Option<Vec<i32>>,
    /// Number of friends-of-friends sets of every size (singletons included).
    pub n_sets_all_sizes: usize,
}

/// Size and smallest member index of one kept set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupKey {
    /// Number of members.
    pub size: u32,
    /// Smallest member index.
    pub min_index: u32,
}

/// The kept sets in catalogue order and every particle's label: the catalogue's first step.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// Per particle: rank of its halo in `groups`, or −1.
    pub labels: Vec<i32>,
    /// Kept sets by size descending, ties by smallest member index.
    pub groups: Vec<GroupKey>,
    /// Number of friends-of-friends sets of every size (singletons included).
    pub n_sets_all_sizes: usize,
}

/// One spatial domain's catalogue (its particles: the owned ones, then its ghosts), as
/// `cuda::slab_catalogue_cuda` and `domains::slab_catalogue_cpu` return it.
#[derive(Debug, Clone, PartialEq)]
pub struct SlabCatalogue {
    /// The halos of the sets without ghosts, in catalogue order; `min_index` is a local index
    /// (below the owned count).
    pub halos: Vec<Halo>,
    /// Per owned particle (when labels were asked for): its rank in `halos`, or −1 (also for
    /// members of sets with a ghost).
    pub labels: Option<Vec<i32>>,
    /// Number of sets of every size without a ghost.
    pub n_interior_sets: usize,
    /// Members of the sets with a ghost: (local index, set id) by increasing local index; equal
    /// set ids ⇔ one local set.
    pub boundary: Vec<(u32, u32)>,
    /// Wall seconds per stage (each stage ends with a stream synchronisation), in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// Marks a packed per-set word that holds a halo rank instead of (size, smallest member).
const RANK_FLAG: u64 = 1 << 63;

/// Particles per task of the parallel passes over particles.
const CHUNK: usize = 1 << 16;

/// Sorts kept sets into catalogue order: size descending, then smallest member index (unique per
/// set, so the order is total and does not depend on the input order).
pub fn order_groups(groups: &mut [GroupKey]) {
    groups.par_sort_unstable_by_key(|g| (std::cmp::Reverse(g.size), g.min_index));
}

/// Step 1 from `set_ids` (one per particle, each `< set_ids.len()`, equal ids ⇔ one set):
/// sizes, smallest members, order and labels, with sets smaller than `min_members` dropped.
pub fn partition(set_ids: &[u32], min_members: usize) -> Partition {
    partition_counting(set_ids, set_ids.len(), min_members, |_| true)
}

/// [`partition`] of set ids below `n_sets` where only the sets `counted(id)` are sets: the
/// members of the others get −1 and are in no count (a slab's sets that also hold ghosts).
pub(crate) fn partition_counting(
    set_ids: &[u32],
    n_sets: usize,
    min_members: usize,
    counted: impl Fn(u32) -> bool + Sync,
) -> Partition {
    let n = n_sets;
    // Per set: size in the high 32 bits, smallest member in the low 32 (u32::MAX while empty);
    // one compare-and-swap per particle keeps both in one cache line. Sizes are < 2^31, so bit
    // 63 is free to mark words later overwritten with a rank.
    let packed: Vec<AtomicU64> = (0..n)
        .into_par_iter()
        .map(|_| AtomicU64::new(u64::from(u32::MAX)))
        .collect();
    set_ids
        .par_chunks(CHUNK)
        .enumerate()
        .for_each(|(chunk, ids)| {
            let first = chunk * CHUNK;
            let mut run_start = 0;
            // Runs of equal ids (common in snapshots stored halo by halo) cost one update.
            while run_start < ids.len() {
                let id = ids[run_start];
                let mut run_end = run_start + 1;
                while run_end < ids.len() && ids[run_end] == id {
                    run_end += 1;
                }
                if !counted(id) {
                    run_start = run_end;
                    continue;
                }
                let count = (run_end - run_start) as u64;
                let min_index = (first + run_start) as u64;
                let word = &packed[id as usize];
                let mut current = word.load(Ordering::Relaxed);
                loop {
                    let size = (current >> 32) + count;
                    let min = (current & 0xffff_ffff).min(min_index);
                    match word.compare_exchange_weak(
                        current,
                        (size << 32) | min,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => break,
                        Err(seen) => current = seen,
                    }
                }
                run_start = run_end;
            }
        });
    let n_sets_all_sizes = packed
        .par_iter()
        .filter(|w| w.load(Ordering::Relaxed) >> 32 > 0)
        .count();
    let min_members = min_members.max(1) as u64;
    let kept: Vec<(u32, GroupKey)> = packed
        .par_iter()
        .enumerate()
        .filter_map(|(id, w)| {
            let w = w.load(Ordering::Relaxed);
            (w >> 32 >= min_members).then_some((
                id as u32,
                GroupKey {
                    size: (w >> 32) as u32,
                    min_index: w as u32,
                },
            ))
        })
        .collect();
    let mut order: Vec<(GroupKey, u32)> = kept.into_iter().map(|(id, key)| (key, id)).collect();
    order.par_sort_unstable_by_key(|(g, _)| (std::cmp::Reverse(g.size), g.min_index));
    order.par_iter().enumerate().for_each(|(rank, (_, id))| {
        packed[*id as usize].store(RANK_FLAG | rank as u64, Ordering::Relaxed);
    });
    let labels: Vec<i32> = set_ids
        .par_iter()
        .map(|&id| {
            let w = packed[id as usize].load(Ordering::Relaxed);
            if w & RANK_FLAG != 0 {
                w as u32 as i32
            } else {
                -1
            }
        })
        .collect();
    Partition {
        labels,
        groups: order.into_iter().map(|(g, _)| g).collect(),
        n_sets_all_sizes,
    }
}

/// Builds the catalogue from `set_ids` (one per particle, each `< set_ids.len()`, equal ids ⇔
/// one set). `masses` and `velocities` have been checked to match the particle count.
pub fn build(
    set_ids: &[u32],
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    frame: Option<BoxFrame>,
    min_members: usize,
) -> Catalogue {
    build_from_partition(
        partition(set_ids, min_members),
        positions,
        masses,
        velocities,
        frame,
    )
}

/// Step 2: masses, centres, velocities and radii of the halos of `partition` (labels one per
/// particle, each `-1` or `< groups.len()`, group sizes equal to the label counts).
pub fn build_from_partition(
    partition: Partition,
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    frame: Option<BoxFrame>,
) -> Catalogue {
    let Partition {
        labels,
        groups,
        n_sets_all_sizes,
    } = partition;
    let members = members_by_halo(&labels, &groups);
    let mut starts = Vec::with_capacity(groups.len() + 1);
    let mut total = 0usize;
    starts.push(0);
    for g in &groups {
        total += g.size as usize;
        starts.push(total);
    }
    let halos: Vec<Halo> = groups
        .par_iter()
        .enumerate()
        .map(|(rank, group)| {
            let list = &members[starts[rank]..starts[rank + 1]];
            halo_of(group, list, positions, masses, velocities, frame)
        })
        .collect();
    Catalogue {
        halos,
        labels: Some(labels),
        n_sets_all_sizes,
    }
}

/// Particle indices of every halo, halo by halo (rank order), each halo's in increasing index
/// order: a counting sort (per-chunk histograms, prefix, scatter in index order).
fn members_by_halo(labels: &[i32], groups: &[GroupKey]) -> Vec<u32> {
    let n_groups = groups.len();
    let total: usize = groups.iter().map(|g| g.size as usize).sum();
    if n_groups == 0 || labels.is_empty() {
        return Vec::new();
    }
    // Enough chunks to balance the threads; fewer when there are many halos, to bound the
    // histograms' memory. The output is the same for any chunking.
    let by_memory = (64usize << 20) / (4 * n_groups);
    let n_chunks = (rayon::current_num_threads() * 4)
        .min(labels.len().div_ceil(CHUNK))
        .min(by_memory)
        .max(1);
    let chunk_len = labels.len().div_ceil(n_chunks);
    let histograms: Vec<Vec<u32>> = labels
        .par_chunks(chunk_len)
        .map(|chunk| {
            let mut counts = vec![0u32; n_groups];
            for &label in chunk {
                if let Ok(rank) = usize::try_from(label)
                    && let Some(c) = counts.get_mut(rank)
                {
                    *c += 1;
                }
            }
            counts
        })
        .collect();
    // Start of each chunk's members within each halo: halo start + earlier chunks' counts.
    let mut cursors = histograms;
    let mut start = 0u32;
    for rank in 0..n_groups {
        for counts in cursors.iter_mut() {
            let count = counts[rank];
            counts[rank] = start;
            start += count;
        }
    }
    let members: Vec<AtomicU32> = (0..total)
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    labels
        .par_chunks(chunk_len)
        .zip(cursors.par_iter_mut())
        .enumerate()
        .for_each(|(chunk, (part, cursor))| {
            let first = chunk * chunk_len;
            for (offset, &label) in part.iter().enumerate() {
                if let Ok(rank) = usize::try_from(label)
                    && let Some(slot) = cursor.get_mut(rank)
                    && let Some(member) = members.get(*slot as usize)
                {
                    member.store((first + offset) as u32, Ordering::Relaxed);
                    *slot += 1;
                }
            }
        });
    members.into_par_iter().map(AtomicU32::into_inner).collect()
}

/// One halo's sums over `members` (increasing index order): the same float64 operations in the
/// same order as a sequential pass over all particles.
pub(crate) fn halo_of(
    group: &GroupKey,
    members: &[u32],
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    frame: Option<BoxFrame>,
) -> Halo {
    let place = |i: usize| match frame {
        Some(frame) => frame.wrap_point(&positions[i]),
        None => positions[i].map(f64::from),
    };
    // Offset of a member from its halo's reference member, unwrapped by minimum image.
    let offset = |p: &[f64; 3], reference: &[f64; 3]| -> [f64; 3] {
        let mut d = [0.0; 3];
        for axis in 0..3 {
            d[axis] = p[axis] - reference[axis];
            if let Some(frame) = frame {
                d[axis] = frame.min_image(d[axis]);
            }
        }
        d
    };
    let reference = place(group.min_index as usize);
    let mut mass = 0.0f64;
    let mut moment = [0.0f64; 3];
    let mut momentum = [0.0f64; 3];
    for &i in members {
        let i = i as usize;
        let m = f64::from(masses.get(i));
        let d = offset(&place(i), &reference);
        mass += m;
        for (moment, d) in moment.iter_mut().zip(d) {
            *moment += m * d;
        }
        if let Some(v) = velocities {
            for (momentum, v) in momentum.iter_mut().zip(v[i]) {
                *momentum += m * f64::from(v);
            }
        }
    }
    // A massless halo (possible only in hand-made input) is centred on its reference member
    // instead of dividing by zero.
    let weight = if mass > 0.0 { mass } else { 1.0 };
    let com = [0, 1, 2].map(|axis| {
        let x = reference[axis] + moment[axis] / weight;
        frame.map_or(x, |frame| frame.wrap(x))
    });
    let mut sum_r2 = 0.0f64;
    let mut radius_max = 0.0f64;
    for &i in members {
        let d = offset(&place(i as usize), &com);
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        sum_r2 += r2;
        radius_max = radius_max.max(r2.sqrt());
    }
    Halo {
        size: group.size as usize,
        min_index: group.min_index as usize,
        mass,
        com,
        velocity: velocities.map(|_| momentum.map(|p| p / weight)),
        radius_max,
        radius_rms: (sum_r2 / group.size as f64).sqrt(),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_ordered_and_centred_across_the_periodic_edge() {
        // Sets: {0, 3} straddling the edge of [0, 10), {1, 2, 4}, {5} alone.
        let ids = [0, 1, 1, 0, 1, 5];
        let positions = [
            [9.5f32, 5.0, 5.0],
            [2.0, 2.0, 2.0],
            [3.0, 2.0, 2.0],
            [0.5, 5.0, 5.0],
            [4.0, 2.0, 2.0],
            [7.0, 7.0, 7.0],
        ];
        let masses = Masses::PerParticle(vec![1.0, 1.0, 1.0, 3.0, 2.0, 1.0]);
        let frame = BoxFrame {
            lower: 0.0,
            size: 10.0,
        };
        let cat = build(&ids, &positions, &masses, None, Some(frame), 2);
        assert_eq!(cat.n_sets_all_sizes, 3);
        assert_eq!(cat.labels, Some(vec![1, 0, 0, 1, 0, -1]));
        assert_eq!(cat.halos.len(), 2);
        let big = &cat.halos[0];
        assert_eq!((big.size, big.min_index, big.mass), (3, 1, 4.0));
        // (2·1 + 3·1 + 4·2)/4 = 3.25
        assert_eq!(big.com, [3.25, 2.0, 2.0]);
        assert_eq!(big.radius_max, 1.25);
        let pair = &cat.halos[1];
        // Unwrapped around 9.5: 9.5·1 + 10.5·3 → 10.25, wrapped to 0.25.
        assert_eq!(pair.com, [0.25, 5.0, 5.0]);
        assert_eq!(pair.radius_max, 0.75);
        assert_eq!(
            pair.radius_rms,
            ((0.75f64.powi(2) + 0.25f64.powi(2)) / 2.0).sqrt()
        );
        assert_eq!(pair.velocity, None);
    }
}
