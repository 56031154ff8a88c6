//! Two-point on rounded coordinates: the grid detector on the shared lists, grid scrambles that
//! are reproducible whatever the trial order, and on IC86-2011 (0.1° grid) no false comb of
//! significance at the bin edges that are multiples of the grid.

mod common;

use common::shared_data;
use haloscope::data::{EventList, events};
use haloscope::jobs::Progress;
use haloscope::twopoint::{
    Analysis, Counts, Prepared, Scramble, ScrambleChoice, TwoPointConfig, count_pairs, detect_grid,
    prepare, run_trials, scrambled_ra_on,
};

fn ic86() -> EventList {
    let up = shared_data("events/IC86-2011/upgoing_events.txt");
    let down = shared_data("events/IC86-2011/downgoing_events.txt");
    events::read(&[&up, &down], &Progress::none()).expect("read IC86-2011")
}

fn ic40() -> EventList {
    events::read(&[&shared_data("events/IC40_exp.csv")], &Progress::none()).expect("read IC40")
}

/// Bins of 0.25° to 2° and the "all" cut only: the edges 0.5°, 1°, 1.5°, 2° lie on the grid.
fn small_config() -> TwoPointConfig {
    TwoPointConfig {
        bin_step_deg: 0.25,
        bin_count: 8,
        cut_fractions: vec![1.0],
    }
}

fn trials(prepared: &Prepared, seed: u64, range: std::ops::Range<u64>) -> Vec<Counts> {
    let mut all = Vec::new();
    run_trials(prepared, seed, range, 8, &Progress::none(), |b| {
        all.extend(b.counts)
    })
    .expect("trials");
    all
}

#[test]
fn ic86_lies_on_a_tenth_of_a_degree_and_ic40_on_no_grid() {
    let list = ic86();
    let grid = detect_grid(&list.ra, &list.dec).expect("IC86-2011 grid");
    assert_eq!(grid.step_deg(), 0.1);
    assert_eq!(grid.values_per_degree(), 10);
    let prepared = prepare(&list, &small_config()).expect("prepare");
    assert_eq!(prepared.coordinate_grid, Some(grid));
    assert_eq!(prepared.scramble, Scramble::Grid(grid));

    let list = ic40();
    assert_eq!(detect_grid(&list.ra, &list.dec), None);
    let mut prepared = prepare(&list, &small_config()).expect("prepare");
    assert_eq!(prepared.scramble, Scramble::Continuous);
    assert!(prepared.set_scramble(ScrambleChoice::Grid).is_err());
}

#[test]
fn grid_trials_are_reproducible_in_any_order() {
    let list = ic86();
    // The polar cap keeps the test fast; every RA and Dec there is on the 0.1° grid too.
    let mut cap = EventList::default();
    for i in (0..list.len()).filter(|&i| list.dec[i] < (-75f64).to_radians()) {
        cap.ra.push(list.ra[i]);
        cap.dec.push(list.dec[i]);
        cap.energy.push(list.energy[i]);
    }
    let prepared = prepare(&cap, &small_config()).expect("prepare");
    let Scramble::Grid(grid) = prepared.scramble else {
        panic!("the cap should be on the grid");
    };
    let forward = trials(&prepared, 7, 0..6);
    let backward: Vec<Counts> = (0..6u64)
        .rev()
        .map(|t| trials(&prepared, 7, t..t + 1))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .flatten()
        .collect();
    assert_eq!(forward, backward);
    for (t, counts) in forward.iter().enumerate() {
        let ra = scrambled_ra_on(prepared.scramble, prepared.len(), 7, t as u64);
        assert!(ra.iter().all(|r| grid.holds_deg(r.to_degrees())));
        assert_eq!(counts, &count_pairs(&prepared, Some(&ra)).expect("count"));
    }
    let mut continuous = prepared.clone();
    continuous
        .set_scramble(ScrambleChoice::Continuous)
        .expect("continuous");
    assert_ne!(trials(&continuous, 7, 0..1)[0], forward[0]);
}

/// z = (observed − mean) / standard deviation of the trials, per bin of the "all" cut.
fn z_scores(prepared: &Prepared, seed: u64, n_trials: u64) -> Vec<f64> {
    let mut analysis = Analysis::observe(prepared, seed, 0).expect("observe");
    run_trials(prepared, seed, 0..n_trials, 16, &Progress::none(), |b| {
        analysis.add_batch(b).expect("batch")
    })
    .expect("trials");
    let summary = analysis.summary();
    (0..prepared.bins.len())
        .map(|b| {
            let s = summary.get(0, b);
            (s.observed as f64 - s.background_mean) / s.background_variance.sqrt()
        })
        .collect()
}

/// The upgoing half of IC86-2011 (69,227 events) with 200 trials keeps this under a minute in
/// a debug build; the full list shows the same.
#[test]
fn grid_scrambles_remove_the_comb_at_multiples_of_the_grid() {
    let up = shared_data("events/IC86-2011/upgoing_events.txt");
    let list = events::read(&[&up], &Progress::none()).expect("read IC86-2011 upgoing");
    let mut prepared = prepare(&list, &small_config()).expect("prepare");
    assert!(matches!(prepared.scramble, Scramble::Grid(_)));
    let grid_z = z_scores(&prepared, 1, 200);
    prepared
        .set_scramble(ScrambleChoice::Continuous)
        .expect("continuous");
    let continuous_z = z_scores(&prepared, 1, 24);
    for (b, edge) in prepared.bins.edges_deg.iter().enumerate() {
        if (edge * 2.0).fract() == 0.0 {
            assert!(
                grid_z[b].abs() < 3.0,
                "grid scramble, {edge}°: z = {}",
                grid_z[b]
            );
        }
    }
    // The same edges with continuous scrambles: the comb the grid removes.
    assert!(
        continuous_z[1] > 5.0,
        "continuous, 0.5°: z = {}",
        continuous_z[1]
    );
}
