//! What can go wrong on a wgpu device, with the rule the renderer needs: whether it ran out of
//! memory (a smaller chunk or the CPU may still work).

/// A wgpu failure. Messages name the adapter or the resource and what it needed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WgpuError {
    /// No usable adapter.
    #[error("{reason}")]
    NoAdapter {
        /// Which adapters were seen and why none fits.
        reason: String,
    },
    /// The device lacks a feature the renderer needs.
    #[error("adapter {adapter} lacks the wgpu feature {feature}")]
    MissingFeature {
        /// The adapter's name.
        adapter: String,
        /// The feature.
        feature: &'static str,
    },
    /// A buffer or texture could not be allocated.
    #[error("out of device memory allocating {what}")]
    OutOfMemory {
        /// What was being allocated (and its size).
        what: String,
    },
    /// The device was lost (driver reset, removal).
    #[error("device lost: {message}")]
    DeviceLost {
        /// What the driver said.
        message: String,
    },
    /// A validation or internal error the device reported.
    #[error("device error: {message}")]
    Device {
        /// What wgpu said.
        message: String,
    },
    /// Reading a frame back failed.
    #[error("reading the frame back failed: {message}")]
    Readback {
        /// What wgpu said.
        message: String,
    },
}

impl WgpuError {
    /// Converts a wgpu error (out of memory kept apart from the rest).
    pub fn from_wgpu(err: &wgpu::Error) -> Self {
        match err {
            wgpu::Error::OutOfMemory { .. } => Self::OutOfMemory {
                what: "a device resource".to_owned(),
            },
            other => Self::Device {
                message: other.to_string(),
            },
        }
    }

    /// Whether the device ran out of memory (the data may fit in smaller pieces or on the CPU).
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Self::OutOfMemory { .. })
    }

    /// Whether the device is gone (nothing more will run on it).
    pub fn is_device_lost(&self) -> bool {
        matches!(self, Self::DeviceLost { .. })
    }
}
