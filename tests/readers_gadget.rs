//! Gadget HDF5 reader: the shared Gadget-4 snapshots, write/read round trips (f32/f64, 2 or 6
//! types, singular/plural names, multi-file), subsampling.

mod common;

use common::shared_data;
use haloscope::data::cosmology::Cosmology;
use haloscope::data::gadget_hdf5::{self, GadgetWriteOptions};
use haloscope::data::kernel::{KernelConvention, SimCode};
use haloscope::data::units::Units;
use haloscope::data::{
    Field, Header, LoadOptions, Masses, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind,
    add_temperature, load_snapshot,
};
use haloscope::jobs::Progress;

fn load_shared(name: &str, options: &LoadOptions) -> Snapshot {
    let path = shared_data(&format!("snapshots/{name}"));
    load_snapshot(&path, options, &Progress::none()).expect("readable snapshot")
}

#[test]
fn shared_gadget4_snapshots_have_the_documented_contents() {
    for (name, redshift) in [
        ("g2_lcdm_gas_snapshot_003.hdf5", 1.0),
        ("g2_lcdm_gas_snapshot_004.hdf5", 0.0),
    ] {
        let s = load_shared(name, &LoadOptions::default());
        assert_eq!(s.source.format, SnapshotFormat::GadgetHdf5);
        let counts: Vec<(SpeciesKind, usize)> =
            s.species.iter().map(|sp| (sp.kind, sp.len())).collect();
        assert_eq!(
            counts,
            [(SpeciesKind::Gas, 32_768), (SpeciesKind::Dark, 32_768)],
            "{name}"
        );
        assert_eq!(s.source.particles_in_file, 65_536);
        assert_eq!(s.header.box_size, Some(50_000.0));
        assert!(s.header.periodic);
        let z = s.header.redshift.expect("redshift in the header");
        // Gadget writes the output at the first step past the requested time: z = 1 is 0.99999.
        assert!((z - redshift).abs() < 1e-4, "{name}: z = {z}");
        assert!((s.header.time - 1.0 / (1.0 + z)).abs() < 1e-9, "{name}");
        for key in ["HubbleParam", "Omega0", "OmegaLambda"] {
            assert!(s.header.parameters.contains_key(key), "{name}: {key}");
        }
        let gas = s.species(SpeciesKind::Gas).expect("gas");
        let h = gas.smoothing_lengths.as_ref().expect("gas SmoothingLength");
        assert_eq!(h.len(), 32_768);
        assert!(h.iter().all(|&x| x > 0.0));
        let names = gas.field_names();
        for field in ["SmoothingLength", "Density", "InternalEnergy"] {
            assert!(
                names.iter().any(|n| n == field),
                "{name}: {field} in {names:?}"
            );
        }
        let density = gas.field("Density").expect("Density");
        assert!(density.units.contains_key("to_cgs"), "{:?}", density.units);
        assert!(density.units.contains_key("a_scaling"));
        for sp in &s.species {
            assert!(matches!(sp.masses, Masses::Uniform(m) if m > 0.0));
            assert_eq!(sp.ids.as_ref().map(Vec::len), Some(32_768));
            assert_eq!(sp.velocities.as_ref().map(Vec::len), Some(32_768));
            assert!(
                sp.positions
                    .iter()
                    .flatten()
                    .all(|&x| (0.0..50_000.0).contains(&x))
            );
        }
    }
}

#[test]
fn max_particles_subsamples_every_species_uniformly_and_deterministically() {
    let full = load_shared("g2_lcdm_gas_snapshot_004.hdf5", &LoadOptions::default());
    for max in [1_000u64, 16_384, 32_768, 65_535] {
        let options = LoadOptions {
            max_particles: Some(max),
        };
        let a = load_shared("g2_lcdm_gas_snapshot_004.hdf5", &options);
        let b = load_shared("g2_lcdm_gas_snapshot_004.hdf5", &options);
        assert_eq!(a.n_particles() as u64, max);
        assert_eq!(a, b);
    }
    // A quarter: every fourth particle of gas then dark, with their fields alongside.
    let quarter = load_shared(
        "g2_lcdm_gas_snapshot_004.hdf5",
        &LoadOptions {
            max_particles: Some(16_384),
        },
    );
    for (sp_full, sp_quarter) in full.species.iter().zip(&quarter.species) {
        let every_fourth: Vec<[f32; 3]> = sp_full
            .positions
            .iter()
            .skip(3)
            .step_by(4)
            .copied()
            .collect();
        assert_eq!(sp_quarter.positions, every_fourth, "{}", sp_full.kind);
        let ids: Vec<u64> = sp_full
            .ids
            .iter()
            .flatten()
            .skip(3)
            .step_by(4)
            .copied()
            .collect();
        assert_eq!(sp_quarter.ids.as_deref(), Some(ids.as_slice()));
    }
}

/// What the reader makes of [`synthetic`] written by the Gadget writer: a Gadget-4 file
/// (it has `Parameters`), comoving (a = 1/(1+z)) with Gadget's default units, gas h with
/// support h, and the derived `Temperature`.
fn as_read(written: &Snapshot) -> Snapshot {
    let mut s = written.clone();
    let h = &mut s.header;
    h.cosmology = Cosmology::from_parameters(&h.parameters, h.time, h.redshift);
    h.code = SimCode::Gadget4;
    h.kernel = KernelConvention::of(SimCode::Gadget4, None);
    h.units = Units::gadget_defaults(h.cosmology.comoving);
    for sp in &mut s.species {
        sp.kernel_support = sp.smoothing_lengths.as_ref().map(|_| 1.0);
    }
    add_temperature(&mut s);
    s
}

/// A snapshot with every family and every kind of column.
fn synthetic() -> Snapshot {
    let value = |s: usize, i: usize, k: usize| (s * 100_000 + i * 10 + k) as f32 * 0.01;
    let mut species = Vec::new();
    for (s, kind, n) in [
        (0, SpeciesKind::Gas, 40),
        (1, SpeciesKind::Dark, 33),
        (2, SpeciesKind::Star, 7),
        (3, SpeciesKind::Other, 5),
    ] {
        let mut sp = Species::empty(kind);
        sp.positions = (0..n)
            .map(|i| [value(s, i, 0), value(s, i, 1), value(s, i, 2)])
            .collect();
        sp.velocities = Some(
            (0..n)
                .map(|i| [value(s, i, 3), -value(s, i, 4), value(s, i, 5)])
                .collect(),
        );
        sp.ids = Some((0..n).map(|i| (s * 1000 + i) as u64 + (1 << 40)).collect());
        sp.masses = if kind == SpeciesKind::Dark {
            Masses::Uniform(0.125)
        } else {
            Masses::PerParticle((0..n).map(|i| 1.0 + i as f32).collect())
        };
        if kind == SpeciesKind::Gas {
            sp.smoothing_lengths = Some((0..n).map(|i| value(s, i, 6)).collect());
            // Sorted by name, as the reader lists them.
            for (k, name) in ["Density", "InternalEnergy", "Metallicity"]
                .iter()
                .enumerate()
            {
                sp.fields.push(Field {
                    name: (*name).to_owned(),
                    values: (0..n).map(|i| value(s, i, 7 + k)).collect(),
                    units: [("to_cgs".to_owned(), format!("1e{k}"))].into(),
                });
            }
        }
        species.push(sp);
    }
    Snapshot {
        header: Header {
            time: 0.5,
            redshift: Some(1.0),
            box_size: Some(100.0),
            periodic: true,
            parameters: [("HubbleParam".to_owned(), 0.7), ("Omega0".to_owned(), 0.3)].into(),
            ..Default::default()
        },
        species,
        source: SourceInfo {
            paths: Vec::new(),
            format: SnapshotFormat::GadgetHdf5,
            byte_order: None,
            header_bytes: None,
            particles_in_file: 0,
        },
    }
}

#[test]
fn every_layout_reads_back_identically() {
    let original = synthetic();
    let dir = tempfile::tempdir().expect("temp dir");
    for double_precision in [false, true] {
        for plural_smoothing in [false, true] {
            for n_files in [1, 3] {
                let options = GadgetWriteOptions {
                    double_precision,
                    n_types: 6,
                    plural_smoothing,
                    n_files,
                };
                let path = dir.path().join(format!(
                    "snap_{double_precision}_{plural_smoothing}_{n_files}.hdf5"
                ));
                let written = gadget_hdf5::write(&path, &original, &options).expect("written");
                assert_eq!(written.len(), n_files);
                // Any file of a multi-file snapshot opens the whole snapshot.
                let open = &written[n_files - 1];
                let back = load_snapshot(open, &LoadOptions::default(), &Progress::none())
                    .expect("read back");
                let expected = as_read(&original);
                assert_eq!(back.header, expected.header, "{options:?}");
                assert_eq!(back.species, expected.species, "{options:?}");
                assert_eq!(back.source.paths, written);
            }
        }
    }
}

#[test]
fn two_type_header_arrays_are_read() {
    let mut original = synthetic();
    original
        .species
        .retain(|s| matches!(s.kind, SpeciesKind::Gas | SpeciesKind::Dark));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("two.hdf5");
    let options = GadgetWriteOptions {
        n_types: 2,
        ..GadgetWriteOptions::default()
    };
    gadget_hdf5::write(&path, &original, &options).expect("written");
    let back = load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("read");
    assert_eq!(back.species, as_read(&original).species);
    // A star family cannot be written with only two types.
    let err = gadget_hdf5::write(&path, &synthetic(), &options).expect_err("needs PartType4");
    assert!(err.to_string().contains("PartType4"), "{err}");
}

#[test]
fn progress_reaches_the_total_and_cancel_stops_the_read() {
    use haloscope::jobs::CancelToken;
    use std::sync::{Arc, Mutex};
    let path = shared_data("snapshots/g2_lcdm_gas_snapshot_003.hdf5");
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
    // Gas: coordinates 3, velocities 3, ids 1, smoothing 1, Density 1, InternalEnergy 1 per
    // particle; dark: 3 + 3 + 1; masses come from the MassTable.
    let total = 32_768 * (3 + 3 + 1 + 1 + 2) + 32_768 * (3 + 3 + 1);
    assert!(
        seen.iter()
            .all(|(stage, _, t)| stage == "reading" && *t == total)
    );
    assert!(seen.windows(2).all(|w| w[0].1 <= w[1].1));
    assert_eq!(seen.last().map(|s| s.1), Some(total));

    let token = CancelToken::new();
    token.cancel();
    let err = load_snapshot(
        &path,
        &LoadOptions::default(),
        &Progress::with_cancel(token),
    )
    .expect_err("cancelled");
    assert_eq!(
        err.to_string(),
        format!("{}: reading cancelled", path.display())
    );
}
