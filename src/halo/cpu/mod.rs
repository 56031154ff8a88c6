//! The CPU twin: the rayon friends-of-friends linker (`link.rs` over the sparse cell grid of
//! `grid.rs` with the lock-free union-find of `union_find.rs`), and the catalogue built from its
//! set ids by the shared `catalogue.rs`.

mod grid;
mod link;
mod union_find;

pub use link::{dist2, dist2_periodic, link_components};
pub use union_find::AtomicUnionFind;

use super::catalogue::{self, Catalogue};
use super::error::FofError;
use super::params::CatalogueRequest;
use crate::jobs::Progress;

/// Builds the catalogue of `request` on the CPU: set ids, the partition into kept sets, then the
/// per-halo sums. The labels are computed either way and dropped unless asked for.
pub fn catalogue_cpu(
    request: &CatalogueRequest<'_>,
    progress: &Progress,
) -> Result<Catalogue, FofError> {
    let ids = link_components(
        request.positions,
        request.linking_length,
        request.frame,
        progress,
    )?;
    progress.check()?;
    let partition = catalogue::partition(&ids, request.min_members);
    progress.check()?;
    progress.report("catalogue", 0, 1);
    let mut catalogue = catalogue::build_from_partition(
        partition,
        request.positions,
        request.masses,
        request.velocities,
        request.frame,
    );
    if !request.with_labels {
        catalogue.labels = None;
    }
    progress.report("catalogue", 1, 1);
    Ok(catalogue)
}
