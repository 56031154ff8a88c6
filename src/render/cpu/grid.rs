//! The tile layout of an image and the footprint of a splat on it: which pixels a splat's disc
//! covers (the exact f32 test every path shares) and which tiles hold them.

use crate::render::project::{Splat, ceil_i32, floor_i32};

/// Tile side in pixels.
pub const TILE_PX: usize = 64;
/// Pixels per tile.
pub(super) const TILE_AREA: usize = TILE_PX * TILE_PX;
/// Largest footprint side (pixels) of a [`SmallSplat`].
pub const SMALL_SIDE: usize = 3;

/// Tile layout of an image.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grid {
    pub(super) width: i32,
    pub(super) height: i32,
    pub(super) tiles_x: usize,
    pub(super) tiles_y: usize,
}

impl Grid {
    pub(super) fn new(width: u32, height: u32) -> Self {
        Self {
            width: width as i32,
            height: height as i32,
            tiles_x: (width as usize).div_ceil(TILE_PX),
            tiles_y: (height as usize).div_ceil(TILE_PX),
        }
    }

    pub(super) fn n_tiles(&self) -> usize {
        self.tiles_x * self.tiles_y
    }
}

/// Tiles (x0, x1, y0, y1 inclusive) holding the pixels of a box (x0, x1, y0, y1, clipped to the
/// image).
#[inline]
pub(super) fn tiles_of([i0, i1, j0, j1]: [i32; 4]) -> [usize; 4] {
    let t = TILE_PX as i32;
    [i0 / t, i1 / t, j0 / t, j1 / t].map(|v| v as usize)
}

/// The splat's footprint box: columns i with (i + 0.5 − x)² ≤ R² and rows likewise, evaluated
/// in f32 exactly as the per-pixel test, clamped to [x_lo, x_hi] × [y_lo, y_hi]. `None` when
/// empty or when the splat is not finite.
#[inline(always)]
pub(super) fn pixel_box(s: &Splat, x_lo: i32, x_hi: i32, y_lo: i32, y_hi: i32) -> Option<[i32; 4]> {
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
pub(super) fn splat_is_finite(s: &Splat) -> bool {
    s.cut_px >= 0.0
        && s.sigma_px > 0.0
        && s.x_px.is_finite()
        && s.y_px.is_finite()
        && s.cut_px.is_finite()
}

/// Indices i with ((i + 0.5) − centre)² ≤ cut² (f32): ceil/floor of centre ∓ cut − 0.5, then
/// moved by one where f32 rounding put an end on the wrong side of the exact test.
#[inline(always)]
pub(super) fn sample_range(centre: f32, cut: f32, cut2: f32) -> (i32, i32) {
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

/// Columns per vector block of the row loop (8 f32 lanes with AVX2).
pub(super) const BLOCK: usize = 8;
