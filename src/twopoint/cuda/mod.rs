//! The CUDA back-end: the GPU pair counter (kernels/twopoint*.cu), the host tables that keep its
//! counts equal to the CPU's, and its trial loop.

pub mod count;
pub mod kernel;
pub mod tables;
pub mod trials;

pub use count::{CudaPairCounter, DEFAULT_TRIALS_PER_LAUNCH, count_pairs_cuda, load_kernels};
pub use kernel::CountKernel;
pub use trials::{run_trials_cuda, run_trials_cuda_devices};
