//! Ways to bring 4-byte per-particle labels from the device into a host `Vec<i32>`, and the
//! float32 positions up, measured side by side by `haloscope bench fof --backend cuda`
//! (BENCHMARKS.md, FoF "Session 4"): at 10⁸ particles the labels are 0.4 GB (0.032–0.037 s of
//! the labelled end-to-end time) and the positions 1.2 GB (most of "upload + cell keys",
//! 0.056 s). The library uses [`LabelDownload::Staged`] (`download_pinned`) and
//! [`PositionUpload::Staged`] (`upload_pinned`).

use super::FofError;
use super::fof_cuda_support::{download_pinned, download_staged, fill_bytes, gpu, upload_staged};
use crate::gpu::GpuDevice;
use cudarc::driver::{CudaEvent, CudaSlice, PinnedHostSlice, sys};
use rayon::prelude::*;
use std::time::Instant;

/// Elements per DMA of [`LabelDownload::PinnedWhole`] (16 MiB).
const DMA_CHUNK: usize = 1 << 22;

/// Parallel copy grain (elements), as in `fof_cuda_support.rs`.
const COPY_GRAIN: usize = 1 << 15;

/// How labels are downloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelDownload {
    /// Two alternating 8 MiB pinned staging buffers, DMA of one overlapped with the rayon
    /// copy-out (and first touch) of the other (the library's method).
    Staged,
    /// As `Staged` with 32 MiB buffers (a quarter of the event waits and rayon joins).
    Staged32,
    /// One `cuMemcpyDtoH` straight into a fresh pageable `Vec` (the driver stages it).
    Pageable,
    /// A fresh `Vec` page-locked with `cuMemHostRegister`, DMA straight into it, unregistered.
    Registered,
    /// A pinned buffer of the whole size allocated once and reused across calls: every chunk's
    /// DMA queued at once, each chunk copied out (rayon) as soon as its event completes.
    PinnedWhole,
}

impl LabelDownload {
    /// All methods, in the order the benchmark runs them.
    pub const ALL: [Self; 5] = [
        Self::Staged,
        Self::Staged32,
        Self::Pageable,
        Self::Registered,
        Self::PinnedWhole,
    ];

    /// Name in the benchmark's output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Staged => "staged",
            Self::Staged32 => "staged-32MiB",
            Self::Pageable => "pageable",
            Self::Registered => "registered",
            Self::PinnedWhole => "pinned-whole",
        }
    }
}

/// Times `repeats` downloads of `n` label words with `method` (after one warm-up) and checks
/// every result against the pattern written on the device. Returns the wall seconds of each.
pub fn time_label_download(
    device: &GpuDevice,
    n: usize,
    method: LabelDownload,
    repeats: usize,
) -> Result<Vec<f64>, FofError> {
    let stream = device.stream().clone();
    let mut src = super::fof_cuda_support::alloc::<u32>(&stream, n)?;
    // Every word 0x01010101: a wrong or partial copy shows as another value.
    fill_bytes(&stream, &mut src, 0x01)?;
    let expected = 0x0101_0101i32;
    let mut whole = match method {
        LabelDownload::PinnedWhole => {
            // SAFETY: written by DMA before it is read (after the chunk's event completes).
            Some(gpu(unsafe {
                device.context().alloc_pinned_with_flags::<u32>(n, 0)
            })?)
        }
        _ => None,
    };
    let mut seconds = Vec::with_capacity(repeats);
    for round in 0..=repeats {
        let start = Instant::now();
        let labels = download(device, &src, n, method, whole.as_mut())?;
        let elapsed = start.elapsed().as_secs_f64();
        if labels.len() != n || labels.par_iter().any(|&l| l != expected) {
            return Err(FofError::BackendUnavailable(format!(
                "label download {} returned wrong values",
                method.name()
            )));
        }
        if round > 0 {
            seconds.push(elapsed);
        }
    }
    Ok(seconds)
}

/// Downloads `n` words of `src` as i32 with `method`.
fn download(
    device: &GpuDevice,
    src: &CudaSlice<u32>,
    n: usize,
    method: LabelDownload,
    whole: Option<&mut PinnedHostSlice<u32>>,
) -> Result<Vec<i32>, FofError> {
    let stream = device.stream().clone();
    match method {
        LabelDownload::Staged => download_pinned(device.context(), &stream, src, n, |w| w as i32),
        LabelDownload::Staged32 => {
            download_staged(device.context(), &stream, src, n, |w| w as i32, 1 << 23)
        }
        LabelDownload::Pageable => {
            // SAFETY: u32 and i32 have the same size and every bit pattern is valid for both.
            let view = unsafe { src.transmute::<i32>(n) };
            let view = view.ok_or_else(|| FofError::BackendUnavailable("view".into()))?;
            gpu(stream.clone_dtoh(&view))
        }
        LabelDownload::Registered => {
            let mut out = vec![0i32; n];
            gpu(device.context().bind_to_thread())?;
            // SAFETY: `out` lives until after the unregister below; the DMA into it completes
            // (stream synchronised) before it is unregistered or read.
            unsafe {
                gpu(sys::cuMemHostRegister_v2(out.as_mut_ptr().cast(), n * 4, 0).result())?;
            }
            let view = unsafe { src.transmute::<i32>(n) };
            let copied = match view {
                Some(view) => gpu(stream.memcpy_dtoh(&view, out.as_mut_slice()))
                    .and_then(|()| gpu(stream.synchronize())),
                None => Err(FofError::BackendUnavailable("view".into())),
            };
            // SAFETY: registered above, no copy in flight (synchronised or failed).
            unsafe {
                gpu(sys::cuMemHostUnregister(out.as_mut_ptr().cast()).result())?;
            }
            copied?;
            Ok(out)
        }
        LabelDownload::PinnedWhole => {
            let whole = whole.ok_or_else(|| FofError::BackendUnavailable("buffer".into()))?;
            // Page-locked: each copy below is a true asynchronous DMA, read only after its event.
            let host = gpu(whole.as_mut_slice())?;
            let mut events: Vec<(std::ops::Range<usize>, CudaEvent)> = Vec::new();
            for start in (0..n).step_by(DMA_CHUNK) {
                let range = start..(start + DMA_CHUNK).min(n);
                gpu(stream.memcpy_dtoh(&src.slice(range.clone()), &mut host[range.clone()]))?;
                events.push((range, gpu(stream.record_event(None))?));
            }
            let mut out = vec![0i32; n];
            for (range, event) in events {
                gpu(event.synchronize())?;
                out[range.clone()]
                    .par_chunks_mut(COPY_GRAIN)
                    .zip(host[range].par_chunks(COPY_GRAIN))
                    .for_each(|(to, from)| {
                        for (t, &f) in to.iter_mut().zip(from) {
                            *t = f as i32;
                        }
                    });
            }
            Ok(out)
        }
    }
}

/// How positions are uploaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionUpload {
    /// Two alternating 8 MiB pinned staging buffers, rayon copy-in of one overlapped with the
    /// DMA of the other (the library's method).
    Staged,
    /// As `Staged` with 32 MiB buffers.
    Staged32,
    /// One `cuMemcpyHtoD` from the pageable slice (the driver stages it).
    Pageable,
    /// The caller's slice page-locked with `cuMemHostRegister`, DMA straight from it,
    /// unregistered (registration counted).
    Registered,
}

impl PositionUpload {
    /// All methods, in the order the benchmark runs them.
    pub const ALL: [Self; 4] = [
        Self::Staged,
        Self::Staged32,
        Self::Pageable,
        Self::Registered,
    ];

    /// Name in the benchmark's output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Staged => "staged",
            Self::Staged32 => "staged-32MiB",
            Self::Pageable => "pageable",
            Self::Registered => "registered",
        }
    }
}

/// Times `repeats` uploads of `values` with `method` (after one warm-up); the last upload is
/// downloaded again and compared with `values`. Returns the wall seconds of each.
pub fn time_position_upload(
    device: &GpuDevice,
    values: &[f32],
    method: PositionUpload,
    repeats: usize,
) -> Result<Vec<f64>, FofError> {
    let stream = device.stream().clone();
    let context = device.context();
    let mut seconds = Vec::with_capacity(repeats);
    let mut last = None;
    for round in 0..=repeats {
        let start = Instant::now();
        let uploaded = match method {
            PositionUpload::Staged => upload_staged(context, &stream, values, 1 << 21)?,
            PositionUpload::Staged32 => upload_staged(context, &stream, values, 1 << 23)?,
            PositionUpload::Pageable => gpu(stream.clone_htod(values))?,
            PositionUpload::Registered => {
                let mut dst = super::fof_cuda_support::alloc::<f32>(&stream, values.len())?;
                gpu(context.bind_to_thread())?;
                let bytes = std::mem::size_of_val(values);
                // SAFETY: `values` outlives the copy (stream synchronised before unregistering);
                // the driver only reads the registered pages.
                unsafe {
                    gpu(sys::cuMemHostRegister_v2(values.as_ptr() as *mut _, bytes, 0).result())?;
                }
                let copied = gpu(stream.memcpy_htod(values, &mut dst))
                    .and_then(|()| gpu(stream.synchronize()));
                // SAFETY: registered above, no copy in flight (synchronised or failed).
                unsafe {
                    gpu(sys::cuMemHostUnregister(values.as_ptr() as *mut _).result())?;
                }
                copied?;
                dst
            }
        };
        gpu(stream.synchronize())?;
        let elapsed = start.elapsed().as_secs_f64();
        if round > 0 {
            seconds.push(elapsed);
        }
        last = Some(uploaded);
    }
    let back = match &last {
        Some(uploaded) => gpu(stream.clone_dtoh(uploaded))?,
        None => Vec::new(),
    };
    if back != values {
        return Err(FofError::BackendUnavailable(format!(
            "position upload {} returned wrong values",
            method.name()
        )));
    }
    Ok(seconds)
}
