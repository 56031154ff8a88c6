//! Friends-of-friends on spatial domains on CUDA devices: sub-boxes one after the other on one
//! device and one domain per device give the CPU's partition and catalogue exactly. Ignored
//! here (no GPU); run on the GPU machine with `--ignored`. A device that does not open fails
//! the tests, it never skips them.

mod common;

use common::{haloscope_bin, shared_data};
use haloscope::backend::{Backend, BackendChoice, DeviceSelection};
use haloscope::data::Masses;
use haloscope::halo::domains::{DomainLinker, link_in_domains};
use haloscope::halo::{
    BoxFrame, FofParams, LinkingLength, SeparationFrom, link_components, prepare_fof, synthetic,
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
    let points = synthetic::clustered_points_parallel(2_000_000, 1.0, 9);
    let masses = Masses::Uniform(1.5);
    let params = FofParams {
        linking_length: LinkingLength::Relative(0.2),
        separation_from: SeparationFrom::Mean,
        min_members: 20,
        box_size: Some(1.0),
        labels: true,
    };
    let cpu = prepare_fof(&points, &masses, None, &params)
        .unwrap()
        .find(&Backend::cpu(), &Progress::none())
        .unwrap();
    for domains in [None, Some(3)] {
        let spread = prepare_fof(&points, &masses, None, &params)
            .unwrap()
            .find_in_domains(&backend, domains, &Progress::none())
            .unwrap();
        assert_eq!(spread.labels, cpu.labels, "{domains:?}");
        assert_eq!(spread.halos, cpu.halos, "{domains:?}");
        assert_eq!(spread.backend.name(), "cuda");
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
        (std::fs::read(out).unwrap(), std::fs::read(labels).unwrap())
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
        assert_eq!(run(name, extra), cpu, "{name}");
    }
}
