//! Tests of the tiled CPU splatter (`splat.rs`): direct sums, exact f32 reference bits,
//! scratch reuse, merge modes and the disc edge.

use super::bins::{self, ChunkBins};
use super::draw::Merge;
use super::exp::{Isa, exp_f32};
use super::grid::{Grid, SMALL_SIDE, TILE_PX};
use super::records::Staging;
use super::sink::ChunkSink;
use super::splat::*;
use crate::render::project::{CUT_FACTOR, SIGMA_FACTOR, Splat};
use crate::render::tau::TauBuffer;

/// How many values of `a` and `b` differ in their bits.
fn differing_bits(a: &[f32], b: &[f32]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count()
}

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

/// First and last index i with ((i + 0.5) − centre)² ≤ cut², by brute force.
fn samples_within(centre: f32, cut: f32) -> Option<(i32, i32)> {
    let c = centre.floor() as i32;
    let inside: Vec<i32> = (c - 40..=c + 40)
        .filter(|&i| {
            let d = (i as f32 + 0.5) - centre;
            d * d <= cut * cut
        })
        .collect();
    Some((*inside.first()?, *inside.last()?))
}

/// Whether the splatter keeps `s` as a small record: its footprint box is at most
/// SMALL_SIDE pixels a side and, clipped to the image, lies in one tile.
fn is_small(s: &Splat, width: u32, height: u32) -> bool {
    let (Some((i0, i1)), Some((j0, j1))) = (
        samples_within(s.x_px, s.cut_px),
        samples_within(s.y_px, s.cut_px),
    ) else {
        return false;
    };
    let side = SMALL_SIDE as i32;
    let (c0, c1) = (i0.max(0), i1.min(width as i32 - 1));
    let (r0, r1) = (j0.max(0), j1.min(height as i32 - 1));
    let t = TILE_PX as i32;
    i1 - i0 < side && j1 - j0 < side && c0 / t == c1 / t && r0 / t == r1 / t
}

/// The documented f32 evaluation, pixel by pixel over the whole image: small splats first,
/// then the others, each group in input order (the splatter's order for a single chunk).
fn f32_reference(splats: &[Splat], width: u32, height: u32) -> Vec<f32> {
    let mut out = vec![0.0f32; (width * height * 3) as usize];
    let small = |s: &&Splat| is_small(s, width, height);
    let order = splats
        .iter()
        .filter(small)
        .chain(splats.iter().filter(|s| !small(s)));
    for s in order {
        let cut2 = s.cut_px * s.cut_px;
        let inv_sigma2 = 1.0 / (s.sigma_px * s.sigma_px);
        for j in 0..height {
            for i in 0..width {
                let dx = (i as f32 + 0.5) - s.x_px;
                let dy = (j as f32 + 0.5) - s.y_px;
                let (dx2, dy2) = (dx * dx, dy * dy);
                if dx2 + dy2 <= cut2 {
                    let wx = exp_f32(-dx2 * inv_sigma2);
                    let wy = exp_f32(-dy2 * inv_sigma2);
                    for c in 0..3 {
                        out[((j * width + i) * 3) as usize + c] += wx * (s.rgb[c] * wy);
                    }
                }
            }
        }
    }
    out
}

#[test]
fn tiles_and_pixel_records_give_the_reference_bits() {
    // Radii from 0.3 px (footprints of one to nine pixels, some off the image, on a pixel
    // corner or across a tile edge) to tens of pixels, crossing tile edges of a 150×97
    // image.
    let (width, height) = (150, 97);
    let mut splats = pseudo_random_splats(300, width as f32, height as f32);
    let tiny = pseudo_random_splats(600, width as f32, height as f32);
    for (k, mut s) in tiny.into_iter().enumerate() {
        let r = 0.3 + 2.0 * (k % 7) as f32 / 7.0;
        (s.sigma_px, s.cut_px) = (SIGMA_FACTOR * r, CUT_FACTOR * r);
        splats.insert(k % splats.len(), s);
    }
    let n_small = splats.iter().filter(|s| is_small(s, width, height)).count();
    assert!(n_small > 400, "{n_small}");
    let mut tau = TauBuffer::new(width, height);
    splat_into(&splats, &mut tau);
    let want = f32_reference(&splats, width, height);
    let differ = differing_bits(&tau.data, &want);
    assert_eq!(differ, 0);
}

#[test]
fn overwrite_replaces_and_add_adds() {
    let splats = pseudo_random_splats(50, 90.0, 70.0);
    let mut splatter = Splatter::new();
    let mut fresh = TauBuffer::new(90, 70);
    splatter.splat_into(&splats, &mut fresh);
    let mut junk = TauBuffer::new(3, 2);
    junk.data.fill(f32::NAN);
    splatter.bin(90, 70, 1, |_, sink| {
        splats.iter().for_each(|s| sink.push(s))
    });
    splatter.draw_into(&mut junk, Merge::Overwrite);
    assert_eq!(junk, fresh);
    // Add needs the binned size; another size is left alone.
    let mut other = TauBuffer::new(10, 10);
    splatter.bin(90, 70, 1, |_, sink| {
        splats.iter().for_each(|s| sink.push(s))
    });
    splatter.draw_into(&mut other, Merge::Add);
    assert_eq!(other, TauBuffer::new(10, 10));
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
    assert_eq!(tau.get(7, 5)[0], exp_f32(-4.0));
    assert_eq!(tau.get(5, 3)[0], exp_f32(-4.0));
    assert_eq!(tau.get(7, 6), [0.0; 3]);
    let lit = tau.data.chunks(3).filter(|p| p[0] > 0.0).count();
    assert_eq!(lit, 13); // lattice points with i² + j² ≤ 4
}

#[test]
fn every_instruction_set_gives_the_same_bits() {
    let (width, height) = (150, 97);
    let mut splats = pseudo_random_splats(300, width as f32, height as f32);
    splats.extend(
        pseudo_random_splats(500, width as f32, height as f32)
            .into_iter()
            .map(|mut s| {
                (s.sigma_px, s.cut_px) = (SIGMA_FACTOR * 0.9, CUT_FACTOR * 0.9);
                s
            }),
    );
    let mut baseline = TauBuffer::new(width, height);
    Splatter::with_isa(Isa::Baseline).splat_into(&splats, &mut baseline);
    let mut detected = TauBuffer::new(width, height);
    let mut splatter = Splatter::new();
    splatter.splat_into(&splats, &mut detected);
    assert!(splatter.isa().is_supported());
    assert!(baseline.data.iter().filter(|v| **v > 0.0).count() > 5000);
    let differ = differing_bits(&baseline.data, &detected.data);
    assert_eq!(differ, 0, "{}", splatter.isa().name());
}

#[test]
fn hot_tiles_split_into_bands_give_the_same_bits() {
    // A cluster of splats of every size over one corner makes those tiles far hotter than the
    // rest, so with 4 threads they are cut into row bands (also across a partial last tile row).
    let (width, height) = (150, 97);
    let mut splats = pseudo_random_splats(300, width as f32, height as f32);
    let cluster = pseudo_random_splats(900, 50.0, 40.0);
    for (k, mut s) in cluster.into_iter().enumerate() {
        let r = 0.3 + 6.0 * (k % 9) as f32 / 9.0;
        (s.sigma_px, s.cut_px) = (SIGMA_FACTOR * r, CUT_FACTOR * r);
        s.x_px += 40.0;
        s.y_px += 50.0;
        splats.push(s);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("pool");
    let draw = |max_bands: usize, merge: Merge| {
        let mut splatter = Splatter::new();
        splatter.set_max_bands(max_bands);
        let mut tau = TauBuffer::new(width, height);
        tau.data.fill(0.25);
        pool.install(|| {
            splatter.bin(width, height, 1, |_, sink| {
                splats.iter().for_each(|s| sink.push(s))
            });
            splatter.draw_into(&mut tau, merge);
        });
        (tau, splatter.profile())
    };
    for merge in [Merge::Overwrite, Merge::Add] {
        let (whole, whole_profile) = draw(1, merge);
        let (banded, banded_profile) = draw(64, merge);
        assert_eq!(whole_profile.split_tiles, 0);
        assert_eq!(whole_profile.units, 6);
        assert!(banded_profile.split_tiles >= 2, "{banded_profile:?}");
        assert!(banded_profile.units > 12, "{banded_profile:?}");
        let differ = differing_bits(&whole.data, &banded.data);
        assert_eq!(differ, 0, "{merge:?}");
        assert!(whole.data.iter().filter(|v| **v > 0.3).count() > 3000);
    }
    // Single-thread reference: the documented per-pixel order.
    let want = f32_reference(&splats, width, height);
    let (banded, _) = draw(64, Merge::Overwrite);
    let differ = differing_bits(&banded.data, &want);
    assert_eq!(differ, 0);
}

/// Splats of R0 = 0.3..3 px centred within two pixels of the tile edges x = 64, y = 64 of a
/// 150×97 image (so most cross an edge), mixed into larger ones; r = g = b.
fn edge_splats() -> Vec<Splat> {
    let (width, height) = (150.0, 97.0);
    let mut splats = pseudo_random_splats(200, width, height);
    let near_edges = pseudo_random_splats(1500, 4.0, 4.0);
    for (k, mut s) in near_edges.into_iter().enumerate() {
        let r = 0.3 + 2.7 * (k % 10) as f32 / 10.0;
        (s.sigma_px, s.cut_px) = (SIGMA_FACTOR * r, CUT_FACTOR * r);
        // Centres within 2 px of x = 64 or y = 64 (pseudo_random_splats gives −20..24 here).
        s.x_px = if k % 3 == 0 {
            5.0 + s.x_px.abs() * 3.0
        } else {
            62.0 + s.x_px.abs() / 6.0
        };
        s.y_px = if k % 3 == 1 {
            5.0 + s.y_px.abs() * 3.0
        } else {
            62.0 + s.y_px.abs() / 6.0
        };
        s.rgb = [s.rgb[0]; 3];
        splats.insert((7 * k) % splats.len(), s);
    }
    for s in &mut splats {
        s.rgb = [s.rgb[0]; 3];
    }
    splats
}

#[test]
fn tiny_records_give_the_reference_bits_rgb_and_grey_any_threads() {
    let (width, height) = (150, 97);
    let splats = edge_splats();
    // The split is what this test is about: many non-small splats become tiny records, and
    // some stay general.
    let mut staging = Staging::default();
    let grid = Grid::new(width, height);
    let mut sink = ChunkSink {
        grid,
        grey: false,
        staging: &mut staging,
    };
    splats.iter().for_each(|s| sink.push(s));
    let mut bins = ChunkBins::default();
    bins.fill::<3>(&staging, &mut bins::SortScratch::default(), &grid);
    let (mut n_tiny, mut n_general, mut n_small) = (0, 0, 0);
    for t in 0..grid.n_tiles() {
        let tile = bins.tile::<3>(t);
        n_small += tile.small.len();
        n_tiny += tile.tiny.len();
        n_general += tile.large.len();
        assert_eq!(tile.kinds.len(), tile.tiny.len() + tile.large.len());
        let tiny_kinds = tile.kinds.iter().filter(|&&k| k == bins::KIND_TINY).count();
        assert_eq!(tiny_kinds, tile.tiny.len());
    }
    assert!(
        n_tiny > 500 && n_general > 200 && n_small > 200,
        "{n_small} {n_tiny} {n_general}"
    );
    let want = f32_reference(&splats, width, height);
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        for channels in [Channels::Rgb, Channels::Grey] {
            let mut splatter = Splatter::new();
            // Many bands per hot tile: tiny records are also drawn band by band.
            splatter.set_max_bands(16);
            let mut tau = TauBuffer::new(width, height);
            pool.install(|| {
                splatter.bin_channels(width, height, channels, 1, |_, sink| {
                    splats.iter().for_each(|s| sink.push(s))
                });
                splatter.draw_into(&mut tau, Merge::Overwrite);
            });
            if threads > 1 {
                assert!(
                    splatter.profile().split_tiles > 0,
                    "{:?}",
                    splatter.profile()
                );
            }
            let differ = differing_bits(&tau.data, &want);
            assert_eq!(differ, 0, "{threads} threads, {channels:?}");
            assert!(tau.data.iter().filter(|v| **v > 0.0).count() > 5000);
        }
    }
}
