//! The small records: a splat of at most [`SMALL_SIDE`]² pixels inside one tile with its
//! weights evaluated once, and the staging area that holds one chunk's records before the sort.

use super::exp::exp_f32;
use super::grid::{SMALL_SIDE, TILE_PX};
use crate::render::project::Splat;

/// A splat whose footprint box is at most SMALL_SIDE² pixels inside one tile, with its weights
/// already evaluated: pixel (c, r) of the box gets τ += wx[c]·(rgb·wy[r]) when bit 3r + c of
/// `mask` is set (the pixel is on the image and inside the disc). `C` emission channels: 3 (RGB,
/// 40 bytes) or 1 for grey frames (32 bytes: fewer bytes staged, sorted and read per particle).
#[derive(Debug, Clone, Copy)]
pub(super) struct SmallSplat<const C: usize> {
    /// Index inside its tile (row·TILE_PX + column) of the box's top-left pixel.
    pub(super) pixel: u16,
    /// Which of the box's pixels are drawn.
    pub(super) mask: u16,
    /// Column weights exp(−dx²/σ²).
    pub(super) wx: [f32; SMALL_SIDE],
    /// Row weights exp(−dy²/σ²).
    pub(super) wy: [f32; SMALL_SIDE],
    /// Emission e (RGB, or its first channel).
    pub(super) rgb: [f32; C],
}

impl<const C: usize> SmallSplat<C> {
    /// The record of splat `s` over box `c` (columns c[0]..=c[1], rows c[2]..=c[3]: at most
    /// SMALL_SIDE² pixels of one tile), by the f32 operations of `tile::splat_one`: dx = (i +
    /// 0.5) − x, dx², exp(−dx²·(1/σ²)); a pixel is inside when dx² + dy² ≤ R². The mask is empty
    /// when no pixel of the box is inside.
    #[inline(always)]
    pub(super) fn of_box(s: &Splat, c: [i32; 4]) -> Self {
        let cut2 = s.cut_px * s.cut_px;
        let inv_sigma2 = 1.0 / (s.sigma_px * s.sigma_px);
        let mut dx2 = [0.0f32; SMALL_SIDE];
        let mut dy2 = [0.0f32; SMALL_SIDE];
        for k in 0..SMALL_SIDE {
            let dx = ((c[0] + k as i32) as f32 + 0.5) - s.x_px;
            dx2[k] = dx * dx;
            let dy = ((c[2] + k as i32) as f32 + 0.5) - s.y_px;
            dy2[k] = dy * dy;
        }
        let (n_cols, n_rows) = ((c[1] - c[0]) as usize + 1, (c[3] - c[2]) as usize + 1);
        let mut mask = 0u16;
        for (r, &dy2) in dy2.iter().enumerate().take(n_rows) {
            for (k, &dx2) in dx2.iter().enumerate().take(n_cols) {
                if dx2 + dy2 <= cut2 {
                    mask |= 1 << (SMALL_SIDE * r + k);
                }
            }
        }
        let (col, row) = (c[0] as usize % TILE_PX, c[2] as usize % TILE_PX);
        Self {
            pixel: (row * TILE_PX + col) as u16,
            mask,
            wx: dx2.map(|d| exp_f32(-d * inv_sigma2)),
            wy: dy2.map(|d| exp_f32(-d * inv_sigma2)),
            rgb: std::array::from_fn(|ch| s.rgb[ch]),
        }
    }
}

impl<const C: usize> Default for SmallSplat<C> {
    fn default() -> Self {
        Self {
            pixel: 0,
            mask: 0,
            wx: [0.0; SMALL_SIDE],
            wy: [0.0; SMALL_SIDE],
            rgb: [0.0; C],
        }
    }
}

/// One chunk's output in input order, before the sort by tile. Small records are kept as two
/// arrays (record, tile) so that the sort's counting pass reads 4 bytes per record; their first
/// `n_small` entries are this chunk's, the rest is room reused across chunks and frames. Grey
/// frames use the one-channel records (`small_grey`), others the RGB ones.
#[derive(Debug, Default)]
pub(super) struct Staging {
    small: Vec<SmallSplat<3>>,
    small_grey: Vec<SmallSplat<1>>,
    pub(super) small_tile: Vec<u32>,
    pub(super) n_small: usize,
    pub(super) large: Vec<Splat>,
}

/// The small records of `C` channels a staging area or a chunk's bins hold.
pub(super) trait SmallStore<const C: usize> {
    /// The records (all the room, used or not).
    fn records(&self) -> &[SmallSplat<C>];
    /// The record vector.
    fn records_mut(&mut self) -> &mut Vec<SmallSplat<C>>;
}

impl SmallStore<3> for Staging {
    fn records(&self) -> &[SmallSplat<3>] {
        &self.small
    }
    fn records_mut(&mut self) -> &mut Vec<SmallSplat<3>> {
        &mut self.small
    }
}

impl SmallStore<1> for Staging {
    fn records(&self) -> &[SmallSplat<1>] {
        &self.small_grey
    }
    fn records_mut(&mut self) -> &mut Vec<SmallSplat<1>> {
        &mut self.small_grey
    }
}

impl Staging {
    /// Forgets the records (keeps the room).
    pub(super) fn clear(&mut self) {
        self.n_small = 0;
        self.large.clear();
    }

    /// Makes room for `extra` more small records of `C` channels after the first `n_small`.
    #[inline(always)]
    pub(super) fn reserve_small<const C: usize>(&mut self, extra: usize)
    where
        Self: SmallStore<C>,
    {
        let need = self.n_small + extra;
        let have = self.records().len().min(self.small_tile.len());
        if have < need {
            let len = need.max(2 * have).max(1024);
            self.records_mut().resize(len, SmallSplat::default());
            if self.small_tile.len() < len {
                self.small_tile.resize(len, 0);
            }
        }
    }

    /// Appends one small record of `C` channels for tile `tile`.
    #[inline(always)]
    pub(super) fn push_small<const C: usize>(&mut self, tile: u32, record: SmallSplat<C>)
    where
        Self: SmallStore<C>,
    {
        self.reserve_small::<C>(1);
        let n = self.n_small;
        self.records_mut()[n] = record;
        self.small_tile[n] = tile;
        self.n_small += 1;
    }

    /// This chunk's small records of `C` channels and their tiles.
    pub(super) fn small<const C: usize>(&self) -> (&[SmallSplat<C>], &[u32])
    where
        Self: SmallStore<C>,
    {
        let records = self.records();
        let n = self.n_small.min(records.len()).min(self.small_tile.len());
        (&records[..n], &self.small_tile[..n])
    }
}
