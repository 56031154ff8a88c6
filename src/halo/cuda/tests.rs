//! Tests of the CUDA FoF twin's host-side helpers that need no GPU.

use super::grid::{SIDE_SHRINK, grid_spec, point_bounds};
use super::link_cells::{DENSE_BLOCKS_PER_PARTICLE, dense_block_table};
use super::stencil::{block_stencil_masks, half_stencil_offsets};
use crate::halo::periodic::BoxFrame;

#[test]
fn half_stencil_covers_each_neighbour_pair_once() {
    let ll = 1.0;
    let offsets = half_stencil_offsets(ll, ll / 3f64.sqrt() * SIDE_SHRINK);
    // Reach 2: all 5³ − 1 offsets qualify, half of them in the stencil.
    assert_eq!(offsets.len() / 3, 62);
    let set: std::collections::HashSet<[i32; 3]> = offsets
        .chunks_exact(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    assert_eq!(set.len(), 62);
    for d in &set {
        assert!(
            !set.contains(&[-d[0], -d[1], -d[2]]),
            "{d:?} and its negation"
        );
    }
}

#[test]
fn grid_matches_the_cpu_rule() {
    let frame = BoxFrame {
        lower: 0.0,
        size: 1.0,
    };
    let spec = grid_spec(Some(point_bounds(&[[0.5, 0.5, 0.5]])), 0.2, Some(frame)).expect("grid");
    // As cpu/grid.rs: side target 0.2/√3 → 9 cells of side 1/9.
    assert_eq!(spec.dims, [9, 9, 9]);
    assert_eq!(spec.side, 1.0 / 9.0);
    let open = grid_spec(
        Some(point_bounds(&[[0.0, 0.0, 0.0], [1.0, 0.5, 0.0]])),
        0.2,
        None,
    )
    .expect("grid");
    assert_eq!(open.lower, [0.0; 3]);
    assert_eq!(open.dims, [10, 6, 1]);
}

#[test]
fn block_stencil_masks_cover_the_half_stencil_once_per_cell() {
    let ll = 1.0;
    let offsets = half_stencil_offsets(ll, ll / 3f64.sqrt() * SIDE_SHRINK);
    let masks = block_stencil_masks(&offsets).expect("reach 2 fits a block");
    for lz in 0..4i32 {
        for ly in 0..4i32 {
            for lx in 0..4i32 {
                let local = spelled_out_morton(lx, ly, lz);
                // Every offset lands on one distinct (block, cell) bit.
                let bits: u32 = (0..27).map(|bo| masks[local * 27 + bo].count_ones()).sum();
                assert_eq!(bits, 62, "local ({lx}, {ly}, {lz})");
                // The offset (+1, 0, 0) from x = 3 crosses into the next block along x, cell 0.
                if (lx, ly, lz) == (3, 0, 0) {
                    let bo = 2 + 3 + 9; // (bdx, bdy, bdz) = (+1, 0, 0)
                    assert_ne!(masks[local * 27 + bo] & 1, 0);
                }
            }
        }
    }
    // A reach beyond one block side is refused (the kernel then walks offsets one by one).
    assert_eq!(block_stencil_masks(&[5, 0, 0]), None);
}

/// The Morton-local index of `morton_local` in stencil.rs, spelled out bit by bit.
fn spelled_out_morton(x: i32, y: i32, z: i32) -> usize {
    let mut index = 0usize;
    for bit in 0..2 {
        index |= (((x >> bit) & 1) as usize) << (3 * bit);
        index |= (((y >> bit) & 1) as usize) << (3 * bit + 1);
        index |= (((z >> bit) & 1) as usize) << (3 * bit + 2);
    }
    index
}

#[test]
fn dense_block_table_when_the_grid_has_few_enough_blocks_per_particle() {
    let limit = DENSE_BLOCKS_PER_PARTICLE;
    // 10⁸ clustered at b = 0.2 in a unit box: cells of ll/√3 ≈ 1/4020, 1005³ ≈ 1.02·10⁹
    // blocks, 10.2 per particle.
    assert!(dense_block_table([4020; 3], 100_000_000, limit));
    assert!(!dense_block_table([4020; 3], 100_000_000, 10));
    // Exactly at a limit of 3: 10 × 10 × 3 = 300 blocks for 100 particles (dims / 4 rounded up).
    assert!(dense_block_table([40, 37, 9], 100, 3));
    assert!(!dense_block_table([40, 37, 13], 100, 3));
    // The small test set (270 cells per axis) squeezed into a quarter of the box.
    assert!(!dense_block_table([1080; 3], 30_001, limit));
    assert!(dense_block_table([270; 3], 30_001, limit));
    // Limit 0: always the hash.
    assert!(!dense_block_table([4; 3], 1, 0));
}
