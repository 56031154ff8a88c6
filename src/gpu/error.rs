/// Why the CUDA back-end could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// libcuda (the NVIDIA driver library) was not found.
    #[error("no NVIDIA driver library (libcuda) was found on this machine")]
    NoDriver,
    /// libnvrtc (the CUDA runtime compiler, CUDA 12 or 13) was not found.
    #[error("the CUDA runtime compiler library (libnvrtc.so.13 or .12) was not found")]
    NoNvrtc,
    /// The driver reports no CUDA device.
    #[error("no CUDA device was found")]
    NoDevice,
    /// A driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// NVRTC rejected a kernel source.
    #[error("compiling {program} for {arch} failed:\n{log}")]
    Compile {
        /// The kernel file.
        program: String,
        /// The target architecture (`sm_90`).
        arch: String,
        /// NVRTC's log.
        log: String,
    },
    /// Device memory ran out; the caller may retry with smaller chunks or use the CPU.
    #[error("out of GPU memory ({requested_bytes} bytes requested)")]
    OutOfMemory {
        /// Size of the allocation that failed.
        requested_bytes: usize,
    },
    /// The on-disk kernel cache could not be used (never fatal to callers that fall back).
    #[error("kernel cache {path}: {io_error}")]
    Cache {
        /// The cache file.
        path: String,
        /// What the OS said.
        io_error: std::io::Error,
    },
}

impl GpuError {
    /// Whether device memory ran out: [`GpuError::OutOfMemory`], or the driver's own
    /// out-of-memory result from an allocation or launch.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, GpuError::OutOfMemory { .. })
            || matches!(self, GpuError::Driver(e)
                if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY)
    }
}
