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
    let mut has_ghost = vec![false; n];
    for &s in &set_ids[n_owned..] {
        has_ghost[s as usize] = true;
    }
    let mut size = vec![0u32; n];
    let mut smallest = vec![u32::MAX; n];
    for (k, &s) in set_ids[..n_owned].iter().enumerate() {
        if !has_ghost[s as usize] {
            size[s as usize] += 1;
            smallest[s as usize] = smallest[s as usize].min(k as u32);
        }
    }
    let n_interior_sets = size.iter().filter(|&&c| c > 0).count();
    let min_members = request.min_members.max(1) as u32;
    let mut groups: Vec<GroupKey> = (0..n)
        .filter(|&s| size[s] >= min_members)
        .map(|s| GroupKey {
            size: size[s],
            min_index: smallest[s],
        })
        .collect();
    order_groups(&mut groups);
    // Halo rank per set (by its smallest member's set), then members in increasing order.
    let mut rank_of_set = vec![-1i32; n];
    for (rank, g) in groups.iter().enumerate() {
        rank_of_set[set_ids[g.min_index as usize] as usize] = rank as i32;
    }
    let labels: Vec<i32> = set_ids[..n_owned]
        .iter()
        .map(|&s| rank_of_set[s as usize])
        .collect();
    let mut members: Vec<Vec<u32>> = groups
        .iter()
        .map(|g| Vec::with_capacity(g.size as usize))
        .collect();
    for (k, &label) in labels.iter().enumerate() {
        if let Ok(rank) = usize::try_from(label) {
            members[rank].push(k as u32);
        }
    }
    let halos = groups
        .par_iter()
        .zip(&members)
        .map(|(g, list)| {
            halo_of(
                g,
                list,
                request.positions,
                request.masses,
                request.velocities,
                request.frame,
            )
        })
        .collect();
    let boundary = set_ids
        .iter()
        .enumerate()
        .filter(|&(_, &s)| has_ghost[s as usize])
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
