//! The CUDA twin: the friends-of-friends linker and the whole catalogue on the device
//! (kernels/fof.cu, fof_blocks.cu, fof_catalogue.cu), giving the CPU twin's partition.
//!
//! Entry points in `fof_cuda.rs` (set ids, partition) and `catalogue.rs` (the catalogue); the
//! passes they run, in order: `link.rs` (keys, sort, cells, link via `link_cells.rs`,
//! compression) and `partition.rs` (kept sets, ranks, labels); `slab.rs` is one spatial
//! domain's catalogue (sets without ghosts on the device, the members of the others for the
//! merge), and `split.rs` the slabs split on the devices (one per device, routed there and
//! gathered device to device). `grid.rs` and `stencil.rs` are the host-side geometry, `support.rs` the kernel table
//! and one run's context.

mod catalogue;
mod fof_cuda;
mod grid;
mod link;
mod link_cells;
mod partition;
mod slab;
mod split;
mod stencil;
mod support;

pub use catalogue::{CudaCatalogueOutput, catalogue_cuda};
pub use fof_cuda::{CudaLinkOutput, CudaPartitionOutput, link_components_cuda, partition_cuda};
pub(crate) use grid::point_bounds;
pub use slab::{SlabSettings, device_slab_catalogue, slab_catalogue_cuda};
pub use split::{MAX_DEVICE_SLABS, RoutedShare, Share, gather_slab, route_share};
pub use stencil::half_stencil_offsets;

#[cfg(test)]
mod tests;
