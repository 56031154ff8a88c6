//! Friends-of-friends on spatial domains against one process: the merged set ids equal the
//! brute force's on random sets with filaments through every slab boundary (periodic and
//! open, 1–8 domains), and the shared snapshots give one process's partition and catalogue
//! bit for bit for 1–8 domains, through the library and through `haloscope fof --domains`.

mod common;

use common::{haloscope_bin, shared_data};
use haloscope::backend::Backend;
use haloscope::data::{LoadOptions, Masses, load_snapshot};
use haloscope::halo::domains::{
    Decomposition, DomainLinker, catalogue_in_domains, link_in_domains,
};
use haloscope::halo::{
    BoxFrame, CatalogueRequest, FofParams, LinkingLength, SeparationFrom,
    link_components_brute_force, parse_species, prepare_fof, select_particles, snapshot_box_size,
    synthetic::SplitMix64,
};
use haloscope::jobs::Progress;
use proptest::prelude::*;

/// Uniform points, compact clusters and filaments along x that cross every slab boundary
/// (wrapping around a periodic box), all in `[lower, lower + 1)³`.
fn crossing_set(seed: u64, ll: f64, lower: f64) -> Vec<[f32; 3]> {
    let mut rng = SplitMix64::new(seed);
    let wrap = |x: f64| (lower + (x - lower).rem_euclid(1.0)).min(lower + 1.0 - 1e-7) as f32;
    let mut points = Vec::new();
    for _ in 0..150 {
        points.push([0; 3].map(|_| wrap(lower + rng.next_f64())));
    }
    for _ in 0..3 {
        let start = [0; 3].map(|_| lower + rng.next_f64());
        let length = 0.4 + 0.7 * rng.next_f64();
        let steps = (length / (0.7 * ll)) as usize;
        for k in 0..steps {
            let jitter = 0.1 * ll * (rng.next_f64() - 0.5);
            points.push([
                wrap(start[0] + k as f64 * 0.7 * ll),
                wrap(start[1] + jitter),
                wrap(start[2] - jitter),
            ]);
        }
    }
    for _ in 0..6 {
        let centre = [0; 3].map(|_| lower + rng.next_f64());
        for _ in 0..15 {
            points.push(centre.map(|c| wrap(c + 1.5 * ll * (rng.next_f64() - 0.5))));
        }
    }
    // Shuffle, so that domains hold scattered indices.
    for i in (1..points.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        points.swap(i, j);
    }
    points
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn merged_sets_equal_the_brute_force(
        seed in any::<u64>(),
        domains in 1usize..=8,
        periodic in any::<bool>(),
        negative in any::<bool>(),
    ) {
        let ll = 0.03;
        let lower = if negative { -0.5 } else { 0.0 };
        let points = crossing_set(seed, ll, lower);
        let frame = periodic.then(|| BoxFrame::for_positions(&points, 1.0));
        let merged = link_in_domains(&points, ll, frame, domains, DomainLinker::Cpu, &Progress::none())
            .expect("links");
        prop_assert_eq!(merged.n_domains, domains);
        let brute = link_components_brute_force(&points, ll, frame);
        // Both name every set by its smallest member index.
        prop_assert_eq!(merged.set_ids, brute);
    }
}

#[test]
fn a_pair_split_by_a_cut_and_a_pair_across_the_periodic_edge_are_joined() {
    let ll = 0.05;
    let mut points: Vec<[f32; 3]> = (0..200).map(|i| [i as f32 / 200.0, 0.9, 0.9]).collect();
    // Too far apart along y for the comb above to join them; 0.04 apart along x.
    let dec = Decomposition::balanced(&points, 2, ll, None);
    let cut = dec.cuts[0] as f32;
    points.push([cut - 0.02, 0.1, 0.1]);
    points.push([cut + 0.02, 0.1, 0.1]);
    points.push([0.99, 0.5, 0.5]);
    points.push([0.01, 0.5, 0.5]);
    let frame = Some(BoxFrame {
        lower: 0.0,
        size: 1.0,
    });
    for frame in [None, frame] {
        let merged =
            link_in_domains(&points, ll, frame, 2, DomainLinker::Cpu, &Progress::none()).unwrap();
        let n = points.len() as u32;
        assert_eq!(
            merged.set_ids[n as usize - 3],
            n - 4,
            "pair split by the cut"
        );
        let across = merged.set_ids[n as usize - 1] == n - 2;
        assert_eq!(across, frame.is_some(), "pair across the edge, {frame:?}");
        assert_eq!(
            merged.set_ids,
            link_components_brute_force(&points, ll, frame)
        );
    }
}

#[test]
fn shared_snapshots_give_one_process_partition_and_catalogue_for_1_to_8_domains() {
    // test4.tbin: periodic box 1 (tipsy stores none), halos across every cut; the Gadget file:
    // its own periodic box and velocities; lambs: open boundaries.
    for (file, box_size) in [
        ("snapshots/test4.tbin", Some(1.0)),
        ("snapshots/g2_lcdm_gas_snapshot_003.hdf5", None),
        ("snapshots/lambs.00200_subsamp_30K", None),
    ] {
        let path = shared_data(file);
        let snapshot = load_snapshot(&path, &LoadOptions::default(), &Progress::none()).unwrap();
        let selected = select_particles(&snapshot, &parse_species("all").unwrap()).unwrap();
        let params = FofParams {
            linking_length: LinkingLength::Relative(0.2),
            separation_from: SeparationFrom::Auto,
            min_members: 20,
            box_size: box_size.or(snapshot_box_size(&snapshot)),
            labels: true,
        };
        let prepare = || {
            prepare_fof(
                &selected.positions,
                &selected.masses,
                selected.velocities.as_deref(),
                &params,
            )
            .unwrap()
        };
        let one = prepare().find(&Backend::cpu(), &Progress::none()).unwrap();
        assert!(one.halos.len() > 3, "{file}: {} halos", one.halos.len());
        for domains in 1..=8 {
            let spread = prepare()
                .find_in_domains(&Backend::cpu(), Some(domains), &Progress::none())
                .unwrap();
            assert_eq!(spread.labels, one.labels, "{file}, {domains} domains");
            assert_eq!(spread.halos, one.halos, "{file}, {domains} domains");
            assert_eq!(spread.n_sets_all_sizes, one.n_sets_all_sizes);
        }
    }
}

/// The slab catalogue path (sets without ghosts catalogued per slab, the crossing ones merged)
/// on the CPU linker, against one process: labels, set count and every halo bit for bit (each
/// interior halo is summed in the same member order, each crossing one in global order).
#[test]
fn slab_catalogues_merged_across_domains_equal_one_process() {
    let path = shared_data("snapshots/test4.tbin");
    let snapshot = load_snapshot(&path, &LoadOptions::default(), &Progress::none()).unwrap();
    let selected = select_particles(&snapshot, &parse_species("all").unwrap()).unwrap();
    let crossing = crossing_set(11, 0.03, 0.0);
    let velocities: Vec<[f32; 3]> = (0..crossing.len())
        .map(|i| [(i % 5) as f32, 1.0, -((i % 3) as f32)])
        .collect();
    let masses = Masses::PerParticle((0..crossing.len()).map(|i| 1.0 + (i % 4) as f32).collect());
    let cases = [
        (
            &selected.positions[..],
            &*selected.masses,
            None,
            Some(1.0),
            LinkingLength::Relative(0.2),
        ),
        (
            &crossing[..],
            &masses,
            Some(&velocities[..]),
            None,
            LinkingLength::Absolute(0.03),
        ),
        (
            &crossing[..],
            &masses,
            Some(&velocities[..]),
            Some(1.0),
            LinkingLength::Absolute(0.03),
        ),
    ];
    for (case, (positions, masses, velocities, box_size, linking_length)) in
        cases.into_iter().enumerate()
    {
        let params = FofParams {
            linking_length,
            min_members: 5,
            box_size,
            labels: true,
            ..FofParams::default()
        };
        let one = prepare_fof(positions, masses, velocities, &params)
            .unwrap()
            .find(&Backend::cpu(), &Progress::none())
            .unwrap();
        assert!(
            one.halos.len() > 3,
            "case {case}: {} halos",
            one.halos.len()
        );
        let request = CatalogueRequest {
            positions,
            masses,
            velocities,
            linking_length: one.linking_length,
            frame: one.frame,
            min_members: 5,
            with_labels: true,
        };
        for domains in 1..=6 {
            let out = catalogue_in_domains(&request, domains, DomainLinker::Cpu, &Progress::none())
                .unwrap();
            assert_eq!(out.n_domains, domains);
            if domains > 1 {
                assert!(out.n_ghosts > 0, "case {case}, {domains} domains");
                assert!(
                    out.n_joined > 0,
                    "case {case}, {domains} domains: nothing crossed"
                );
            }
            let c = &out.catalogue;
            assert!(
                c.labels == one.labels,
                "case {case}, {domains} domains: labels"
            );
            assert_eq!(c.halos, one.halos, "case {case}, {domains} domains");
            assert_eq!(c.n_sets_all_sizes, one.n_sets_all_sizes, "case {case}");
        }
    }
}

#[test]
fn open_boundaries_on_a_uniform_mass_set_match_for_every_domain_count() {
    let points = crossing_set(7, 0.03, 0.0);
    let masses = Masses::Uniform(2.0);
    let params = FofParams {
        linking_length: LinkingLength::Absolute(0.03),
        min_members: 5,
        box_size: None,
        labels: true,
        ..FofParams::default()
    };
    let one = prepare_fof(&points, &masses, None, &params)
        .unwrap()
        .find(&Backend::cpu(), &Progress::none())
        .unwrap();
    for domains in 2..=8 {
        let spread = prepare_fof(&points, &masses, None, &params)
            .unwrap()
            .find_in_domains(&Backend::cpu(), Some(domains), &Progress::none())
            .unwrap();
        assert_eq!(spread.labels, one.labels, "{domains} domains");
        assert_eq!(spread.halos, one.halos, "{domains} domains");
    }
}

#[test]
fn the_fof_command_writes_the_same_files_with_domains() {
    let dir = tempfile::tempdir().unwrap();
    let file = shared_data("snapshots/test4.tbin");
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(format!("{name}.csv"));
        let labels = dir.path().join(format!("{name}.npy"));
        let status = std::process::Command::new(haloscope_bin())
            .arg("fof")
            .arg(&file)
            .args(["--box", "1", "--backend", "cpu", "--out"])
            .arg(&out)
            .arg("--labels")
            .arg(&labels)
            .args(extra)
            .status()
            .unwrap();
        assert!(status.success(), "{name}");
        (std::fs::read(out).unwrap(), std::fs::read(labels).unwrap())
    };
    let one = run("one", &[]);
    assert!(one.0.len() > 200 && one.1.len() > 1000);
    for domains in ["2", "5"] {
        assert_eq!(
            run(domains, &["--domains", domains]),
            one,
            "--domains {domains}"
        );
    }
    let status = std::process::Command::new(haloscope_bin())
        .arg("fof")
        .arg(&file)
        .args(["--domains", "0"])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&status.stderr).contains("--domains"));
}
