//! The CPU twin of `cuda/slab.rs`: one domain's particles (owned, then ghosts) linked by the
//! CPU linker, the catalogue of its sets without ghosts in local member order (the global
//! order: owned particles keep their increasing index order), and the members of the sets
//! with a ghost for the merge.

use crate::halo::catalogue::{SlabCatalogue, build_from_partition, partition_counting};
use crate::halo::cpu::link_components;
use crate::halo::error::FofError;
use crate::halo::params::{CatalogueRequest, check_lengths};
use crate::jobs::Progress;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

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
    let has_ghost: Vec<AtomicBool> = (0..n)
        .into_par_iter()
        .map(|_| AtomicBool::new(false))
        .collect();
    set_ids[n_owned..]
        .par_iter()
        .for_each(|&s| has_ghost[s as usize].store(true, Ordering::Relaxed));
    // The sets without a ghost hold owned particles only: the partition of the owned ones,
    // their halos summed in increasing local (= global) index.
    let parts = partition_counting(&set_ids[..n_owned], n, request.min_members, |s| {
        !has_ghost[s as usize].load(Ordering::Relaxed)
    });
    let n_interior_sets = parts.n_sets_all_sizes;
    let catalogue = build_from_partition(
        parts,
        request.positions,
        request.masses,
        request.velocities,
        request.frame,
    );
    let boundary = set_ids
        .par_iter()
        .enumerate()
        .filter(|&(_, &s)| has_ghost[s as usize].load(Ordering::Relaxed))
        .map(|(k, &s)| (k as u32, s))
        .collect();
    Ok(SlabCatalogue {
        halos: catalogue.halos,
        labels: catalogue.labels.filter(|_| request.with_labels),
        n_interior_sets,
        boundary,
        stage_seconds: Vec::new(),
    })
}
