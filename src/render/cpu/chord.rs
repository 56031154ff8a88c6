//! One general splat into a tile with 8-wide AVX2 vectors, each row walked only over the disc's
//! chord (see `tile::splat_one`, whose pixels and bits this gives).
//!
//! Why: at radius factor 1 most of the tile pass is rows of splats tens of pixels wide, and
//! `splat_one` walks every block of the footprint box in every row, testing each pixel against
//! the disc. Here a row's chord, the columns whose exact f32 test (dx² + dy² ≤ R²) can pass, is
//! bounded from above and below in f64 (`row_chord`, no search): the row's blocks start at the
//! chord's first column, blocks wholly inside the chord add wx·(rgb·wy) without the test, and
//! only the others (the last block of a row, in general) test each pixel. A pixel left out is
//! one whose test fails, which `splat_one` adds +0 to; a pixel drawn gets the same product in
//! the same order, so τ has the same bits. Rows narrower than two blocks keep the box's blocks.

use super::exp::{LN2_HI, LN2_LO, LOG2E, MIN_ARG, POLY, ROUND_MAGIC};
use super::grid::{BLOCK, TILE_PX, pixel_box};
use super::tile::ColumnScratch;
use crate::render::project::Splat;
use std::arch::x86_64::{
    __m256, __m256i, _CMP_GE_OQ, _CMP_LE_OQ, _mm256_add_epi32, _mm256_add_ps, _mm256_and_ps,
    _mm256_and_si256, _mm256_blendv_ps, _mm256_broadcast_ss, _mm256_castps_si256,
    _mm256_castsi256_ps, _mm256_ceil_ps, _mm256_cmp_ps, _mm256_cmpgt_epi32, _mm256_cvtepi32_ps,
    _mm256_cvtps_epi32, _mm256_floor_ps, _mm256_loadu_ps, _mm256_max_epi32, _mm256_max_ps,
    _mm256_min_epi32, _mm256_min_ps, _mm256_mul_ps, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_setr_epi32, _mm256_slli_epi32, _mm256_sqrt_ps, _mm256_srai_epi32, _mm256_storeu_ps,
    _mm256_storeu_si256, _mm256_sub_epi32, _mm256_sub_ps, _mm256_xor_ps,
};

/// Boxes at least this many columns wide get chords: a narrower row is at most two blocks, of
/// which a chord saves too little to pay for the second loop per row.
const CHORD_MIN: usize = 3 * BLOCK;
/// Centres and radii up to this many pixels get chords (their bounds' f32 rounding stays far
/// under a pixel); others walk the whole box.
const CHORD_LIMIT: f32 = (1 << 20) as f32;

/// Each row's blocks (indexed by row of the box): the first block's column (relative to the
/// box), how many blocks, and how many of the first ones need no test; and each row's emission
/// rgb·wy per channel.
pub(super) struct RowBlocks {
    start: [i32; TILE_PX + BLOCK],
    count: [i32; TILE_PX + BLOCK],
    unmasked: [i32; TILE_PX + BLOCK],
    /// rgb[ch]·wy[k] of row k, eight rows per vector product (see [`row_emissions`]).
    emission: [[f32; TILE_PX + BLOCK]; 3],
}

impl Default for RowBlocks {
    fn default() -> Self {
        Self {
            start: [0; TILE_PX + BLOCK],
            count: [0; TILE_PX + BLOCK],
            unmasked: [0; TILE_PX + BLOCK],
            emission: [[0.0; TILE_PX + BLOCK]; 3],
        }
    }
}

/// The emission rgb[ch]·wy[k] of rows k = 0..n (rounded up to whole blocks) into
/// `emission[ch]`: each row's e of `tile::splat_one` (the same f32 product, so the same bits),
/// eight rows per vector multiply. Why: computed per row it was three scalar products and three
/// register broadcasts in every row drawn; the row loops now broadcast e straight from memory (a
/// load, no shuffle). With the one-block rows of `splat_one_avx2` and the prefetch of
/// `tile::render_unit`: steady frame 267-273 → 253-254 ms at radius factor 1 (H200 host, 16
/// threads, the kit's 10⁷ scene at 2048², one call beside main 5f732a9; within the noise at
/// 0.04 and 0.25).
///
/// # Safety
/// `wy` must hold n rounded up to a whole number of blocks, and n ≤ TILE_PX.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn row_emissions<const C: usize>(
    rgb: &[f32; 3],
    wy: *const f32,
    n: usize,
    emission: &mut [[f32; TILE_PX + BLOCK]; 3],
) {
    for (ch, out) in emission.iter_mut().enumerate().take(C) {
        let e = _mm256_set1_ps(rgb[ch]);
        for b in 0..n.div_ceil(BLOCK) {
            // SAFETY: block b is inside `wy` (the caller's guarantee) and inside `out`
            // (n ≤ TILE_PX, so its blocks end within TILE_PX + BLOCK values).
            unsafe {
                let w = _mm256_loadu_ps(wy.add(b * BLOCK));
                _mm256_storeu_ps(out.as_mut_ptr().add(b * BLOCK), _mm256_mul_ps(e, w));
            }
        }
    }
}

/// [`super::exp::exp_f32`] of 8 lanes for arguments x ≤ 0 (or NaN): the same operations in the
/// same order, so the same bits. The clamp to [−87, 88] is left out: it changes no argument in
/// [−87, 0], and every other lane is set to 0 by the last step, as `exp_f32` sets it.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp_nonpositive(x: __m256) -> __m256 {
    let magic = _mm256_set1_ps(ROUND_MAGIC);
    let t = _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)), magic);
    let n = _mm256_sub_ps(t, magic);
    let n_int = _mm256_sub_epi32(
        _mm256_castps_si256(t),
        _mm256_set1_epi32(ROUND_MAGIC.to_bits() as i32),
    );
    let r = _mm256_sub_ps(
        _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(LN2_HI))),
        _mm256_mul_ps(n, _mm256_set1_ps(LN2_LO)),
    );
    let r2 = _mm256_mul_ps(r, r);
    let mut p = _mm256_set1_ps(POLY[0]);
    for c in &POLY[1..] {
        p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(*c));
    }
    let p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(0.5));
    let y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, r2), r), _mm256_set1_ps(1.0));
    let scale = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
        n_int,
        _mm256_set1_epi32(127),
    )));
    let e = _mm256_mul_ps(y, scale);
    _mm256_and_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(MIN_ARG)), e)
}

/// `tile::offsets_and_weights` in 8-wide blocks: squared offsets ((first + k) + 0.5 − centre)²
/// of k = 0..n into `d2` and exp(−d²/σ²) into `w`, over whole blocks; the padding gets d² = ∞
/// and w = 0 (the same operations, so the same bits).
///
/// # Safety
/// `d2` and `w` must hold n rounded up to a whole number of blocks.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn offsets_and_weights(
    first: i32,
    n: usize,
    centre: f32,
    inv_sigma2: f32,
    d2: *mut f32,
    w: *mut f32,
) {
    let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let (n_v, first_v) = (_mm256_set1_epi32(n as i32), _mm256_set1_epi32(first));
    let (half, centre) = (_mm256_set1_ps(0.5), _mm256_set1_ps(centre));
    let inv_sigma2 = _mm256_set1_ps(inv_sigma2);
    let sign = _mm256_set1_ps(-0.0);
    for b in 0..n.div_ceil(BLOCK) {
        let k = _mm256_add_epi32(lane, _mm256_set1_epi32((b * BLOCK) as i32));
        let index = _mm256_add_epi32(first_v, k);
        let d = _mm256_sub_ps(_mm256_add_ps(_mm256_cvtepi32_ps(index), half), centre);
        let inside = _mm256_castsi256_ps(_mm256_cmpgt_epi32(n_v, k));
        let dd = _mm256_blendv_ps(_mm256_set1_ps(f32::INFINITY), _mm256_mul_ps(d, d), inside);
        // (−d²)·(1/σ²), as `exp_f32(-*d2 * inv_sigma2)` (the sign flip is exact).
        let arg = _mm256_mul_ps(_mm256_xor_ps(dd, sign), inv_sigma2);
        // SAFETY: block b is inside both arrays (the caller's guarantee).
        unsafe {
            _mm256_storeu_ps(d2.add(b * BLOCK), dd);
            _mm256_storeu_ps(w.add(b * BLOCK), exp_nonpositive(arg));
        }
    }
}
/// Fills `rows` for the rows k = 0..n (squared offsets `dy2`, padded with ∞ to whole blocks)
/// of a splat of squared cut `cut2` over `n_cols` columns, whose centre is at column `base` =
/// x − 0.5 − c0 relative to the box (`base_abs`: |x| + |c0|, for the rounding slack).
///
/// A row's chord is hw = √(cut2 − dy2) about `base` in f32. The test fl(fl(dx_f²) + dy2) ≤
/// cut2, with dx_f = fl(i + 0.5 − x), passes only where the exact |i + 0.5 − x| is at most
/// (1 + 6u)·hw plus 2⁻¹¹·R (u = 2⁻²⁴: each rounding is within a factor 1 ± u, and cut2 − dy2
/// is only known to u·cut2, whose root is 2⁻¹²·R), so the outer bound hw plus 2⁻¹⁰·R holds
/// every such column; the test surely passes where (1 + u)³·(i + 0.5 − x)² ≤ cut2 − dy2, which
/// the inner bound (1 − 2⁻²⁰)·hw keeps to. Both move by a slack of 2⁻²¹·(|x| + |c0| + 2R + 2)
/// for the rounding of `base` and of the ends (each within u of their magnitude). Rows with
/// dy2 > cut2 get no block.
///
/// # Safety
/// `dy2` must hold n rounded up to a whole number of blocks.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn row_blocks(
    dy2: *const f32,
    n: usize,
    cut: f32,
    base: f32,
    base_abs: f32,
    n_cols: usize,
    rows: &mut RowBlocks,
) {
    let slack = (base_abs + 2.0 * cut + 2.0) * (1.0 / (1 << 21) as f32);
    let (outer_add, inner_sub) = (cut * (1.0 / 1024.0) + slack, slack);
    let cut2 = _mm256_set1_ps(cut * cut);
    let base = _mm256_set1_ps(base);
    let zero = _mm256_set1_ps(0.0);
    let last = _mm256_set1_ps((n_cols - 1) as f32);
    let (low, high) = (_mm256_set1_ps(-1.0), _mm256_set1_ps(n_cols as f32));
    let one = _mm256_set1_epi32(1);
    let zero_i = _mm256_set1_epi32(0);
    for b in 0..n.div_ceil(BLOCK) {
        // SAFETY: block b is inside `dy2` (the caller's guarantee).
        let dy2 = unsafe { _mm256_loadu_ps(dy2.add(b * BLOCK)) };
        let hw = _mm256_sqrt_ps(_mm256_max_ps(_mm256_sub_ps(cut2, dy2), zero));
        let outer = _mm256_add_ps(hw, _mm256_set1_ps(outer_add));
        let inner = _mm256_sub_ps(
            _mm256_mul_ps(hw, _mm256_set1_ps(1.0 - 1.0 / (1 << 20) as f32)),
            _mm256_set1_ps(inner_sub),
        );
        // Ends as floats clamped to the box (so that the conversions are exact), then i32.
        let lo = _mm256_max_ps(_mm256_ceil_ps(_mm256_sub_ps(base, outer)), zero);
        let hi = _mm256_min_ps(_mm256_floor_ps(_mm256_add_ps(base, outer)), last);
        let in_lo = _mm256_min_ps(
            _mm256_max_ps(_mm256_ceil_ps(_mm256_sub_ps(base, inner)), low),
            high,
        );
        // The untested blocks end inside the box: the weights after it are not all refreshed.
        let in_hi = _mm256_min_ps(
            _mm256_max_ps(_mm256_floor_ps(_mm256_add_ps(base, inner)), low),
            last,
        );
        let [lo, hi, in_lo, in_hi] = [lo, hi, in_lo, in_hi].map(|v| _mm256_cvtps_epi32(v));
        let row = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(dy2, cut2));
        // Blocks from lo to hi (none where hi < lo or the row is off the disc).
        let count = _mm256_max_epi32(
            _mm256_add_epi32(_mm256_srai_epi32::<3>(_mm256_sub_epi32(hi, lo)), one),
            zero_i,
        );
        let count = _mm256_and_si256(count, row);
        // The leading blocks inside [in_lo, in_hi], where in_lo ≤ lo.
        let whole = _mm256_max_epi32(
            _mm256_srai_epi32::<3>(_mm256_add_epi32(_mm256_sub_epi32(in_hi, lo), one)),
            zero_i,
        );
        let starts_inside = _mm256_cmpgt_epi32(_mm256_add_epi32(lo, one), in_lo);
        let unmasked = _mm256_and_si256(_mm256_min_epi32(whole, count), starts_inside);
        // SAFETY: block b is inside the TILE_PX + BLOCK rows of `rows`.
        unsafe {
            let at = b * BLOCK;
            _mm256_storeu_si256(rows.start.as_mut_ptr().add(at).cast::<__m256i>(), lo);
            _mm256_storeu_si256(rows.count.as_mut_ptr().add(at).cast::<__m256i>(), count);
            _mm256_storeu_si256(
                rows.unmasked.as_mut_ptr().add(at).cast::<__m256i>(),
                unmasked,
            );
        }
    }
}

/// [`super::tile::splat_one`] for a splat of finite emission, compiled for AVX2: adds the splat
/// to the tile covering pixel columns x0..=x1 and rows y0..=y1 (`C` planes, row stride TILE_PX
/// pixels). Returns `false`, having drawn nothing, where a plane is too short for the blocks of
/// the last row (the caller then draws it the per-block way).
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(super) unsafe fn splat_one_avx2<const C: usize>(
    s: &Splat,
    [x0, x1, y0, y1]: [i32; 4],
    planes: &mut [&mut [f32]; C],
    scratch: &mut ColumnScratch,
) -> bool {
    let Some([c0, c1, r0, r1]) = pixel_box(s, x0, x1, y0, y1) else {
        return true;
    };
    let n_cols = (c1 - c0 + 1) as usize;
    let n_padded = n_cols.div_ceil(BLOCK) * BLOCK;
    let n_rows = (r1 - r0 + 1) as usize;
    let first_row = (r0 - y0) as usize * TILE_PX + (c0 - x0) as usize;
    // A row's blocks end at most BLOCK − 1 past the box (see `row_blocks`).
    let end = first_row + (n_rows - 1) * TILE_PX + n_padded + BLOCK;
    if planes.iter().any(|plane| plane.len() < end) {
        return false;
    }
    let cut2 = s.cut_px * s.cut_px;
    let inv_sigma2 = 1.0 / (s.sigma_px * s.sigma_px);
    let ColumnScratch {
        dx2,
        wx,
        dy2,
        wy,
        rows,
    } = scratch;
    // SAFETY: n_cols, n_rows ≤ TILE_PX, so their padding fits the TILE_PX + BLOCK values.
    unsafe {
        offsets_and_weights(
            c0,
            n_cols,
            s.x_px,
            inv_sigma2,
            dx2.as_mut_ptr(),
            wx.as_mut_ptr(),
        );
        offsets_and_weights(
            r0,
            n_rows,
            s.y_px,
            inv_sigma2,
            dy2.as_mut_ptr(),
            wy.as_mut_ptr(),
        );
    }
    // The block after the padded columns is outside too (a chord's last block may reach it);
    // its weights are never read unmasked.
    dx2[n_padded..n_padded + BLOCK].fill(f32::INFINITY);
    let chords = n_padded >= CHORD_MIN && s.x_px.abs() < CHORD_LIMIT && s.cut_px < CHORD_LIMIT;
    if chords {
        let base = (s.x_px - 0.5) - c0 as f32;
        let base_abs = s.x_px.abs() + c0.unsigned_abs() as f32;
        // SAFETY: `dy2` is padded to whole blocks by `offsets_and_weights`.
        unsafe { row_blocks(dy2.as_ptr(), n_rows, s.cut_px, base, base_abs, n_cols, rows) };
    }
    // SAFETY: `wy` is padded to whole blocks by `offsets_and_weights`; n_rows ≤ TILE_PX.
    unsafe { row_emissions::<C>(&s.rgb, wy.as_ptr(), n_rows, &mut rows.emission) };
    let emission = &rows.emission;
    let cut2_v = _mm256_set1_ps(cut2);
    let plane_ptr: [*mut f32; C] = std::array::from_fn(|ch| planes[ch].as_mut_ptr());
    if n_padded == BLOCK {
        // One block a row (53 % of the general splats' tile parts at radius factor 1 on the
        // kit's 10⁷ scene, a third of their row blocks): the column offsets and weights stay
        // in registers, and each row is one masked block, with no per-row block counts to loop
        // over. The same operations as the loop below.
        // SAFETY: the block's 8 columns are inside `dx2` and `wx`; row k's block ends at
        // first_row + k·TILE_PX + BLOCK ≤ `end`, checked against every plane above.
        unsafe {
            let dx2_v = _mm256_loadu_ps(dx2.as_ptr());
            let wx_v = _mm256_loadu_ps(wx.as_ptr());
            for k in 0..n_rows {
                let dy2 = dy2[k];
                if dy2 > cut2 {
                    continue;
                }
                let inside =
                    _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_add_ps(dx2_v, _mm256_set1_ps(dy2)), cut2_v);
                let w = _mm256_and_ps(inside, wx_v);
                let row = first_row + k * TILE_PX;
                for (ch, plane) in plane_ptr.iter().enumerate() {
                    let e = _mm256_broadcast_ss(&emission[ch][k]);
                    let p = plane.add(row);
                    let add = _mm256_mul_ps(w, e);
                    _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), add));
                }
            }
        }
        return true;
    }
    let dx2 = dx2.as_ptr();
    let wx = wx.as_ptr();
    for k in 0..n_rows {
        let dy2 = dy2[k];
        // Blocks [start, start + 8·n_blocks) of the row, the first `unmasked` without the test.
        let (start, n_blocks, unmasked) = if chords {
            let n_blocks = rows.count[k] as usize;
            if n_blocks == 0 {
                continue;
            }
            (rows.start[k] as usize, n_blocks, rows.unmasked[k] as usize)
        } else {
            if dy2 > cut2 {
                continue;
            }
            (0, n_padded / BLOCK, 0)
        };
        let e: [__m256; C] = std::array::from_fn(|ch| _mm256_broadcast_ss(&emission[ch][k]));
        let dy2_v = _mm256_set1_ps(dy2);
        let row = first_row + k * TILE_PX + start;
        // SAFETY (both loops): column start + 8·n_blocks ≤ n_cols + 7 < n_padded + BLOCK ≤
        // TILE_PX + BLOCK, so the column arrays (that long, dx2 filled to n_padded + BLOCK) and
        // every plane (checked against `end` above) hold each value read and written; the
        // planes are distinct slices.
        unsafe {
            for b in 0..unmasked {
                let j = start + b * BLOCK;
                let w = _mm256_loadu_ps(wx.add(j));
                for (ch, e) in e.iter().enumerate() {
                    let p = plane_ptr[ch].add(row + b * BLOCK);
                    let add = _mm256_mul_ps(w, *e);
                    _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), add));
                }
            }
            for b in unmasked..n_blocks {
                let j = start + b * BLOCK;
                let inside = _mm256_cmp_ps::<_CMP_LE_OQ>(
                    _mm256_add_ps(_mm256_loadu_ps(dx2.add(j)), dy2_v),
                    cut2_v,
                );
                let w = _mm256_and_ps(inside, _mm256_loadu_ps(wx.add(j)));
                for (ch, e) in e.iter().enumerate() {
                    let p = plane_ptr[ch].add(row + b * BLOCK);
                    let add = _mm256_mul_ps(w, *e);
                    _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), add));
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::cpu::exp::{Isa, exp_f32};

    /// Pseudo-random numbers in [0, 1) (xorshift).
    fn uniform(state: &mut u64) -> f32 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> 40) as f32 / (1u64 << 24) as f32
    }

    #[test]
    fn lane_exponential_gives_the_scalar_bits() {
        if Isa::detect() != Isa::Avx2Fma {
            return;
        }
        let mut state = 0x1234_5678_9abc_def1u64;
        let mut args: Vec<f32> = (0..200_000)
            .map(|k| match k % 3 {
                0 => -4.0 * uniform(&mut state),
                1 => -100.0 * uniform(&mut state),
                _ => -(k as f32) * 1e-3,
            })
            .collect();
        args.extend([0.0, -0.0, -87.0, -87.5, f32::NEG_INFINITY, f32::NAN, -1e-40]);
        while !args.len().is_multiple_of(BLOCK) {
            args.push(-1.0);
        }
        for block in args.chunks_exact(BLOCK) {
            let mut out = [0.0f32; BLOCK];
            // SAFETY: AVX2 is there (checked above); both arrays hold one block.
            unsafe {
                let v = exp_nonpositive(_mm256_loadu_ps(block.as_ptr()));
                _mm256_storeu_ps(out.as_mut_ptr(), v);
            }
            for (x, got) in block.iter().zip(out) {
                assert_eq!(got.to_bits(), exp_f32(*x).to_bits(), "exp({x})");
            }
        }
    }

    #[test]
    fn row_blocks_hold_every_passing_column_and_skip_the_test_only_inside() {
        if Isa::detect() != Isa::Avx2Fma {
            return;
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let (mut extra, mut drawn, mut skipped) = (0usize, 0usize, 0usize);
        let mut rows = RowBlocks::default();
        for case in 0..4000 {
            // Centres on, near and between pixel centres and edges; radii from 1 to 200 px,
            // some whole so that pixels lie exactly on the circle.
            let u = uniform(&mut state);
            let x = match case % 4 {
                0 => (uniform(&mut state) * 2000.0).floor() + 0.5,
                1 => (uniform(&mut state) * 2000.0).floor(),
                _ => uniform(&mut state) * 4000.0 - 1000.0,
            };
            let y = match case % 3 {
                0 => (uniform(&mut state) * 2000.0).floor() + 0.5,
                _ => uniform(&mut state) * 2000.0,
            };
            let cut = if case % 3 == 0 {
                (1.0 + u * 60.0).floor()
            } else {
                1.0 + u * u * 200.0
            };
            let cut2 = cut * cut;
            // A box of up to 64 columns and rows somewhere over the disc.
            let c0 = (x - cut).floor() as i32 + (uniform(&mut state) * 2.0 * cut) as i32;
            let r0 = (y - cut).floor() as i32 + (uniform(&mut state) * 2.0 * cut) as i32;
            let n_cols = 9 + (uniform(&mut state) * 56.0) as usize;
            let n_rows = 1 + (uniform(&mut state) * 64.0) as usize;
            let mut dy2 = [f32::INFINITY; TILE_PX + BLOCK];
            for (k, d) in dy2.iter_mut().enumerate().take(n_rows) {
                let d1 = ((r0 + k as i32) as f32 + 0.5) - y;
                *d = d1 * d1;
            }
            let base = (x - 0.5) - c0 as f32;
            let base_abs = x.abs() + c0.unsigned_abs() as f32;
            // SAFETY: AVX2 is there (checked above); `dy2` holds whole blocks.
            unsafe { row_blocks(dy2.as_ptr(), n_rows, cut, base, base_abs, n_cols, &mut rows) };
            for (k, &dy2) in dy2.iter().enumerate().take(n_rows) {
                let (start, count) = (rows.start[k] as usize, rows.count[k] as usize);
                let unmasked = rows.unmasked[k] as usize;
                assert!(
                    unmasked <= count
                        && (count == 0 || start + BLOCK * count < n_cols + BLOCK)
                        && start + BLOCK * unmasked <= n_cols.max(start)
                );
                for col in 0..n_cols {
                    let d = ((c0 + col as i32) as f32 + 0.5) - x;
                    let pass = d * d + dy2 <= cut2;
                    let walked = count > 0 && start <= col && col < start + BLOCK * count;
                    let untested = start <= col && col < start + BLOCK * unmasked;
                    let at = format!("x {x} y {y} cut {cut} c0 {c0} r0 {r0} row {k} col {col}");
                    assert!(!pass || walked, "{at}: passing column not walked");
                    assert!(pass || !untested, "{at}: failing column drawn untested");
                    extra += usize::from(walked && !pass && col == start);
                    drawn += usize::from(pass);
                    skipped += usize::from(untested);
                }
            }
        }
        // The chords are tight (a row's walk starts on a failing column only where a pixel is
        // within a hair of the circle), and most drawn pixels skip the test.
        assert!(extra * 1000 < drawn, "{extra} of {drawn}");
        assert!(skipped * 2 > drawn, "{skipped} of {drawn}");
    }
}
