//! The CPU twin of `cuda/slab.rs`: one domain's particles (owned, then ghosts) linked by the
//! CPU linker, the catalogue of its sets without ghosts in local member order (the global
//! order: owned particles keep their increasing index order), and the members of the sets
//! with a ghost for the merge.

use crate::halo::catalogue::{GroupKey, SlabCatalogue, halo_of, order_groups};
use crate::halo::cpu::link_components;
use crate::halo::error::FofError;
use crate::halo::params::{CatalogueRequest, check_lengths};
use crate::jobs::Progress;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

/// Particles per task of the passes over the slab.
const CHUNK: usize = 1 << 16;

/// Links one domain's particles (`request.positions`: the `n_owned` owned ones, then the
/// ghosts) on the CPU and catalogues its sets without ghosts.
pub fn slab_catalogue_cpu(
    request: &CatalogueRequest<'_>,
    n_owned: usize,
    progress: &Progress,
) -> Result<SlabCatalogue, FofError> {
    let n = request.positions.len();
    check_lengths(n, request.masses, request.velocities)?;
    let n_owned = n_owned.min(n);
    let set_ids = link_components(
        request.positions,
        request.linking_length,
        request.frame,
        progress,
    )?;
    // Sizes and smallest members of the sets without a ghost, on every thread: each task walks
    // its indices upwards, so after a set's first member in the task a plain load finds the
    // smallest already lower and no locked update is needed.
    let has_ghost: Vec<AtomicBool> = (0..n)
        .into_par_iter()
        .map(|_| AtomicBool::new(false))
        .collect();
    set_ids[n_owned..]
        .par_iter()
        .for_each(|&s| has_ghost[s as usize].store(true, Ordering::Relaxed));
    let size: Vec<AtomicU32> = (0..n).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    let smallest: Vec<AtomicU32> = (0..n)
        .into_par_iter()
        .map(|_| AtomicU32::new(u32::MAX))
        .collect();
    set_ids[..n_owned]
        .par_iter()
        .enumerate()
        .with_min_len(CHUNK)
        .for_each(|(k, &s)| {
            let s = s as usize;
            if has_ghost[s].load(Ordering::Relaxed) {
                return;
            }
            size[s].fetch_add(1, Ordering::Relaxed);
            if smallest[s].load(Ordering::Relaxed) > k as u32 {
                smallest[s].fetch_min(k as u32, Ordering::Relaxed);
            }
        });
    let size: Vec<u32> = size.into_par_iter().map(AtomicU32::into_inner).collect();
    let n_interior_sets = size.par_iter().filter(|&&c| c > 0).count();
    let min_members = request.min_members.max(1) as u32;
    let mut groups: Vec<GroupKey> = (0..n)
        .into_par_iter()
        .filter(|&s| size[s] >= min_members)
        .map(|s| GroupKey {
            size: size[s],
            min_index: smallest[s].load(Ordering::Relaxed),
        })
        .collect();
    drop((size, smallest));
    order_groups(&mut groups);
    // Halo rank per set (by its smallest member's set).
    let rank_of_set: Vec<AtomicI32> = (0..n).into_par_iter().map(|_| AtomicI32::new(-1)).collect();
    groups.par_iter().enumerate().for_each(|(rank, g)| {
        rank_of_set[set_ids[g.min_index as usize] as usize].store(rank as i32, Ordering::Relaxed);
    });
    let labels: Vec<i32> = set_ids[..n_owned]
        .par_iter()
        .map(|&s| rank_of_set[s as usize].load(Ordering::Relaxed))
        .collect();
    drop(rank_of_set);
    // Every halo's members in increasing index: (rank, index) pairs in order, so halo g's are
    // the run after the earlier halos' sizes.
    let mut ranked: Vec<(u32, u32)> = labels
        .par_iter()
        .enumerate()
        .filter_map(|(k, &label)| u32::try_from(label).ok().map(|rank| (rank, k as u32)))
        .collect();
    ranked.par_sort_unstable();
    let members: Vec<u32> = ranked.into_par_iter().map(|(_, k)| k).collect();
    let mut starts = Vec::with_capacity(groups.len());
    let mut at = 0usize;
    for g in &groups {
        starts.push(at);
        at += g.size as usize;
    }
    let halos = groups
        .par_iter()
        .zip(&starts)
        .map(|(g, &start)| {
            halo_of(
                g,
                &members[start..start + g.size as usize],
                request.positions,
                request.masses,
                request.velocities,
                request.frame,
            )
        })
        .collect();
    let boundary = set_ids
        .par_iter()
        .enumerate()
        .filter(|&(_, &s)| has_ghost[s as usize].load(Ordering::Relaxed))
        .map(|(k, &s)| (k as u32, s))
        .collect();
    Ok(SlabCatalogue {
        halos,
        labels: request.with_labels.then_some(labels),
        n_interior_sets,
        boundary,
        stage_seconds: Vec::new(),
    })
}
