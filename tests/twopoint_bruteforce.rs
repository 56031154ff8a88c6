//! The pruned CPU counter agrees exactly with the O(N²) brute force on random small lists with
//! poles, RA wrap at 0/360°, identical events and pairs exactly on bin edges.

use haloscope::data::EventList;
use haloscope::twopoint::{TwoPointConfig, count_pairs, count_pairs_brute_force, prepare};
use proptest::prelude::*;

/// Events on a 0.05° grid (so that many pairs sit exactly on 0.25° edges), with extra events at
/// both poles, at RA 0 and 359.95°, and exact duplicates.
fn event_list(cells: &[(u16, u16, u8)], duplicates: usize) -> EventList {
    let mut list = EventList::default();
    let mut push = |ra_deg: f64, dec_deg: f64, energy: f64| {
        list.ra.push(ra_deg.to_radians());
        list.dec.push(dec_deg.to_radians());
        list.energy.push(energy);
    };
    for &(ra_cell, dec_cell, energy) in cells {
        // Clustered around a few spots so that small bins see pairs.
        let ra_deg = f64::from(ra_cell % 7200) * 0.05;
        let dec_deg = f64::from(dec_cell % 3601) * 0.05 - 90.0;
        push(ra_deg, dec_deg, f64::from(energy % 8));
    }
    for (ra, dec) in [
        (0.0, 90.0),
        (123.4, 90.0),
        (5.0, 89.5),
        (0.0, -90.0),
        (359.95, -89.75),
    ] {
        push(ra, dec, 7.0);
    }
    for (ra, dec) in [
        (0.0, 10.0),
        (359.95, 10.0),
        (0.2, 10.0),
        (359.75, 10.25),
        (0.0, 10.5),
    ] {
        push(ra, dec, 3.0);
    }
    let n = list.len();
    for k in 0..duplicates.min(n) {
        let i = (k * 7) % n;
        let (ra, dec, energy) = (list.ra[i], list.dec[i], list.energy[i]);
        list.ra.push(ra);
        list.dec.push(dec);
        list.energy.push(energy);
    }
    list
}

/// Cells concentrated in small patches (pole, equator at RA 0, mid-latitude).
fn cell() -> impl Strategy<Value = (u16, u16, u8)> {
    prop_oneof![
        (0u16..7200, 0u16..3601, any::<u8>()),
        (0u16..60, 3500u16..3601, any::<u8>()),
        (7140u16..7200, 1780u16..1830, any::<u8>()),
        (0u16..60, 1780u16..1830, any::<u8>()),
        (3000u16..3040, 2200u16..2240, any::<u8>()),
    ]
}

fn config() -> impl Strategy<Value = TwoPointConfig> {
    prop_oneof![
        Just(TwoPointConfig::default()),
        Just(TwoPointConfig {
            bin_step_deg: 0.5,
            bin_count: 7,
            cut_fractions: vec![0.3, 1.0],
        }),
        Just(TwoPointConfig {
            bin_step_deg: 7.0,
            bin_count: 25,
            cut_fractions: vec![1.0, 0.5, 0.05],
        }),
        Just(TwoPointConfig {
            bin_step_deg: 0.05,
            bin_count: 3,
            cut_fractions: vec![0.2],
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn pruned_counts_equal_brute_force(
        cells in prop::collection::vec(cell(), 1..300),
        duplicates in 0usize..20,
        config in config(),
    ) {
        let list = event_list(&cells, duplicates);
        let prepared = prepare(&list, &config).expect("prepare");
        let fast = count_pairs(&prepared, None).expect("count");
        let brute = count_pairs_brute_force(&prepared, None).expect("brute force");
        prop_assert_eq!(fast, brute);
    }
}

#[test]
fn edge_pairs_identical_events_and_wrap_are_counted_by_hand() {
    // Pairs: A–B same RA, Dec 0.5° apart (edge of bin 2); A–C across RA 0/360 at 0.25° on the
    // equator (edge of bin 1); D–E identical; F at the pole with G 1° away at another RA.
    let points: [(f64, f64); 7] = [
        (0.0, 40.0),
        (0.0, 40.5),
        (359.75, 40.0),
        (200.0, -20.0),
        (200.0, -20.0),
        (0.0, 90.0),
        (77.7, 89.0),
    ];
    let list = EventList {
        ra: points.iter().map(|p| p.0.to_radians()).collect(),
        dec: points.iter().map(|p| p.1.to_radians()).collect(),
        energy: vec![1.0; points.len()],
        ..EventList::default()
    };
    let config = TwoPointConfig {
        bin_step_deg: 0.25,
        bin_count: 4,
        cut_fractions: vec![1.0],
    };
    let prepared = prepare(&list, &config).expect("prepare");
    let counts = count_pairs(&prepared, None).expect("count");
    // A–C is 0.25°·cos(40°) < 0.25° → bin 1; D–E → bin 1; A–B → bin 2; F–G → bin 4 (1°);
    // B–C: ΔRA 0.25° at Dec ≈ 40°, ΔDec 0.5° → about 0.53° → bin 3.
    assert_eq!(counts.cut(0), &[2, 3, 4, 5]);
    assert_eq!(
        counts,
        count_pairs_brute_force(&prepared, None).expect("brute force")
    );
}
