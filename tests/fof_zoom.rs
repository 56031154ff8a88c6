//! Friends-of-friends on zoom-ins: the relative linking length follows the lowest-mass
//! particles' spacing when the masses come in discrete levels spanning more than a factor of
//! two (test4.tbin, a synthetic two-mass set), and single-resolution runs keep the mean
//! separation of all particles.

mod common;

use common::{haloscope_bin, shared_data};
use haloscope::backend::Backend;
use haloscope::data::{LoadOptions, Masses, Snapshot, SpeciesKind, load_snapshot};
use haloscope::halo::{
    FofParams, FofResult, LinkingLength, LinkingLengthSource, SeparationFrom, find_halos,
    fof_snapshot, select_particles, synthetic,
};
use haloscope::jobs::Progress;
use serde_json::Value;

fn load(name: &str) -> Snapshot {
    let path = shared_data(&format!("snapshots/{name}"));
    load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("readable snapshot")
}

fn run_dark(snapshot: &Snapshot, params: &FofParams) -> FofResult {
    fof_snapshot(
        snapshot,
        &[SpeciesKind::Dark],
        params,
        &Backend::cpu(),
        &Progress::none(),
    )
    .expect("fof")
}

fn periodic_unit_box(linking_length: LinkingLength) -> FofParams {
    FofParams {
        linking_length,
        box_size: Some(1.0),
        labels: true,
        ..FofParams::default()
    }
}

#[test]
fn test4_links_at_the_spacing_of_its_lowest_mass_particles() {
    let snapshot = load("test4.tbin");
    let selected = select_particles(&snapshot, &[SpeciesKind::Dark]).expect("dark matter");
    let Masses::PerParticle(masses) = &*selected.masses else {
        panic!("test4 has one mass per particle");
    };
    // Independently: the lightest mass, its count, the total, and 0.2 (m_min V / M)^(1/3), V = 1.
    let m_min = masses.iter().copied().fold(f32::INFINITY, f32::min);
    let n_lowest = masses.iter().filter(|&&m| m == m_min).count();
    let total: f64 = masses.iter().map(|&m| f64::from(m)).sum();
    let expected = 0.2 * (f64::from(m_min) / total).powf(1.0 / 3.0);
    assert_eq!(n_lowest, 43_984);
    assert_eq!(format!("{expected:.6e}"), "1.388889e-3");

    let zoom = run_dark(&snapshot, &periodic_unit_box(LinkingLength::Relative(0.2)));
    assert_eq!(zoom.linking_length, expected);
    assert_eq!(
        zoom.linking_length_from,
        LinkingLengthSource::LowestMass {
            mass: f64::from(m_min),
            n_lowest,
            n: 67_495,
            separation: expected / 0.2,
        }
    );
    assert_eq!(
        zoom.linking_length_from.describe(),
        "lowest-mass particles (m = 3.348980e-7, 43984 of 67495)"
    );
    // The same partition and catalogue as the explicit linking length.
    let given = run_dark(
        &snapshot,
        &periodic_unit_box(LinkingLength::Absolute(expected)),
    );
    assert_eq!(given.linking_length_from, LinkingLengthSource::Given);
    assert_eq!(given.labels, zoom.labels);
    assert_eq!(given.halos, zoom.halos);
    assert_eq!(zoom.halos.len(), 98);
    assert_eq!(zoom.halos[0].size, 16_242);

    // The mean separation of all particles links the cluster's surroundings into one group.
    let mean = run_dark(
        &snapshot,
        &FofParams {
            separation_from: SeparationFrom::Mean,
            ..periodic_unit_box(LinkingLength::Relative(0.2))
        },
    );
    assert_eq!(mean.linking_length, 0.2 * mean.mean_separation);
    assert_eq!(
        mean.linking_length_from,
        LinkingLengthSource::Mean { n: 67_495 }
    );
    assert_eq!(mean.halos[0].size, 44_626);
}

#[test]
fn a_two_mass_zoom_in_finds_the_fine_clumps() {
    let (positions, masses) = synthetic::two_mass_zoom_in();
    let masses = Masses::PerParticle(masses);
    let run = |separation_from| {
        find_halos(
            &positions,
            &masses,
            None,
            &FofParams {
                separation_from,
                ..periodic_unit_box(LinkingLength::Relative(0.2))
            },
            &Backend::cpu(),
            &Progress::none(),
        )
        .expect("fof")
    };
    let auto = run(SeparationFrom::Auto);
    let sizes: Vec<(usize, usize)> = auto.halos.iter().map(|h| (h.size, h.min_index)).collect();
    assert_eq!(sizes, vec![(125, 1000), (125, 1125)]);
    assert_eq!(
        auto.linking_length_from.describe(),
        "lowest-mass particles (m = 1.000000e0, 250 of 1250)"
    );
    assert_eq!(
        auto.linking_length,
        0.2 * (1.0f64 / 1_000_250.0).powf(1.0 / 3.0)
    );
    assert_eq!(run(SeparationFrom::LowestMass), auto);
    let mean = run(SeparationFrom::Mean);
    let sizes: Vec<(usize, usize)> = mean.halos.iter().map(|h| (h.size, h.min_index)).collect();
    assert_eq!(sizes, vec![(250, 1000)]);
}

#[test]
fn single_resolution_runs_keep_the_mean_separation() {
    for (name, species, box_size) in [
        ("run581.20000", &[SpeciesKind::Dark][..], None),
        ("run581.20000", &SpeciesKind::ALL[..], None),
        (
            "lambs.00200_subsamp_30K",
            &[SpeciesKind::Dark][..],
            Some(1.0),
        ),
    ] {
        let snapshot = load(name);
        let params = FofParams {
            box_size,
            ..FofParams::default()
        };
        let result = fof_snapshot(
            &snapshot,
            species,
            &params,
            &Backend::cpu(),
            &Progress::none(),
        )
        .expect("fof");
        assert_eq!(
            result.linking_length_from,
            LinkingLengthSource::Mean {
                n: result.n_particles
            },
            "{name}"
        );
        assert_eq!(
            result.linking_length,
            0.2 * result.mean_separation,
            "{name}"
        );
    }
}

fn cli_json(args: &[&str]) -> Value {
    let output = std::process::Command::new(haloscope_bin())
        .arg("fof")
        .args(args)
        .args(["--json", "--backend", "cpu"])
        .output()
        .expect("haloscope runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

#[test]
fn cli_json_says_which_particles_set_the_linking_length() {
    let test4 = shared_data("snapshots/test4.tbin");
    let test4 = test4.to_str().expect("utf-8 path");
    let from = |json: &Value| {
        json["linking_length_from"]
            .as_str()
            .expect("string")
            .to_owned()
    };
    let auto = cli_json(&[test4, "--box", "1"]);
    assert_eq!(
        from(&auto),
        "lowest-mass particles (m = 3.348980e-7, 43984 of 67495)"
    );
    assert_eq!(auto["sizes_sorted_desc"][0], 16_242);
    let mean = cli_json(&[test4, "--box", "1", "--ll-from", "mean"]);
    assert_eq!(from(&mean), "mean separation of all 67495 particles");
    assert_eq!(mean["sizes_sorted_desc"][0], 44_626);
    let given = cli_json(&[test4, "--box", "1", "--ll", "0.001"]);
    assert_eq!(from(&given), "given");
    let lambs = shared_data("snapshots/lambs.00200_subsamp_30K");
    let lambs = cli_json(&[lambs.to_str().expect("utf-8 path"), "--box", "1"]);
    assert_eq!(from(&lambs), "mean separation of all 30000 particles");
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn cuda_links_test4_at_the_same_zoom_in_spacing_as_the_cpu() {
    use haloscope::backend::BackendChoice;
    use haloscope::gpu::GpuDevice;
    let snapshot = load("test4.tbin");
    let device = GpuDevice::open(0).expect("this test needs a CUDA device; none opened");
    let cuda = Backend::cuda(std::sync::Arc::new(device), BackendChoice::Cuda);
    let params = periodic_unit_box(LinkingLength::Relative(0.2));
    let cpu = run_dark(&snapshot, &params);
    let gpu = fof_snapshot(
        &snapshot,
        &[SpeciesKind::Dark],
        &params,
        &cuda,
        &Progress::none(),
    )
    .expect("fof on CUDA");
    assert_eq!(gpu.backend, haloscope::backend::BackendKind::Cuda);
    // The back-ends receive the same linking length and give the same partition.
    assert_eq!(gpu.linking_length, cpu.linking_length);
    assert_eq!(gpu.linking_length_from, cpu.linking_length_from);
    assert_eq!(gpu.labels, cpu.labels);
    let sizes = |r: &FofResult| {
        r.halos
            .iter()
            .map(|h| (h.size, h.min_index))
            .collect::<Vec<_>>()
    };
    assert_eq!(sizes(&gpu), sizes(&cpu));
}
