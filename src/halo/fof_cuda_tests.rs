//! Tests of the CUDA FoF linker's host-side helpers (`fof_cuda.rs`) that need no GPU.

use super::*;

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
    let spec = grid_spec(&[[0.5, 0.5, 0.5]], 0.2, Some(frame)).expect("grid");
    // As grid.rs: side target 0.2/√3 → 9 cells of side 1/9.
    assert_eq!(spec.dims, [9, 9, 9]);
    assert_eq!(spec.side, 1.0 / 9.0);
    let open = grid_spec(&[[0.0, 0.0, 0.0], [1.0, 0.5, 0.0]], 0.2, None).expect("grid");
    assert_eq!(open.lower, [0.0; 3]);
    assert_eq!(open.dims, [10, 6, 1]);
}
