//! Drawing one tile of the CPU splatter (see `splat_cpu.rs`): small records, then every other
//! splat of each chunk (tiny records and general splats, in input order), into the tile's R, G
//! and B planes, or into one plane for grey frames (every splat has r = g = b: the one plane
//! gets, pixel by pixel, the operations each of the three would get, so its values are the bits
//! of each RGB channel).

use super::bins::KIND_TINY;
use super::exp::exp_f32;
use super::{
    ChunkBins, Grid, Isa, PLANE_LEN, SMALL_SIDE, SmallSplat, SmallStore, TILE_PX, pixel_box,
};
use crate::render::project::Splat;

/// Columns per vector block of the row loop (8 f32 lanes with AVX2).
pub(super) const BLOCK: usize = 8;

/// [`render_unit`] with `channels` planes (1: grey, the first channel only; otherwise 3),
/// compiled for `isa` (one the CPU has: see [`super::Splatter::isa`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn render_unit_for(
    isa: Isa,
    channels: usize,
    t: usize,
    row_lo: usize,
    row_hi: usize,
    grid: &Grid,
    chunks: &[ChunkBins],
    buffer: &mut Vec<f32>,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2Fma {
        // SAFETY: `Splatter::isa` only yields Avx2Fma where the CPU has AVX2 and FMA.
        return unsafe {
            if channels == 1 {
                render_unit_avx2::<1>(t, row_lo, row_hi, grid, chunks, buffer)
            } else {
                render_unit_avx2::<3>(t, row_lo, row_hi, grid, chunks, buffer)
            }
        };
    }
    let _ = isa;
    if channels == 1 {
        render_unit::<1>(t, row_lo, row_hi, grid, chunks, buffer)
    } else {
        render_unit::<3>(t, row_lo, row_hi, grid, chunks, buffer)
    }
}

/// [`render_unit`] with 8-wide vectors (no FMA contraction: Rust never fuses a·b + c).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn render_unit_avx2<const C: usize>(
    t: usize,
    row_lo: usize,
    row_hi: usize,
    grid: &Grid,
    chunks: &[ChunkBins],
    buffer: &mut Vec<f32>,
) -> usize
where
    ChunkBins: SmallStore<C>,
{
    render_unit::<C>(t, row_lo, row_hi, grid, chunks, buffer)
}

/// Renders rows `row_lo..row_hi` (relative to the tile) of tile `t`, chunk by chunk in input
/// order, into `buffer`: `C` planes (R, G, B, or the first channel alone) of the returned length
/// each (row stride TILE_PX, row 0 = row_lo, and a pad); 0 when the tile has no record (the
/// buffer is then untouched).
/// Any band of rows gets, pixel by pixel, the same operations in the same order as the whole
/// tile.
#[inline(always)]
fn render_unit<const C: usize>(
    t: usize,
    row_lo: usize,
    row_hi: usize,
    grid: &Grid,
    chunks: &[ChunkBins],
    buffer: &mut Vec<f32>,
) -> usize
where
    ChunkBins: SmallStore<C>,
{
    let tx = t % grid.tiles_x;
    let ty = t / grid.tiles_x;
    let x0 = (tx * TILE_PX) as i32;
    let y0 = (ty * TILE_PX) as i32;
    let x1 = (x0 + TILE_PX as i32).min(grid.width) - 1;
    let tile_rows = ((y0 + TILE_PX as i32).min(grid.height) - y0) as usize;
    let whole = row_lo == 0 && row_hi >= tile_rows;
    let band = [y0 + row_lo as i32, y0 + row_hi.min(tile_rows) as i32 - 1];
    let plane_len = (row_hi - row_lo) * TILE_PX + BLOCK;
    debug_assert!(plane_len <= PLANE_LEN);
    let mut used = false;
    let mut scratch = ColumnScratch::default();
    for chunk in chunks {
        let bins = chunk.tile::<C>(t);
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
                splat_one(s, [x0, x1, band[0], band[1]], &mut planes, &mut scratch);
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
                splat_one(s, [x0, x1, band[0], band[1]], &mut planes, &mut scratch);
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

/// Per-column and per-row offsets and weights of one splat inside one tile (columns padded to a
/// whole number of blocks).
struct ColumnScratch {
    dx2: [f32; TILE_PX + BLOCK],
    wx: [f32; TILE_PX + BLOCK],
    dy2: [f32; TILE_PX],
    wy: [f32; TILE_PX],
}

impl Default for ColumnScratch {
    fn default() -> Self {
        Self {
            dx2: [0.0; TILE_PX + BLOCK],
            wx: [0.0; TILE_PX + BLOCK],
            dy2: [0.0; TILE_PX],
            wy: [0.0; TILE_PX],
        }
    }
}

/// Adds a small record to a tile's planes (row stride TILE_PX pixels).
#[inline(always)]
fn add_small<const C: usize>(p: &SmallSplat<C>, planes: &mut [&mut [f32]; C]) {
    for r in 0..SMALL_SIDE {
        let row_mask = (p.mask >> (SMALL_SIDE * r)) & ((1 << SMALL_SIDE) - 1);
        if row_mask == 0 {
            continue;
        }
        let wy = p.wy[r];
        let e: [f32; C] = std::array::from_fn(|ch| p.rgb[ch] * wy);
        for c in 0..SMALL_SIDE {
            if row_mask & (1 << c) != 0 {
                let k = p.pixel as usize + r * TILE_PX + c;
                let w = p.wx[c];
                for (plane, e) in planes.iter_mut().zip(e) {
                    plane[k] += w * e;
                }
            }
        }
    }
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
    for r in 0..SMALL_SIDE {
        let row = top + r;
        let row_mask = (p.mask >> (SMALL_SIDE * r)) & ((1 << SMALL_SIDE) - 1);
        if row_mask == 0 || row < row_lo || row >= row_hi {
            continue;
        }
        let wy = p.wy[r];
        let e: [f32; C] = std::array::from_fn(|ch| p.rgb[ch] * wy);
        for c in 0..SMALL_SIDE {
            if row_mask & (1 << c) != 0 {
                let k = (row - row_lo) * TILE_PX + col + c;
                let w = p.wx[c];
                for (plane, e) in planes.iter_mut().zip(e) {
                    plane[k] += w * e;
                }
            }
        }
    }
}

/// Adds one splat to the tile covering pixel columns x0..=x1 and rows y0..=y1 (R, G, B planes,
/// row stride TILE_PX pixels).
///
/// Each row of the footprint box is walked in whole blocks of [`BLOCK`] columns: a pixel inside
/// the disc (dx² + dy² ≤ R², the exact f32 test) gets τ += wx·(rgb·wy); every other lane adds
/// +0, which leaves any τ ≥ 0 bit-for-bit unchanged. So the pixels and their contributions are
/// those of a per-pixel loop, but the loop is branch-free, fully vectorised and has no scalar
/// tail. The last block may run past the box, and past the last row into the plane's pad.
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
    // Separate loops so that each vectorises. Padding columns are never inside (dx² = ∞).
    for (k, dx2) in scratch.dx2[..n_padded].iter_mut().enumerate() {
        let dx = ((c0 + k as i32) as f32 + 0.5) - s.x_px;
        *dx2 = if k < n_cols { dx * dx } else { f32::INFINITY };
    }
    for (w, dx2) in scratch.wx[..n_padded]
        .iter_mut()
        .zip(&scratch.dx2[..n_padded])
    {
        *w = exp_f32(-dx2 * inv_sigma2);
    }
    // Row factors likewise up front: one exp per row in the row loop would be a serial
    // dependency chain.
    let n_rows = (r1 - r0 + 1) as usize;
    for (k, dy2) in scratch.dy2[..n_rows].iter_mut().enumerate() {
        let dy = ((r0 + k as i32) as f32 + 0.5) - s.y_px;
        *dy2 = dy * dy;
    }
    for (w, dy2) in scratch.wy[..n_rows].iter_mut().zip(&scratch.dy2[..n_rows]) {
        *w = exp_f32(-dy2 * inv_sigma2);
    }
    let dx2 = &scratch.dx2[..n_padded];
    let wx = &scratch.wx[..n_padded];
    for (k, (&dy2, &wy)) in scratch.dy2[..n_rows]
        .iter()
        .zip(&scratch.wy[..n_rows])
        .enumerate()
    {
        if dy2 > cut2 {
            continue;
        }
        let start = (r0 - y0) as usize * TILE_PX + k * TILE_PX + (c0 - x0) as usize;
        let run = start..start + n_padded;
        // τ += wx·(rgb·wy): the same operations in the same order for every pixel.
        let e: [f32; C] = std::array::from_fn(|ch| s.rgb[ch] * wy);
        if let [pr, pg, pb] = &mut planes[..] {
            for ((((tr, tg), tb), w), d) in pr[run.clone()]
                .iter_mut()
                .zip(&mut pg[run.clone()])
                .zip(&mut pb[run])
                .zip(wx)
                .zip(dx2)
            {
                let inside = d + dy2 <= cut2;
                *tr += if inside { w * e[0] } else { 0.0 };
                *tg += if inside { w * e[1] } else { 0.0 };
                *tb += if inside { w * e[2] } else { 0.0 };
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
