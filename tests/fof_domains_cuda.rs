//! Friends-of-friends on spatial domains on CUDA devices: sub-boxes one after the other on one
//! device and one domain per device give the CPU's partition exactly and its catalogue within
//! the device catalogue's contract (sums in another order). Ignored
//! here (no GPU); run on the GPU machine with `--ignored`. A device that does not open fails
//! the tests, it never skips them.

mod common;
mod fof_support;

use common::{haloscope_bin, shared_data};
use fof_support::cuda::assert_catalogues_agree;
use haloscope::backend::{Backend, BackendChoice, DeviceSelection};
use haloscope::data::Masses;
use haloscope::halo::domains::{DomainLinker, catalogue_in_domains, link_in_domains};
use haloscope::halo::{
    BoxFrame, Catalogue, CatalogueRequest, FofParams, FofResult, LinkingLength, SeparationFrom,
    link_components, prepare_fof, synthetic,
};
use haloscope::jobs::Progress;

/// Every device the driver lists; none fails the test.
fn all_devices() -> Backend {
    let backend = Backend::resolve_on(BackendChoice::Cuda, &DeviceSelection::All)
        .expect("these tests need a CUDA device; none opened");
    for device in backend.devices() {
        eprintln!("device: {}", device.info());
    }
    backend
}

/// Set ids renamed to the smallest member index of their set.
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

#[test]
#[ignore = "needs a CUDA device"]
fn sub_boxes_on_one_device_and_domains_on_all_devices_give_the_cpu_partition() {
    let backend = all_devices();
    let devices = backend.devices();
    let points = synthetic::clustered_points_parallel(3_000_000, 1.0, 5);
    let ll = 0.2 / 3_000_000f64.cbrt();
    for frame in [
        None,
        Some(BoxFrame {
            lower: 0.0,
            size: 1.0,
        }),
    ] {
        let cpu = canonical(&link_components(&points, ll, frame, &Progress::none()).unwrap());
        for domains in 1..=4 {
            for set in [&devices[..1], devices] {
                let merged = link_in_domains(
                    &points,
                    ll,
                    frame,
                    domains,
                    DomainLinker::Cuda(set),
                    &Progress::none(),
                )
                .expect("cuda domains link");
                assert_eq!(
                    merged.set_ids,
                    cpu,
                    "{domains} domains on {} devices, {frame:?}",
                    set.len()
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn the_catalogue_from_cuda_domains_is_the_cpu_catalogue() {
    let backend = all_devices();
    let n = 2_000_000;
    let points = synthetic::clustered_points_parallel(n, 1.0, 9);
    let velocities: Vec<[f32; 3]> = (0..n)
        .map(|i| [(i % 7) as f32 - 3.0, (i % 5) as f32, -((i % 3) as f32)])
        .collect();
    let per_particle = Masses::PerParticle((0..n).map(|i| 1.0 + (i % 4) as f32).collect());
    let frame = Some(BoxFrame {
        lower: 0.0,
        size: 1.0,
    });
    for (masses, velocities) in [
        (Masses::Uniform(1.5), None),
        (per_particle, Some(&velocities[..])),
    ] {
        let params = FofParams {
            linking_length: LinkingLength::Relative(0.2),
            separation_from: SeparationFrom::Mean,
            min_members: 20,
            box_size: Some(1.0),
            labels: true,
        };
        let cpu = prepare_fof(&points, &masses, velocities, &params)
            .unwrap()
            .find(&Backend::cpu(), &Progress::none())
            .unwrap();
        for domains in [None, Some(2), Some(3), Some(5)] {
            let spread = prepare_fof(&points, &masses, velocities, &params)
                .unwrap()
                .find_in_domains(&backend, domains, &Progress::none())
                .unwrap();
            eprintln!("{domains:?}: {:?}", spread.stage_seconds);
            assert!(!spread.halos.is_empty());
            assert_eq!(spread.backend.name(), "cuda");
            assert_catalogues_agree(&as_catalogue(&cpu), &as_catalogue(&spread), frame, 1.0, 3.0);
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn slabs_split_on_the_devices_give_the_cpu_catalogue() {
    // One slab per device, the particles routed and gathered device to device: on every
    // device, and on the first device named two and three times (two or three slabs on one
    // GPU, each on its own thread, as on as many GPUs).
    let backend = all_devices();
    let first = backend.devices()[0].clone();
    let sets = [
        backend.devices().to_vec(),
        vec![first.clone(), first.clone()],
        vec![first.clone(), first.clone(), first],
    ];
    let n = 1_500_000;
    let points = synthetic::clustered_points_parallel(n, 1.0, 17);
    let velocities: Vec<[f32; 3]> = (0..n)
        .map(|i| [(i % 7) as f32 - 3.0, (i % 5) as f32, -((i % 3) as f32)])
        .collect();
    let per_particle = Masses::PerParticle((0..n).map(|i| 1.0 + (i % 4) as f32).collect());
    let ll = 0.2 / (n as f64).cbrt();
    let periodic = BoxFrame {
        lower: 0.0,
        size: 1.0,
    };
    for (frame, masses, velocities, with_labels) in [
        (Some(periodic), Masses::Uniform(1.5), None, true),
        (
            Some(periodic),
            per_particle.clone(),
            Some(&velocities[..]),
            false,
        ),
        (None, per_particle, Some(&velocities[..]), true),
        (None, Masses::Uniform(2.0), None, false),
    ] {
        let request = CatalogueRequest {
            positions: &points,
            masses: &masses,
            velocities,
            linking_length: ll,
            frame,
            min_members: 20,
            with_labels,
        };
        let mut cpu = haloscope::halo::catalogue::build(
            &link_components(&points, ll, frame, &Progress::none()).unwrap(),
            &points,
            &masses,
            velocities,
            frame,
            20,
        );
        if !with_labels {
            cpu.labels = None;
        }
        for set in sets.iter().filter(|set| set.len() >= 2) {
            let spread = catalogue_in_domains(
                &request,
                set.len(),
                DomainLinker::Cuda(set),
                &Progress::none(),
            )
            .expect("split on the devices");
            let stages: Vec<&str> = spread.stage_seconds.iter().map(|s| s.0).collect();
            eprintln!("{} slabs, {frame:?}: {:?}", set.len(), spread.stage_seconds);
            assert!(stages.contains(&"route on devices"), "{stages:?}");
            assert!(spread.n_ghosts > 0 && spread.n_joined > 0);
            assert!(!spread.catalogue.halos.is_empty());
            assert_catalogues_agree(&cpu, &spread.catalogue, frame, 1.0, 3.0);
        }
    }
}

/// The result's catalogue part.
fn as_catalogue(result: &FofResult) -> Catalogue {
    Catalogue {
        halos: result.halos.clone(),
        labels: result.labels.clone(),
        n_sets_all_sizes: result.n_sets_all_sizes,
    }
}

/// Two catalogue CSV files of the same run: the same comment, header and integer columns, the
/// float columns within the device catalogue's contract (relative 1e-12 for masses, 1e-9 of
/// the unit box for the rest).
fn assert_csv_agree(cpu: &str, gpu: &str, name: &str) {
    assert_eq!(cpu.lines().count(), gpu.lines().count(), "{name}");
    for (c, g) in cpu.lines().zip(gpu.lines()) {
        if c.starts_with('#') || c.starts_with("rank") {
            assert_eq!(c, g, "{name}");
            continue;
        }
        let (c, g): (Vec<&str>, Vec<&str>) = (c.split(',').collect(), g.split(',').collect());
        assert_eq!(c.len(), g.len(), "{name}");
        assert_eq!(c[..3], g[..3], "{name}");
        for (column, (a, b)) in c.iter().zip(&g).enumerate().skip(3) {
            if a.is_empty() || b.is_empty() {
                assert_eq!(a, b, "{name}");
                continue;
            }
            let (a, b): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
            let tolerance = if column == 3 { 1e-12 * a.abs() } else { 1e-9 };
            // Centres compared by minimum image in the unit box.
            let d = (a - b).abs();
            let d = if (4..7).contains(&column) {
                d.min(1.0 - d)
            } else {
                d
            };
            assert!(d <= tolerance, "{name}: column {column}: {a} vs {b}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn the_fof_command_on_cuda_domains_writes_the_cpu_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = shared_data("snapshots/test4.tbin");
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(format!("{name}.csv"));
        let labels = dir.path().join(format!("{name}.npy"));
        let output = std::process::Command::new(haloscope_bin())
            .arg("fof")
            .arg(&file)
            .args(["--box", "1", "--out"])
            .arg(&out)
            .arg("--labels")
            .arg(&labels)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        (
            std::fs::read_to_string(out).unwrap(),
            std::fs::read(labels).unwrap(),
        )
    };
    let cpu = run("cpu", &["--backend", "cpu"]);
    for (name, extra) in [
        (
            "sub-boxes",
            &["--backend", "cuda", "--devices", "0", "--domains", "3"][..],
        ),
        (
            "all",
            &["--backend", "cuda", "--devices", "all", "--domains", "4"][..],
        ),
    ] {
        let (csv, labels) = run(name, extra);
        assert!(labels == cpu.1, "{name}: labels differ");
        assert_csv_agree(&cpu.0, &csv, name);
    }
}
