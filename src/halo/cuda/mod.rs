//! The CUDA twin: the friends-of-friends linker and the whole catalogue on the device
//! (kernels/fof.cu, fof_blocks.cu, fof_catalogue.cu), giving the CPU twin's partition.
//!
//! Entry points in `fof_cuda.rs` (set ids, partition) and `catalogue.rs` (the catalogue); the
//! passes they run, in order: `link.rs` (keys, sort, cells, link via `link_cells.rs`,
//! compression) and `partition.rs` (kept sets, ranks, labels); `slab.rs` is one spatial
//! domain's catalogue (sets without ghosts on the device, the members of the others for the
//! merge). `grid.rs` and `stencil.rs` are the host-side geometry, `support.rs` the kernel table
//! and one run's context.

mod catalogue;
mod fof_cuda;
mod grid;
mod link;
mod link_cells;
mod partition;
mod slab;
mod stencil;
mod support;

pub use catalogue::{CudaCatalogueOutput, catalogue_cuda};
pub use fof_cuda::{CudaLinkOutput, CudaPartitionOutput, link_components_cuda, partition_cuda};
pub use slab::slab_catalogue_cuda;
pub use stencil::half_stencil_offsets;

#[cfg(test)]
mod tests;
