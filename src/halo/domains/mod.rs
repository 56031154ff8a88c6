//! Friends-of-friends on spatial domains: the box cut into slabs balanced by particle count
//! (`decompose.rs`), each slab linked alone with a ghost layer one linking length wide (the
//! CPU or CUDA linker), and the groups that cross slabs merged on global particle ids
//! (`merge.rs`). `driver.rs` runs the domains in one process: on the CPU, one per CUDA device,
//! or several per device one after the other (friends-of-friends larger than device memory).
//! `ranks.rs` runs one slab per rank of a process group (MPI ranks), with the same merge.
//! The set ids equal one process's linker's, so the catalogue built from them is the same.

mod decompose;
mod driver;
mod merge;
mod ranks;

pub use decompose::{Decomposition, DomainMembers};
pub use driver::{
    CUDA_BYTES_PER_PARTICLE, DomainLinker, DomainsOutput, cuda_domains_for, domains_for,
    link_in_domains,
};
pub use merge::{
    DomainLabels, GhostPair, LabelEdge, LabelMap, from_bytes, label_domain, owner_edges, to_bytes,
};
pub use ranks::{RankLabels, Traveller, link_on_ranks};
