//! CUDA infrastructure: device discovery, NVRTC compile and on-disk cache, buffers, launches.
//!
//! Knows nothing of particles, halos or events; the domain rooms' `*_cuda.rs` twins use it.
//! libcuda and libnvrtc are loaded at run time, so the program builds and runs where no CUDA
//! exists: [`cuda_available`] is checked before anything that would touch the driver, because
//! cudarc panics on its first call when the library is missing.

mod backend;
mod compile;
mod device;
mod error;
mod launch;

pub use backend::{BackendChoice, ResolvedBackend, resolve_backend};
pub use compile::{KernelCache, compile_cubin};
pub use device::{DeviceInfo, GpuDevice, cuda_available};
pub use error::GpuError;
pub use launch::{BLOCK, KernelArg, KernelArgs, blocks, grid, launch, per_element};
