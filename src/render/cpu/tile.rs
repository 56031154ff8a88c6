//! Drawing one tile of the CPU splatter (see `splat.rs`): small records, then every other
//! splat of each chunk (tiny records and general splats, in input order), into the tile's R, G
//! and B planes, or into one plane for grey frames (every splat has r = g = b: the one plane
//! gets, pixel by pixel, the operations each of the three would get, so its values are the bits
//! of each RGB channel).

use super::bins::ChunkBins;
use super::bins::KIND_TINY;
#[cfg(target_arch = "x86_64")]
use super::chord::{RowBlocks, splat_one_avx2};
use super::exp::Isa;
use super::exp::exp_f32;
use super::grid::{BLOCK, Grid, SMALL_SIDE, TILE_AREA, TILE_PX, pixel_box};
use super::records::{SmallSplat, SmallStore};
use crate::render::project::Splat;

/// Values after a unit's last row: room for the last vector block of a row, and for the two
/// rows below a small record's top row (which [`add_small`] adds +0 to when they are empty).
pub(super) const PLANE_PAD: usize = (SMALL_SIDE - 1) * TILE_PX + BLOCK;

/// Values per tile plane: TILE_AREA and a pad that vectors may run into past the last row (they
/// only ever add +0 there).
const PLANE_LEN: usize = TILE_AREA + PLANE_PAD;

/// One unit of the drawing pass: rows `row_lo..row_hi` (relative to the tile) of tile `tile`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit {
    /// The tile's index in the grid.
    pub tile: u32,
    /// First row drawn, relative to the tile.
    pub row_lo: u16,
    /// One past the last row drawn (may run past the image's last row).
    pub row_hi: u16,
}

/// What a unit is drawn from: the tile layout and the binned chunks, in input order.
#[derive(Clone, Copy)]
pub(super) struct Binned<'a> {
    /// The tile layout.
    pub grid: &'a Grid,
    /// The chunks' splats sorted by tile.
    pub chunks: &'a [ChunkBins],
}

/// [`render_unit`] with `channels` planes (1: grey, the first channel only; otherwise 3),
/// compiled for `isa` (one the CPU has: see [`super::Splatter::isa`]).
pub(super) fn render_unit_for(
    isa: Isa,
    channels: usize,
    unit: Unit,
    binned: Binned<'_>,
    buffer: &mut Vec<f32>,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2Fma {
        // SAFETY: `Splatter::isa` only yields Avx2Fma where the CPU has AVX2 and FMA.
        return unsafe {
            if channels == 1 {
                render_unit_avx2::<1>(unit, binned, buffer)
            } else {
                render_unit_avx2::<3>(unit, binned, buffer)
            }
        };
    }
    let _ = isa;
    if channels == 1 {
        render_unit::<1, false>(unit, binned, buffer)
    } else {
        render_unit::<3, false>(unit, binned, buffer)
    }
}

/// [`render_unit`] with 8-wide vectors (no FMA contraction: Rust never fuses a·b + c).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn render_unit_avx2<const C: usize>(unit: Unit, binned: Binned<'_>, buffer: &mut Vec<f32>) -> usize
where
    ChunkBins: SmallStore<C>,
{
    render_unit::<C, true>(unit, binned, buffer)
}

/// Renders the rows of `unit`, chunk by chunk in input order, into `buffer`: `C` planes (R, G,
/// B, or the first channel alone) of the returned length each (row stride TILE_PX, row 0 =
/// row_lo, and a pad); 0 when the tile has no record (the buffer is then untouched).
/// Any band of rows gets, pixel by pixel, the same operations in the same order as the whole
/// tile. `AVX2`: compiled into a function with AVX2 enabled (general splats then go through
/// [`splat_one_avx2`]).
#[inline(always)]
fn render_unit<const C: usize, const AVX2: bool>(
    unit: Unit,
    binned: Binned<'_>,
    buffer: &mut Vec<f32>,
) -> usize
where
    ChunkBins: SmallStore<C>,
{
    let Binned { grid, chunks } = binned;
    let t = unit.tile as usize;
    let (row_lo, row_hi) = (unit.row_lo as usize, unit.row_hi as usize);
    let tx = t % grid.tiles_x;
    let ty = t / grid.tiles_x;
    let x0 = (tx * TILE_PX) as i32;
    let y0 = (ty * TILE_PX) as i32;
    let x1 = (x0 + TILE_PX as i32).min(grid.width) - 1;
    let tile_rows = ((y0 + TILE_PX as i32).min(grid.height) - y0) as usize;
    let whole = row_lo == 0 && row_hi >= tile_rows;
    let band = [y0 + row_lo as i32, y0 + row_hi.min(tile_rows) as i32 - 1];
    let plane_len = (row_hi - row_lo) * TILE_PX + PLANE_PAD;
    debug_assert!(plane_len <= PLANE_LEN);
    let mut used = false;
    let mut scratch = ColumnScratch::default();
    // The chunks' bins were written by the sort on other threads and are read here once, a
    // short run per chunk (about 40 splats at radius factor 1) at a new place each time: the
    // first lines of each run, and the chunk's tile offsets before them, were cache misses the
    // drawing waited on (perf on the 2-core box, the kit's 10⁷ scene at F = 1, first and four
    // steady frames: `ChunkBins::tile` 2.9 % of the samples, nine tenths on the offsets' loads;
    // this function 9 %, two fifths on a general splat's first load). So the next chunk's runs
    // and the offsets of the one after it are prefetched while this chunk draws (no effect on
    // the result): their samples 2104 → 318 and 6578 → 3653.
    let mut next = chunks.first().map(|c| c.tile::<C>(t));
    for i in 0..chunks.len() {
        let Some(bins) = next.take() else {
            break;
        };
        if let Some(after) = chunks.get(i + 2) {
            after.prefetch_offsets(t);
        }
        next = chunks.get(i + 1).map(|c| c.tile::<C>(t));
        if let Some(n) = &next {
            n.prefetch();
        }
        if bins.small.is_empty() && bins.kinds.is_empty() {
            continue;
        }
        if !used {
            buffer.clear();
            buffer.resize(C * plane_len, 0.0);
            used = true;
        }
        let mut planes = planes_mut::<C>(buffer, plane_len);
        if whole {
            for p in bins.small {
                add_small(p, &mut planes);
            }
        } else {
            for p in bins.small {
                add_small_band(p, row_lo, row_hi, &mut planes);
            }
        }
        // The chunk's other splats in input order: each kind byte takes the next entry of its
        // list (tiny records drawn like small ones, with the same bits as `splat_one`).
        if bins.tiny.is_empty() {
            // Only general splats (the common case at R0 ≥ 4): no kind bytes to follow.
            for s in bins.large {
                draw_general::<C, AVX2>(s, [x0, x1, band[0], band[1]], &mut planes, &mut scratch);
            }
            continue;
        }
        let (mut tiny, mut large) = (bins.tiny.iter(), bins.large.iter());
        for &kind in bins.kinds {
            if kind == KIND_TINY {
                if let Some(p) = tiny.next() {
                    if whole {
                        add_small(p, &mut planes);
                    } else {
                        add_small_band(p, row_lo, row_hi, &mut planes);
                    }
                }
            } else if let Some(s) = large.next() {
                draw_general::<C, AVX2>(s, [x0, x1, band[0], band[1]], &mut planes, &mut scratch);
            }
        }
    }
    if used { plane_len } else { 0 }
}

/// The `C` mutable planes (with their pads) of a buffer of C·`plane_len` values.
#[inline(always)]
fn planes_mut<const C: usize>(data: &mut [f32], plane_len: usize) -> [&mut [f32]; C] {
    let mut rest = data;
    std::array::from_fn(|_| {
        let (plane, tail) = std::mem::take(&mut rest).split_at_mut(plane_len);
        rest = tail;
        plane
    })
}

/// Adds one general splat to the tile (see [`splat_one`]); `AVX2`: the caller is compiled with
/// AVX2, and a splat of finite emission goes through [`splat_one_avx2`] (the same bits).
#[inline(always)]
fn draw_general<const C: usize, const AVX2: bool>(
    s: &Splat,
    tile: [i32; 4],
    planes: &mut [&mut [f32]; C],
    scratch: &mut ColumnScratch,
) {
    #[cfg(target_arch = "x86_64")]
    if AVX2 && s.rgb.iter().all(|v| v.is_finite()) {
        // SAFETY: `AVX2` is only set in `render_unit_avx2`, which runs where the CPU has AVX2.
        if unsafe { splat_one_avx2(s, tile, planes, scratch) } {
            return;
        }
    }
    splat_one(s, tile, planes, scratch);
}

/// Per-column and per-row offsets and weights of one splat inside one tile (columns and rows
/// each padded to a whole number of blocks).
pub(super) struct ColumnScratch {
    pub(super) dx2: [f32; TILE_PX + BLOCK],
    pub(super) wx: [f32; TILE_PX + BLOCK],
    pub(super) dy2: [f32; TILE_PX + BLOCK],
    pub(super) wy: [f32; TILE_PX + BLOCK],
    /// Each row's blocks of the AVX2 path.
    #[cfg(target_arch = "x86_64")]
    pub(super) rows: RowBlocks,
}

impl Default for ColumnScratch {
    fn default() -> Self {
        Self {
            dx2: [0.0; TILE_PX + BLOCK],
            wx: [0.0; TILE_PX + BLOCK],
            dy2: [0.0; TILE_PX + BLOCK],
            wy: [0.0; TILE_PX + BLOCK],
            #[cfg(target_arch = "x86_64")]
            rows: RowBlocks::default(),
        }
    }
}

/// Squared offsets (i + 0.5 − centre)² of indices `first..first + n` into the first `n` values
/// of `d2` and their weights exp(−d²/σ²) into `w`, both over a whole number of [`BLOCK`]s (`d2`
/// and `w` are that long); the padding gets d² = ∞ (never inside), w = 0. Block by block, so
/// that each block is one vector operation per step and no scalar tail is compiled: most
/// footprints are under one block a side, and a per-value tail was most of a splat's set-up.
#[inline(always)]
fn offsets_and_weights(
    first: i32,
    n: usize,
    centre: f32,
    inv_sigma2: f32,
    d2: &mut [f32],
    w: &mut [f32],
) {
    for (b, (d2, w)) in d2
        .chunks_exact_mut(BLOCK)
        .zip(w.chunks_exact_mut(BLOCK))
        .enumerate()
    {
        let base = b * BLOCK;
        for (l, (d2, w)) in d2.iter_mut().zip(w.iter_mut()).enumerate() {
            let k = base + l;
            let d = ((first + k as i32) as f32 + 0.5) - centre;
            *d2 = if k < n { d * d } else { f32::INFINITY };
            *w = exp_f32(-*d2 * inv_sigma2);
        }
    }
}

/// Lane masks of a small record's row: lane c is all ones where bit c of the row's mask is set
/// (lane 3, past the record's columns, never is).
#[cfg(target_arch = "x86_64")]
#[repr(C, align(16))]
struct RowLanes([[u32; 4]; 1 << SMALL_SIDE]);

/// [`RowLanes`] of every row mask.
#[cfg(target_arch = "x86_64")]
static ROW_LANES: RowLanes = RowLanes({
    let mut lanes = [[0u32; 4]; 1 << SMALL_SIDE];
    let mut bits = 0;
    while bits < 1 << SMALL_SIDE {
        let mut c = 0;
        while c < SMALL_SIDE {
            if bits & (1 << c) != 0 {
                lanes[bits][c] = u32::MAX;
            }
            c += 1;
        }
        bits += 1;
    }
    lanes
});

/// Adds a small record to a tile's planes (row stride TILE_PX pixels), its rows starting at
/// plane index `at`.
///
/// Each of the three rows is one 4-wide vector: τ += (wx·(rgb·wy)) & lanes, where the lanes of
/// pixels outside the mask (and the fourth lane) add +0, which leaves any τ ≥ 0 bit-for-bit
/// unchanged; the drawn pixels get the scalar path's product. Branch-free: the per-bit branches
/// of the scalar loop mispredict on most records, which at R0 = 1 makes them most of the
/// tile pass. Needs 4 values from `at` in each of the three rows (see [`PLANE_PAD`]); where a
/// plane is shorter the scalar path draws it.
#[inline(always)]
fn add_small_at<const C: usize>(p: &SmallSplat<C>, at: usize, planes: &mut [&mut [f32]; C]) {
    #[cfg(target_arch = "x86_64")]
    {
        let end = at + (SMALL_SIDE - 1) * TILE_PX + 4;
        if planes.iter().all(|plane| plane.len() >= end) {
            // SAFETY: every index written is below `end`, checked against each plane above.
            unsafe { add_small_sse(p, at, planes) };
            return;
        }
    }
    add_small_scalar(p, 0..SMALL_SIDE, |r| at + r * TILE_PX, planes);
}

/// [`add_small_at`] as 4-wide SSE vectors (the x86-64 baseline, so any x86-64 CPU runs it).
///
/// # Safety
/// Each plane must hold at least `at + (SMALL_SIDE − 1)·TILE_PX + 4` values.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn add_small_sse<const C: usize>(
    p: &SmallSplat<C>,
    at: usize,
    planes: &mut [&mut [f32]; C],
) {
    use std::arch::x86_64::{
        _mm_add_ps, _mm_and_ps, _mm_load_ps, _mm_loadu_ps, _mm_mul_ps, _mm_set1_ps, _mm_setr_ps,
        _mm_storeu_ps,
    };
    const _: () = assert!(SMALL_SIDE == 3, "a record row is one 4-wide vector");
    // SAFETY (whole block): SSE is part of x86-64; the lane table is 16-byte aligned; the
    // caller guarantees the planes' lengths.
    unsafe {
        let wx = _mm_setr_ps(p.wx[0], p.wx[1], p.wx[2], 0.0);
        for r in 0..SMALL_SIDE {
            let bits = usize::from((p.mask >> (SMALL_SIDE * r)) & ((1 << SMALL_SIDE) - 1));
            let lanes = _mm_load_ps(ROW_LANES.0[bits].as_ptr().cast::<f32>());
            let k = at + r * TILE_PX;
            for (plane, rgb) in planes.iter_mut().zip(p.rgb) {
                let e = rgb * p.wy[r];
                let add = _mm_and_ps(_mm_mul_ps(wx, _mm_set1_ps(e)), lanes);
                let ptr = plane.as_mut_ptr().add(k);
                _mm_storeu_ps(ptr, _mm_add_ps(_mm_loadu_ps(ptr), add));
            }
        }
    }
}

/// The per-pixel form of [`add_small_at`] over the record's rows `rows`, row r starting at
/// plane index `row_at(r)`.
#[inline(always)]
fn add_small_scalar<const C: usize>(
    p: &SmallSplat<C>,
    rows: std::ops::Range<usize>,
    row_at: impl Fn(usize) -> usize,
    planes: &mut [&mut [f32]; C],
) {
    for r in rows {
        let row_mask = (p.mask >> (SMALL_SIDE * r)) & ((1 << SMALL_SIDE) - 1);
        if row_mask == 0 {
            continue;
        }
        let wy = p.wy[r];
        let e: [f32; C] = std::array::from_fn(|ch| p.rgb[ch] * wy);
        for c in 0..SMALL_SIDE {
            if row_mask & (1 << c) != 0 {
                let k = row_at(r) + c;
                let w = p.wx[c];
                for (plane, e) in planes.iter_mut().zip(e) {
                    plane[k] += w * e;
                }
            }
        }
    }
}

/// Adds a small record to a tile's planes (row stride TILE_PX pixels).
#[inline(always)]
fn add_small<const C: usize>(p: &SmallSplat<C>, planes: &mut [&mut [f32]; C]) {
    add_small_at(p, p.pixel as usize, planes);
}

/// [`add_small`] restricted to tile rows `row_lo..row_hi`, into planes whose row 0 is
/// `row_lo`: the same operations for each pixel drawn.
#[inline(always)]
fn add_small_band<const C: usize>(
    p: &SmallSplat<C>,
    row_lo: usize,
    row_hi: usize,
    planes: &mut [&mut [f32]; C],
) {
    let top = p.pixel as usize / TILE_PX;
    let col = p.pixel as usize % TILE_PX;
    // Rows of the record with a pixel to draw (0 when the mask is empty).
    let used_rows = (u16::BITS - p.mask.leading_zeros()) as usize;
    let used_rows = used_rows.div_ceil(SMALL_SIDE);
    if top >= row_lo && top + used_rows <= row_hi {
        // Wholly inside the band (the common case): its empty rows may run into the pad.
        add_small_at(p, (top - row_lo) * TILE_PX + col, planes);
        return;
    }
    let first = row_lo.saturating_sub(top).min(SMALL_SIDE);
    let last = row_hi.saturating_sub(top).clamp(first, SMALL_SIDE);
    let row_at = |r: usize| (top + r - row_lo) * TILE_PX + col;
    add_small_scalar(p, first..last, row_at, planes);
}

/// Adds one splat to the tile covering pixel columns x0..=x1 and rows y0..=y1 (R, G, B planes,
/// row stride TILE_PX pixels).
///
/// Each row of the footprint box is walked in whole blocks of [`BLOCK`] columns: a pixel inside
/// the disc (dx² + dy² ≤ R², the exact f32 test) gets τ += wx·(rgb·wy); every other lane adds
/// +0, which leaves any τ ≥ 0 bit-for-bit unchanged. So the pixels and their contributions are
/// those of a per-pixel loop, but the loop is branch-free, fully vectorised and has no scalar
/// tail. The last block may run past the box, and past the last row into the plane's pad.
/// Every row walks all the box's blocks, also those wholly outside the disc: finding each row's
/// first and last block with a pixel inside (and skipping the others, which add +0) made the
/// splat stage 1.7× slower at radius factor 1 on the H200 host's Xeon (16 threads, 10⁷
/// particles, 2048², 259 → 443 ms): rows are only a few blocks long, and the per-row search
/// costs more than the block or so it saves. Bounding each row's chord without a search (√(R² −
/// dy²) with f32 error slack, eight rows at a time), starting the row's blocks at the chord and
/// leaving the test out of blocks surely inside it, all in AVX2 intrinsics with their own
/// column and row set-up, was bit-identical but no clear win on that Xeon (16 threads, one call
/// beside this code): CPU time per frame −5 to −12 % at radius factor 1 (steady frame −1 to
/// −3 %), but +13 % at 0.25 (steady 117 → 129 ms), where general splats are mostly one or two
/// blocks wide and the intrinsics set-up costs more than this one.
#[inline(always)]
fn splat_one<const C: usize>(
    s: &Splat,
    [x0, x1, y0, y1]: [i32; 4],
    planes: &mut [&mut [f32]; C],
    scratch: &mut ColumnScratch,
) {
    let Some([c0, c1, r0, r1]) = pixel_box(s, x0, x1, y0, y1) else {
        return;
    };
    let cut2 = s.cut_px * s.cut_px;
    let inv_sigma2 = 1.0 / (s.sigma_px * s.sigma_px);
    let n_cols = (c1 - c0 + 1) as usize;
    let n_padded = n_cols.div_ceil(BLOCK) * BLOCK;
    let n_rows = (r1 - r0 + 1) as usize;
    let n_rows_padded = n_rows.div_ceil(BLOCK) * BLOCK;
    // Column factors, and the row factors likewise up front (one exp per row in the row loop
    // would be a serial dependency chain).
    let ColumnScratch {
        dx2, wx, dy2, wy, ..
    } = scratch;
    let (dx2, wx) = (&mut dx2[..n_padded], &mut wx[..n_padded]);
    offsets_and_weights(c0, n_cols, s.x_px, inv_sigma2, dx2, wx);
    let (dy2, wy) = (&mut dy2[..n_rows_padded], &mut wy[..n_rows_padded]);
    offsets_and_weights(r0, n_rows, s.y_px, inv_sigma2, dy2, wy);
    let (dx2, wx) = (&*dx2, &*wx);
    // e = rgb·wy is finite in every row exactly when rgb is (0 ≤ wy ≤ 1).
    let finite = s.rgb.iter().all(|v| v.is_finite());
    let first_row = (r0 - y0) as usize * TILE_PX + (c0 - x0) as usize;
    for (k, (&dy2, &wy)) in dy2[..n_rows].iter().zip(&wy[..n_rows]).enumerate() {
        if dy2 > cut2 {
            continue;
        }
        let start = first_row + k * TILE_PX;
        let run = start..start + n_padded;
        // τ += wx·(rgb·wy): the same operations in the same order for every pixel.
        let e: [f32; C] = std::array::from_fn(|ch| s.rgb[ch] * wy);
        if let [pr, pg, pb] = &mut planes[..] {
            // Zipped iterators over whole rows: the loop vectoriser checks once that the three
            // runs do not overlap. (Per-block slices from `chunks_exact_mut` were compiled to
            // scalar code, 2.8× slower at radius factor 1: the vectoriser of straight-line
            // code cannot prove that three plane slices are disjoint.)
            let rows = pr[run.clone()]
                .iter_mut()
                .zip(&mut pg[run.clone()])
                .zip(&mut pb[run])
                .zip(wx)
                .zip(dx2);
            if finite {
                // The weight is masked once for the three channels: outside the disc m·e is
                // ±0 for a finite e, and τ + ±0 = τ as τ + 0 does (for every τ but −0, which a
                // plane that starts at +0 never holds).
                for ((((tr, tg), tb), &w), d) in rows {
                    let m = if d + dy2 <= cut2 { w } else { 0.0 };
                    *tr += m * e[0];
                    *tg += m * e[1];
                    *tb += m * e[2];
                }
            } else {
                for ((((tr, tg), tb), w), d) in rows {
                    let inside = d + dy2 <= cut2;
                    *tr += if inside { w * e[0] } else { 0.0 };
                    *tg += if inside { w * e[1] } else { 0.0 };
                    *tb += if inside { w * e[2] } else { 0.0 };
                }
            }
        } else {
            // One plane per pass (C = 1 for grey frames): the same test and product per pixel.
            for (plane, e) in planes.iter_mut().zip(e) {
                for ((t, w), d) in plane[run.clone()].iter_mut().zip(wx).zip(dx2) {
                    let inside = d + dy2 <= cut2;
                    *t += if inside { w * e } else { 0.0 };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid::TILE_AREA;
    use super::*;

    /// Pseudo-random numbers in [0, 1) (xorshift).
    fn uniform(state: &mut u64) -> f32 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> 40) as f32 / (1u64 << 24) as f32
    }

    /// A record with random weights, emission and mask at `pixel`: rows and columns past the
    /// tile's edge are left out of the mask, as the staging never sets them.
    fn record<const C: usize>(state: &mut u64, pixel: usize) -> SmallSplat<C> {
        let (row, col) = (pixel / TILE_PX, pixel % TILE_PX);
        let mut mask = (uniform(state) * 512.0) as u16 | 1;
        for r in 0..SMALL_SIDE {
            for c in 0..SMALL_SIDE {
                if row + r >= TILE_PX || col + c >= TILE_PX {
                    mask &= !(1 << (SMALL_SIDE * r + c));
                }
            }
        }
        SmallSplat {
            wx: std::array::from_fn(|_| uniform(state)),
            wy: std::array::from_fn(|_| uniform(state)),
            rgb: std::array::from_fn(|_| uniform(state) * 3.0),
            pixel: pixel as u16,
            mask,
        }
    }

    /// Bits of `C` planes after drawing `records` with `draw`, from the same random start.
    fn drawn<const C: usize>(
        records: &[SmallSplat<C>],
        plane_len: usize,
        mut draw: impl FnMut(&SmallSplat<C>, &mut [&mut [f32]; C]),
    ) -> Vec<u32> {
        let mut state = 7u64;
        let mut data: Vec<f32> = (0..C * plane_len).map(|_| uniform(&mut state)).collect();
        let mut planes = planes_mut::<C>(&mut data, plane_len);
        for p in records {
            draw(p, &mut planes);
        }
        data.iter().map(|v| v.to_bits()).collect()
    }

    fn check_records<const C: usize>() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        // Every top-left pixel of the tile, the last rows and columns included (where the
        // vector rows run into the pad), plus random ones.
        let mut records: Vec<SmallSplat<C>> = (0..TILE_AREA)
            .map(|pixel| record(&mut state, pixel))
            .collect();
        records.extend((0..4000).map(|_| {
            let pixel = (uniform(&mut state) * TILE_AREA as f32) as usize;
            record(&mut state, pixel)
        }));
        let whole = TILE_PX * TILE_PX + PLANE_PAD;
        let vector = drawn(&records, whole, add_small);
        let scalar = drawn(&records, whole, |p, planes| {
            add_small_scalar(p, 0..SMALL_SIDE, |r| p.pixel as usize + r * TILE_PX, planes)
        });
        let differ: Vec<usize> = (0..vector.len())
            .filter(|&k| vector[k] != scalar[k])
            .collect();
        assert!(
            differ.is_empty(),
            "C = {C}: {} values differ between the vector and per-pixel paths, first at {:?}",
            differ.len(),
            differ.first()
        );
        // Any band gives the whole tile's rows, bit for bit.
        for (row_lo, row_hi) in [(0, 8), (5, 13), (8, 16), (61, 64), (0, 63), (1, 64)] {
            // The band's planes start from the whole tile's start values of its rows.
            let len = (row_hi - row_lo) * TILE_PX + PLANE_PAD;
            let mut state = 7u64;
            let start: Vec<f32> = (0..C * whole).map(|_| uniform(&mut state)).collect();
            let mut data: Vec<f32> = vec![0.0; C * len];
            for ch in 0..C {
                for row in row_lo..row_hi {
                    let (w0, b0) = (
                        ch * whole + row * TILE_PX,
                        ch * len + (row - row_lo) * TILE_PX,
                    );
                    data[b0..b0 + TILE_PX].copy_from_slice(&start[w0..w0 + TILE_PX]);
                }
            }
            let mut planes = planes_mut::<C>(&mut data, len);
            for p in &records {
                add_small_band(p, row_lo, row_hi, &mut planes);
            }
            for ch in 0..C {
                for row in row_lo..row_hi {
                    for col in 0..TILE_PX {
                        let got = data[ch * len + (row - row_lo) * TILE_PX + col].to_bits();
                        let want = scalar[ch * whole + row * TILE_PX + col];
                        assert_eq!(
                            got, want,
                            "C = {C}, band {row_lo}..{row_hi}, ({col}, {row})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn vector_small_records_give_the_per_pixel_bits_in_tiles_and_bands() {
        check_records::<1>();
        check_records::<3>();
    }
}
