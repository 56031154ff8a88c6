//! CUDA infrastructure: device discovery, NVRTC compile and on-disk cache, buffers, launches.
