//! Friends-of-friends (FoF) halos: linking, the halo catalogue and its export.
//!
//! DESIGN §5. [`find_halos`] takes plain arrays (what the GUI overlay and movie presets call);
//! [`fof_snapshot`] selects species from a [`crate::data::Snapshot`] first. Both take the resolved
//! [`crate::backend::Backend`] and hand one [`CatalogueRequest`] to a twin: `cpu/` (the rayon
//! linker, whose set ids `catalogue.rs` turns into the catalogue) or `cuda/` (the same partition
//! and the catalogue built on the device). The shared model (parameters, catalogue, periodic
//! frame, selection, export, test generators) sits at this level.

mod brute_force;
pub mod catalogue;
mod cpu;
mod cuda;
pub mod domains;
mod error;
pub mod export;
pub mod export_ranks;
mod find;
pub mod finders;
mod params;
pub mod periodic;
mod prepare_ranks;
pub mod resolution;
mod selection;
pub mod synthetic;

pub use brute_force::link_components_brute_force;
pub use catalogue::{Catalogue, Halo};
pub use cpu::{AtomicUnionFind, link_components};
pub use cuda::{
    CudaCatalogueOutput, CudaLinkOutput, CudaPartitionOutput, catalogue_cuda, half_stencil_offsets,
    link_components_cuda, partition_cuda, slab_catalogue_cuda,
};
pub use error::FofError;
pub use find::{PreparedFof, find_halos, fof_snapshot, mean_separation, prepare_fof, volume};
pub use params::{CatalogueRequest, FofParams, FofResult, LinkingLength};
pub use periodic::BoxFrame;
pub use prepare_ranks::{RankPrepared, RankSelection, prepare_on_ranks};
pub use resolution::{LinkingLengthSource, SeparationFrom};
pub use selection::{SelectedParticles, parse_species, select_particles, snapshot_box_size};
