//! Drawing binned splats into τ (see `splat.rs`): the tiles, with hot tiles cut into row
//! bands, are independent units that any thread draws into its own tile buffer and writes
//! straight into its rectangle of τ (or tone-maps straight into its rectangle of the 8-bit
//! image, where only the image is wanted).
//!
//! Why bands: clustered data put a large share of the work into a few tiles; one thread per
//! tile then leaves the others idle at the end of the frame, and the frame stops scaling with
//! the thread count. A band walks the tile's records in the same order as the whole tile and
//! draws only its rows, so every pixel still sums the same contributions in the same order: τ
//! has the same bits for any split (and so for any thread count).
//! Why per-thread buffers: a tile buffer is written, then read back at once by the merge, while
//! it is still in the core's cache; no frame-sized set of tile buffers goes through memory.

use super::bins::ChunkBins;
use super::exp::Isa;
use super::grid::{Grid, TILE_PX};
use super::tile::{Binned, Unit, render_unit_for};
use crate::render::tau::TauBuffer;
use crate::render::tone::{ToneSettings, tone8_chunk_for};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// Default most row bands per hot tile (8 rows each at TILE_PX = 64).
pub(super) const DEFAULT_MAX_BANDS: usize = 8;
/// Units of work aimed at per thread: a tile costing more than total / (threads · this) is
/// split (more units even out the tail of the frame; each band repeats a splat's set-up).
const UNITS_PER_THREAD: u64 = 8;
/// How [`super::Splatter::draw_into`] writes the tiles into τ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// τ += tiles (τ keeps what it held).
    Add,
    /// τ = tiles (τ is resized, and every pixel written; nothing needs zeroing first).
    Overwrite,
}

/// Where the time of the last frame of a [`super::Splatter`] went: wall time of the two
/// parallel passes and the time summed over all their tasks ("busy"); busy / (wall · threads)
/// is the pass's parallel efficiency.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SplatProfile {
    /// Wall seconds of the projection and binning pass.
    pub bin_wall_s: f64,
    /// Seconds in projection and classification, summed over chunks.
    pub produce_busy_s: f64,
    /// Seconds in the counting sort by tile, summed over chunks.
    pub sort_busy_s: f64,
    /// Input chunks binned.
    pub chunks: usize,
    /// Wall seconds of the drawing pass (planning, tiles and merge).
    pub draw_wall_s: f64,
    /// Seconds drawing tile units, summed over units.
    pub draw_busy_s: f64,
    /// Seconds writing units into τ, summed over units.
    pub merge_busy_s: f64,
    /// Seconds of the slowest unit (drawing and writing).
    pub slowest_unit_s: f64,
    /// Units drawn (tiles plus the extra bands of split tiles).
    pub units: usize,
    /// Tiles split into bands.
    pub split_tiles: usize,
}

/// Reusable scratch of the drawing pass.
#[derive(Debug, Default)]
pub(super) struct DrawScratch {
    tile_cost: Vec<u64>,
    units: Vec<Unit>,
    /// Tile buffers, one per rayon thread (R, G, B planes of up to PLANE_LEN values).
    buffers: Vec<Mutex<Vec<f32>>>,
}

/// A frame-sized RGB buffer (τ, or the 8-bit image) shared by the units, each of which writes
/// only its own rectangle.
#[derive(Clone, Copy)]
struct SharedRows<T> {
    ptr: *mut T,
    width: usize,
    height: usize,
}

// SAFETY: `SharedRows` is only used inside `DrawScratch::draw`, while the buffer it points to is
// mutably borrowed, and each unit touches a rectangle of it that no other unit touches.
unsafe impl<T: Send> Send for SharedRows<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedRows<T> {}

impl<T> SharedRows<T> {
    /// `buffer` as `width`×`height` RGB pixels, or `None` when it has another length.
    fn new(buffer: &mut [T], width: usize, height: usize) -> Option<Self> {
        (buffer.len() == width * height * 3).then_some(Self {
            ptr: buffer.as_mut_ptr(),
            width,
            height,
        })
    }

    /// Columns `x0..x1` (RGB values) of row `y`, or an empty slice if out of range.
    ///
    /// # Safety
    /// No other live reference may overlap that part of the row.
    #[allow(clippy::mut_from_ref)]
    unsafe fn row(&self, y: usize, x0: usize, x1: usize) -> &mut [T] {
        if y >= self.height || x0 > x1 || x1 > self.width {
            return &mut [];
        }
        // SAFETY: in bounds of the width·height·3 buffer (checked above); exclusive by the
        // caller's guarantee.
        unsafe {
            std::slice::from_raw_parts_mut(self.ptr.add((y * self.width + x0) * 3), (x1 - x0) * 3)
        }
    }
}

/// Where a drawing pass puts the frame.
pub(super) enum Target<'a> {
    /// τ (already sized to the grid), written or added to.
    Tau(&'a mut TauBuffer, Merge),
    /// Only the 8-bit tone map (RGB, row 0 at the top, width·height·3 bytes) of the τ drawn,
    /// at τ scale `tau_scale`: each unit tone-maps its rows while they are in its cache, and τ
    /// itself is never stored (no pass over a frame-sized τ, no fresh 12 bytes a pixel).
    Image8 {
        pixels: &'a mut [u8],
        tau_scale: f32,
        tone: ToneSettings,
    },
}

/// [`Target`] as the units share it.
#[derive(Clone, Copy)]
enum Dest {
    Tau(SharedRows<f32>, Merge),
    Image8(SharedRows<u8>, f32, ToneSettings),
}

/// How one drawing pass draws: the instruction set, the planes and the band limit.
#[derive(Debug, Clone, Copy)]
pub(super) struct DrawOptions {
    /// Instruction set of the tile loops (one the CPU has).
    pub isa: Isa,
    /// Planes per tile: 1 (grey) or 3.
    pub channels: usize,
    /// Most row bands per hot tile (1: never split).
    pub max_bands: usize,
}

impl DrawScratch {
    /// Draws every tile of `binned` into `target` (sized to the grid, else nothing is drawn).
    pub(super) fn draw(
        &mut self,
        options: DrawOptions,
        binned: Binned<'_>,
        target: Target<'_>,
        profile: &mut SplatProfile,
    ) {
        let DrawOptions {
            isa,
            channels,
            max_bands,
        } = options;
        let Binned { grid, chunks } = binned;
        let start = Instant::now();
        let threads = rayon::current_num_threads().max(1);
        profile.split_tiles = self.plan(grid, chunks, max_bands, threads);
        profile.units = self.units.len();
        if self.buffers.len() < threads {
            self.buffers.resize_with(threads, Mutex::default);
        }
        let (width, height) = (grid.width as usize, grid.height as usize);
        let dest = match target {
            Target::Tau(tau, merge) => {
                SharedRows::new(&mut tau.data, width, height).map(|rows| Dest::Tau(rows, merge))
            }
            Target::Image8 {
                pixels,
                tau_scale,
                tone,
            } => SharedRows::new(pixels, width, height)
                .map(|rows| Dest::Image8(rows, tau_scale, tone)),
        };
        let Some(dest) = dest else {
            return;
        };
        let buffers = &self.buffers;
        let draw_ns = AtomicU64::new(0);
        let merge_ns = AtomicU64::new(0);
        let slowest_ns = AtomicU64::new(0);
        self.units.par_iter().with_max_len(1).for_each(|unit| {
            let unit_start = Instant::now();
            let slot = rayon::current_thread_index().unwrap_or(0) % buffers.len();
            let mut buffer = buffers[slot].lock().unwrap_or_else(PoisonError::into_inner);
            let t = unit.tile as usize;
            let (row_lo, row_hi) = (unit.row_lo as usize, unit.row_hi as usize);
            let plane_len = render_unit_for(isa, channels, *unit, binned, &mut buffer);
            let merge_start = Instant::now();
            let x0 = (t % grid.tiles_x) * TILE_PX;
            let x1 = (x0 + TILE_PX).min(grid.width as usize);
            let y0 = (t / grid.tiles_x) * TILE_PX;
            let write = |dst: &mut [f32], at: usize, merge: Merge| {
                if channels == 1 {
                    write_row_grey(dst, &buffer, plane_len, at, merge);
                } else {
                    write_row(dst, &buffer, plane_len, at, merge);
                }
            };
            // τ of one row of the unit, for the tone map.
            let mut row_tau = [0.0f32; TILE_PX * 3];
            for ry in row_lo..row_hi {
                let at = (ry - row_lo) * TILE_PX;
                // SAFETY (both rows): units cover disjoint rectangles of the frame (tiles are
                // disjoint, and the bands of one tile are disjoint row ranges), so this row span
                // is touched by this unit only; `dest` lives no longer than the borrow of the
                // target.
                match dest {
                    Dest::Tau(rows, merge) => {
                        write(unsafe { rows.row(y0 + ry, x0, x1) }, at, merge)
                    }
                    Dest::Image8(rows, tau_scale, tone) => {
                        let out = unsafe { rows.row(y0 + ry, x0, x1) };
                        let row_tau = &mut row_tau[..out.len()];
                        write(row_tau, at, Merge::Overwrite);
                        tone8_chunk_for(isa, row_tau, tau_scale, &tone, out);
                    }
                }
            }
            let done = Instant::now();
            draw_ns.fetch_add(nanos(merge_start - unit_start), Ordering::Relaxed);
            merge_ns.fetch_add(nanos(done - merge_start), Ordering::Relaxed);
            slowest_ns.fetch_max(nanos(done - unit_start), Ordering::Relaxed);
        });
        profile.draw_busy_s = draw_ns.into_inner() as f64 * 1e-9;
        profile.merge_busy_s = merge_ns.into_inner() as f64 * 1e-9;
        profile.slowest_unit_s = slowest_ns.into_inner() as f64 * 1e-9;
        profile.draw_wall_s = start.elapsed().as_secs_f64();
    }

    /// Lists the units: every tile, cut into row bands where its work estimate is far above
    /// the mean share of a thread. Returns how many tiles were split.
    fn plan(
        &mut self,
        grid: &Grid,
        chunks: &[ChunkBins],
        max_bands: usize,
        threads: usize,
    ) -> usize {
        let n_tiles = grid.n_tiles();
        self.tile_cost.clear();
        self.tile_cost.resize(n_tiles, 0);
        self.tile_cost
            .par_iter_mut()
            .enumerate()
            .with_min_len(64)
            .for_each(|(t, cost)| {
                *cost = chunks
                    .iter()
                    .map(|c| u64::from(c.cost.get(t).copied().unwrap_or(0)))
                    .sum();
            });
        let total: u64 = self.tile_cost.iter().sum();
        let target = (total / (threads as u64 * UNITS_PER_THREAD)).max(1);
        self.units.clear();
        let mut split = 0;
        for (t, &cost) in self.tile_cost.iter().enumerate() {
            let y0 = (t / grid.tiles_x) * TILE_PX;
            let tile_rows = TILE_PX.min(grid.height as usize - y0);
            let bands = if threads > 1 {
                (cost.div_ceil(target) as usize).clamp(1, max_bands.min(tile_rows))
            } else {
                1
            };
            split += usize::from(bands > 1);
            let band_rows = tile_rows.div_ceil(bands);
            for row_lo in (0..tile_rows).step_by(band_rows) {
                self.units.push(Unit {
                    tile: t as u32,
                    row_lo: row_lo as u16,
                    row_hi: (row_lo + band_rows).min(tile_rows) as u16,
                });
            }
        }
        split
    }
}

/// Writes (or adds) one row of a unit's single plane (a grey frame: r = g = b for every splat,
/// so the plane holds each channel's bits; `plane_len` 0: nothing drawn) into all three
/// channels of its span of τ.
#[inline]
fn write_row_grey(dst: &mut [f32], buffer: &[f32], plane_len: usize, at: usize, merge: Merge) {
    let n = dst.len() / 3;
    if plane_len == 0 || buffer.len() < plane_len || at + n > plane_len {
        if merge == Merge::Overwrite {
            dst.fill(0.0);
        }
        return;
    }
    let src = &buffer[at..at + n];
    match merge {
        Merge::Add => dst.chunks_exact_mut(3).zip(src).for_each(|(d, v)| {
            d[0] += v;
            d[1] += v;
            d[2] += v;
        }),
        Merge::Overwrite => dst
            .chunks_exact_mut(3)
            .zip(src)
            .for_each(|(d, v)| d.fill(*v)),
    }
}

/// Writes (or adds) one row of a unit's R, G, B planes (`plane_len` values each, the row at
/// `at`; `plane_len` 0: nothing drawn, τ = 0 or unchanged) into its RGB span of τ.
#[inline]
fn write_row(dst: &mut [f32], buffer: &[f32], plane_len: usize, at: usize, merge: Merge) {
    let n = dst.len() / 3;
    if plane_len == 0 || buffer.len() < 3 * plane_len || at + n > plane_len {
        if merge == Merge::Overwrite {
            dst.fill(0.0);
        }
        return;
    }
    let (r, gb) = buffer.split_at(plane_len);
    let (g, b) = gb.split_at(plane_len);
    let src = r[at..at + n].iter().zip(&g[at..at + n]).zip(&b[at..at + n]);
    match merge {
        Merge::Add => dst
            .chunks_exact_mut(3)
            .zip(src)
            .for_each(|(d, ((r, g), b))| {
                d[0] += r;
                d[1] += g;
                d[2] += b;
            }),
        Merge::Overwrite => dst
            .chunks_exact_mut(3)
            .zip(src)
            .for_each(|(d, ((r, g), b))| {
                d[0] = *r;
                d[1] = *g;
                d[2] = *b;
            }),
    }
}

/// Nanoseconds of `d`, saturating.
pub(super) fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
