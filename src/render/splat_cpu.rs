//! Tiled CPU splatter: τ += exp(−d²/σ²)·e over the disc d ≤ R of every splat (issue 3; notes §9).
//!
//! Screen tiles of [`TILE_PX`]² pixels are each owned by one rayon task, so there are no atomics.
//! The input is cut into chunks of a fixed length ([`chunk_len`], a function of the image size
//! only). Each chunk is produced (projected) and binned by tile in one pass on one thread
//! ([`Splatter::bin`]): a splat whose footprint is a single pixel becomes a 16-byte
//! [`PixelAdd`] (its pixel and the τ it adds), every other splat is copied to each tile its
//! footprint box overlaps. Each tile then walks the chunks in input order, adding a chunk's
//! single-pixel records first and its other splats after them ([`Splatter::draw_into`]), so every
//! pixel sums its contributions in one fixed order whatever the number of threads: the result is
//! bit-for-bit deterministic. All scratch lives in a [`Splatter`] and is reused across frames; no
//! allocation happens per particle.
//!
//! The weight is evaluated as the separable product exp(−dx²/σ²)·exp(−dy²/σ²) (equal to
//! exp(−d²/σ²) up to f32 rounding), with the column factors computed once per splat and tile.
//! A pixel (i, j) is inside when dx² + dy² ≤ R² in f32, with dx = (i + 0.5) − x, dy = (j + 0.5) − y.
//! Tile buffers are channel-planar (R, G and B planes) so the per-row loops vectorise over pixels.

use super::project::{Splat, ceil_i32, floor_i32};
use super::tau::TauBuffer;
use rayon::prelude::*;
use std::sync::{Mutex, PoisonError};

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

/// How [`Splatter::draw_into`] writes the tiles into τ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// τ += tiles (τ keeps what it held).
    Add,
    /// τ = tiles (τ is resized, and every pixel written; nothing needs zeroing first).
    Overwrite,
}

/// A splat whose footprint is one pixel, reduced to the pixel and the τ it adds there.
#[derive(Debug, Clone, Copy, Default)]
struct PixelAdd {
    /// Pixel index inside its tile (row·TILE_PX + column).
    pixel: u32,
    /// τ added (RGB).
    tau: [f32; 3],
}

/// Reusable scratch of the tiled splatter.
#[derive(Debug, Default)]
pub struct Splatter {
    chunks: Vec<ChunkBins>,
    tiles: Vec<TileBuf>,
    /// Per-thread staging of the chunk being binned (indexed by rayon thread).
    staging: Vec<Mutex<Staging>>,
    /// Layout and chunk count of the last [`Splatter::bin`].
    binned: Option<(Grid, usize)>,
}

/// One chunk's output in input order, before the sort by tile.
#[derive(Debug, Default)]
struct Staging {
    small: Vec<(u32, PixelAdd)>,
    large: Vec<Splat>,
}

/// Receives one chunk's splats in input order (see [`Splatter::bin`]).
pub struct ChunkSink<'a> {
    grid: Grid,
    staging: &'a mut Staging,
}

/// One chunk's records sorted by tile: tile t owns `small[offsets[t][0]..offsets[t + 1][0]]`
/// and `large[offsets[t][1]..offsets[t + 1][1]]`.
#[derive(Debug, Default)]
struct ChunkBins {
    offsets: Vec<[u32; 2]>,
    cursor: Vec<[u32; 2]>,
    small: Vec<PixelAdd>,
    large: Vec<Splat>,
}

/// A tile's private τ: three planes (R, G, B) of TILE_PX² values, row stride TILE_PX.
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

impl ChunkSink<'_> {
    /// Takes the next splat of the chunk (input order is kept).
    #[inline]
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
        if i0 != i1 || j0 != j1 {
            self.staging.large.push(*s);
            return;
        }
        // One pixel: the same f32 operations as `splat_one`, done now.
        let grid = &self.grid;
        if i0 < 0 || j0 < 0 || i0 >= grid.width || j0 >= grid.height {
            return;
        }
        let dx = (i0 as f32 + 0.5) - s.x_px;
        let dy = (j0 as f32 + 0.5) - s.y_px;
        let (dx2, dy2) = (dx * dx, dy * dy);
        if dx2 + dy2 > cut2 {
            return;
        }
        let inv_sigma2 = 1.0 / (s.sigma_px * s.sigma_px);
        let wx = (-dx2 * inv_sigma2).exp();
        let wy = (-dy2 * inv_sigma2).exp();
        let e = [s.rgb[0] * wy, s.rgb[1] * wy, s.rgb[2] * wy];
        let (i, j) = (i0 as usize, j0 as usize);
        let tile = (j / TILE_PX) * grid.tiles_x + i / TILE_PX;
        let pixel = (j % TILE_PX) * TILE_PX + i % TILE_PX;
        self.staging.small.push((
            tile as u32,
            PixelAdd {
                pixel: pixel as u32,
                tau: [wx * e[0], wx * e[1], wx * e[2]],
            },
        ));
    }
}

impl ChunkBins {
    /// Counting sort of one chunk's staged records by tile.
    fn fill(&mut self, staging: &Staging, grid: &Grid) {
        let n_tiles = grid.n_tiles();
        self.offsets.clear();
        self.offsets.resize(n_tiles + 1, [0, 0]);
        for (tile, _) in &staging.small {
            self.offsets[*tile as usize + 1][0] += 1;
        }
        for s in &staging.large {
            if let Some([tx0, tx1, ty0, ty1]) = grid.tile_range(s) {
                for ty in ty0..=ty1 {
                    for tx in tx0..=tx1 {
                        self.offsets[ty * grid.tiles_x + tx + 1][1] += 1;
                    }
                }
            }
        }
        for t in 0..n_tiles {
            let before = self.offsets[t];
            let at = &mut self.offsets[t + 1];
            at[0] += before[0];
            at[1] += before[1];
        }
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.offsets[..n_tiles]);
        let [n_small, n_large] = self.offsets[n_tiles];
        self.small.clear();
        self.small.resize(n_small as usize, PixelAdd::default());
        self.large.clear();
        self.large.resize(n_large as usize, Splat::default());
        for (tile, add) in &staging.small {
            let slot = &mut self.cursor[*tile as usize][0];
            self.small[*slot as usize] = *add;
            *slot += 1;
        }
        for s in &staging.large {
            if let Some([tx0, tx1, ty0, ty1]) = grid.tile_range(s) {
                for ty in ty0..=ty1 {
                    for tx in tx0..=tx1 {
                        let slot = &mut self.cursor[ty * grid.tiles_x + tx][1];
                        self.large[*slot as usize] = *s;
                        *slot += 1;
                    }
                }
            }
        }
    }

    /// Tile `t`'s single-pixel records and other splats.
    fn tile(&self, t: usize) -> (&[PixelAdd], &[Splat]) {
        let [s0, l0] = self.offsets[t];
        let [s1, l1] = self.offsets[t + 1];
        (
            &self.small[s0 as usize..s1 as usize],
            &self.large[l0 as usize..l1 as usize],
        )
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
        let grid = Grid::new(width, height);
        if self.chunks.len() < n_chunks {
            self.chunks.resize_with(n_chunks, ChunkBins::default);
        }
        let threads = rayon::current_num_threads().max(1);
        if self.staging.len() < threads {
            self.staging.resize_with(threads, Mutex::default);
        }
        let staging = &self.staging;
        self.chunks[..n_chunks]
            .par_iter_mut()
            .enumerate()
            .for_each(|(c, bins)| {
                // The staging slot only holds this chunk's records until they are sorted, so
                // which thread's slot is used never changes the result.
                let slot = rayon::current_thread_index().unwrap_or(0) % staging.len();
                let mut stage = staging[slot].lock().unwrap_or_else(PoisonError::into_inner);
                stage.small.clear();
                stage.large.clear();
                let mut sink = ChunkSink {
                    grid,
                    staging: &mut stage,
                };
                produce(c, &mut sink);
                bins.fill(&stage, &grid);
            });
        self.binned = Some((grid, n_chunks));
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
                    let x0 = tx * TILE_PX;
                    let x1 = (x0 + TILE_PX).min(grid.width as usize);
                    let dst = &mut dst[x0 * 3..x1 * 3];
                    let tile = &tiles[ty * grid.tiles_x + tx];
                    if !tile.used {
                        if merge == Merge::Overwrite {
                            dst.fill(0.0);
                        }
                        continue;
                    }
                    let at = ry * TILE_PX;
                    let n = x1 - x0;
                    let r = &tile.data[at..at + n];
                    let g = &tile.data[TILE_AREA + at..TILE_AREA + at + n];
                    let b = &tile.data[2 * TILE_AREA + at..2 * TILE_AREA + at + n];
                    let px = dst.chunks_exact_mut(3).zip(r).zip(g).zip(b);
                    match merge {
                        Merge::Add => px.for_each(|(((d, r), g), b)| {
                            d[0] += r;
                            d[1] += g;
                            d[2] += b;
                        }),
                        Merge::Overwrite => px.for_each(|(((d, r), g), b)| {
                            d[0] = *r;
                            d[1] = *g;
                            d[2] = *b;
                        }),
                    }
                }
            });
    }
}

/// Adds `splats` into `tau` with fresh scratch (see [`Splatter`] to reuse it across frames).
pub fn splat_into(splats: &[Splat], tau: &mut TauBuffer) {
    Splatter::new().splat_into(splats, tau);
}

/// Renders tile `t`'s records, chunk by chunk in input order, into its private buffer.
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
        let (small, large) = chunk.tile(t);
        if small.is_empty() && large.is_empty() {
            continue;
        }
        if !tile.used {
            tile.data.clear();
            tile.data.resize(3 * TILE_AREA, 0.0);
            tile.used = true;
        }
        let (r, gb) = tile.data.split_at_mut(TILE_AREA);
        let (g, b) = gb.split_at_mut(TILE_AREA);
        for p in small {
            let k = p.pixel as usize;
            r[k] += p.tau[0];
            g[k] += p.tau[1];
            b[k] += p.tau[2];
        }
        for s in large {
            splat_one(
                s,
                [x0, x1, y0, y1],
                [&mut *r, &mut *g, &mut *b],
                &mut scratch,
            );
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

/// The run [a, b) of columns k with dx2[k] + dy2 ≤ cut2, or `None` when empty. dx² is convex in
/// the column, so the inside columns form one run; its ends are first estimated from
/// √(cut² − dy²) and then settled by the exact f32 test, so the run is exactly the one a scan
/// of every column would find.
#[inline]
fn inside_run(
    dx2: &[f32],
    dy2: f32,
    cut2: f32,
    x_px: f32,
    first_col: i32,
) -> Option<(usize, usize)> {
    let n = dx2.len() as i32;
    let inside = |k: usize| dx2[k] + dy2 <= cut2;
    let half = (cut2 - dy2).max(0.0).sqrt();
    let mut a = (ceil_i32(x_px - half - 0.5).saturating_sub(first_col)).clamp(0, n) as usize;
    let mut b = (floor_i32(x_px + half - 0.5).saturating_sub(first_col))
        .saturating_add(1)
        .clamp(0, n) as usize;
    while a > 0 && inside(a - 1) {
        a -= 1;
    }
    while a < dx2.len() && !inside(a) {
        a += 1;
    }
    if a == dx2.len() {
        return None;
    }
    b = b.max(a + 1);
    while b < dx2.len() && inside(b) {
        b += 1;
    }
    while b > a + 1 && !inside(b - 1) {
        b -= 1;
    }
    Some((a, b))
}

/// Adds one splat to the tile covering pixel columns x0..=x1 and rows y0..=y1 (planes R, G, B).
#[inline]
fn splat_one(
    s: &Splat,
    [x0, x1, y0, y1]: [i32; 4],
    [plane_r, plane_g, plane_b]: [&mut [f32]; 3],
    scratch: &mut ColumnScratch,
) {
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
        let Some((a, b)) = inside_run(dx2, dy2, cut2, s.x_px, c0) else {
            continue;
        };
        let wy = (-dy2 * inv_sigma2).exp();
        let e = [s.rgb[0] * wy, s.rgb[1] * wy, s.rgb[2] * wy];
        let start = (j - y0) as usize * TILE_PX + (c0 - x0) as usize;
        let w = &wx[a..b];
        let run = start + a..start + b;
        add_row(&mut plane_r[run.clone()], w, e[0]);
        add_row(&mut plane_g[run.clone()], w, e[1]);
        add_row(&mut plane_b[run], w, e[2]);
    }
}

/// row[k] += w[k]·e: one plane of one row (a loop the compiler vectorises).
#[inline]
fn add_row(row: &mut [f32], w: &[f32], e: f32) {
    for (t, w) in row.iter_mut().zip(w) {
        *t += w * e;
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
