//! Tiled CPU splatter: τ += exp(−d²/σ²)·e over the disc d ≤ R of every splat (issue 3; notes §9).
//!
//! Screen tiles of [`TILE_PX`]² pixels are each owned by one rayon task, so there are no atomics.
//! Splats are binned (counting sort) to every tile their footprint box overlaps; the binning runs
//! in parallel over fixed-size chunks of the input, and each tile then walks the chunks in order,
//! so every pixel sums its particles in input order whatever the number of threads: the result is
//! bit-for-bit deterministic. All scratch lives in a [`Splatter`] and is reused across frames; no
//! allocation happens per particle.
//!
//! The weight is evaluated as the separable product exp(−dx²/σ²)·exp(−dy²/σ²) (equal to
//! exp(−d²/σ²) up to f32 rounding), with the column factors computed once per particle and tile.
//! A pixel (i, j) is inside when dx² + dy² ≤ R² in f32, with dx = (i + 0.5) − x, dy = (j + 0.5) − y.

use super::project::{Splat, ceil_i32, floor_i32};
use super::tau::TauBuffer;
use rayon::prelude::*;

/// Tile side in pixels.
pub const TILE_PX: usize = 64;
/// Splats per binning chunk (fixed, so that results do not depend on the thread count).
const BIN_CHUNK: usize = 1 << 15;

/// Reusable scratch of the tiled splatter.
#[derive(Debug, Default)]
pub struct Splatter {
    chunks: Vec<ChunkBins>,
    tiles: Vec<TileBuf>,
}

/// One input chunk's splats sorted by tile: tile t owns `splats[offsets[t]..offsets[t + 1]]`.
#[derive(Debug, Default)]
struct ChunkBins {
    offsets: Vec<u32>,
    cursor: Vec<u32>,
    splats: Vec<Splat>,
}

/// A tile's private τ (TILE_PX² RGB values, row stride TILE_PX).
#[derive(Debug, Default)]
struct TileBuf {
    data: Vec<f32>,
    used: bool,
}

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

    /// Tiles (x0, x1, y0, y1 inclusive) that the splat's footprint may touch: a box one pixel
    /// wider than the exact one each side (cheap; a tile it misses costs an empty test).
    #[inline]
    fn tile_range(&self, s: &Splat) -> Option<[usize; 4]> {
        if !splat_is_finite(s) {
            return None;
        }
        let i0 = floor_i32(s.x_px - s.cut_px - 1.5).max(0);
        let i1 = floor_i32(s.x_px + s.cut_px + 0.5).min(self.width - 1);
        let j0 = floor_i32(s.y_px - s.cut_px - 1.5).max(0);
        let j1 = floor_i32(s.y_px + s.cut_px + 0.5).min(self.height - 1);
        if i0 > i1 || j0 > j1 {
            return None;
        }
        let t = TILE_PX as i32;
        Some([
            (i0 / t) as usize,
            (i1 / t) as usize,
            (j0 / t) as usize,
            (j1 / t) as usize,
        ])
    }
}

/// The splat's footprint box: columns i with (i + 0.5 − x)² ≤ R² and rows likewise, evaluated
/// in f32 exactly as the per-pixel test, clamped to [x_lo, x_hi] × [y_lo, y_hi]. `None` when
/// empty or when the splat is not finite.
#[inline]
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
#[inline]
fn splat_is_finite(s: &Splat) -> bool {
    s.cut_px >= 0.0
        && s.sigma_px > 0.0
        && s.x_px.is_finite()
        && s.y_px.is_finite()
        && s.cut_px.is_finite()
}

/// Indices i with ((i + 0.5) − centre)² ≤ cut² (f32): ceil/floor of centre ∓ cut − 0.5, then
/// moved by one where f32 rounding put an end on the wrong side of the exact test.
#[inline]
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

impl ChunkBins {
    /// Counting sort of `src` by tile.
    fn fill(&mut self, src: &[Splat], grid: &Grid) {
        let n_tiles = grid.n_tiles();
        self.offsets.clear();
        self.offsets.resize(n_tiles + 1, 0);
        for s in src {
            if let Some([tx0, tx1, ty0, ty1]) = grid.tile_range(s) {
                for ty in ty0..=ty1 {
                    for tx in tx0..=tx1 {
                        self.offsets[ty * grid.tiles_x + tx + 1] += 1;
                    }
                }
            }
        }
        for t in 0..n_tiles {
            self.offsets[t + 1] += self.offsets[t];
        }
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.offsets[..n_tiles]);
        self.splats.clear();
        self.splats
            .resize(self.offsets[n_tiles] as usize, Splat::default());
        for s in src {
            if let Some([tx0, tx1, ty0, ty1]) = grid.tile_range(s) {
                for ty in ty0..=ty1 {
                    for tx in tx0..=tx1 {
                        let slot = &mut self.cursor[ty * grid.tiles_x + tx];
                        self.splats[*slot as usize] = *s;
                        *slot += 1;
                    }
                }
            }
        }
    }

    fn tile(&self, t: usize) -> &[Splat] {
        &self.splats[self.offsets[t] as usize..self.offsets[t + 1] as usize]
    }
}

impl Splatter {
    /// Empty scratch; grows on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds every splat into `tau` (τ += exp(−d²/σ²)·rgb for pixels with d ≤ R).
    pub fn splat_into(&mut self, splats: &[Splat], tau: &mut TauBuffer) {
        if splats.is_empty() || tau.width == 0 || tau.height == 0 {
            return;
        }
        let grid = Grid::new(tau.width, tau.height);
        let n_chunks = splats.len().div_ceil(BIN_CHUNK);
        if self.chunks.len() < n_chunks {
            self.chunks.resize_with(n_chunks, ChunkBins::default);
        }
        let chunks = &mut self.chunks[..n_chunks];
        splats
            .par_chunks(BIN_CHUNK)
            .zip(chunks.par_iter_mut())
            .for_each(|(src, bins)| bins.fill(src, &grid));

        let chunks = &self.chunks[..n_chunks];
        self.tiles.resize_with(grid.n_tiles(), TileBuf::default);
        self.tiles
            .par_iter_mut()
            .enumerate()
            .for_each(|(t, tile)| render_tile(t, &grid, chunks, tile));

        let tiles = &self.tiles;
        let row_len = grid.width as usize * 3;
        tau.data
            .par_chunks_mut(row_len)
            .enumerate()
            .for_each(|(row, dst)| {
                let (ty, ry) = (row / TILE_PX, row % TILE_PX);
                for tx in 0..grid.tiles_x {
                    let tile = &tiles[ty * grid.tiles_x + tx];
                    if !tile.used {
                        continue;
                    }
                    let x0 = tx * TILE_PX;
                    let x1 = (x0 + TILE_PX).min(grid.width as usize);
                    let src = &tile.data[ry * TILE_PX * 3..][..(x1 - x0) * 3];
                    dst[x0 * 3..x1 * 3]
                        .iter_mut()
                        .zip(src)
                        .for_each(|(d, s)| *d += s);
                }
            });
    }
}

/// Adds `splats` into `tau` with fresh scratch (see [`Splatter`] to reuse it across frames).
pub fn splat_into(splats: &[Splat], tau: &mut TauBuffer) {
    Splatter::new().splat_into(splats, tau);
}

/// Renders tile `t`'s splats, chunk by chunk in input order, into its private buffer.
fn render_tile(t: usize, grid: &Grid, chunks: &[ChunkBins], tile: &mut TileBuf) {
    tile.used = false;
    let tx = t % grid.tiles_x;
    let ty = t / grid.tiles_x;
    let x0 = (tx * TILE_PX) as i32;
    let y0 = (ty * TILE_PX) as i32;
    let x1 = (x0 + TILE_PX as i32).min(grid.width) - 1;
    let y1 = (y0 + TILE_PX as i32).min(grid.height) - 1;
    let mut scratch = ColumnScratch::default();
    for chunk in chunks {
        let splats = chunk.tile(t);
        if splats.is_empty() {
            continue;
        }
        if !tile.used {
            tile.data.clear();
            tile.data.resize(TILE_PX * TILE_PX * 3, 0.0);
            tile.used = true;
        }
        for s in splats {
            splat_one(s, [x0, x1, y0, y1], &mut tile.data, &mut scratch);
        }
    }
}

/// Per-column factors of one splat inside one tile.
struct ColumnScratch {
    dx2: [f32; TILE_PX],
    wx: [f32; TILE_PX],
}

impl Default for ColumnScratch {
    fn default() -> Self {
        Self {
            dx2: [0.0; TILE_PX],
            wx: [0.0; TILE_PX],
        }
    }
}

/// Adds one splat to the tile covering pixel columns x0..=x1 and rows y0..=y1.
#[inline]
fn splat_one(s: &Splat, [x0, x1, y0, y1]: [i32; 4], buf: &mut [f32], scratch: &mut ColumnScratch) {
    let Some([c0, c1, r0, r1]) = pixel_box(s, x0, x1, y0, y1) else {
        return;
    };
    let cut2 = s.cut_px * s.cut_px;
    let inv_sigma2 = 1.0 / (s.sigma_px * s.sigma_px);
    let n_cols = (c1 - c0 + 1) as usize;
    for k in 0..n_cols {
        let dx = ((c0 + k as i32) as f32 + 0.5) - s.x_px;
        let dx2 = dx * dx;
        scratch.dx2[k] = dx2;
        scratch.wx[k] = (-dx2 * inv_sigma2).exp();
    }
    let dx2 = &scratch.dx2[..n_cols];
    let wx = &scratch.wx[..n_cols];
    for j in r0..=r1 {
        let dy = (j as f32 + 0.5) - s.y_px;
        let dy2 = dy * dy;
        if dy2 > cut2 {
            continue;
        }
        // dx² is convex in the column, so the inside columns form one run [a, b) (the box's end
        // columns are inside for dy = 0, so the scans below stop early).
        let Some(a) = dx2.iter().position(|&d| d + dy2 <= cut2) else {
            continue;
        };
        let b = n_cols - dx2.iter().rev().position(|&d| d + dy2 <= cut2).unwrap_or(0);
        let wy = (-dy2 * inv_sigma2).exp();
        let e = [s.rgb[0] * wy, s.rgb[1] * wy, s.rgb[2] * wy];
        let row_start = ((j - y0) as usize * TILE_PX + (c0 - x0) as usize + a) * 3;
        let row = &mut buf[row_start..row_start + (b - a) * 3];
        for (px, &w) in row.chunks_exact_mut(3).zip(&wx[a..b]) {
            px[0] += w * e[0];
            px[1] += w * e[1];
            px[2] += w * e[2];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct per-pixel reference: exp(−d²/σ²) for d² ≤ R², in f64.
    fn reference(splats: &[Splat], width: u32, height: u32) -> Vec<f64> {
        let mut out = vec![0.0; (width * height * 3) as usize];
        for s in splats {
            for j in 0..height {
                for i in 0..width {
                    let dx = f64::from(i) + 0.5 - f64::from(s.x_px);
                    let dy = f64::from(j) + 0.5 - f64::from(s.y_px);
                    let d2 = dx * dx + dy * dy;
                    let cut = f64::from(s.cut_px);
                    if d2 <= cut * cut {
                        let sigma = f64::from(s.sigma_px);
                        let w = (-d2 / (sigma * sigma)).exp();
                        for c in 0..3 {
                            out[((j * width + i) * 3) as usize + c] += w * f64::from(s.rgb[c]);
                        }
                    }
                }
            }
        }
        out
    }

    fn pseudo_random_splats(n: usize, width: f32, height: f32) -> Vec<Splat> {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..n)
            .map(|_| {
                let r = 0.8 + 30.0 * next() * next() * next();
                Splat {
                    x_px: -20.0 + (width + 40.0) * next(),
                    y_px: -20.0 + (height + 40.0) * next(),
                    sigma_px: 0.413 * r,
                    cut_px: 0.75 * r,
                    rgb: [next(), next(), next()],
                }
            })
            .collect()
    }

    #[test]
    fn tiled_result_matches_the_direct_sum() {
        // 150×97 crosses tile edges and leaves partial tiles on both axes.
        let (width, height) = (150, 97);
        let splats = pseudo_random_splats(400, width as f32, height as f32);
        let mut tau = TauBuffer::new(width, height);
        splat_into(&splats, &mut tau);
        let want = reference(&splats, width, height);
        let mut max_rel = 0.0f64;
        for (got, want) in tau.data.iter().zip(&want) {
            let err = (f64::from(*got) - want).abs() / want.abs().max(1e-3);
            max_rel = max_rel.max(err);
        }
        assert!(max_rel < 1e-5, "max relative error {max_rel}");
        assert!(want.iter().filter(|v| **v > 0.0).count() > 5000);
    }

    #[test]
    fn reused_scratch_gives_identical_bits_and_adds() {
        let splats = pseudo_random_splats(200, 130.0, 70.0);
        let mut splatter = Splatter::new();
        let mut a = TauBuffer::new(130, 70);
        splatter.splat_into(&splats, &mut a);
        let mut b = TauBuffer::new(130, 70);
        splatter.splat_into(&splats, &mut b);
        assert_eq!(a, b);
        splatter.splat_into(&splats, &mut b);
        for (once, twice) in a.data.iter().zip(&b.data) {
            assert_eq!(*twice, once + once);
        }
    }

    #[test]
    fn disc_edge_is_inclusive_and_sharp() {
        // Centre on a sample point; R = 2 exactly reaches the 4 axis neighbours at distance 2.
        let s = Splat {
            x_px: 5.5,
            y_px: 5.5,
            sigma_px: 1.0,
            cut_px: 2.0,
            rgb: [1.0, 2.0, 3.0],
        };
        let mut tau = TauBuffer::new(11, 11);
        splat_into(&[s], &mut tau);
        assert_eq!(tau.get(5, 5), [1.0, 2.0, 3.0]);
        assert_eq!(tau.get(7, 5)[0], (-4.0f32).exp());
        assert_eq!(tau.get(5, 3)[0], (-4.0f32).exp());
        assert_eq!(tau.get(7, 6), [0.0; 3]);
        let lit = tau.data.chunks(3).filter(|p| p[0] > 0.0).count();
        assert_eq!(lit, 13); // lattice points with i² + j² ≤ 4
    }
}
