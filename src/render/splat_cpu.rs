//! Tiled CPU splatter: τ += exp(−d²/σ²)·e over the disc d ≤ R of every splat (issue 3; notes §9).
//!
//! Screen tiles of [`TILE_PX`]² pixels (or row bands of a hot tile) are each owned by one rayon
//! task, so there are no atomics.
//! The input is cut into chunks of a fixed length ([`chunk_len`], a function of the image size
//! only). Each chunk is produced (projected) and binned by tile in one pass on one thread
//! ([`Splatter::bin`]): a splat whose footprint box is at most [`SMALL_SIDE`]² pixels inside one
//! tile (most particles when R0 ≤ 1 px) becomes a [`SmallSplat`] of 40 bytes, 32 in grey frames
//! (its pixels and their separable weights, computed once), every other splat goes to each tile
//! its footprint box overlaps: as a tiny record (a `SmallSplat` of its part of that tile) where
//! that part is at most [`SMALL_SIDE`]² pixels, else as a copy (`splat_cpu_bins.rs`). Each tile
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
//! band is interleaved into its rectangle of τ at once (`splat_cpu_draw.rs`).

use super::project::{Splat, ceil_i32, floor_i32};
use super::tau::TauBuffer;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

#[path = "splat_cpu_bins.rs"]
mod bins;
#[path = "splat_cpu_draw.rs"]
mod draw;
use bins::ChunkBins;
#[path = "splat_cpu_exp.rs"]
pub mod exp;
#[path = "splat_cpu_lanes.rs"]
pub mod lanes;
use lanes::{SmallSplat, SmallStore, Staging};
#[path = "splat_cpu_tile.rs"]
mod tile;
pub use draw::SplatProfile;
pub use exp::{Isa, exp_f32};
use std::time::Instant;

/// Tile side in pixels.
pub const TILE_PX: usize = 64;
/// Pixels per tile.
const TILE_AREA: usize = TILE_PX * TILE_PX;
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

/// How [`Splatter::draw_into`] writes the tiles into τ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// τ += tiles (τ keeps what it held).
    Add,
    /// τ = tiles (τ is resized, and every pixel written; nothing needs zeroing first).
    Overwrite,
}

/// Largest footprint side (pixels) of a [`SmallSplat`].
pub const SMALL_SIDE: usize = 3;

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
    /// Per-thread staging of the chunk being binned (indexed by rayon thread).
    staging: Vec<Mutex<Staging>>,
    /// Layout and chunk count of the last [`Splatter::bin`].
    binned: Option<(Grid, usize)>,
    /// Channels of the last [`Splatter::bin`].
    binned_channels: Channels,
    /// Draw [`Channels::Grey`] frames as three planes (to test and measure the one plane).
    grey_as_rgb: bool,
    /// Instruction set of the hot loops (detected on first use when `None`).
    isa: Option<Isa>,
}

/// Receives one chunk's splats in input order (see [`Splatter::bin`]).
pub struct ChunkSink<'a> {
    grid: Grid,
    /// Stage one-channel small records (the frame is drawn as [`Channels::Grey`]).
    grey: bool,
    staging: &'a mut Staging,
}

/// Values per tile plane: TILE_AREA and a pad that vectors may run into past the last row (they
/// only ever add +0 there).
const PLANE_LEN: usize = TILE_AREA + tile::PLANE_PAD;

/// Tile layout of an image.
#[derive(Debug, Clone, Copy)]
struct Grid {
    width: i32,
    height: i32,
    tiles_x: usize,
    tiles_y: usize,
}

impl Grid {
    fn new(width: u32, height: u32) -> Self {
        Self {
            width: width as i32,
            height: height as i32,
            tiles_x: (width as usize).div_ceil(TILE_PX),
            tiles_y: (height as usize).div_ceil(TILE_PX),
        }
    }

    fn n_tiles(&self) -> usize {
        self.tiles_x * self.tiles_y
    }
}

/// Tiles (x0, x1, y0, y1 inclusive) holding the pixels of a box (x0, x1, y0, y1, clipped to the
/// image).
#[inline]
fn tiles_of([i0, i1, j0, j1]: [i32; 4]) -> [usize; 4] {
    let t = TILE_PX as i32;
    [i0 / t, i1 / t, j0 / t, j1 / t].map(|v| v as usize)
}

/// The splat's footprint box: columns i with (i + 0.5 − x)² ≤ R² and rows likewise, evaluated
/// in f32 exactly as the per-pixel test, clamped to [x_lo, x_hi] × [y_lo, y_hi]. `None` when
/// empty or when the splat is not finite.
#[inline(always)]
fn pixel_box(s: &Splat, x_lo: i32, x_hi: i32, y_lo: i32, y_hi: i32) -> Option<[i32; 4]> {
    if !splat_is_finite(s) {
        return None;
    }
    let cut2 = s.cut_px * s.cut_px;
    let (i0, i1) = sample_range(s.x_px, s.cut_px, cut2);
    let (j0, j1) = sample_range(s.y_px, s.cut_px, cut2);
    let b = [i0.max(x_lo), i1.min(x_hi), j0.max(y_lo), j1.min(y_hi)];
    (b[0] <= b[1] && b[2] <= b[3]).then_some(b)
}

/// Whether a splat can be drawn (finite centre and cut, σ > 0).
#[inline(always)]
fn splat_is_finite(s: &Splat) -> bool {
    s.cut_px >= 0.0
        && s.sigma_px > 0.0
        && s.x_px.is_finite()
        && s.y_px.is_finite()
        && s.cut_px.is_finite()
}

/// Indices i with ((i + 0.5) − centre)² ≤ cut² (f32): ceil/floor of centre ∓ cut − 0.5, then
/// moved by one where f32 rounding put an end on the wrong side of the exact test.
#[inline(always)]
fn sample_range(centre: f32, cut: f32, cut2: f32) -> (i32, i32) {
    let inside = |i: i32| {
        let d = (i as f32 + 0.5) - centre;
        d * d <= cut2
    };
    let mut lo = ceil_i32(centre - cut - 0.5);
    let mut hi = floor_i32(centre + cut - 0.5);
    if inside(lo.saturating_sub(1)) {
        lo = lo.saturating_sub(1);
    } else if !inside(lo) {
        lo = lo.saturating_add(1);
    }
    if inside(hi.saturating_add(1)) {
        hi = hi.saturating_add(1);
    } else if !inside(hi) {
        hi = hi.saturating_sub(1);
    }
    (lo, hi)
}

impl ChunkSink<'_> {
    /// Takes the next splat of the chunk (input order is kept).
    #[inline(always)]
    pub fn push(&mut self, s: &Splat) {
        if !splat_is_finite(s) {
            return;
        }
        let cut2 = s.cut_px * s.cut_px;
        let (i0, i1) = sample_range(s.x_px, s.cut_px, cut2);
        let (j0, j1) = sample_range(s.y_px, s.cut_px, cut2);
        if i0 > i1 || j0 > j1 {
            return;
        }
        let side = SMALL_SIDE as i32 - 1;
        if i1 - i0 > side || j1 - j0 > side {
            self.staging.large.push(*s);
            return;
        }
        let grid = &self.grid;
        let [c0, c1, r0, r1] = [
            i0.max(0),
            i1.min(grid.width - 1),
            j0.max(0),
            j1.min(grid.height - 1),
        ];
        if c0 > c1 || r0 > r1 {
            return;
        }
        let t = TILE_PX as i32;
        if c0 / t != c1 / t || r0 / t != r1 / t {
            self.staging.large.push(*s);
            return;
        }
        let tile = ((r0 / t) as usize * grid.tiles_x + (c0 / t) as usize) as u32;
        if self.grey {
            self.push_small::<1>(s, [c0, c1, r0, r1], tile);
        } else {
            self.push_small::<3>(s, [c0, c1, r0, r1], tile);
        }
    }

    /// Stages the small record of `C` channels of splat `s` over box `b` (inside tile `tile`),
    /// unless none of its pixels is inside the disc.
    #[inline(always)]
    fn push_small<const C: usize>(&mut self, s: &Splat, b: [i32; 4], tile: u32)
    where
        Staging: SmallStore<C>,
    {
        let record = SmallSplat::<C>::of_box(s, b);
        if record.mask != 0 {
            self.staging.push_small(tile, record);
        }
    }
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
                let mut stage = staging[slot].lock().unwrap_or_else(PoisonError::into_inner);
                stage.clear();
                let mut sink = ChunkSink {
                    grid,
                    grey,
                    staging: &mut stage,
                };
                produce(c, &mut sink);
                let sort_start = Instant::now();
                if grey {
                    bins.fill::<1>(&stage, &grid);
                } else {
                    bins.fill::<3>(&stage, &grid);
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
        self.draw.draw(
            isa,
            channels,
            &grid,
            chunks,
            max_bands,
            tau,
            merge,
            &mut self.profile,
        );
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

/// Nanoseconds of `d`, saturating.
fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Adds `splats` into `tau` with fresh scratch (see [`Splatter`] to reuse it across frames).
pub fn splat_into(splats: &[Splat], tau: &mut TauBuffer) {
    Splatter::new().splat_into(splats, tau);
}

#[cfg(test)]
#[path = "splat_cpu_tests.rs"]
mod tests;
