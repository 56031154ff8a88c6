//! The CUDA friends-of-friends linker against the CPU reference: identical partitions and
//! results on every shared snapshot, on synthetic clustered sets of 10⁶–10⁷ particles and on
//! hand-made edge cases (the device catalogue's own tests are in `fof_cuda_catalogue.rs`).
//! Ignored here (no GPU); run on the GPU machine with `--ignored`. A device that does not open
//! fails the tests, it never skips them.

mod common;
mod fof_support;

use common::{shared_data, shared_reference};
use fof_support::cuda::{assert_catalogues_agree, device};
use fof_support::labels_sha256;
use haloscope::backend::{Backend, BackendChoice, BackendKind};
use haloscope::data::{LoadOptions, SpeciesKind, demo::demo_snapshot, load_snapshot};
use haloscope::gpu::GpuDevice;
use haloscope::halo::{
    BoxFrame, FofError, FofParams, FofResult, LinkingLength, SeparationFrom, catalogue, find_halos,
    link_components, link_components_brute_force, link_components_cuda, select_particles,
    snapshot_box_size, synthetic,
};
use haloscope::jobs::{CancelToken, Progress};
use serde_json::Value;
use std::time::Instant;

/// The CUDA back-end on device 0, as `--backend cuda` resolves it.
fn cuda() -> Backend {
    Backend::cuda(std::sync::Arc::new(device()), BackendChoice::Cuda)
}

/// Set ids renamed to the smallest member index of their set (ids are below N).
fn canonical(ids: &[u32]) -> Vec<u32> {
    let mut first = vec![u32::MAX; ids.len()];
    ids.iter()
        .enumerate()
        .map(|(i, &id)| {
            let slot = &mut first[id as usize];
            if *slot == u32::MAX {
                *slot = i as u32;
            }
            *slot
        })
        .collect()
}

/// Asserts that the CUDA linker gives the CPU linker's partition.
fn assert_same_partition(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    what: &str,
) {
    let start = Instant::now();
    let cpu = canonical(
        &link_components(positions, linking_length, frame, &Progress::none()).expect("cpu links"),
    );
    let cpu_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let gpu = link_components_cuda(device, positions, linking_length, frame, &Progress::none())
        .expect("cuda links");
    let gpu_seconds = start.elapsed().as_secs_f64();
    assert_eq!(gpu.set_ids.len(), positions.len());
    assert!(
        gpu.set_ids
            .iter()
            .all(|&id| (id as usize) < positions.len())
    );
    let gpu_canonical = canonical(&gpu.set_ids);
    if let Some(i) = (0..cpu.len()).find(|&i| cpu[i] != gpu_canonical[i]) {
        panic!(
            "{what}: particle {i} is in the set of {} on the CPU but of {} on the GPU",
            cpu[i], gpu_canonical[i]
        );
    }
    eprintln!(
        "{what}: n={} cells={}: identical; cpu {cpu_seconds:.3} s, cuda {gpu_seconds:.3} s",
        positions.len(),
        gpu.n_cells,
    );
}

/// `find_halos` on the CUDA back-end gives the CPU's result: labels, set count, sizes and
/// smallest members exactly, the float sums within the device catalogue's stated tolerance; and
/// without labels the CUDA back-end returns none and the same catalogue bit for bit.
fn assert_same_result(positions: &[[f32; 3]], masses: &haloscope::data::Masses, params: FofParams) {
    let params = FofParams {
        labels: true,
        ..params
    };
    let cpu = find_halos(
        positions,
        masses,
        None,
        &params,
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("cpu");
    let gpu =
        find_halos(positions, masses, None, &params, &cuda(), &Progress::none()).expect("cuda");
    let unlabelled = find_halos(
        positions,
        masses,
        None,
        &FofParams {
            labels: false,
            ..params.clone()
        },
        &cuda(),
        &Progress::none(),
    )
    .expect("cuda without labels");
    assert_eq!(
        FofResult {
            labels: gpu.labels.clone(),
            stage_seconds: gpu.stage_seconds.clone(),
            ..unlabelled.clone()
        },
        gpu,
        "the CUDA catalogue depends on whether labels were asked for"
    );
    assert_eq!(unlabelled.labels, None);
    assert_eq!(cpu.backend, BackendKind::Cpu);
    assert_eq!(gpu.backend, BackendKind::Cuda);
    assert!(cpu.labels.is_some() && gpu.labels.is_some());
    let scale = cpu.frame.map_or_else(|| extent(positions), |f| f.size);
    assert_catalogues_agree(
        &as_catalogue(&cpu),
        &as_catalogue(&gpu),
        cpu.frame,
        scale,
        1.0,
    );
    assert_eq!(
        FofResult {
            backend: BackendKind::Cpu,
            halos: cpu.halos.clone(),
            stage_seconds: Vec::new(),
            ..gpu
        },
        cpu
    );
}

/// The catalogue part of a result.
fn as_catalogue(result: &FofResult) -> catalogue::Catalogue {
    catalogue::Catalogue {
        halos: result.halos.clone(),
        labels: result.labels.clone(),
        n_sets_all_sizes: result.n_sets_all_sizes,
    }
}

/// Largest velocity component magnitude (1 without velocities): the scale of velocity errors.
fn max_speed(velocities: Option<&[[f32; 3]]>) -> f64 {
    velocities.map_or(1.0, |v| {
        v.iter()
            .flatten()
            .fold(1e-30f64, |m, &x| m.max(f64::from(x).abs()))
    })
}

/// Largest per-axis extent of the positions (the length scale of open boundaries).
fn extent(positions: &[[f32; 3]]) -> f64 {
    (0..3)
        .map(|a| {
            let (lo, hi) = positions.iter().fold((f32::MAX, f32::MIN), |(lo, hi), p| {
                (lo.min(p[a]), hi.max(p[a]))
            });
            f64::from(hi) - f64::from(lo)
        })
        .fold(0.0, f64::max)
}

fn reference(name: &str) -> Value {
    let path = shared_reference(&format!("fof/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("JSON")
}

/// One shared-snapshot case: file, species, b, periodic, min members, reference name.
type Case<'a> = (
    &'a str,
    &'a [SpeciesKind],
    f64,
    bool,
    usize,
    Option<&'a str>,
);

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn shared_snapshots_give_the_cpu_partition_and_the_references() {
    let device = device();
    let dark = [SpeciesKind::Dark];
    let all = SpeciesKind::ALL;
    // (file, species, b, periodic, min members, reference)
    let cases: [Case; 10] = [
        (
            "lambs.00200_subsamp_30K",
            &all,
            0.2,
            true,
            20,
            Some("lambs.00200_subsamp_30K_periodic_b0.2_min20"),
        ),
        (
            "lambs.00200_subsamp_30K",
            &all,
            0.2,
            false,
            20,
            Some("lambs.00200_subsamp_30K_nonperiodic_b0.2_min20"),
        ),
        ("test4.tbin", &dark, 0.2, true, 20, None),
        ("test4.tbin", &dark, 0.28, true, 20, None),
        (
            "run581.20000",
            &all,
            0.2,
            false,
            10,
            Some("run581.20000_nonperiodic_b0.2_min10"),
        ),
        (
            "g2_lcdm_gas_snapshot_003.hdf5",
            &dark,
            0.2,
            true,
            20,
            Some("g2_lcdm_gas_snapshot_003_periodic_b0.2_min20"),
        ),
        ("g2_lcdm_gas_snapshot_004.hdf5", &dark, 0.2, true, 20, None),
        ("g2_lcdm_gas_snapshot_004.hdf5", &all, 0.2, true, 20, None),
        ("cube300.tbin", &dark, 0.2, true, 20, None),
        ("cube300.tbin", &dark, 0.28, true, 20, None),
    ];
    for (file, species, b, periodic, min_members, reference_name) in cases {
        let snapshot = load_snapshot(
            &shared_data(&format!("snapshots/{file}")),
            &LoadOptions::default(),
            &Progress::none(),
        )
        .expect("readable snapshot");
        let box_size = match (periodic, snapshot_box_size(&snapshot)) {
            (false, _) => None,
            (true, Some(size)) => Some(size),
            (true, None) => Some(1.0),
        };
        let selected = select_particles(&snapshot, species).expect("selection");
        // The mean separation of all particles, as the references were made and so that test4's
        // cluster stays the dense stress case (its zoom-in spacing is tests/fof_zoom.rs's).
        let params = FofParams {
            linking_length: LinkingLength::Relative(b),
            separation_from: SeparationFrom::Mean,
            min_members,
            box_size,
            labels: true,
        };
        let result = find_halos(
            &selected.positions,
            &selected.masses,
            selected.velocities.as_deref(),
            &params,
            &cuda(),
            &Progress::none(),
        )
        .expect("cuda fof");
        assert_eq!(result.backend, BackendKind::Cuda);
        let cpu = find_halos(
            &selected.positions,
            &selected.masses,
            selected.velocities.as_deref(),
            &params,
            &Backend::cpu(),
            &Progress::none(),
        )
        .expect("cpu fof");
        let scale = cpu
            .frame
            .map_or_else(|| extent(&selected.positions), |f| f.size);
        assert_catalogues_agree(
            &as_catalogue(&cpu),
            &as_catalogue(&result),
            cpu.frame,
            scale,
            max_speed(selected.velocities.as_deref()),
        );
        assert_eq!(
            FofResult {
                backend: BackendKind::Cpu,
                halos: cpu.halos.clone(),
                stage_seconds: Vec::new(),
                ..result.clone()
            },
            cpu,
            "{file} b={b} periodic={periodic}: the CUDA result differs from the CPU's"
        );
        let what = format!("{file} b={b} periodic={periodic}");
        assert_same_partition(
            &device,
            &selected.positions,
            result.linking_length,
            result.frame,
            &what,
        );
        if let Some(name) = reference_name {
            let r = reference(name);
            assert_eq!(
                labels_sha256(result.labels.as_deref().expect("labels asked for")),
                r["label_sha256"].as_str().expect("hex"),
                "{name}"
            );
            assert_eq!(
                result.halos.len() as u64,
                r["n_groups"].as_u64().expect("n")
            );
            let sizes: Vec<u64> = result.halos.iter().map(|h| h.size as u64).collect();
            let expected: Vec<u64> = r["sizes_sorted_desc"]
                .as_array()
                .expect("sizes")
                .iter()
                .map(|v| v.as_u64().expect("size"))
                .collect();
            assert_eq!(sizes, expected, "{name}");
        }
        if file == "cube300.tbin" {
            assert!(
                result.halos.is_empty(),
                "{what}: initial conditions grouped"
            );
            assert_eq!(result.n_sets_all_sizes, result.n_particles);
        }
        if file == "test4.tbin" {
            assert!(
                result.halos[0].size > 40_000,
                "{what}: the cluster is one halo"
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn synthetic_clustered_sets_give_the_cpu_partition() {
    let device = device();
    for (n, seed) in [(1_000_000usize, 11u64), (10_000_000, 12)] {
        let points = synthetic::clustered_points(n, 1.0, seed);
        let frame = BoxFrame {
            lower: 0.0,
            size: 1.0,
        };
        let ll = 0.2 / (n as f64).powf(1.0 / 3.0);
        assert_same_partition(
            &device,
            &points,
            ll,
            Some(frame),
            &format!("clustered periodic {n}"),
        );
        if n == 1_000_000 {
            assert_same_partition(&device, &points, ll, None, &format!("clustered open {n}"));
            // A long linking length: big cells, dense neighbourhoods.
            assert_same_partition(&device, &points, 2.5 * ll, Some(frame), "clustered b=0.5");
            assert_same_result(
                &points,
                &haloscope::data::Masses::Uniform(1.0),
                FofParams {
                    box_size: Some(1.0),
                    ..FofParams::default()
                },
            );
        }
    }
    let snapshot = demo_snapshot(1_000_000, 5);
    let selected = select_particles(&snapshot, &SpeciesKind::ALL).expect("all species");
    let params = FofParams {
        box_size: snapshot_box_size(&snapshot),
        ..FofParams::default()
    };
    let result = find_halos(
        &selected.positions,
        &selected.masses,
        None,
        &params,
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("cpu fof");
    assert_same_partition(
        &device,
        &selected.positions,
        result.linking_length,
        result.frame,
        "demo snapshot, all species",
    );
    assert_same_result(&selected.positions, &selected.masses, params);
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn edge_cases_match_the_brute_force_linker() {
    let device = device();
    let frame = BoxFrame {
        lower: 0.0,
        size: 1.0,
    };
    // A chain at exactly ll = 0.25 (exact in binary: d² = ll² must link), a gap, coincident
    // points, and pairs across each face of the periodic box.
    let mut points: Vec<[f32; 3]> = (0..4)
        .map(|i| [0.125 + i as f32 * 0.25, 0.5, 0.5])
        .collect();
    points.extend([[0.5, 0.1, 0.1], [0.5, 0.1, 0.1], [0.5, 0.1, 0.1]]);
    points.extend([
        [0.0, 0.3, 0.7],
        [0.875, 0.3, 0.7],
        [0.3, 0.0, 0.2],
        [0.3, 0.875, 0.2],
    ]);
    points.extend([
        [0.6, 0.6, 0.0],
        [0.6, 0.6, 0.75],
        [0.999_999, 0.9, 0.9],
        [-0.1, 0.9, 0.9],
    ]);
    // Pseudo-random points on a lattice of step 1/16, many at exactly ll or ll·√2 apart.
    let mut rng = synthetic::SplitMix64::new(3);
    for _ in 0..3000 {
        points.push([0; 3].map(|_| (rng.next_u64() % 16) as f32 / 16.0));
    }
    for ll in [0.0625, 0.0625 * std::f64::consts::SQRT_2, 0.125, 0.25, 0.26] {
        for frame in [Some(frame), None] {
            let positions: Vec<[f32; 3]> = match frame {
                Some(_) => points.clone(),
                None => points.iter().filter(|p| p[0] >= 0.0).copied().collect(),
            };
            let brute = canonical(&link_components_brute_force(&positions, ll, frame));
            let gpu = link_components_cuda(&device, &positions, ll, frame, &Progress::none())
                .expect("cuda links");
            assert_eq!(
                canonical(&gpu.set_ids),
                brute,
                "ll={ll} periodic={}",
                frame.is_some()
            );
        }
    }
    // The chain along x links at exactly ll (as the CPU test in src/halo/cpu/link.rs).
    let gpu = link_components_cuda(&device, &points[..4], 0.25, None, &Progress::none())
        .expect("cuda links");
    assert!(gpu.set_ids.iter().all(|&id| id == gpu.set_ids[0]));
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn a_cancelled_run_stops_with_cancelled() {
    let device = device();
    let points = synthetic::clustered_points(100_000, 1.0, 4);
    let token = CancelToken::new();
    token.cancel();
    let err = link_components_cuda(&device, &points, 0.004, None, &Progress::with_cancel(token))
        .expect_err("cancelled before it started");
    assert!(matches!(err, FofError::Cancelled), "{err}");
}
