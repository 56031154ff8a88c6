//! The shared two-point references are reproduced exactly; IC86-2011 (rounded coordinates,
//! ties at edges, coincident events) agrees with the brute force on a subset and runs in full.

mod common;

use common::{shared_data, shared_reference};
use haloscope::data::events;
use haloscope::jobs::Progress;
use haloscope::twopoint::{TwoPointConfig, count_pairs, count_pairs_brute_force, prepare};

#[test]
fn ic40_reference_is_reproduced_exactly() {
    let path = shared_data("events/IC40_exp.csv");
    let list = events::read(&[&path], &Progress::none()).expect("read IC40");
    let text = std::fs::read_to_string(shared_reference("twopoint/ic40_reference.json"))
        .expect("reference");
    let reference: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(reference["n_events"].as_u64(), Some(list.len() as u64));
    let config = TwoPointConfig::default();
    let prepared = prepare(&list, &config).expect("prepare");
    let bins_deg: Vec<f64> = reference["bins_deg"]
        .as_array()
        .expect("bins")
        .iter()
        .filter_map(|v| v.as_f64())
        .collect();
    assert_eq!(prepared.bins.edges_deg, bins_deg);
    let counts = count_pairs(&prepared, None).expect("count");
    for (c, cut) in prepared.cuts.iter().enumerate() {
        let expected = &reference["energy_cuts"][&cut.name];
        assert_eq!(expected["k"].as_u64(), Some(cut.k as u64), "{}", cut.name);
        assert_eq!(
            expected["n_pass"].as_u64(),
            Some(cut.n_pass as u64),
            "{}",
            cut.name
        );
        if let Some(threshold) = expected["threshold_log10E"].as_f64() {
            assert_eq!(cut.threshold, threshold, "{}", cut.name);
        }
        let want: Vec<u64> = reference["observed"]["counts"][&cut.name]
            .as_array()
            .expect("counts")
            .iter()
            .filter_map(|v| v.as_u64())
            .collect();
        assert_eq!(counts.cut(c), &want[..], "{}", cut.name);
    }
}

/// The IC86-2011 events (both files) and the subset chosen by `keep(ra_deg, dec_deg)`.
fn ic86_subset(keep: impl Fn(f64, f64) -> bool) -> haloscope::data::EventList {
    let up = shared_data("events/IC86-2011/upgoing_events.txt");
    let down = shared_data("events/IC86-2011/downgoing_events.txt");
    let list = events::read(&[&up, &down], &Progress::none()).expect("read IC86-2011");
    assert_eq!(list.len(), 138_322);
    let mut subset = haloscope::data::EventList::default();
    for i in 0..list.len() {
        if keep(list.ra[i].to_degrees(), list.dec[i].to_degrees()) {
            subset.ra.push(list.ra[i]);
            subset.dec.push(list.dec[i]);
            subset.energy.push(list.energy[i]);
        }
    }
    subset
}

#[test]
fn ic86_rounded_subsets_agree_with_brute_force() {
    let config = TwoPointConfig::default();
    type Keep = Box<dyn Fn(f64, f64) -> bool>;
    let subsets: [(&str, Keep); 3] = [
        ("south pole cap", Box::new(|_, dec| dec < -80.0)),
        (
            "RA wrap",
            Box::new(|ra, dec| !(4.0..=356.0).contains(&ra) && dec > -30.0),
        ),
        (
            "band",
            Box::new(|ra, dec| (10.0..16.0).contains(&dec) && ra < 180.0),
        ),
    ];
    for (name, keep) in subsets {
        let subset = ic86_subset(keep);
        assert!(subset.len() > 500, "{name}: {} events", subset.len());
        let prepared = prepare(&subset, &config).expect("prepare");
        let fast = count_pairs(&prepared, None).expect("count");
        let brute = count_pairs_brute_force(&prepared, None).expect("brute force");
        assert_eq!(fast, brute, "{name}");
        assert!(fast.get(0, 0) > 0, "{name}");
    }
}
