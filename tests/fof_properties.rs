//! Property tests: the fast CPU linker gives exactly the partition of the O(N²) brute force.

use haloscope::backend::{Backend, BackendChoice};
use haloscope::data::Masses;
use haloscope::halo::{
    self, BoxFrame, FofError, FofParams, LinkingLength, find_halos, link_components,
    link_components_brute_force,
};
use haloscope::jobs::{CancelToken, Progress};
use proptest::prelude::*;

/// The default back-end: CUDA when a device opens, else the CPU.
fn auto() -> Backend {
    Backend::resolve(BackendChoice::Auto).expect("auto always resolves")
}

/// Relabels set ids so that each set is named by its smallest member index.
fn canonical(ids: &[u32]) -> Vec<usize> {
    let mut first = std::collections::HashMap::new();
    ids.iter()
        .enumerate()
        .map(|(i, id)| *first.entry(*id).or_insert(i))
        .collect()
}

fn frame_for(points: &[[f32; 3]], periodic: bool, size: f64) -> Option<BoxFrame> {
    periodic.then(|| BoxFrame::for_positions(points, size))
}

fn assert_same_partition(points: &[[f32; 3]], ll: f64, frame: Option<BoxFrame>) {
    let fast = link_components(points, ll, frame, &Progress::none()).expect("links");
    let slow = link_components_brute_force(points, ll, frame);
    assert_eq!(
        canonical(&fast),
        canonical(&slow),
        "ll {ll}, frame {frame:?}"
    );
}

/// Points on a lattice of step 1/8 in [0, 2]³ (or shifted to [−1, 1]³): exact binary
/// coordinates, so many pairs sit at exactly ll (d² = ll² with no rounding), many coincide, and
/// some lie on the upper box face (x = 2 or x = 1, wrapped to the lower face when periodic).
fn lattice_points() -> impl Strategy<Value = (Vec<[f32; 3]>, bool)> {
    (
        prop::collection::vec((0u8..=16, 0u8..=16, 0u8..=16), 1..160),
        any::<bool>(),
    )
        .prop_map(|(cells, shifted)| {
            let offset = if shifted { 1.0 } else { 0.0 };
            let points = cells
                .into_iter()
                .map(|(i, j, k)| [i, j, k].map(|v| f32::from(v) / 8.0 - offset))
                .collect();
            (points, shifted)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn lattice_sets_match_brute_force(
        (points, _shifted) in lattice_points(),
        // 0.125..0.625 are exact lattice distances (0.625 = 3-4-5 · 1/8); 0.3 is not; 0.9 makes
        // a 3-cell periodic grid where stencil cells wrap onto each other.
        ll in prop::sample::select(vec![0.125, 0.25, 0.375, 0.5, 0.625, 0.3, 0.9]),
        periodic in any::<bool>(),
    ) {
        assert_same_partition(&points, ll, frame_for(&points, periodic, 2.0));
    }

    #[test]
    fn random_sets_match_brute_force(
        points in prop::collection::vec(
            (0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0).prop_map(|(x, y, z)| [x, y, z]), 1..300),
        ll in 0.005f64..0.3,
        periodic in any::<bool>(),
    ) {
        assert_same_partition(&points, ll, frame_for(&points, periodic, 1.0));
    }

}

proptest! {
    // Each case is a 1500-point brute force (1.1 million pairs): fewer cases keep this short.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn clustered_sets_match_brute_force(seed in 0u64..1000, periodic in any::<bool>()) {
        let points = halo::synthetic::clustered_points(1500, 1.0, seed);
        let ll = 0.2 / 1500f64.cbrt();
        assert_same_partition(&points, ll, frame_for(&points, periodic, 1.0));
    }
}

#[test]
fn thousands_of_clustered_points_match_brute_force_with_catalogue() {
    let points = halo::synthetic::clustered_points(6000, 1.0, 42);
    let masses = Masses::PerParticle((0..6000).map(|i| 1.0 + (i % 5) as f32).collect());
    for box_size in [Some(1.0), None] {
        let params = FofParams {
            linking_length: LinkingLength::Relative(0.2),
            separation_from: Default::default(),
            min_members: 5,
            box_size,
            labels: true,
        };
        let result = find_halos(
            &points,
            &masses,
            None,
            &params,
            &Backend::cpu(),
            &Progress::none(),
        )
        .expect("fof");
        let frame = box_size.map(|size| BoxFrame::for_positions(&points, size));
        let slow = link_components_brute_force(&points, result.linking_length, frame);
        let expected = halo::catalogue::build(&slow, &points, &masses, None, frame, 5);
        assert!(expected.halos.len() >= 3, "{} halos", expected.halos.len());
        assert_eq!(result.labels, expected.labels);
        assert_eq!(result.halos, expected.halos);
        assert_eq!(result.n_sets_all_sizes, expected.n_sets_all_sizes);
        // Without labels: none returned, the same catalogue bit for bit.
        let unlabelled = FofParams {
            labels: false,
            ..params
        };
        let without = find_halos(
            &points,
            &masses,
            None,
            &unlabelled,
            &Backend::cpu(),
            &Progress::none(),
        )
        .expect("fof");
        assert_eq!(without.labels, None);
        assert_eq!(without.halos, expected.halos);
        assert_eq!(without.n_sets_all_sizes, expected.n_sets_all_sizes);
    }
}

#[test]
fn a_dense_clump_far_bigger_than_a_cell_is_one_halo() {
    // 20,000 points in a ball of radius 3 ll plus a far companion of 30: the dense case that
    // must not go quadratic, with an exact answer.
    let points: Vec<[f32; 3]> = halo::synthetic::clustered_points(20_000, 1.0, 3)
        .iter()
        .map(|p| p.map(|x| 0.5 + (x - 0.5) * 1e-3))
        .chain((0..30).map(|i| [0.1, 0.1, 0.1 + i as f32 * 1e-4]))
        .collect();
    let params = FofParams {
        linking_length: LinkingLength::Absolute(1e-3),
        separation_from: Default::default(),
        min_members: 20,
        box_size: Some(1.0),
        labels: false,
    };
    let backend = auto();
    let result = find_halos(
        &points,
        &Masses::Uniform(2.0),
        None,
        &params,
        &backend,
        &Progress::none(),
    )
    .expect("fof");
    let sizes: Vec<usize> = result.halos.iter().map(|h| h.size).collect();
    assert_eq!(sizes, vec![20_000, 30]);
    assert_eq!(result.halos[1].min_index, 20_000);
    assert_eq!(result.halos[1].mass, 60.0);
    assert_eq!(result.backend, backend.kind());
}

#[test]
fn bad_input_gives_clear_errors() {
    let points = vec![[0.0f32, 0.0, 0.0], [0.5, 0.5, 0.5], [2.5, 0.0, 0.0]];
    let masses = Masses::Uniform(1.0);
    let backend = auto();
    let run = |params: FofParams| {
        find_halos(&points, &masses, None, &params, &backend, &Progress::none())
    };
    let base = FofParams::default();
    let err = run(FofParams {
        linking_length: LinkingLength::Relative(0.0),
        ..base.clone()
    })
    .expect_err("b = 0");
    assert_eq!(err.to_string(), "b must be a positive number, got 0");
    let err = run(FofParams {
        box_size: Some(1.0),
        ..base.clone()
    })
    .expect_err("box 1 < extent 2.5");
    assert_eq!(
        err.to_string(),
        "box size 1 is smaller than the data extent 2.5 along x"
    );
    if haloscope::gpu::cuda_available().is_err() {
        // `cuda` is refused when the back-end is resolved, before any FoF work.
        let err = Backend::resolve(BackendChoice::Cuda).expect_err("no CUDA");
        assert!(!err.to_string().is_empty());
    }
    let err =
        find_halos(&[], &masses, None, &base, &backend, &Progress::none()).expect_err("empty");
    assert!(matches!(err, FofError::EmptySelection { .. }));
    let err = find_halos(
        &points,
        &Masses::PerParticle(vec![1.0]),
        None,
        &base,
        &backend,
        &Progress::none(),
    )
    .expect_err("short masses");
    assert_eq!(
        err.to_string(),
        "masses has 1 entries, expected one per particle (3)"
    );
}

#[test]
fn a_cancelled_run_stops_with_cancelled() {
    let points = halo::synthetic::clustered_points(50_000, 1.0, 1);
    let token = CancelToken::new();
    token.cancel();
    let err = find_halos(
        &points,
        &Masses::Uniform(1.0),
        None,
        &FofParams::default(),
        &auto(),
        &Progress::with_cancel(token),
    )
    .expect_err("cancelled");
    assert!(matches!(err, FofError::Cancelled));
}

#[test]
fn progress_reaches_the_end_of_every_stage() {
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let progress = Progress::new(
        move |u| {
            if let Ok(mut seen) = sink.lock() {
                seen.push((u.stage.clone(), u.done, u.total));
            }
        },
        CancelToken::new(),
    );
    let points = halo::synthetic::clustered_points(20_000, 1.0, 5);
    find_halos(
        &points,
        &Masses::Uniform(1.0),
        None,
        &FofParams::default(),
        &auto(),
        &progress,
    )
    .expect("fof");
    let seen = seen.lock().expect("not poisoned");
    for stage in ["grid", "linking", "catalogue"] {
        let last = seen
            .iter()
            .filter(|(s, _, _)| s == stage)
            .map(|&(_, done, total)| (done, total))
            .max()
            .expect("stage reported");
        assert_eq!(last.0, last.1, "{stage} finished");
        assert!(last.1 > 0);
    }
}
