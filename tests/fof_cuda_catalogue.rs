//! The CUDA friends-of-friends catalogue against the CPU's: the partition step (labels, kept
//! sets) identical, the device catalogue within its stated tolerance and the same with and
//! without labels. Ignored here (no GPU); run on the GPU machine with `--ignored`. A device
//! that does not open fails the tests, it never skips them.

mod fof_support;

use fof_support::cuda::{assert_catalogues_agree, device};
use haloscope::gpu::GpuDevice;
use haloscope::halo::{
    BoxFrame, CatalogueRequest, catalogue, link_components, partition_cuda, synthetic,
};
use haloscope::jobs::Progress;
use std::time::Instant;

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn device_labels_equal_the_cpu_partition_step() {
    let device = device();
    let frame = BoxFrame {
        lower: 0.0,
        size: 1.0,
    };
    // 5·10⁶ particles: several pinned staging chunks each way plus a partial tail.
    for (n, seed) in [(5_000_001usize, 31u64), (200_000, 32)] {
        let points = synthetic::clustered_points(n, 1.0, seed);
        let ll = 0.2 / (n as f64).powf(1.0 / 3.0);
        for frame in [Some(frame), None] {
            let ids = link_components(&points, ll, frame, &Progress::none()).expect("cpu links");
            for min_members in [1usize, 20, 5000, usize::MAX] {
                let expected = catalogue::partition(&ids, min_members);
                let start = Instant::now();
                let got =
                    partition_cuda(&device, &points, ll, frame, min_members, &Progress::none())
                        .expect("cuda partition");
                assert_eq!(
                    got.partition.groups,
                    expected.groups,
                    "n={n} periodic={} min={min_members}",
                    frame.is_some()
                );
                assert_eq!(got.partition.n_sets_all_sizes, expected.n_sets_all_sizes);
                assert!(
                    got.partition.labels == expected.labels,
                    "n={n} min={min_members}: labels differ"
                );
                eprintln!(
                    "partition n={n} periodic={} min={min_members}: {} halos, identical, {:.3} s",
                    frame.is_some(),
                    expected.groups.len(),
                    start.elapsed().as_secs_f64()
                );
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn device_catalogue_agrees_with_the_cpu_catalogue() {
    let device = device();
    // Periodic grids of 867, 580, 1092 and 461 cells per axis (≡ 3, 0, 0, 1 mod 4): the block
    // linker's wrapped blocks and its offset-by-offset walk near the faces.
    for (n, seed) in [
        (1_000_000usize, 41u64),
        (300_000, 42),
        (2_000_003, 43),
        (150_001, 44),
    ] {
        let points = synthetic::clustered_points(n, 1.0, seed);
        let mut rng = synthetic::SplitMix64::new(seed);
        let masses = haloscope::data::Masses::PerParticle(
            (0..n).map(|_| 0.5 + rng.next_f64() as f32).collect(),
        );
        let velocities: Vec<[f32; 3]> = (0..n)
            .map(|_| [0; 3].map(|_| (rng.next_f64() * 200.0 - 100.0) as f32))
            .collect();
        let ll = 0.2 / (n as f64).powf(1.0 / 3.0);
        let box_frame = BoxFrame {
            lower: 0.0,
            size: 1.0,
        };
        for frame in [Some(box_frame), None] {
            let ids = link_components(&points, ll, frame, &Progress::none()).expect("cpu");
            for (masses, velocities) in [
                (&masses, Some(velocities.as_slice())),
                (&haloscope::data::Masses::Uniform(2.5), None),
            ] {
                let cpu = catalogue::build(&ids, &points, masses, velocities, frame, 20);
                let start = Instant::now();
                let gpu = haloscope::halo::catalogue_cuda(
                    &device,
                    &CatalogueRequest {
                        positions: &points,
                        masses,
                        velocities,
                        linking_length: ll,
                        frame,
                        min_members: 20,
                        with_labels: true,
                    },
                    &Progress::none(),
                )
                .expect("cuda catalogue");
                assert_catalogues_agree(&cpu, &gpu.catalogue, frame, 1.0, 100.0);
                assert_same_without_labels(
                    &device,
                    &CatalogueRequest {
                        positions: &points,
                        masses,
                        velocities,
                        linking_length: ll,
                        frame,
                        min_members: 20,
                        with_labels: false,
                    },
                    &gpu.catalogue,
                );
                eprintln!(
                    "catalogue n={n} periodic={} velocities={}: {} halos agree, {:.3} s",
                    frame.is_some(),
                    velocities.is_some(),
                    cpu.halos.len(),
                    start.elapsed().as_secs_f64()
                );
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn device_catalogue_on_a_small_clustered_set() {
    // Small enough for compute-sanitizer: both link paths of the block table (periodic grid of
    // 270 cells per axis, not divisible by 4, so cells near a face walk the offsets one by one;
    // and open boundaries) and every catalogue kernel.
    let device = device();
    let n = 30_001;
    let points = synthetic::clustered_points(n, 1.0, 51);
    let velocities: Vec<[f32; 3]> = points.iter().map(|p| [p[1], -p[0], 2.0 * p[2]]).collect();
    let masses = haloscope::data::Masses::PerParticle((0..n).map(|i| (i % 7) as f32).collect());
    let ll = 0.2 / (n as f64).powf(1.0 / 3.0);
    let frame = BoxFrame {
        lower: 0.0,
        size: 1.0,
    };
    for frame in [Some(frame), None] {
        let ids = link_components(&points, ll, frame, &Progress::none()).expect("cpu");
        let cpu = catalogue::build(&ids, &points, &masses, Some(&velocities), frame, 8);
        let gpu = haloscope::halo::catalogue_cuda(
            &device,
            &CatalogueRequest {
                positions: &points,
                masses: &masses,
                velocities: Some(&velocities),
                linking_length: ll,
                frame,
                min_members: 8,
                with_labels: true,
            },
            &Progress::none(),
        )
        .expect("cuda catalogue");
        assert!(!cpu.halos.is_empty());
        assert_catalogues_agree(&cpu, &gpu.catalogue, frame, 1.0, 2.0);
        assert_same_without_labels(
            &device,
            &CatalogueRequest {
                positions: &points,
                masses: &masses,
                velocities: Some(&velocities),
                linking_length: ll,
                frame,
                min_members: 8,
                with_labels: false,
            },
            &gpu.catalogue,
        );
    }
    // Above, 270 cells per axis: 10.5 blocks per particle, the dense block table. The same set
    // squeezed into a quarter of the periodic box has 656 blocks per particle, so the link
    // uses the hash of the non-empty blocks instead (src/halo/cuda/link_cells.rs).
    let squeezed: Vec<[f32; 3]> = points.iter().map(|p| p.map(|x| 0.25 * x)).collect();
    let frame = Some(frame_of_unit_box());
    let ids = link_components(&squeezed, 0.25 * ll, frame, &Progress::none()).expect("cpu");
    let cpu = catalogue::build(&ids, &squeezed, &masses, Some(&velocities), frame, 8);
    let gpu = haloscope::halo::catalogue_cuda(
        &device,
        &CatalogueRequest {
            positions: &squeezed,
            masses: &masses,
            velocities: Some(&velocities),
            linking_length: 0.25 * ll,
            frame,
            min_members: 8,
            with_labels: true,
        },
        &Progress::none(),
    )
    .expect("cuda catalogue");
    assert!(!cpu.halos.is_empty());
    assert_catalogues_agree(&cpu, &gpu.catalogue, frame, 1.0, 2.0);
}

fn frame_of_unit_box() -> BoxFrame {
    BoxFrame {
        lower: 0.0,
        size: 1.0,
    }
}

/// `catalogue_cuda` of `unlabelled` (a request without labels) returns none and exactly
/// `labelled`'s halos and set count.
fn assert_same_without_labels(
    device: &GpuDevice,
    unlabelled: &CatalogueRequest<'_>,
    labelled: &catalogue::Catalogue,
) {
    let unlabelled = haloscope::halo::catalogue_cuda(device, unlabelled, &Progress::none())
        .expect("cuda catalogue without labels");
    assert_eq!(unlabelled.catalogue.labels, None);
    assert!(labelled.labels.is_some());
    assert_eq!(unlabelled.catalogue.halos, labelled.halos);
    assert_eq!(
        unlabelled.catalogue.n_sets_all_sizes,
        labelled.n_sets_all_sizes
    );
}
