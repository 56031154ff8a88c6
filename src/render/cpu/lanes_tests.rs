//! The lane-parallel projection tail against the scalar path, bit for bit.

use super::grid::Grid;
use super::lanes::*;
use super::records::{SmallSplat, SmallStore, Staging};
use super::sink::ChunkSink;
use crate::render::camera::{Camera, Projection};
use crate::render::normalise::Normaliser;
use crate::render::palette::Palette;
use crate::render::project::{
    DEFAULT_BORDER_PX, LANES, Lanes, ParticleClass, StyleParams, ViewParams, ceil_i32, floor_i32,
    geometry_lanes, project_particle, to_i32_saturating,
};

/// The bits of every staged record (of `C` channels), tile and large splat, in order.
fn staged_bits<const C: usize>(stage: &Staging) -> Vec<u32>
where
    Staging: SmallStore<C>,
{
    let (small, tiles) = stage.small::<C>();
    let mut bits = Vec::new();
    for (s, t) in small.iter().zip(tiles) {
        let SmallSplat {
            pixel,
            mask,
            wx,
            wy,
            rgb,
        } = *s;
        bits.extend([*t, u32::from(pixel), u32::from(mask)]);
        bits.extend(wx.iter().chain(&wy).chain(&rgb).map(|v| v.to_bits()));
    }
    bits.push(u32::MAX);
    for s in &stage.large {
        bits.extend([s.x_px, s.y_px, s.sigma_px, s.cut_px].map(f32::to_bits));
        bits.extend(s.rgb.map(f32::to_bits));
    }
    bits
}

/// Particles mixing edge cases with random ones of every class, around tile borders.
fn particles() -> (Vec<[f32; 3]>, Vec<f32>, Vec<f32>) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut pos: Vec<[f32; 3]> = vec![
        [0.0, 0.0, 20.0],
        [100.0, 0.0, 0.0],
        [f32::NAN, 0.0, 0.0],
        [0.0; 3],
        [0.0; 3],
        [0.0; 3],
        [-10.1, 0.0, 0.0],
        [f32::INFINITY, 1.0, 0.0],
    ];
    let mut h = vec![0.5, 0.5, 0.5, 0.0, -1.0, f32::INFINITY, 0.2, 0.01];
    while pos.len() < 4000 {
        pos.push([
            24.0 * next() - 12.0,
            20.0 * next() - 10.0,
            12.0 * next() - 6.0,
        ]);
        // Mostly tiny (one to nine pixels), some up to many pixels.
        let tiny = !pos.len().is_multiple_of(4);
        h.push(if tiny {
            0.002 + 0.04 * next()
        } else {
            0.002 + 2.0 * next() * next()
        });
    }
    let values: Vec<f32> = (0..pos.len()).map(|_| 3.0 * next() - 0.5).collect();
    (pos, h, values)
}

/// Stages every particle through the scalar path (`project_particle`, `ChunkSink::push`) and
/// counts the classes.
fn stage_scalar(
    view: &ViewParams,
    style: &StyleParams<'_>,
    pos: &[[f32; 3]],
    h: &[f32],
    values: &[f32],
    grid: Grid,
    grey: bool,
) -> (Staging, [u64; 4]) {
    let mut stage = Staging::default();
    let mut counts = [0u64; 4];
    let mut sink = ChunkSink {
        grid,
        grey,
        staging: &mut stage,
    };
    for i in 0..pos.len() {
        let p = project_particle(view, style, pos[i], h[i], values[i], values[i]);
        let class = match p.class {
            ParticleClass::Inactive => 0,
            ParticleClass::Small => 1,
            ParticleClass::Medium => 2,
            ParticleClass::Large => 3,
        };
        counts[class] += 1;
        if p.class != ParticleClass::Inactive {
            sink.push(&p.splat);
        }
    }
    (stage, counts)
}

#[test]
fn lanes_stage_the_scalar_records_and_counts() {
    let (pos, h, values) = particles();
    let palette = Palette::by_name("viridis").expect("palette");
    let norm = Normaliser::fixed(false, 0.0, 2.0);
    let mut classes_seen = [0u64; 4];
    for (min_radius, perspective, coloured, grey) in [
        (1.0, true, false, false),
        (0.0, true, true, false),
        (1.0, false, true, false),
        (0.5, true, false, false),
        (1.0, true, false, true),
        (0.5, false, false, true),
    ] {
        let mut camera = Camera::look_at([0.0, 0.0, 10.0], [0.0; 3], [0.0, 1.0, 0.0], 90.0);
        if !perspective {
            camera.projection = Projection::Orthographic;
        }
        // Several tiles across and down, with partial tiles at the right and bottom edges.
        let (width, height) = (200, 150);
        let view =
            ViewParams::new(&camera, width, height, min_radius, DEFAULT_BORDER_PX).expect("view");
        let style = StyleParams {
            intensity: coloured.then_some(norm),
            colour: coloured.then_some((norm, &palette)),
            brightness: 0.7,
            size_factor: 1.3,
        };
        let grid = Grid::new(width, height);
        let (want_stage, want_counts) = stage_scalar(&view, &style, &pos, &h, &values, grid, grey);
        let mut got_stage = Staging::default();
        let mut got_counts = [0u64; 4];
        {
            let mut sink = ChunkSink {
                grid,
                grey,
                staging: &mut got_stage,
            };
            let mut g = Lanes::default();
            let mut out = SplatLanes::default();
            for first in (0..pos.len()).step_by(LANES) {
                let lane = |x: &[f32]| -> [f32; LANES] { std::array::from_fn(|l| x[first + l]) };
                let p: [[f32; 3]; LANES] = std::array::from_fn(|l| pos[first + l]);
                let (hl, vl) = (lane(&h), lane(&values));
                geometry_lanes(&view, style.size_factor, &p, &hl, &mut g);
                finish_lanes(&view, &style, &g, &hl, &vl, &vl, &mut out);
                for (total, n) in got_counts.iter_mut().zip(sink.push_lanes(&out)) {
                    *total += n;
                }
            }
        }
        assert_eq!(got_counts, want_counts);
        assert_eq!(got_stage.n_small, want_stage.n_small);
        assert_eq!(got_stage.large.len(), want_stage.large.len());
        if grey {
            assert_eq!(staged_bits::<1>(&got_stage), staged_bits::<1>(&want_stage));
            // Grey records are the RGB records with the first channel alone.
            let (rgb_stage, _) = stage_scalar(&view, &style, &pos, &h, &values, grid, false);
            let (grey_records, grey_tiles) = want_stage.small::<1>();
            let (rgb_records, rgb_tiles) = rgb_stage.small::<3>();
            assert_eq!(grey_tiles, rgb_tiles);
            assert_eq!(grey_records.len(), rgb_records.len());
            for (g, c) in grey_records.iter().zip(rgb_records) {
                assert_eq!((g.pixel, g.mask), (c.pixel, c.mask));
                assert_eq!(g.wx.map(f32::to_bits), c.wx.map(f32::to_bits));
                assert_eq!(g.wy.map(f32::to_bits), c.wy.map(f32::to_bits));
                assert_eq!(g.rgb[0].to_bits(), c.rgb[0].to_bits());
            }
        } else {
            assert_eq!(staged_bits::<3>(&got_stage), staged_bits::<3>(&want_stage));
        }
        for (seen, n) in classes_seen.iter_mut().zip(want_counts) {
            *seen += n;
        }
        // Both kinds of staged output occur in every configuration.
        assert!(want_stage.n_small > 100, "{}", want_stage.n_small);
        assert!(!want_stage.large.is_empty());
    }
    assert!(classes_seen.iter().all(|&n| n > 0), "{classes_seen:?}");
}

#[test]
fn footprint_search_as_selects_matches_the_branching_one() {
    let cases = [
        (10.5f32, 0.75f32),
        (10.0, 0.5),
        (0.3, 1.2),
        (-3.0, 0.1),
        (63.99, 0.76),
        (1e9, 2.0),
        (-1e9, 2.0),
        (5.25, 0.0),
    ];
    for (centre, cut) in cases {
        let cut2 = cut * cut;
        assert_eq!(
            sample_range_sel(centre, cut, cut2),
            super::grid::sample_range(centre, cut, cut2),
            "{centre} {cut}"
        );
    }
}

#[test]
fn class_counts_count_each_class_of_the_lanes() {
    let cases: [[u8; LANES]; 4] = [
        [0; LANES],
        [3; LANES],
        [0, 1, 2, 3, 3, 2, 1, 1],
        [1, 1, 1, 2, 0, 0, 3, 1],
    ];
    for class in cases {
        let mut want = [0u64; 4];
        for &c in &class {
            want[usize::from(c)] += 1;
        }
        assert_eq!(class_counts(&class), want, "{class:?}");
    }
}

#[test]
fn saturating_conversion_matches_as_and_libm() {
    // The float → int conversions of the lane loops (footprints, `sample_range_sel`).
    let mut values = vec![
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        -0.0,
        0.0,
        0.3,
        0.5,
        -0.5,
        1.7,
        -2.5,
        0.999_999_94,
        -0.999_999_94,
        1e9,
        -1e9,
        2_147_483_648.0,
        -2_147_483_648.0,
        2_147_483_520.0,
        -2_147_483_520.0,
        2_147_483_904.0,
        -2_147_483_904.0,
        16_777_217.0,
        -8_388_608.5,
    ];
    // Every 2^16-th bit pattern (all exponents, both signs, NaNs included).
    values.extend((0..=u32::MAX).step_by(1 << 16).map(f32::from_bits));
    for x in values {
        assert_eq!(to_i32_saturating(x), x as i32, "{x} ({:#x})", x.to_bits());
        assert_eq!(floor_i32(x), x.floor() as i32, "{x}");
        assert_eq!(ceil_i32(x), x.ceil() as i32, "{x}");
    }
}
