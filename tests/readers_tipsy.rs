//! Tipsy reader: the shared snapshots, write/read round trips in every encoding, subsampling.

mod common;

use common::shared_data;
use haloscope::data::tipsy::{self, ByteOrder, TipsyWriteOptions};
use haloscope::data::{
    Field, Header, LoadOptions, Masses, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind,
    load_snapshot,
};
use haloscope::jobs::Progress;
use std::collections::BTreeSet;

fn load(name: &str) -> Snapshot {
    let path = shared_data(&format!("snapshots/{name}"));
    load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("readable snapshot")
}

/// The header time, decoded here independently of the reader: big-endian f64 at offset 0.
fn header_time(name: &str) -> f64 {
    let bytes = std::fs::read(shared_data(&format!("snapshots/{name}"))).expect("readable");
    let mut t = [0u8; 8];
    t.copy_from_slice(&bytes[..8]);
    f64::from_be_bytes(t)
}

fn counts(s: &Snapshot) -> Vec<(SpeciesKind, usize)> {
    s.species.iter().map(|sp| (sp.kind, sp.len())).collect()
}

#[test]
fn shared_tipsy_files_have_the_documented_counts_and_encoding() {
    let cases: [(&str, Vec<(SpeciesKind, usize)>); 4] = [
        ("lambs.00200_subsamp_30K", vec![(SpeciesKind::Dark, 30_000)]),
        ("test4.tbin", vec![(SpeciesKind::Dark, 67_495)]),
        (
            "run581.20000",
            vec![(SpeciesKind::Dark, 3_627), (SpeciesKind::Star, 5_321)],
        ),
        ("cube300.tbin", vec![(SpeciesKind::Dark, 110_592)]),
    ];
    for (name, expected) in cases {
        let s = load(name);
        assert_eq!(counts(&s), expected, "{name}");
        assert_eq!(s.source.format, SnapshotFormat::Tipsy);
        assert_eq!(s.source.byte_order.as_deref(), Some("big"), "{name}");
        assert_eq!(s.source.header_bytes, Some(32), "{name}");
        assert_eq!(s.header.time, header_time(name), "{name}");
        assert_eq!(s.header.box_size, None);
        assert!(!s.header.periodic);
        let total: usize = expected.iter().map(|(_, n)| n).sum();
        assert_eq!(s.source.particles_in_file, total as u64);
        for sp in &s.species {
            assert!(sp.positions.iter().flatten().all(|x| x.is_finite()));
            let names: Vec<&str> = sp.fields.iter().map(|f| f.name.as_str()).collect();
            match sp.kind {
                SpeciesKind::Dark => assert_eq!(names, ["eps", "phi"]),
                SpeciesKind::Star => assert_eq!(names, ["metals", "tform", "eps", "phi"]),
                _ => panic!("unexpected family {}", sp.kind),
            }
        }
    }
}

#[test]
fn masses_are_uniform_for_lambs_and_five_valued_for_test4() {
    let lambs = load("lambs.00200_subsamp_30K");
    assert!(matches!(lambs.species[0].masses, Masses::Uniform(m) if m > 0.0));
    let test4 = load("test4.tbin");
    let Masses::PerParticle(m) = &test4.species[0].masses else {
        panic!("test4 has several masses");
    };
    let distinct: BTreeSet<u32> = m.iter().map(|x| x.to_bits()).collect();
    assert_eq!(distinct.len(), 5);
}

#[test]
fn lambs_coordinates_lie_in_the_unit_box() {
    let lambs = load("lambs.00200_subsamp_30K");
    assert!(
        lambs.species[0]
            .positions
            .iter()
            .flatten()
            .all(|&x| (-0.5..0.5).contains(&x))
    );
}

/// A small snapshot with every tipsy family, distinct values everywhere.
fn synthetic(n_gas: usize, n_dark: usize, n_star: usize, time: f64) -> Snapshot {
    let value = |kind: usize, i: usize, k: usize| (kind * 1000 + i * 10 + k) as f32 * 0.001 - 0.3;
    let family = |kind: SpeciesKind, n: usize, names: &[&str], id: usize| {
        let mut sp = Species::empty(kind);
        sp.positions = (0..n)
            .map(|i| [value(id, i, 0), value(id, i, 1), value(id, i, 2)])
            .collect();
        sp.velocities = Some(
            (0..n)
                .map(|i| [value(id, i, 3), value(id, i, 4), value(id, i, 5)])
                .collect(),
        );
        // Dark matter has one mass (read back as Uniform); the others one per particle, except
        // that a single particle is uniform by definition.
        sp.masses = if kind == SpeciesKind::Dark || n == 1 {
            Masses::Uniform(2.5)
        } else {
            Masses::PerParticle((0..n).map(|i| 1.0 + i as f32).collect())
        };
        sp.fields = names
            .iter()
            .enumerate()
            .map(|(k, name)| Field {
                name: (*name).to_owned(),
                values: (0..n).map(|i| value(id, i, 6 + k)).collect(),
                units: Default::default(),
            })
            .collect();
        if kind == SpeciesKind::Gas {
            sp.smoothing_lengths = sp.field("hsmooth").map(|f| f.values.clone());
            // Tipsy's h has kernel support 2h.
            sp.kernel_support = Some(2.0);
        }
        sp
    };
    let mut species = Vec::new();
    for (kind, n, names, id) in [
        (
            SpeciesKind::Gas,
            n_gas,
            &["rho", "temp", "hsmooth", "metals", "phi"][..],
            1,
        ),
        (SpeciesKind::Dark, n_dark, &["eps", "phi"][..], 2),
        (
            SpeciesKind::Star,
            n_star,
            &["metals", "tform", "eps", "phi"][..],
            3,
        ),
    ] {
        if n > 0 {
            species.push(family(kind, n, names, id));
        }
    }
    Snapshot {
        header: Header {
            time,
            ..Header::default()
        },
        species,
        source: SourceInfo {
            paths: Vec::new(),
            format: SnapshotFormat::Tipsy,
            byte_order: None,
            header_bytes: None,
            particles_in_file: 0,
        },
    }
}

#[test]
fn every_encoding_and_family_mix_reads_back_identically() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mixes = [
        (3, 4, 5),
        (7, 0, 0),
        (0, 9, 0),
        (0, 0, 2),
        (0, 5, 6),
        (1, 1, 0),
    ];
    for (n_gas, n_dark, n_star) in mixes {
        for byte_order in [ByteOrder::Big, ByteOrder::Little] {
            for header_bytes in [32, 28] {
                for double_positions in [false, true] {
                    let options = TipsyWriteOptions {
                        byte_order,
                        header_bytes,
                        double_positions,
                    };
                    let original = synthetic(n_gas, n_dark, n_star, 0.25 + n_gas as f64);
                    let path = dir.path().join("snap.tipsy");
                    tipsy::write(&path, &original, &options).expect("written");
                    let back = load_snapshot(&path, &LoadOptions::default(), &Progress::none())
                        .expect("read back");
                    let what = format!("{options:?} {n_gas}/{n_dark}/{n_star}");
                    assert_eq!(back.header.time, original.header.time, "{what}");
                    assert_eq!(back.species, original.species, "{what}");
                    assert_eq!(back.source.byte_order.as_deref(), Some(byte_order.name()));
                    assert_eq!(back.source.header_bytes, Some(header_bytes));
                    let record_floats = 7 * n_gas + 7 * n_dark + 7 * n_star;
                    let extra = if double_positions {
                        12 * (n_gas + n_dark + n_star)
                    } else {
                        0
                    };
                    let expected_len = header_bytes as usize
                        + 4 * (record_floats + 5 * n_gas + 2 * n_dark + 4 * n_star)
                        + extra;
                    assert_eq!(
                        std::fs::metadata(&path).expect("meta").len() as usize,
                        expected_len,
                        "{what}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_shared_file_survives_a_little_endian_round_trip() {
    let original = load("run581.20000");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run581.le");
    let options = TipsyWriteOptions {
        byte_order: ByteOrder::Little,
        header_bytes: 28,
        double_positions: false,
    };
    tipsy::write(&path, &original, &options).expect("written");
    let back = load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("read");
    assert_eq!(back.species, original.species);
    assert_eq!(back.header, original.header);
}

#[test]
fn max_particles_keeps_the_requested_count_deterministically() {
    let path = shared_data("snapshots/run581.20000");
    for max in [1u64, 100, 4_474, 8_947, 8_948, 1_000_000] {
        let options = LoadOptions {
            max_particles: Some(max),
        };
        let a = load_snapshot(&path, &options, &Progress::none()).expect("read");
        let b = load_snapshot(&path, &options, &Progress::none()).expect("read again");
        assert_eq!(a.n_particles() as u64, max.min(8_948), "max {max}");
        assert_eq!(a, b);
        assert_eq!(a.source.particles_in_file, 8_948);
    }
    // Half the particles: every second one of each family (dark first, star after).
    let full = load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("read");
    let half = load_snapshot(
        &path,
        &LoadOptions {
            max_particles: Some(4_474),
        },
        &Progress::none(),
    )
    .expect("read half");
    let all: Vec<[f32; 3]> = full
        .species
        .iter()
        .flat_map(|s| s.positions.clone())
        .collect();
    let kept: Vec<[f32; 3]> = half
        .species
        .iter()
        .flat_map(|s| s.positions.clone())
        .collect();
    let every_second: Vec<[f32; 3]> = all.iter().skip(1).step_by(2).copied().collect();
    assert_eq!(kept, every_second);
}

#[test]
fn progress_is_reported_and_cancel_stops_the_read() {
    use haloscope::jobs::CancelToken;
    use std::sync::{Arc, Mutex};
    let path = shared_data("snapshots/test4.tbin");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let progress = Progress::new(
        move |u| {
            sink.lock()
                .expect("lock")
                .push((u.stage.clone(), u.done, u.total))
        },
        CancelToken::new(),
    );
    load_snapshot(&path, &LoadOptions::default(), &progress).expect("read");
    let seen = seen.lock().expect("lock");
    let last = seen.last().expect("some progress");
    assert_eq!(last.0, "reading");
    assert_eq!(last.1, last.2);
    assert_eq!(last.2, 67_495 * 36);

    let token = CancelToken::new();
    token.cancel();
    let err = load_snapshot(
        &path,
        &LoadOptions::default(),
        &Progress::with_cancel(token),
    )
    .expect_err("cancelled");
    assert!(err.to_string().contains("cancelled"), "{err}");
}
