//! Movies of any snapshot: the data presets keep every camera target inside the data's bounds
//! on the shared snapshots; empty frames are warned about, and fail with --strict.

mod common;

use common::{haloscope_bin, shared_data};
use haloscope::backend::{Backend, BackendChoice};
use haloscope::data::{LoadOptions, Snapshot, SpeciesKind, load_snapshot};
use haloscope::halo::{self, FofParams, snapshot_box_size};
use haloscope::jobs::Progress;
use haloscope::movie::{DataBounds, DataPreset, DataPresetOptions, data_preset_path};
use std::process::Command;

fn shared(name: &str) -> Snapshot {
    let path = shared_data(&format!("snapshots/{name}"));
    load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("snapshot")
}

#[test]
fn preset_targets_stay_inside_the_data_bounds() {
    let backend = Backend::resolve(BackendChoice::Cpu).expect("cpu");
    for (name, box_size) in [
        ("g2_lcdm_gas_snapshot_004.hdf5", None),
        ("lambs.00200_subsamp_30K", Some(1.0)),
        ("test4.tbin", Some(1.0)),
    ] {
        let snapshot = shared(name);
        let bounds = DataBounds::of(&snapshot).expect("bounds");
        let params = FofParams {
            box_size: box_size.or(snapshot_box_size(&snapshot)),
            ..FofParams::default()
        };
        let fof = halo::fof_snapshot(
            &snapshot,
            &[SpeciesKind::Dark],
            &params,
            &backend,
            &Progress::none(),
        )
        .expect("fof");
        assert!(fof.halos.len() >= 2, "{name}: {} halos", fof.halos.len());
        let options = DataPresetOptions::default();
        for preset in [
            DataPreset::Orbit,
            DataPreset::ZoomToHalo,
            DataPreset::FlyAlongHalos,
        ] {
            let path = data_preset_path(preset, &bounds, &fof.halos, &options)
                .unwrap_or_else(|e| panic!("{name} {preset:?}: {e}"));
            assert_eq!(path.duration_s(), options.duration_s, "{name} {preset:?}");
            for k in 0..=50 {
                let t = path.start_s() + path.duration_s() * k as f64 / 50.0;
                let pose = path.sample(t).pose;
                assert!(
                    bounds.contains(pose.look_at),
                    "{name} {preset:?} t = {t}: target {:?} outside {bounds:?}",
                    pose.look_at
                );
            }
            if preset == DataPreset::Orbit {
                // The eye stays outside the data, so the whole box is in view.
                let first = path.sample(path.start_s()).pose.position;
                assert!(!bounds.contains(first), "{name}: orbit starts inside");
            }
        }
    }
}

fn movie(args: &[&str], out: &std::path::Path) -> std::process::Output {
    Command::new(haloscope_bin())
        .arg("movie")
        .arg(shared_data("snapshots/g2_lcdm_gas_snapshot_004.hdf5"))
        .args([
            "--frames",
            "2",
            "--width",
            "32",
            "--height",
            "18",
            "--backend",
            "cpu",
        ])
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("runs")
}

#[test]
fn empty_frames_warn_and_fail_with_strict_and_a_preset_fills_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let demo = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/paths/demo-flythrough.toml"
    );
    let out = movie(&["--path", demo], &dir.path().join("a"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: 2 of 2 rendered frames are empty"),
        "{stderr}"
    );
    let out = movie(&["--path", demo, "--strict"], &dir.path().join("b"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("\nerror: 2 of 2 rendered frames are empty"),
        "{stderr}"
    );
    let out = movie(&["--preset", "orbit", "--strict"], &dir.path().join("c"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("empty"), "{stderr}");
    let pngs = std::fs::read_dir(dir.path().join("c"))
        .expect("frames folder")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "png"))
        })
        .count();
    assert_eq!(pngs, 2);
}
