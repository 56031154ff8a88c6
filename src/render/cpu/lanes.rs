//! The projection's per-particle tail and the small-splat staging, [`LANES`] particles at a
//! time (see `splat.rs`).
//!
//! Why: after the 8-wide geometry ([`geometry_lanes`]) the scalar path handled each particle
//! alone — the limits and class as branches, then `ChunkSink::push` with its footprint search,
//! eight weights and a nine-bit mask — and that tail is most of the projection pass when done
//! per particle. Here every step is a lane-parallel select over fixed-size arrays, so the
//! compiler evaluates it in vector registers; the records of the lanes that become small splats
//! are written by compaction (each lane writes its slot, the cursor moves by 0 or 1), the other
//! lanes' splats are copied for the tiles by the same decisions as `ChunkSink::push`, without
//! searching their footprint a second time. Every value is computed by the same
//! f32 operations in the same order as [`super::super::project::project_particle`] followed by
//! `ChunkSink::push`, so the staged records have the same bits (unit tests below).

// Indexed loops over the lanes are the point here: each is one vector operation per step.
#![allow(clippy::needless_range_loop)]

use super::exp::exp_f32;
use super::grid::{SMALL_SIDE, TILE_PX};
use super::records::{SmallSplat, SmallStore, Staging};
use super::sink::ChunkSink;
use crate::render::log10::{lanes_match_host, log10_lanes};
use crate::render::normalise::Normaliser;
use crate::render::project::{
    AMPLITUDE_FACTOR, CUT_FACTOR, LANES, Lanes, SIGMA_FACTOR, Splat, StyleParams, ViewParams,
    ceil_i32, floor_i32,
};

/// Class index of an inactive particle in [`SplatLanes::class`] (the order of `ClassCounts`).
pub const CLASS_INACTIVE: u8 = 0;
/// Class index of a small particle.
pub const CLASS_SMALL: u8 = 1;
/// Class index of a medium particle.
pub const CLASS_MEDIUM: u8 = 2;
/// Class index of a large particle.
pub const CLASS_LARGE: u8 = 3;

/// [`LANES`] projected particles, one array per quantity (meaningless where inactive).
#[derive(Debug, Clone, Copy, Default)]
pub struct SplatLanes {
    /// Class index (inactive, small, medium, large: 0..=3).
    pub class: [u8; LANES],
    /// Screen X.
    pub x_px: [f32; LANES],
    /// Screen Y.
    pub y_px: [f32; LANES],
    /// σ in pixels.
    pub sigma_px: [f32; LANES],
    /// Cut radius R in pixels.
    pub cut_px: [f32; LANES],
    /// Emission, one array per channel.
    pub rgb: [[f32; LANES]; 3],
}

impl SplatLanes {
    /// Lane `l` as a [`Splat`].
    #[inline(always)]
    pub fn splat(&self, l: usize) -> Splat {
        Splat {
            x_px: self.x_px[l],
            y_px: self.y_px[l],
            sigma_px: self.sigma_px[l],
            cut_px: self.cut_px[l],
            rgb: [self.rgb[0][l], self.rgb[1][l], self.rgb[2][l]],
        }
    }
}

/// The limits, class, σ, R and emission of [`LANES`] particles whose geometry is in `g`: the
/// operations of `project::finish`, as selects (`&`, `|` on booleans: no branch per lane).
#[inline(always)]
pub fn finish_lanes(
    view: &ViewParams,
    style: &StyleParams<'_>,
    g: &Lanes,
    h: &[f32; LANES],
    intensity_raw: &[f32; LANES],
    colour_raw: &[f32; LANES],
    out: &mut SplatLanes,
) {
    let (width, height) = (view.width_px as f32, view.height_px as f32);
    for l in 0..LANES {
        let (depth, hl) = (g.depth[l], h[l]);
        let (x_px, y_px, radius_px) = (g.x_px[l], g.y_px[l], g.radius_px[l]);
        let [i0, i1, j0, j1] = g.footprint[l];
        let in_depth = (depth > view.near) & (depth < view.far) & (hl > 0.0) & hl.is_finite();
        let finite =
            (radius_px > 0.0) & radius_px.is_finite() & x_px.is_finite() & y_px.is_finite();
        let touches = !((i0 > i1)
            | (j0 > j1)
            | (i1 < 0)
            | (j1 < 0)
            | (i0 >= view.width_px)
            | (j0 >= view.height_px));
        let cut_px = CUT_FACTOR * radius_px;
        let centre_on_image = (x_px >= 0.0) & (x_px < width) & (y_px >= 0.0) & (y_px < height);
        let large = (cut_px >= view.border_px) | !centre_on_image;
        let small = (i0 == i1) & (j0 == j1);
        let class = if large {
            CLASS_LARGE
        } else if small {
            CLASS_SMALL
        } else {
            CLASS_MEDIUM
        };
        out.class[l] = if in_depth & finite & touches {
            class
        } else {
            CLASS_INACTIVE
        };
        out.x_px[l] = x_px;
        out.y_px[l] = y_px;
        out.sigma_px[l] = SIGMA_FACTOR * radius_px;
        out.cut_px[l] = cut_px;
    }
    let mut n = [1.0f32; LANES];
    if let Some(norm) = &style.intensity {
        normalised_lanes(norm, intensity_raw, &mut n);
    }
    let mut amplitude = [0.0f32; LANES];
    for l in 0..LANES {
        amplitude[l] = n[l] * AMPLITUDE_FACTOR / h[l] / g.c[l];
    }
    let b = style.brightness;
    match &style.colour {
        Some((norm, palette)) => {
            let mut x = [0.0f32; LANES];
            normalised_lanes(norm, colour_raw, &mut x);
            for l in 0..LANES {
                let colour = palette.sample(x[l]);
                for (ch, c) in colour.iter().enumerate() {
                    out.rgb[ch][l] = c * amplitude[l] * b;
                }
            }
        }
        None => {
            // Colour (1, 1, 1): 1·A·b, the scalar path's product (1·A = A exactly).
            for l in 0..LANES {
                let e = 1.0 * amplitude[l] * b;
                out.rgb[0][l] = e;
                out.rgb[1][l] = e;
                out.rgb[2][l] = e;
            }
        }
    }
}

/// `norm.apply` of each lane's raw value into `out` (a plain loop: `array::from_fn` with the
/// call inside was compiled out of line, without the caller's vector instructions). Under log
/// it takes the lanes' log10 with [`log10_lanes`] where that gives the host's bits, and then
/// `apply`'s operations as selects: t = log10 v for v > 0 (never NaN there), else lo.
#[inline(always)]
fn normalised_lanes(norm: &Normaliser, raw: &[f32; LANES], out: &mut [f32; LANES]) {
    if !(norm.log && lanes_match_host()) {
        for l in 0..LANES {
            out[l] = norm.apply(raw[l]);
        }
        return;
    }
    let (lo, hi) = (norm.lo, norm.hi);
    if hi == lo {
        *out = [1.0; LANES];
        return;
    }
    let mut t = [0.0f32; LANES];
    log10_lanes(raw, &mut t);
    for l in 0..LANES {
        let t = if raw[l] > 0.0 { t[l] } else { lo };
        out[l] = (t.clamp(lo, hi) - lo) / (hi - lo);
    }
}

/// How many of the lanes are of each class (0..=3), counted in one word: incrementing a
/// counter in memory per lane is a chain of dependent read-modify-writes when neighbouring
/// lanes share a class.
#[inline(always)]
pub(super) fn class_counts(class: &[u8; LANES]) -> [u64; 4] {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let v = u64::from_le_bytes(*class);
    let (low, high) = (v & ONES, (v >> 1) & ONES);
    let [n1, n2, n3] = [low & !high, high & !low, low & high].map(|b| u64::from(b.count_ones()));
    [LANES as u64 - n1 - n2 - n3, n1, n2, n3]
}

/// `project::sample_range` as selects: the indices i with ((i + 0.5) − centre)² ≤ cut² (f32),
/// from ceil/floor of centre ∓ cut − 0.5, moved by one where rounding put an end on the wrong
/// side of the exact test.
#[inline(always)]
pub(super) fn sample_range_sel(centre: f32, cut: f32, cut2: f32) -> (i32, i32) {
    let inside = |i: i32| {
        let d = (i as f32 + 0.5) - centre;
        d * d <= cut2
    };
    let lo = ceil_i32(centre - cut - 0.5);
    let hi = floor_i32(centre + cut - 0.5);
    let (lo_m, lo_p) = (lo.saturating_sub(1), lo.saturating_add(1));
    let (hi_m, hi_p) = (hi.saturating_sub(1), hi.saturating_add(1));
    let lo = if inside(lo_m) {
        lo_m
    } else if inside(lo) {
        lo
    } else {
        lo_p
    };
    let hi = if inside(hi_p) {
        hi_p
    } else if inside(hi) {
        hi
    } else {
        hi_m
    };
    (lo, hi)
}

const _: () = assert!(
    LANES == 8,
    "class_counts packs the lanes' classes into one u64"
);

impl ChunkSink<'_> {
    /// Takes [`LANES`] projected particles in input order (lanes of class inactive are
    /// skipped) and returns how many of each class there were. The same records, in the same
    /// order, as [`ChunkSink::push`] on each active lane.
    #[inline(always)]
    pub fn push_lanes(&mut self, p: &SplatLanes) -> [u64; 4] {
        if self.grey {
            self.push_lanes_channels::<1>(p)
        } else {
            self.push_lanes_channels::<3>(p)
        }
    }

    /// [`ChunkSink::push_lanes`] staging small records of `C` channels.
    #[inline(always)]
    fn push_lanes_channels<const C: usize>(&mut self, p: &SplatLanes) -> [u64; 4]
    where
        Staging: SmallStore<C>,
    {
        let counts = class_counts(&p.class);
        let grid = self.grid;
        let side = SMALL_SIDE as i32 - 1;
        let tile_shift = TILE_PX.trailing_zeros();
        // One loop per step, each over the lanes with a straight-line body, so that each is
        // vectorised across the lanes (one loop over lanes doing everything gets vectorised
        // within a lane instead: 4-wide exp per particle).
        let mut fast = [false; LANES];
        let mut to_large = [false; LANES];
        let mut box_lo = [[0i32; LANES]; 2];
        let mut box_len = [[0i32; LANES]; 2];
        let mut cut2 = [0.0f32; LANES];
        let mut inv_sigma2 = [0.0f32; LANES];
        for l in 0..LANES {
            let (x, y, cut, sigma) = (p.x_px[l], p.y_px[l], p.cut_px[l], p.sigma_px[l]);
            // `splat_is_finite`.
            let finite =
                (cut >= 0.0) & (sigma > 0.0) & x.is_finite() & y.is_finite() & cut.is_finite();
            let c2 = cut * cut;
            let (i0, i1) = sample_range_sel(x, cut, c2);
            let (j0, j1) = sample_range_sel(y, cut, c2);
            // i1 − i0 ≤ side without overflow (i0 ≤ i1 where it matters).
            let fits = (i1 <= i0.saturating_add(side)) & (j1 <= j0.saturating_add(side));
            let (c0, c1) = (i0.max(0), i1.min(grid.width - 1));
            let (r0, r1) = (j0.max(0), j1.min(grid.height - 1));
            // c0 ≥ 0 and, where the box is not empty, c1 ≥ c0: the shift is the division.
            let one_tile =
                (c0 >> tile_shift == c1 >> tile_shift) & (r0 >> tile_shift == r1 >> tile_shift);
            // `push`'s decisions: nothing for a non-finite splat or an empty box; a copy for
            // the tiles when the box is wider than SMALL_SIDE; nothing when it misses the
            // image; a copy when it straddles tiles; else a small record.
            let drawable = (p.class[l] != CLASS_INACTIVE) & finite & (i0 <= i1) & (j0 <= j1);
            let on_image = (c0 <= c1) & (r0 <= r1);
            fast[l] = drawable & fits & on_image & one_tile;
            to_large[l] = drawable & (!fits | (on_image & !one_tile));
            box_lo[0][l] = c0;
            box_lo[1][l] = r0;
            box_len[0][l] = c1.wrapping_sub(c0);
            box_len[1][l] = r1.wrapping_sub(r0);
            cut2[l] = c2;
            inv_sigma2[l] = 1.0 / (sigma * sigma);
        }
        // Squared offsets of the box's columns ([0]) and rows ([1]) from the centre.
        // The other lanes' splats go to the tiles as they are; a lane never gives both, so the
        // small and the large lists each keep their input order.
        for l in 0..LANES {
            if to_large[l] {
                self.staging.large.push(p.splat(l));
            }
        }
        if !fast.iter().any(|&f| f) {
            return counts;
        }
        let mut d2 = [[[0.0f32; LANES]; SMALL_SIDE]; 2];
        for (axis, centre) in [&p.x_px, &p.y_px].into_iter().enumerate() {
            for k in 0..SMALL_SIDE {
                for l in 0..LANES {
                    let d = (box_lo[axis][l].wrapping_add(k as i32) as f32 + 0.5) - centre[l];
                    d2[axis][k][l] = d * d;
                }
            }
        }
        let mut w = [[[0.0f32; LANES]; SMALL_SIDE]; 2];
        for axis in 0..2 {
            for k in 0..SMALL_SIDE {
                for l in 0..LANES {
                    w[axis][k][l] = exp_f32(-d2[axis][k][l] * inv_sigma2[l]);
                }
            }
        }
        let mut mask = [0u16; LANES];
        for r in 0..SMALL_SIDE {
            for k in 0..SMALL_SIDE {
                for l in 0..LANES {
                    let inside = (r as i32 <= box_len[1][l])
                        & (k as i32 <= box_len[0][l])
                        & (d2[0][k][l] + d2[1][r][l] <= cut2[l]);
                    mask[l] |= u16::from(inside) << (SMALL_SIDE * r + k);
                }
            }
        }
        let mut tile = [0u32; LANES];
        let mut pixel = [0u16; LANES];
        for l in 0..LANES {
            let (cu, ru) = (box_lo[0][l] as u32 as usize, box_lo[1][l] as u32 as usize);
            pixel[l] = ((ru % TILE_PX) * TILE_PX + cu % TILE_PX) as u16;
            tile[l] = ((ru >> tile_shift) * grid.tiles_x + (cu >> tile_shift)) as u32;
        }
        let record: [SmallSplat<C>; LANES] = std::array::from_fn(|l| SmallSplat {
            pixel: pixel[l],
            mask: mask[l],
            wx: std::array::from_fn(|k| w[0][k][l]),
            wy: std::array::from_fn(|k| w[1][k][l]),
            rgb: std::array::from_fn(|ch| p.rgb[ch][l]),
        });
        // Compaction: every lane writes the next slot; only kept ones move the cursor.
        let stage = &mut *self.staging;
        stage.reserve_small::<C>(LANES);
        let mut n = stage.n_small;
        for l in 0..LANES {
            stage.records_mut()[n] = record[l];
            stage.small_tile[n] = tile[l];
            n += usize::from(fast[l] & (record[l].mask != 0));
        }
        stage.n_small = n;
        counts
    }
}
