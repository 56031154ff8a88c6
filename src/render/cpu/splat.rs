//! Tiled CPU splatter: τ += exp(−d²/σ²)·e over the disc d ≤ R of every splat (DESIGN §4; notes §9).
//!
//! Screen tiles of [`TILE_PX`]² pixels (or row bands of a hot tile) are each owned by one rayon
//! task, so there are no atomics.
//! The input is cut into chunks of a fixed length ([`chunk_len`], a function of the image size
//! only). Each chunk is produced (projected) and binned by tile in one pass on one thread
//! ([`Splatter::bin`]): a splat whose footprint box is at most [`SMALL_SIDE`]² pixels inside one
//! tile (most particles when R0 ≤ 1 px) becomes a [`SmallSplat`] of 40 bytes, 32 in grey frames
//! (its pixels and their separable weights, computed once), every other splat goes to each tile
//! its footprint box overlaps: as a tiny record (a `SmallSplat` of its part of that tile) where
//! that part is at most [`SMALL_SIDE`]² pixels, else as a copy (`bins.rs`). Each tile
//! then walks the chunks in input order, adding a chunk's small records first and its other
//! splats after them in input order ([`Splatter::draw_into`]), so every pixel sums its
//! contributions in one fixed order whatever the number of threads: the result is bit-for-bit
//! deterministic. All scratch lives in a [`Splatter`] and is reused across frames; no allocation
//! happens per particle.
//!
//! The weight is evaluated as the separable product exp(−dx²/σ²)·exp(−dy²/σ²) (equal to
//! exp(−d²/σ²) up to f32 rounding), with the column factors computed once per splat and tile,
//! by the inline polynomial [`exp_f32`] (so the weight loops vectorise). The hot loops run
//! compiled for the CPU's widest vectors ([`Isa`], chosen at run time); no fused multiply-add is
//! used, so every instruction set gives the same bits.
//! A pixel (i, j) is inside when dx² + dy² ≤ R² in f32, with dx = (i + 0.5) − x, dy = (j + 0.5) − y.
//! Tile buffers hold R, G and B planes, so a splat's row is three contiguous runs that the row
//! loop updates with the column weights as they are (vectorised, no shuffles); each drawn tile or
//! band is interleaved into its rectangle of τ at once (`draw.rs`).

use super::bins::{ChunkBins, SortScratch};
use super::draw::{self, Merge, SplatProfile, Target, nanos};
use super::exp::Isa;
use super::grid::Grid;
use super::records::Staging;
use super::sink::ChunkSink;
use super::tile::Binned;
use crate::render::project::Splat;
use crate::render::tau::TauBuffer;
use crate::render::tone::ToneSettings;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// Shortest chunk of input splats.
const MIN_CHUNK: usize = 1 << 15;

/// Input splats per chunk for a `width`×`height` image: fixed by the image alone (never by the
/// thread count, which would change the summation order), and long enough that the per-chunk tile
/// offsets stay small next to the chunk's records.
pub fn chunk_len(width: u32, height: u32) -> usize {
    MIN_CHUNK.max(Grid::new(width, height).n_tiles() * 16)
}

/// Which channels the splatter draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Channels {
    /// R, G and B.
    #[default]
    Rgb,
    /// Every splat has r = g = b (colour `none` for every species): one plane is drawn, from
    /// the first channel, and written into all three channels of τ (the same bits as [`Rgb`],
    /// since each channel gets the same operations on the same values).
    ///
    /// [`Rgb`]: Channels::Rgb
    Grey,
}

/// One thread's room for the chunk it bins: the staged records and the sort's working room.
#[derive(Debug, Default)]
struct ThreadScratch {
    staging: Staging,
    sort: SortScratch,
}

/// Reusable scratch of the tiled splatter.
#[derive(Debug, Default)]
pub struct Splatter {
    chunks: Vec<ChunkBins>,
    /// Draw units (tiles, or row bands of hot tiles) and per-thread tile buffers (boxed, like
    /// the profile, to keep the renderer small where it is held by value).
    draw: Box<draw::DrawScratch>,
    /// Most row bands a hot tile is split into (1: never split).
    max_bands: Option<usize>,
    /// Where the last frame's time went.
    profile: Box<SplatProfile>,
    /// Per-thread staging and sort room of the chunk being binned (indexed by rayon thread).
    staging: Vec<Mutex<ThreadScratch>>,
    /// Layout and chunk count of the last [`Splatter::bin`].
    binned: Option<(Grid, usize)>,
    /// Channels of the last [`Splatter::bin`].
    binned_channels: Channels,
    /// Draw [`Channels::Grey`] frames as three planes (to test and measure the one plane).
    grey_as_rgb: bool,
    /// Instruction set of the hot loops (detected on first use when `None`).
    isa: Option<Isa>,
}

impl Splatter {
    /// Empty scratch; grows on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty scratch whose hot loops use `isa` (the baseline where the CPU lacks it).
    pub fn with_isa(isa: Isa) -> Self {
        Self {
            isa: Some(isa.or_baseline()),
            ..Self::default()
        }
    }

    /// The instruction set of the hot loops (detected once; always one this CPU has).
    pub fn isa(&mut self) -> Isa {
        *self.isa.get_or_insert_with(Isa::detect)
    }

    /// Adds every splat into `tau` (τ += exp(−d²/σ²)·rgb for pixels with d ≤ R).
    pub fn splat_into(&mut self, splats: &[Splat], tau: &mut TauBuffer) {
        if splats.is_empty() || tau.width == 0 || tau.height == 0 {
            return;
        }
        let chunk = chunk_len(tau.width, tau.height);
        self.bin(
            tau.width,
            tau.height,
            splats.len().div_ceil(chunk),
            |c, sink| {
                let first = c * chunk;
                let last = (first + chunk).min(splats.len());
                for s in &splats[first..last] {
                    sink.push(s);
                }
            },
        );
        self.draw_into(tau, Merge::Add);
    }

    /// Produces and bins `n_chunks` chunks for a `width`×`height` image, in parallel:
    /// `produce(c, sink)` pushes chunk `c`'s splats in input order. Chunk boundaries must not
    /// depend on the thread count (use [`chunk_len`]) for the result to be deterministic.
    pub fn bin<F>(&mut self, width: u32, height: u32, n_chunks: usize, produce: F)
    where
        F: Fn(usize, &mut ChunkSink<'_>) + Sync,
    {
        self.bin_channels(width, height, Channels::Rgb, n_chunks, produce);
    }

    /// [`Splatter::bin`] for frames whose splats all have the channels `channels` (with
    /// [`Channels::Grey`] only the first channel of each splat is read).
    pub fn bin_channels<F>(
        &mut self,
        width: u32,
        height: u32,
        channels: Channels,
        n_chunks: usize,
        produce: F,
    ) where
        F: Fn(usize, &mut ChunkSink<'_>) + Sync,
    {
        let grid = Grid::new(width, height);
        let channels = if self.grey_as_rgb {
            Channels::Rgb
        } else {
            channels
        };
        let grey = channels == Channels::Grey;
        if self.chunks.len() < n_chunks {
            self.chunks.resize_with(n_chunks, ChunkBins::default);
        }
        let threads = rayon::current_num_threads().max(1);
        if self.staging.len() < threads {
            self.staging.resize_with(threads, Mutex::default);
        }
        let staging = &self.staging;
        let bin_start = Instant::now();
        let produce_ns = AtomicU64::new(0);
        let sort_ns = AtomicU64::new(0);
        self.chunks[..n_chunks]
            .par_iter_mut()
            .enumerate()
            .with_max_len(1)
            .for_each(|(c, bins)| {
                let produce_start = Instant::now();
                // The staging slot only holds this chunk's records until they are sorted, so
                // which thread's slot is used never changes the result.
                let slot = rayon::current_thread_index().unwrap_or(0) % staging.len();
                let mut slot = staging[slot].lock().unwrap_or_else(PoisonError::into_inner);
                let ThreadScratch {
                    staging: stage,
                    sort,
                } = &mut *slot;
                stage.clear();
                let mut sink = ChunkSink {
                    grid,
                    grey,
                    staging: stage,
                };
                produce(c, &mut sink);
                let sort_start = Instant::now();
                if grey {
                    bins.fill::<1>(stage, sort, &grid);
                } else {
                    bins.fill::<3>(stage, sort, &grid);
                }
                produce_ns.fetch_add(nanos(sort_start - produce_start), Ordering::Relaxed);
                sort_ns.fetch_add(nanos(sort_start.elapsed()), Ordering::Relaxed);
            });
        *self.profile = SplatProfile {
            bin_wall_s: bin_start.elapsed().as_secs_f64(),
            produce_busy_s: produce_ns.into_inner() as f64 * 1e-9,
            sort_busy_s: sort_ns.into_inner() as f64 * 1e-9,
            chunks: n_chunks,
            ..SplatProfile::default()
        };
        self.binned = Some((grid, n_chunks));
        self.binned_channels = channels;
    }

    /// Draws what the last [`Splatter::bin`] binned into `tau` (resized to that image under
    /// [`Merge::Overwrite`]; under [`Merge::Add`] it must already have that size, or nothing is
    /// drawn).
    pub fn draw_into(&mut self, tau: &mut TauBuffer, merge: Merge) {
        let Some((grid, n_chunks)) = self.binned.take() else {
            return;
        };
        let (width, height) = (grid.width as u32, grid.height as u32);
        match merge {
            Merge::Overwrite => tau.resize_for_overwrite(width, height),
            Merge::Add if (tau.width, tau.height) != (width, height) => return,
            Merge::Add => {}
        }
        self.draw_target(grid, n_chunks, Target::Tau(tau, merge));
    }

    /// Draws what the last [`Splatter::bin`] binned as its 8-bit tone map at τ scale
    /// `tau_scale` (the bytes of [`crate::render::tone_map`] of the τ that
    /// [`Splatter::draw_into`] would draw under [`Merge::Overwrite`]) into `pixels` (resized to
    /// width·height·3, RGB, row 0 at the top). τ is never stored.
    pub fn draw_image8(&mut self, pixels: &mut Vec<u8>, tau_scale: f32, tone: &ToneSettings) {
        let Some((grid, n_chunks)) = self.binned.take() else {
            return;
        };
        let len = grid.width as usize * grid.height as usize * 3;
        if pixels.capacity() < len {
            // Fresh zero pages, first touched by the parallel writers (as τ's in
            // `TauBuffer::resize_for_overwrite`).
            *pixels = vec![0; len];
        } else {
            pixels.resize(len, 0);
        }
        let target = Target::Image8 {
            pixels,
            tau_scale,
            tone: *tone,
        };
        self.draw_target(grid, n_chunks, target);
    }

    /// Draws the `n_chunks` chunks binned on `grid` into `target` (sized to its image).
    fn draw_target(&mut self, grid: Grid, n_chunks: usize, target: Target<'_>) {
        if grid.n_tiles() == 0 {
            return;
        }
        let isa = self.isa();
        let max_bands = self.max_bands.unwrap_or(draw::DEFAULT_MAX_BANDS);
        let chunks = &self.chunks[..n_chunks];
        let channels = match self.binned_channels {
            Channels::Rgb => 3,
            Channels::Grey => 1,
        };
        let options = draw::DrawOptions {
            isa,
            channels,
            max_bands,
        };
        let binned = Binned {
            grid: &grid,
            chunks,
        };
        self.draw.draw(options, binned, target, &mut self.profile);
    }

    /// Whether [`Channels::Grey`] frames are drawn as one plane (default `true`). The image
    /// bits are the same either way; `false` draws three planes (to test that and to measure
    /// what the single plane saves).
    pub fn set_grey_frames(&mut self, grey: bool) {
        self.grey_as_rgb = !grey;
    }

    /// Splits tiles whose work is far above the mean into at most `max_bands` row bands drawn
    /// on different threads (1: never split). The image bits are the same for any value: every
    /// pixel still sums its contributions in the same order.
    pub fn set_max_bands(&mut self, max_bands: usize) {
        self.max_bands = Some(max_bands.max(1));
    }

    /// Where the time of the last [`Splatter::bin`] and [`Splatter::draw_into`] went.
    pub fn profile(&self) -> SplatProfile {
        *self.profile
    }
}

/// Adds `splats` into `tau` with fresh scratch (see [`Splatter`] to reuse it across frames).
pub fn splat_into(splats: &[Splat], tau: &mut TauBuffer) {
    Splatter::new().splat_into(splats, tau);
}
