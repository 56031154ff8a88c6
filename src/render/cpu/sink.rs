//! Where one chunk's projected splats go, in input order: a small record for the tile that
//! holds a footprint of at most [`SMALL_SIDE`]² pixels, else the chunk's list of splats to bin.

use super::grid::{Grid, SMALL_SIDE, TILE_PX, sample_range, splat_is_finite};
use super::records::{SmallSplat, SmallStore, Staging};
use crate::render::project::Splat;

/// Receives one chunk's splats in input order (see [`super::Splatter::bin`]).
pub struct ChunkSink<'a> {
    pub(super) grid: Grid,
    /// Stage one-channel small records (the frame is drawn as [`super::Channels::Grey`]).
    pub(super) grey: bool,
    pub(super) staging: &'a mut Staging,
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
