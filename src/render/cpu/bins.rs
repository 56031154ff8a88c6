//! One chunk's records sorted by tile (see `splat.rs`): its small records, then its other
//! splats in input order, each either a *tiny* record or a general splat.
//!
//! Why tiny records: at R0 = 1 px most non-small splats are footprints of a few pixels that cross
//! a tile edge (or are a little wider than the small box); drawn the general way
//! (`tile::splat_one`: footprint search, 8-wide column and row weights, masked 8-wide rows) they
//! are about half of the tile pass. Where a splat's footprint box is at most [`SMALL_SIDE`]²
//! pixels, the sort stores its part in each tile as a [`SmallSplat`] (the tile's pixels, mask
//! and weights, from `SmallSplat::of_box` with the f32 operations of `splat_one`), drawn by the
//! small code. It stays in the tile's list of other
//! splats, at its input position (a kind byte per entry says which list the next entry comes
//! from), so every pixel still sums its contributions in the documented order: τ has the same
//! bits.

use super::grid::{BLOCK, Grid, SMALL_SIDE, TILE_PX, pixel_box, tiles_of};
use super::records::{SmallSplat, SmallStore, Staging};
use crate::render::project::{Splat, floor_i32};

/// Work estimate of one small record (about three vector blocks of a row).
pub(super) const SMALL_COST: u32 = 3;

/// Work estimate of a splat covering `cols`×`rows` pixels of a tile: its row blocks of
/// [`BLOCK`] columns, and the set-up (weights of every column and row).
#[inline]
pub(super) fn large_cost(cols: u32, rows: u32) -> u32 {
    cols.div_ceil(BLOCK as u32) * rows + (cols + rows) / 4 + 4
}

/// Kind byte of an entry of a tile's other splats: the next tiny record.
pub(super) const KIND_TINY: u8 = 1;
/// Kind byte of an entry of a tile's other splats: the next general splat.
pub(super) const KIND_GENERAL: u8 = 0;

/// One chunk's records sorted by tile. Tile t owns `small[offsets[t][0]..offsets[t + 1][0]]`
/// (or the same range of `small_grey` in grey frames) as its small records, the same vector's
/// `offsets[t][1]..offsets[t + 1][1]` as its tiny records, `large[offsets[t][2]..offsets[t +
/// 1][2]]` as its general splats, and the kind bytes of the two last lists' entries in input
/// order from `kinds[offsets[t][1] − n_small + offsets[t][2]]` on. `cost[t]` estimates the work
/// they take ([`SMALL_COST`], [`large_cost`]), to split hot tiles across threads.
#[derive(Debug, Default)]
pub(super) struct ChunkBins {
    offsets: Vec<[u32; 3]>,
    pub(super) cost: Vec<u32>,
    n_small: u32,
    pub(super) small: Vec<SmallSplat<3>>,
    pub(super) small_grey: Vec<SmallSplat<1>>,
    kinds: Vec<u8>,
    large: Vec<Splat>,
}

/// The sort's working room that no draw reads, one per thread and reused from chunk to chunk
/// (kept in each chunk's bins, it was 20 bytes of fresh memory per staged general splat, faulted
/// in by a renderer's first frame and written to memory by every frame).
#[derive(Debug, Default)]
pub(super) struct SortScratch {
    /// Next free slot of each tile's three lists.
    cursor: Vec<[u32; 3]>,
    /// Footprint box (clipped to the image) of each staged general splat, or `None`.
    boxes: Vec<Option<[i32; 4]>>,
}

/// What one tile of a chunk draws, in this order: `small`, then the entries of `kinds` (each
/// the next record of `tiny` or the next splat of `large`).
pub(super) struct TileBins<'a, const C: usize> {
    /// Small records.
    pub(super) small: &'a [SmallSplat<C>],
    /// Tiny records (other splats' parts in this tile, drawn like small records).
    pub(super) tiny: &'a [SmallSplat<C>],
    /// [`KIND_TINY`] or [`KIND_GENERAL`] per other splat, in input order.
    pub(super) kinds: &'a [u8],
    /// General splats.
    pub(super) large: &'a [Splat],
}

/// The box whose tiles get splat `s` (clipped to the image), `None` when it draws nothing: the
/// exact footprint box (as `splat_one` finds it) where a one-pixel-wider cheap bound is at most
/// SMALL_SIDE + 2 pixels a side (so that tiny splats are found exactly), else that cheap bound
/// (a tile it adds draws nothing; the exact search for every splat made the sort 15–20 % slower
/// at R0 = 4 and 16 on the box).
#[inline(always)]
fn footprint_tiles_box(s: &Splat, grid: &Grid) -> Option<[i32; 4]> {
    let i0 = floor_i32(s.x_px - s.cut_px - 1.5).max(0);
    let i1 = floor_i32(s.x_px + s.cut_px + 0.5).min(grid.width - 1);
    let j0 = floor_i32(s.y_px - s.cut_px - 1.5).max(0);
    let j1 = floor_i32(s.y_px + s.cut_px + 0.5).min(grid.height - 1);
    if i0 > i1 || j0 > j1 {
        return None;
    }
    let near = SMALL_SIDE as i32 + 2;
    if i1 - i0 > near || j1 - j0 > near {
        return Some([i0, i1, j0, j1]);
    }
    pixel_box(s, 0, grid.width - 1, 0, grid.height - 1)
}

/// Columns and rows of box `b` inside tile (tx, ty): the clipped box, or `None` if empty.
#[inline(always)]
fn clip_to_tile(b: [i32; 4], tx: usize, ty: usize) -> Option<[i32; 4]> {
    let (x0, y0) = ((tx * TILE_PX) as i32, (ty * TILE_PX) as i32);
    let c = [
        b[0].max(x0),
        b[1].min(x0 + TILE_PX as i32 - 1),
        b[2].max(y0),
        b[3].min(y0 + TILE_PX as i32 - 1),
    ];
    (c[0] <= c[1] && c[2] <= c[3]).then_some(c)
}

/// Whether a box fits a [`SmallSplat`]. Only splats whose whole footprint (clipped to the image)
/// fits become tiny records: the corner parts of wider splats stay general, since mixing the
/// two kinds in a tile's list at R0 = 16 cost more in mispredicted branches than the small code
/// saved (box, 1 thread: tiles 0.310 → 0.333 s per 10⁶ with every part ≤ 3×3 made tiny).
#[inline(always)]
fn is_tiny(c: [i32; 4]) -> bool {
    let side = SMALL_SIDE as i32;
    c[1] - c[0] < side && c[3] - c[2] < side
}

impl ChunkBins {
    /// Counting sort of one chunk's staged records (of `C` channels) by tile, with each tile's
    /// work estimate.
    pub(super) fn fill<const C: usize>(
        &mut self,
        staging: &Staging,
        scratch: &mut SortScratch,
        grid: &Grid,
    ) where
        Self: SmallStore<C>,
        Staging: SmallStore<C>,
    {
        let n_tiles = grid.n_tiles();
        self.offsets.clear();
        self.offsets.resize(n_tiles + 1, [0; 3]);
        self.cost.clear();
        self.cost.resize(n_tiles, 0);
        let (small, small_tile) = staging.small::<C>();
        for &tile in small_tile {
            self.offsets[tile as usize + 1][0] += 1;
        }
        for (cost, offset) in self.cost.iter_mut().zip(&self.offsets[1..]) {
            *cost = offset[0].saturating_mul(SMALL_COST);
        }
        let SortScratch { cursor, boxes } = scratch;
        boxes.clear();
        boxes.extend(staging.large.iter().map(|s| footprint_tiles_box(s, grid)));
        for b in boxes.iter().flatten() {
            let tiny_splat = is_tiny(*b);
            let [tx0, tx1, ty0, ty1] = tiles_of(*b);
            for ty in ty0..=ty1 {
                for tx in tx0..=tx1 {
                    let Some(c) = clip_to_tile(*b, tx, ty) else {
                        continue;
                    };
                    let t = ty * grid.tiles_x + tx;
                    let (kind, cost) = if tiny_splat {
                        (1, SMALL_COST)
                    } else {
                        let (cols, rows) = ((c[1] - c[0] + 1) as u32, (c[3] - c[2] + 1) as u32);
                        (2, large_cost(cols, rows))
                    };
                    self.offsets[t + 1][kind] += 1;
                    self.cost[t] = self.cost[t].saturating_add(cost);
                }
            }
        }
        for t in 0..n_tiles {
            let before = self.offsets[t];
            let at = &mut self.offsets[t + 1];
            for (at, before) in at.iter_mut().zip(before) {
                *at += before;
            }
        }
        // Tiny records follow the small ones in the same vector.
        let [n_small, n_tiny, n_large] = self.offsets[n_tiles];
        self.n_small = n_small;
        for offset in &mut self.offsets {
            offset[1] += n_small;
        }
        cursor.clear();
        cursor.extend_from_slice(&self.offsets[..n_tiles]);
        // Plain vectors (4 KiB pages, each faulted in on first touch): buffers mapped as
        // aligned 2 MiB transparent huge pages (one fault per 2 MiB, no default-value pass)
        // made the project stage twice as long at radius factor 0.04 on the H200 host (16
        // threads, 10⁷ particles: 60 → 121 ms), a chunk's ~1.3 MB of records costing a whole
        // zeroed huge page. Also slower there (16 threads, render's first frame, this code in
        // the same call): each fresh vector faulted in by one madvise(MADV_POPULATE_WRITE) (a
        // third off the fault cost on the 2-core box) together with a fresh renderer's first
        // frame drawn in four waves of chunks that reuse a quarter of the bins (each tile
        // continuing its sum from τ: the same bits): 107 → 136-141 ms at radius factor 0.04,
        // 148 → 171-188 at 0.25, 305 → 340 at 1, the sort's busy time 0.36 → 0.62 s at 0.04.
        // The waves alone, without madvise, faulted fewer pages but were slower too (medians of
        // 3 in another call, this code / N = 2, 4, 8 waves: F = 0.04 172 / 189, 197, 200 ms;
        // F = 1 438 / 463, 480, 485 ms): the project stage did not shrink, and each wave's pass
        // over τ lengthened the splat stage (F = 0.04: 42 / 48, 56, 65 ms).
        // Moving the faults out of the frame did not help the user either: `render` making this
        // room (a record per particle, from the tipsy header's counts) and τ, each page written,
        // on the rayon threads while the file loads (H200 host, 16 threads, 3 rounds beside
        // main): first frames 108-112 → 107-111 ms at
        // F = 0.04, 156-162 → 127-144 at 0.25, 333-363 → 325-348 at 1, but the load grew by as
        // much (F = 0.04: 156-180 → 190-207 ms) and the process took as long or longer
        // (0.295-0.319 → 0.315-0.347 s at 0.04, the same within noise at 0.25 and 1).
        // Every slot is written by the loops below, so the default values are not needed for
        // the result; but keeping the last frame's slots and filling only the room beyond them
        // made a steady frame's sort 1.5-2.3x slower on the 2-core box (F = 0.04 and 0.25, 10⁷
        // particles): this sequential pass brings the chunk's lines into the cache, where the
        // writes scattered by tile below then find them.
        let records = self.records_mut();
        records.clear();
        records.resize((n_small + n_tiny) as usize, SmallSplat::default());
        self.large.clear();
        self.large.resize(n_large as usize, Splat::default());
        self.kinds.clear();
        self.kinds.resize((n_tiny + n_large) as usize, KIND_GENERAL);
        let records = self.records_mut();
        for (&tile, add) in small_tile.iter().zip(small) {
            let slot = &mut cursor[tile as usize][0];
            records[*slot as usize] = *add;
            *slot += 1;
        }
        for (s, b) in staging.large.iter().zip(boxes.iter()) {
            let Some(b) = *b else {
                continue;
            };
            let tiny_splat = is_tiny(b);
            let [tx0, tx1, ty0, ty1] = tiles_of(b);
            for ty in ty0..=ty1 {
                for tx in tx0..=tx1 {
                    let Some(c) = clip_to_tile(b, tx, ty) else {
                        continue;
                    };
                    let at = &mut cursor[ty * grid.tiles_x + tx];
                    let kind_slot = (at[1] - n_small + at[2]) as usize;
                    if tiny_splat {
                        self.records_mut()[at[1] as usize] = SmallSplat::<C>::of_box(s, c);
                        self.kinds[kind_slot] = KIND_TINY;
                        at[1] += 1;
                    } else {
                        self.large[at[2] as usize] = *s;
                        at[2] += 1;
                    }
                }
            }
        }
    }

    /// Tile `t`'s records (small and tiny of `C` channels) and general splats.
    pub(super) fn tile<const C: usize>(&self, t: usize) -> TileBins<'_, C>
    where
        Self: SmallStore<C>,
    {
        let [s0, i0, l0] = self.offsets[t];
        let [s1, i1, l1] = self.offsets[t + 1];
        let k0 = (i0 - self.n_small + l0) as usize;
        let k1 = (i1 - self.n_small + l1) as usize;
        let records = self.records();
        TileBins {
            small: &records[s0 as usize..s1 as usize],
            tiny: &records[i0 as usize..i1 as usize],
            kinds: &self.kinds[k0..k1],
            large: &self.large[l0 as usize..l1 as usize],
        }
    }
}

impl ChunkBins {
    /// Asks the cache for tile `t`'s offsets (a hint only: see `tile::render_unit`).
    #[inline(always)]
    pub(super) fn prefetch_offsets(&self, t: usize) {
        if let Some(offset) = self.offsets.get(t) {
            prefetch(std::ptr::from_ref(offset).cast());
        }
    }
}

impl<const C: usize> TileBins<'_, C> {
    /// Asks the cache for the first lines of each of the tile's lists (a hint only).
    #[inline(always)]
    pub(super) fn prefetch(&self) {
        prefetch_lines(self.small, 2);
        prefetch_lines(self.tiny, 1);
        prefetch_lines(self.kinds, 1);
        prefetch_lines(self.large, 4);
    }
}

/// Prefetches up to `lines` cache lines from the start of `list` (none past its end).
#[inline(always)]
fn prefetch_lines<T>(list: &[T], lines: usize) {
    const LINE: usize = 64;
    let bytes = std::mem::size_of_val(list);
    let start = list.as_ptr().cast::<u8>();
    for line in 0..lines {
        if line * LINE >= bytes {
            break;
        }
        prefetch(start.wrapping_add(line * LINE));
    }
}

/// A hint that the line holding `at` will be read soon (no effect on the result; nothing on
/// other architectures).
#[inline(always)]
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch never faults and reads nothing into the program's state; `at` is
        // inside a live slice anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

impl SmallStore<3> for ChunkBins {
    fn records(&self) -> &[SmallSplat<3>] {
        &self.small
    }
    fn records_mut(&mut self) -> &mut Vec<SmallSplat<3>> {
        &mut self.small
    }
}

impl SmallStore<1> for ChunkBins {
    fn records(&self) -> &[SmallSplat<1>] {
        &self.small_grey
    }
    fn records_mut(&mut self) -> &mut Vec<SmallSplat<1>> {
        &mut self.small_grey
    }
}
