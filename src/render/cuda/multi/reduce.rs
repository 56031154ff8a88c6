//! The sum of the devices' fixed-point τ images on the first device: each partial image is
//! copied device to device (peer access over NVLink or PCIe where the driver allows it, else
//! the driver stages it through host memory) and added with integer additions, then the
//! conversion to f32 runs once, so τ has one device's bits.

use super::super::CudaRenderer;
use super::super::args::ComposeArgs;
use crate::gpu::{self, GpuDevice, GpuError, enable_peer_access};
use crate::render::RenderError;
use cudarc::driver::{CudaFunction, CudaSlice};
use std::sync::Arc;

const SUM: &str = include_str!("../../../../kernels/multi_sum.cu");

crate::kernel_args! {
    /// `tau_fixed_add` (kernels/multi_sum.cu), one thread per value: dst and src hold n values.
    struct AddArgs<'a> {
        dst: &'a mut CudaSlice<u64>,
        src: &'a CudaSlice<u64>,
        n: u64,
    }
}

/// The first device's sum kernel and the buffer that receives the other devices' images.
#[derive(Debug)]
pub(super) struct Reducer {
    add: CudaFunction,
    received: Option<CudaSlice<u64>>,
}

impl Reducer {
    /// Compiles the sum kernel on `first` and lets it read every other device's memory
    /// directly where the hardware allows it.
    pub(super) fn new(first: &GpuDevice, others: &[Arc<GpuDevice>]) -> Result<Self, GpuError> {
        let module = first.module("multi_sum.cu", SUM)?;
        let add = module.load_function("tau_fixed_add")?;
        for other in others {
            enable_peer_access(first, other)?;
        }
        Ok(Self {
            add,
            received: None,
        })
    }

    /// Adds the last frame's fixed-point τ of every renderer in `others` into `first`'s and
    /// converts the sum to f32 τ on `first` (no CPU large splats: the caller draws large splats
    /// on the devices).
    pub(super) fn sum_into_first(
        &mut self,
        first: &mut CudaRenderer,
        others: &[CudaRenderer],
    ) -> Result<(), RenderError> {
        let stream = first.compute.clone();
        let Some(image) = first.image.as_mut() else {
            return Err(RenderError::setting("no frame rendered yet"));
        };
        let pixels = image.width as usize * image.height as usize;
        let values = pixels * image.fixed_channels as usize;
        for other in others {
            let Some(theirs) = other.image.as_ref() else {
                return Err(RenderError::setting("a device rendered no frame"));
            };
            let same_frame = (theirs.width, theirs.height, theirs.fixed_channels)
                == (image.width, image.height, image.fixed_channels)
                && theirs.fixed_exponent == image.fixed_exponent;
            if !same_frame {
                return Err(RenderError::setting(
                    "devices drew frames of different sizes or fixed-point scales",
                ));
            }
            if self.received.as_ref().is_none_or(|r| r.len() < values) {
                self.received = None;
                self.received = Some(stream.alloc_zeros(values).map_err(GpuError::from)?);
            }
            let Some(received) = self.received.as_mut() else {
                return Err(RenderError::setting("no receive buffer"));
            };
            stream
                .memcpy_dtod(
                    &theirs.tau_fixed.slice(0..values),
                    &mut received.slice_mut(0..values),
                )
                .map_err(GpuError::from)?;
            let args = AddArgs {
                dst: &mut image.tau_fixed,
                src: received,
                n: values as u64,
            };
            // SAFETY: tau_fixed and received hold at least `values` entries (3·W·H and the
            // allocation above).
            unsafe { gpu::launch(&stream, &self.add, gpu::per_element(values, 0), args) }?;
        }
        compose_fixed(first)
    }
}

/// Converts the last frame's fixed-point τ of `r` (a sum of several devices' or ranks') to f32
/// τ on its device, with the frame's exponent (no CPU large splats).
pub(super) fn compose_fixed(r: &mut CudaRenderer) -> Result<(), RenderError> {
    let stream = r.compute.clone();
    let Some(image) = r.image.as_mut() else {
        return Err(RenderError::setting("no frame rendered yet"));
    };
    let n = 3 * image.width as u64 * image.height as u64;
    let args = ComposeArgs {
        tau_fixed: &image.tau_fixed,
        tau_cpu: &image.tau_cpu,
        has_cpu: 0,
        channels: image.fixed_channels as i32,
        n,
        inv_scale: 2f64.powi(-image.fixed_exponent),
        tau: &mut image.tau,
    };
    let cfg = gpu::per_element(n as usize, 0);
    // SAFETY: tau_fixed, tau_cpu and tau hold 3·W·H values (ensure_image); tau_cpu is not
    // read (has_cpu 0).
    unsafe { gpu::launch(&stream, &r.kernels.compose, cfg, args) }?;
    stream.synchronize().map_err(GpuError::from)?;
    Ok(())
}
