//! log10 of an uploaded intensity or colour field on the device, with its finite limits
//! (kernels/upload_log10.cu): the resident upload copies the raw values and the device takes
//! the log, where the host's log10 pass was most of the upload's time. The kernel is the
//! host's libm algorithm (glibc's log10f) written out operation by operation; it is used only
//! after it gave the host's `f32::log10` bits on every probe value ([`DeviceLog10::matches_host`]),
//! so the normalised values stay bit-identical to the CPU reference's. Elsewhere the host
//! takes the log while it fills the staging buffers (staged.rs).

use crate::gpu::{self, GpuDevice, GpuError};
use crate::render::log10::probe_values;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, CudaViewMut};
use rayon::prelude::*;
use std::sync::Arc;

const SOURCE: &str = include_str!("../../../kernels/upload_log10.cu");

/// Blocks of the grid-stride kernel (a few per SM; one atomic pair per warp).
const BLOCKS: u32 = 1024;

crate::kernel_args! {
    /// `upload_log10`: `values` holds `n` floats, `limits` two words (start u32::MAX and 0).
    struct Log10Args<'a> {
        values: CudaViewMut<'a, f32>,
        n: u32,
        limits: &'a mut CudaSlice<u32>,
    }
}

/// The compiled kernel and whether it matched the host on the probe values.
#[derive(Debug)]
pub(super) struct DeviceLog10 {
    function: CudaFunction,
    /// None until [`Self::matches_host`] has run.
    checked: Option<bool>,
}

/// A field's log10 in flight: its limits buffer, read once the stream has finished.
#[derive(Debug)]
pub(super) struct PendingLimits(CudaSlice<u32>);

impl PendingLimits {
    /// The finite minimum and maximum of the logged values (infinity and minus infinity when
    /// none is finite), as the host's staging pass finds them. Waits for the stream.
    pub(super) fn read(&self, stream: &Arc<CudaStream>) -> Result<(f32, f32), GpuError> {
        let bits = stream.clone_dtoh(&self.0)?;
        Ok(limits_from_bits(
            bits.first().copied(),
            bits.get(1).copied(),
        ))
    }
}

/// Decodes the kernel's ordered-bit limits (start values: no finite value).
fn limits_from_bits(lo: Option<u32>, hi: Option<u32>) -> (f32, f32) {
    match (lo, hi) {
        (Some(lo), Some(hi)) if lo != u32::MAX && lo <= hi => {
            (from_ordered_bits(lo), from_ordered_bits(hi))
        }
        _ => (f32::INFINITY, f32::NEG_INFINITY),
    }
}

/// The inverse of the kernel's order-preserving map of f32 bits to u32.
fn from_ordered_bits(u: u32) -> f32 {
    if u & 0x8000_0000 != 0 {
        f32::from_bits(u & 0x7FFF_FFFF)
    } else {
        f32::from_bits(!u)
    }
}

impl DeviceLog10 {
    /// Compiles (or loads from the cache) the kernel on `device`.
    pub(super) fn load(device: &GpuDevice) -> Result<Self, GpuError> {
        let module = device.module("upload_log10.cu", SOURCE)?;
        Ok(Self {
            function: module.load_function("upload_log10")?,
            checked: None,
        })
    }

    /// Whether [`Self::matches_host`] found the kernel equal to the host (None: not checked yet).
    pub(super) fn checked(&self) -> Option<bool> {
        self.checked
    }

    /// Queues log10 of `values` in place on `stream` (NaN for values ≤ 0 or NaN, as the host's
    /// staging transform) and the search for the finite limits of the result.
    pub(super) fn launch(
        &self,
        stream: &Arc<CudaStream>,
        values: CudaViewMut<'_, f32>,
    ) -> Result<PendingLimits, GpuError> {
        let n = values.len();
        let n_u32 = u32::try_from(n).map_err(|_| GpuError::OutOfMemory {
            requested_bytes: n.saturating_mul(4),
        })?;
        let mut limits = stream.clone_htod(&[u32::MAX, 0])?;
        let cfg = gpu::blocks(gpu::grid(n, gpu::BLOCK as usize).min(BLOCKS), 0);
        let args = Log10Args {
            values,
            n: n_u32,
            limits: &mut limits,
        };
        // SAFETY: `values` holds n floats and the grid-stride loop stays below n; `limits` holds
        // the two words the kernel's atomics update.
        unsafe { gpu::launch(stream, &self.function, cfg, args) }?;
        Ok(PendingLimits(limits))
    }

    /// Whether the kernel gives the host's `f32::log10` bits (and limits) on the probe values:
    /// a libm other than the one the kernel copies differs on many of them. Checked once.
    pub(super) fn matches_host(&mut self, stream: &Arc<CudaStream>) -> Result<bool, GpuError> {
        if let Some(ok) = self.checked {
            return Ok(ok);
        }
        let probe = probe_values();
        let mut device = stream.clone_htod(&probe)?;
        let pending = self.launch(stream, device.slice_mut(..))?;
        let got = stream.clone_dtoh(&device)?;
        let (lo, hi) = pending.read(stream)?;
        let (want, want_lo, want_hi) = host_log10(&probe);
        let ok = got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits())
            && lo.to_bits() == want_lo.to_bits()
            && hi.to_bits() == want_hi.to_bits();
        self.checked = Some(ok);
        Ok(ok)
    }
}

/// The host's transform of the probe values (log10 for v > 0, else NaN) and the finite limits,
/// as staged.rs computes them.
fn host_log10(values: &[f32]) -> (Vec<f32>, f32, f32) {
    let out: Vec<f32> = values
        .par_iter()
        .map(|&v| if v > 0.0 { v.log10() } else { f32::NAN })
        .collect();
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for &x in out.iter().filter(|x| x.is_finite()) {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    (out, lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_limits_decode_to_the_values_and_empty_to_infinities() {
        let key = |v: f32| {
            let b = v.to_bits();
            if b & 0x8000_0000 != 0 {
                !b
            } else {
                b | 0x8000_0000
            }
        };
        for v in [-3.5f32, -0.0, 0.0, 1e-30, 7.25, f32::MAX, -f32::MAX] {
            assert_eq!(from_ordered_bits(key(v)).to_bits(), v.to_bits(), "{v}");
        }
        assert!(key(-2.0) < key(-1.0) && key(-1.0) < key(0.5) && key(0.5) < key(3.0));
        assert_eq!(
            limits_from_bits(Some(key(-2.0)), Some(key(3.0))),
            (-2.0, 3.0)
        );
        assert_eq!(
            limits_from_bits(Some(u32::MAX), Some(0)),
            (f32::INFINITY, f32::NEG_INFINITY)
        );
        assert_eq!(
            limits_from_bits(None, None),
            (f32::INFINITY, f32::NEG_INFINITY)
        );
    }

    #[test]
    fn probe_values_cover_every_binade_and_the_special_cases() {
        let probe = probe_values();
        assert!(probe.len() > 1 << 16);
        let mut exponents = [false; 255];
        for v in probe.iter().filter(|v| v.is_finite() && **v > 0.0) {
            exponents[(v.to_bits() >> 23) as usize] = true;
        }
        assert!(exponents.iter().all(|&seen| seen), "a binade has no probe");
        assert!(probe.iter().any(|v| v.is_nan()));
        assert!(probe.contains(&0.0) && probe.contains(&-1.0));
        assert!(probe.contains(&f32::INFINITY) && probe.contains(&f32::from_bits(1)));
        let (_, lo, hi) = host_log10(&probe);
        assert!(lo < -44.0 && hi > 38.0, "{lo} {hi}");
    }
}
