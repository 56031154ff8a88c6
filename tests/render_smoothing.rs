//! kNN smoothing lengths on the shared tipsy snapshots against a brute-force scan.

mod common;

use common::shared_data;
use haloscope::data::{LoadOptions, SpeciesKind, load_snapshot};
use haloscope::jobs::Progress;
use haloscope::render::smoothing::knn_smoothing_lengths;

/// Distance to the k-th nearest other particle by a full scan (minimum image when periodic).
fn brute_force(positions: &[[f32; 3]], i: usize, k: usize, box_size: Option<f64>) -> f32 {
    let mut d2: Vec<f64> = positions
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(_, q)| {
            (0..3)
                .map(|a| {
                    let mut d = f64::from(positions[i][a]) - f64::from(q[a]);
                    if let Some(side) = box_size {
                        d -= side * (d / side).round();
                    }
                    d * d
                })
                .sum()
        })
        .collect();
    d2.sort_by(f64::total_cmp);
    d2[k - 1].sqrt() as f32
}

#[test]
fn knn_on_tipsy_files_matches_a_full_scan() {
    // lambs: periodic box of side 1; test4: a dense zoom-in cluster (uneven grid cells).
    for (file, box_size) in [
        ("snapshots/lambs.00200_subsamp_30K", Some(1.0)),
        ("snapshots/test4.tbin", None),
    ] {
        let snapshot = load_snapshot(
            &shared_data(file),
            &LoadOptions::default(),
            &Progress::none(),
        )
        .expect("load");
        let dark = snapshot.species(SpeciesKind::Dark).expect("dark");
        let h =
            knn_smoothing_lengths(&dark.positions, 32, box_size, &Progress::none()).expect("knn");
        assert_eq!(h.len(), dark.len());
        let step = dark.len() / 23;
        for i in (0..dark.len()).step_by(step) {
            assert_eq!(
                h[i],
                brute_force(&dark.positions, i, 32, box_size),
                "{file} particle {i}"
            );
        }
        assert!(h.iter().all(|v| *v > 0.0), "{file}: every h positive");
    }
}
