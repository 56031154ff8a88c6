//! Large host ↔ device copies through two alternating page-locked staging buffers, so that the
//! parallel (rayon) host copy of one chunk overlaps the DMA of the other. A pageable copy of the
//! whole array would go through the driver's single-threaded staging instead. [`upload_pinned`]
//! and [`download_pinned`] copy one array each way; [`PinnedStaging`] keeps its buffers for
//! repeated uploads into existing device buffers.

use super::memory::alloc;
use super::{GpuDevice, GpuError};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr,
    PinnedHostSlice, ValidAsZeroBits,
};
use rayon::prelude::*;
use std::sync::Arc;

/// Elements per staging buffer (8 MiB of 4-byte words). Arrays of fewer than two buffers'
/// worth go in one direct copy.
const STAGING_LEN: usize = 1 << 21;

/// Elements per rayon task of the host-side staging copies.
const COPY_GRAIN: usize = 1 << 15;

/// Uploads `values` to a new device buffer on `device`'s stream through the staging buffers
/// (small inputs directly). Returns once the host may reuse `values`' memory.
pub fn upload_pinned<T>(device: &GpuDevice, values: &[T]) -> Result<CudaSlice<T>, GpuError>
where
    T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync,
{
    let (context, stream) = (device.context(), device.stream());
    let n = values.len();
    let full_chunks = n / STAGING_LEN;
    if full_chunks < 2 {
        return Ok(stream.clone_htod(values)?);
    }
    let mut dst = alloc::<T>(stream, n)?;
    let mut staging = [
        pinned::<T>(context, STAGING_LEN)?,
        pinned::<T>(context, STAGING_LEN)?,
    ];
    // cudarc records a pinned buffer's own event only when it manages several streams, so each
    // copy's completion is tracked here with an explicit event per buffer.
    let mut copied: [Option<CudaEvent>; 2] = [None, None];
    for chunk in 0..full_chunks {
        let range = chunk * STAGING_LEN..(chunk + 1) * STAGING_LEN;
        let slot = chunk % 2;
        if let Some(event) = copied[slot].take() {
            // This buffer's previous DMA must finish before the host overwrites it.
            event.synchronize()?;
        }
        let buffer = &mut staging[slot];
        let host = buffer.as_mut_slice()?;
        host.par_chunks_mut(COPY_GRAIN)
            .zip(values[range.clone()].par_chunks(COPY_GRAIN))
            .for_each(|(to, from)| to.copy_from_slice(from));
        stream.memcpy_htod(&*buffer, &mut dst.slice_mut(range))?;
        copied[slot] = Some(stream.record_event(None)?);
    }
    let rest = full_chunks * STAGING_LEN;
    if rest < n {
        stream.memcpy_htod(&values[rest..], &mut dst.slice_mut(rest..n))?;
    }
    // The staging buffers are freed below: their last DMAs must have finished.
    for event in copied.into_iter().flatten() {
        event.synchronize()?;
    }
    Ok(dst)
}

/// Downloads the first `n` elements of `src` on `device`'s stream into a new host vector, each
/// converted by `convert`, through the staging buffers (the DMA of one chunk overlaps the
/// parallel copy-out of the other; the output's pages are first touched by many threads).
pub fn download_pinned<S, R>(
    device: &GpuDevice,
    src: &CudaSlice<S>,
    n: usize,
    convert: impl Fn(S) -> R + Sync,
) -> Result<Vec<R>, GpuError>
where
    S: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync,
    R: Copy + Default + Send + Sync,
{
    let (context, stream) = (device.context(), device.stream());
    let copy_out = |to: &mut [R], from: &[S]| {
        to.par_chunks_mut(COPY_GRAIN)
            .zip(from.par_chunks(COPY_GRAIN))
            .for_each(|(to, from)| {
                for (t, &f) in to.iter_mut().zip(from) {
                    *t = convert(f);
                }
            });
    };
    let mut out = vec![R::default(); n];
    let full_chunks = n / STAGING_LEN;
    if full_chunks < 2 {
        let host = stream.clone_dtoh(&src.slice(0..n))?;
        copy_out(&mut out, &host);
        return Ok(out);
    }
    let mut staging = [
        pinned::<S>(context, STAGING_LEN)?,
        pinned::<S>(context, STAGING_LEN)?,
    ];
    let chunk_view = |chunk: usize| src.slice(chunk * STAGING_LEN..(chunk + 1) * STAGING_LEN);
    // As in `upload_pinned`: an explicit event per buffer marks its DMA's completion.
    let mut copied: [Option<CudaEvent>; 2] = [None, None];
    for (chunk, buffer) in staging.iter_mut().enumerate() {
        stream.memcpy_dtoh(&chunk_view(chunk), buffer)?;
        copied[chunk] = Some(stream.record_event(None)?);
    }
    for chunk in 0..full_chunks {
        let slot = chunk % 2;
        if let Some(event) = copied[slot].take() {
            // The host reads this buffer only once its DMA has finished.
            event.synchronize()?;
        }
        let buffer = &mut staging[slot];
        {
            let host = buffer.as_slice()?;
            copy_out(
                &mut out[chunk * STAGING_LEN..(chunk + 1) * STAGING_LEN],
                host,
            );
        }
        if chunk + 2 < full_chunks {
            stream.memcpy_dtoh(&chunk_view(chunk + 2), buffer)?;
            copied[slot] = Some(stream.record_event(None)?);
        }
    }
    let rest = full_chunks * STAGING_LEN;
    if rest < n {
        let host = stream.clone_dtoh(&src.slice(rest..n))?;
        copy_out(&mut out[rest..], &host);
    }
    Ok(out)
}

/// One page-locked staging buffer of `len` elements (cached, not write-combined: the host
/// both writes and reads them).
fn pinned<T: DeviceRepr + ValidAsZeroBits>(
    context: &Arc<CudaContext>,
    len: usize,
) -> Result<PinnedHostSlice<T>, GpuError> {
    // SAFETY: the buffer is written (host copy or DMA) before it is read, and only through
    // `as_mut_slice`/`as_slice`, which wait for the buffer's pending copies.
    Ok(unsafe { context.alloc_pinned_with_flags::<T>(len, 0) }?)
}

/// Elements per piece of [`PinnedStaging`] (8 MiB of f32).
const PIECE: usize = 1 << 21;
/// Pieces of [`PinnedStaging`] in flight at once. On an H200 (2026-11-28, 256 MiB through rayon
/// fills) 2 × 4 MiB moved 20 GB/s, 2 × 8 MiB 29, 3 × 8 MiB 38 and 4 × 8 MiB 43, against 55 GB/s
/// for the DMA alone: each piece pays a wait and a fill start-up, so fewer, larger pieces with
/// more of them queued keep the copy engine busy.
const BUFFERS: usize = 4;
/// Elements each rayon task copies into a piece of [`PinnedStaging`] (256 KiB).
const FILL_CHUNK: usize = 1 << 16;

/// [`BUFFERS`] pinned host buffers of f32 kept for repeated host → device copies into existing
/// device buffers (a renderer streaming chunks every frame), used in turn so that filling one
/// overlaps the DMA of the others.
pub struct PinnedStaging {
    pinned: Vec<PinnedHostSlice<f32>>,
    /// Per buffer, the event after a copy from a plain slice of it (a short last piece), which
    /// the buffer's own event does not cover: waited for before the host writes it again.
    short: Vec<Option<CudaEvent>>,
    next: usize,
}

impl std::fmt::Debug for PinnedStaging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedStaging").finish_non_exhaustive()
    }
}

impl Drop for PinnedStaging {
    /// A short copy may still read a buffer: it must land before the buffer is freed.
    fn drop(&mut self) {
        for event in self.short.iter().flatten() {
            // An error here means the context is gone, and the copy with it.
            let _ = event.synchronize();
        }
    }
}

impl PinnedStaging {
    /// [`BUFFERS`] pinned buffers of [`PIECE`] floats.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Self, GpuError> {
        let ctx = stream.context();
        let pinned = (0..BUFFERS)
            // SAFETY: the buffers are written (a fill or a DMA) before any byte is read.
            .map(|_| unsafe { ctx.alloc_pinned_with_flags::<f32>(PIECE, 0) })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            pinned,
            short: (0..BUFFERS).map(|_| None).collect(),
            next: 0,
        })
    }

    /// The next buffer in turn, once a short copy from it (if any) has finished; its slot.
    fn take_next(&mut self) -> Result<(usize, &mut PinnedHostSlice<f32>), GpuError> {
        let slot = self.next;
        self.next = (slot + 1) % BUFFERS;
        if let Some(event) = self.short[slot].take() {
            event.synchronize()?;
        }
        Ok((slot, &mut self.pinned[slot]))
    }

    /// Copies `src` into `dst` (same length) on `stream`, asynchronously through the pinned
    /// buffers (a buffer is reused only once its previous copy has finished); the tail shorter
    /// than a piece goes directly.
    pub fn upload(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &[f32],
        dst: &mut CudaViewMut<'_, f32>,
    ) -> Result<(), GpuError> {
        let full = src.len() / PIECE * PIECE;
        for start in (0..full).step_by(PIECE) {
            let (_, pinned) = self.take_next()?;
            // Waits for this buffer's previous copy, then fills it with rayon threads: one
            // thread's memcpy into pinned memory (~6 GB/s) was the upload's bottleneck, well
            // below the DMA's rate.
            pinned
                .as_mut_slice()?
                .par_chunks_mut(FILL_CHUNK)
                .zip(src[start..start + PIECE].par_chunks(FILL_CHUNK))
                .for_each(|(dst, src)| dst.copy_from_slice(src));
            stream.memcpy_htod(pinned, &mut dst.slice_mut(start..start + PIECE))?;
        }
        if full < src.len() {
            stream.memcpy_htod(&src[full..], &mut dst.slice_mut(full..src.len()))?;
        }
        Ok(())
    }
    /// Fills `dst` piece by piece through the pinned buffers: `fill(start, piece)` writes
    /// elements `start..start + piece.len()` (it may use rayon threads, and may transform
    /// values on the way), then the piece is copied on `stream` while the next one is filled.
    /// Pieces start at multiples of [`STAGING_PIECE`]; returns `fill`'s results in order.
    pub fn upload_filled<R>(
        &mut self,
        stream: &Arc<CudaStream>,
        dst: &mut CudaViewMut<'_, f32>,
        mut fill: impl FnMut(usize, &mut [f32]) -> R,
    ) -> Result<Vec<R>, GpuError> {
        let len = dst.len();
        let mut results = Vec::with_capacity(len.div_ceil(PIECE));
        for start in (0..len).step_by(PIECE) {
            let end = (start + PIECE).min(len);
            let (slot, pinned) = self.take_next()?;
            // Waits for this buffer's previous copy before the host writes it again.
            let host = &mut pinned.as_mut_slice()?[..end - start];
            results.push(fill(start, host));
            if end - start == PIECE {
                stream.memcpy_htod(&*pinned, &mut dst.slice_mut(start..end))?;
            } else {
                // The short last piece: a plain slice of the pinned buffer. cudarc neither
                // waits for nor records a copy from a plain slice (a pageable copy is done when
                // the call returns, a pinned one is not), so the buffer's own event would not
                // cover it: an event recorded after it is waited for when the buffer comes round
                // again (take_next), and the next array's pieces queue meanwhile (a full wait
                // here drained the copy stream after every array).
                let host = &pinned.as_slice()?[..end - start];
                stream.memcpy_htod(host, &mut dst.slice_mut(start..end))?;
                self.short[slot] = Some(stream.record_event(None)?);
            }
        }
        Ok(results)
    }
}

impl PinnedStaging {
    /// `src` copied to a new host vector on `stream` through the pinned buffers: the DMAs of up
    /// to [`BUFFERS`] pieces are queued at once, and each piece is copied out by rayon threads
    /// as soon as its own DMA has landed, while the later ones still run (a download into
    /// pageable memory goes through the driver's single-threaded staging and faults the fresh
    /// pages on one thread). The vector is not zeroed first: every element is written by the
    /// copy, and zeroing a recycled allocation (what `vec![0; n]` does) cost one thread about a
    /// millisecond for a 2048² RGB image.
    pub fn download<T>(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &CudaView<'_, T>,
    ) -> Result<Vec<T>, GpuError>
    where
        T: DeviceRepr + bytemuck::Pod + Send + Sync,
    {
        let mut host = Vec::with_capacity(src.len());
        self.download_into(stream, src, &mut host.spare_capacity_mut()[..src.len()])?;
        // SAFETY: download_into wrote all src.len() elements (it returns Ok only then), and T
        // is Pod, so every bit pattern written is a valid T.
        unsafe { host.set_len(src.len()) };
        Ok(host)
    }

    /// Copies `src` into `out` (same length), as [`PinnedStaging::download`] describes. The
    /// pinned buffers are cut into pieces of [`DOWNLOAD_PIECE_BYTES`] and every piece's DMA is
    /// queued at once (as many as the buffers hold), so the copy engine runs without a gap while
    /// rayon threads copy out each piece as soon as it has landed; only the last piece's copy-out
    /// follows the DMAs.
    fn download_into<T>(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &CudaView<'_, T>,
        out: &mut [std::mem::MaybeUninit<T>],
    ) -> Result<(), GpuError>
    where
        T: DeviceRepr + bytemuck::Pod + Send + Sync,
    {
        let size = std::mem::size_of::<T>().max(1);
        // Elements of T per pinned buffer of PIECE f32 (T is 1, 2 or 4 bytes: f32's alignment
        // covers it), and per download piece (a divisor of it: both are powers of two).
        let per_buffer = PIECE * std::mem::size_of::<f32>() / size;
        let per_piece = (DOWNLOAD_PIECE_BYTES / size).clamp(1, per_buffer);
        let pieces_per_buffer = per_buffer / per_piece;
        let ring = BUFFERS * pieces_per_buffer;
        // A short upload copy may still read a buffer: it must land before a DMA overwrites it.
        for short in &mut self.short {
            if let Some(event) = short.take() {
                event.synchronize()?;
            }
        }
        let mut in_flight = std::collections::VecDeque::with_capacity(ring);
        let (mut queued, mut slot) = (0, 0);
        loop {
            while queued < out.len() && in_flight.len() < ring {
                let piece = queued..(queued + per_piece).min(out.len());
                let (buffer, at) = (
                    slot / pieces_per_buffer,
                    (slot % pieces_per_buffer) * per_piece,
                );
                // Waits for the buffer's own pending copies (an upload's), if any.
                let host: &mut [T] = bytemuck::cast_slice_mut(self.pinned[buffer].as_mut_slice()?);
                // A plain slice of pinned memory: cudarc neither waits for nor records a copy
                // into it, so an event recorded after it says when the piece has landed. Ring
                // slot `slot` is free: the piece that used it before was popped and copied out.
                stream.memcpy_dtoh(&src.slice(piece.clone()), &mut host[at..at + piece.len()])?;
                queued = piece.end;
                in_flight.push_back((buffer, at, piece, stream.record_event(None)?));
                slot = (slot + 1) % ring;
            }
            let Some((buffer, at, piece, landed)) = in_flight.pop_front() else {
                return Ok(());
            };
            landed.synchronize()?;
            let host: &[T] = bytemuck::cast_slice(self.pinned[buffer].as_slice()?);
            out[piece.clone()]
                .par_chunks_mut(FILL_CHUNK)
                .zip(host[at..at + piece.len()].par_chunks(FILL_CHUNK))
                .for_each(|(o, h)| {
                    for (o, &h) in o.iter_mut().zip(h) {
                        o.write(h);
                    }
                });
        }
    }
}

/// Bytes per piece of [`PinnedStaging::download`] (a power of two up to a buffer's 8 MiB): a
/// 2048² RGB image (12.6 MB) is six pieces, so the copy-out left after the last DMA is a sixth
/// of the image, where two 8 MiB pieces left 4.2 MB of it. On an H200 the DMA of the whole
/// image into pinned memory took 0.25 ms as one copy and 0.26 ms as 2 MiB copies (0.27 ms as
/// 1 MiB ones).
const DOWNLOAD_PIECE_BYTES: usize = 1 << 21;

/// Elements per piece of [`PinnedStaging::upload_filled`] (a multiple of 2^16).
pub const STAGING_PIECE: usize = PIECE;
