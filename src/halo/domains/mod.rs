//! Friends-of-friends on spatial domains: the box cut into slabs balanced by particle count
//! (`decompose.rs`), each slab linked alone with a ghost layer one linking length wide (the
//! CPU or CUDA linker), and the groups that cross slabs merged on global particle ids
//! (`merge.rs`). `driver.rs` runs the domains in one process: on the CPU, one per CUDA device,
//! or several per device one after the other (friends-of-friends larger than device memory).
//! `catalogue.rs` builds the whole catalogue on domains: slabs split on the devices when there
//! is one per device (`on_devices.rs`), else copied out in parallel (`split.rs`), each CUDA
//! device (or the CPU, `slab_cpu.rs`) cataloguing its slabs' sets
//! without ghosts, only the sets with a ghost merged and catalogued on the CPU. `ranks.rs`
//! runs one slab per rank of a process group (MPI ranks), with the same merge.
//! The set ids equal one process's linker's, so the catalogue built from them is the same.

mod catalogue;
mod decompose;
mod driver;
mod merge;
mod on_devices;
mod rank_catalogue;
mod rank_labels;
mod ranks;
mod slab_cpu;
mod split;

pub use catalogue::{DomainsCatalogue, catalogue_in_domains, lap};
pub use decompose::{Decomposition, DomainMembers};
pub use driver::{
    CUDA_BYTES_PER_PARTICLE, DomainLinker, DomainsOutput, cuda_domains_for, domains_for,
    link_in_domains,
};
pub use merge::{
    DomainLabels, GhostPair, LabelEdge, LabelMap, from_bytes, label_domain, owner_edges, to_bytes,
};
pub use rank_catalogue::{RankCatalogue, catalogue_on_ranks};
pub(crate) use rank_labels::id_runs;
pub use rank_labels::labels_to_readers;
pub(crate) use ranks::agree;
pub use ranks::{CrossingMember, RankLabels, RankParticles, SlabOptions, Traveller, link_on_ranks};
pub use slab_cpu::slab_catalogue_cpu;
pub use split::{Slab, split};
