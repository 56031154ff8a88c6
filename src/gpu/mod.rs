//! CUDA infrastructure: device discovery, NVRTC compile and on-disk cache, typed launches,
//! device buffers, staged transfers, exclusive scan, radix sort and stage timers.
//!
//! Knows nothing of particles, halos or events; the domain rooms' CUDA twins use it (their
//! `cuda/` folders: `render/cuda/`, `halo/cuda/`, `twopoint/cuda/`; and `render/knn/cuda.rs`).
//! libcuda and libnvrtc are loaded at run time, so the program builds and runs where no CUDA
//! exists: [`cuda_available`] is checked before anything that would touch the driver, because
//! cudarc panics on its first call when the library is missing.

mod compile;
mod device;
mod driver_thread;
mod error;
mod launch;
mod memory;
mod peer;
mod scan;
mod sort;
mod timer;
mod transfer;

pub use compile::{KernelCache, compile_cubin};
pub use device::{DeviceInfo, GpuDevice, cuda_available};
pub use driver_thread::DriverThread;
pub use error::GpuError;
pub use launch::{BLOCK, KernelArg, KernelArgs, blocks, grid, launch, per_element};
pub use memory::{alloc, fill_bytes, reserve_pool, zeros};
pub use peer::enable_peer_access;
pub use scan::Scan;
pub use sort::RadixSort;
pub use timer::{EventTimer, Mark, StageTimer};
pub use transfer::{PinnedStaging, STAGING_PIECE, download_pinned, upload_pinned};
