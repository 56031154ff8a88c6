//! `haloscope render` on the shared snapshots, and its handling of bad input.

mod common;

use common::{haloscope_bin, shared_data};
use haloscope::render::npy::read_npy_f32;
use std::path::Path;
use std::process::{Command, Output};

const GAS: &str = "snapshots/g2_lcdm_gas_snapshot_004.hdf5";

fn run(args: &[&str]) -> Output {
    Command::new(haloscope_bin())
        .arg("render")
        .args(args)
        .output()
        .expect("run haloscope")
}

fn json_of(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON object on stdout")
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

#[test]
fn gas_log_density_renders_the_cosmic_web_deterministically() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gas = shared_data(GAS);
    let mut outputs = Vec::new();
    for round in 0..2 {
        let png = dir.path().join(format!("gas{round}.png"));
        let tau = dir.path().join(format!("gas{round}.npy"));
        let report = json_of(&run(&[
            path_str(&gas),
            "--out",
            path_str(&png),
            "--tau-out",
            path_str(&tau),
            "--width",
            "240",
            "--height",
            "200",
            "--intensity",
            "Density",
            "--log-intensity",
            "--json",
        ]));
        assert_eq!(report["backend"], "cpu");
        assert_eq!(report["species"], serde_json::json!(["gas"]));
        assert_eq!(report["particles"], 32768);
        assert_eq!(report["width"], 240);
        assert_eq!(report["height"], 200);
        let classes =
            ["small", "medium", "large", "inactive"].map(|k| report[k].as_u64().expect("count"));
        assert_eq!(classes.iter().sum::<u64>(), 32768);
        assert_eq!(
            report["active"].as_u64(),
            Some(classes[0] + classes[1] + classes[2])
        );
        assert_eq!(report["brightness_mode"], "auto");
        assert!(report["brightness"].as_f64().expect("brightness") > 0.0);
        for stage in ["load", "normalise", "project", "splat", "exposure"] {
            assert!(report["stages"][stage].is_number(), "stage {stage}");
        }
        outputs.push((
            std::fs::read(&png).expect("png"),
            std::fs::read(&tau).expect("npy"),
        ));
        // The web: a few dense knots and filaments over dark voids, i.e. a wide range of τ.
        let (shape, values) = read_npy_f32(&tau).expect("npy");
        assert_eq!(shape, vec![200, 240, 3]);
        let mut lum: Vec<f32> = values.chunks(3).map(|p| p[0] + p[1] + p[2]).collect();
        lum.sort_by(f32::total_cmp);
        let at = |q: f64| lum[((lum.len() - 1) as f64 * q) as usize];
        assert!(at(0.5) > 0.0, "the box fills the view");
        assert!(
            at(0.999) > 20.0 * at(0.5),
            "knots {} vs median {}",
            at(0.999),
            at(0.5)
        );
        let image = image::open(&png).expect("decode png").to_rgb8();
        assert_eq!(image.dimensions(), (240, 200));
    }
    assert!(outputs[0] == outputs[1], "same bytes twice");
}

#[test]
fn explicit_brightness_scales_tau_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gas = shared_data(GAS);
    let tau_at = |extra: &[&str], name: &str| {
        let tau = dir.path().join(name);
        let png = dir.path().join(format!("{name}.png"));
        let mut args = vec![
            path_str(&gas),
            "--out",
            path_str(&png),
            "--tau-out",
            path_str(&tau),
            "--width",
            "64",
            "--height",
            "48",
            "--json",
        ];
        args.extend_from_slice(extra);
        let report = json_of(&run(&args));
        (report, read_npy_f32(&tau).expect("npy").1)
    };
    let (auto, tau_auto) = tau_at(&[], "auto.npy");
    let (explicit, tau_two) = tau_at(&["--brightness", "2"], "two.npy");
    assert_eq!(auto["tau_includes_brightness"], false);
    assert_eq!(explicit["brightness_mode"], "explicit");
    assert_eq!(explicit["brightness"], 2.0);
    // Doubling is exact in floating point: τ(B = 2) = 2·τ(before exposure).
    assert!(tau_auto.iter().any(|v| *v > 0.0));
    for (one, two) in tau_auto.iter().zip(&tau_two) {
        assert_eq!(*two, 2.0 * one);
    }
}

#[test]
fn tipsy_dark_matter_gets_knn_smoothing_lengths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = shared_data("snapshots/lambs.00200_subsamp_30K");
    let png = dir.path().join("lambs.png");
    let report = json_of(&run(&[
        path_str(&file),
        "--out",
        path_str(&png),
        "--width",
        "200",
        "--height",
        "200",
        "--box",
        "1",
        "--palette",
        "ice",
        "--intensity",
        "mass",
        "--json",
    ]));
    assert_eq!(report["species"], serde_json::json!(["dark"]));
    assert_eq!(report["particles"], 30000);
    assert_eq!(report["active"], 30000);
    assert!(
        report["stages"]["smoothing"]
            .as_f64()
            .expect("smoothing time")
            > 0.0
    );
    let image = image::open(&png).expect("png").to_rgb8();
    let lit = image
        .pixels()
        .filter(|p| p.0.iter().any(|c| *c > 20))
        .count();
    assert!(lit > 200 * 200 / 4, "only {lit} lit pixels");
}

#[test]
fn several_species_with_per_species_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = shared_data("snapshots/run581.20000");
    let png = dir.path().join("galaxy.png");
    let report = json_of(&run(&[
        path_str(&file),
        "--out",
        path_str(&png),
        "--width",
        "96",
        "--height",
        "64",
        "--species",
        "dark,star",
        "--palette",
        "star=hot-gas",
        "--color",
        "star=tform",
        "--species-brightness",
        "dark=0.2",
        "--size-factor",
        "star=0.5",
        "--bits",
        "16",
        "--json",
    ]));
    assert_eq!(report["species"], serde_json::json!(["dark", "star"]));
    assert_eq!(report["particles"], 3627 + 5321);
    let image = image::open(&png).expect("png");
    assert_eq!(image.color(), image::ColorType::Rgb16);
}

#[test]
fn list_palettes_names_the_matplotlib_and_splotch_maps() {
    let output = run(&["--list-palettes"]);
    assert!(output.status.success());
    let names = String::from_utf8_lossy(&output.stdout);
    for name in [
        "viridis",
        "inferno",
        "magma",
        "plasma",
        "cividis",
        "twilight",
        "splotch-classic",
    ] {
        assert!(names.lines().any(|l| l == name), "{name} missing");
    }
}

#[test]
fn bad_input_is_one_error_line_with_exit_1_and_no_output_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gas = shared_data(GAS);
    let gas = path_str(&gas);
    let png = dir.path().join("out.png");
    let out = path_str(&png);
    let cases: [(&[&str], &str); 8] = [
        (
            &[gas, "--out", out, "--intensity", "NoSuchField"],
            "NoSuchField",
        ),
        (&[gas, "--out", out, "--species", "star"], "star"),
        (&[gas, "--out", out, "--species", "plasma"], "plasma"),
        (&[gas, "--out", out, "--width", "0"], "0x800"),
        (&[gas, "--out", out, "--camera", "nan,0,1"], "camera"),
        (&[gas, "--out", out, "--up", "0,0,1"], "parallel"),
        (&[gas, "--out", out, "--palette", "nope"], "nope"),
        (
            &[gas, "--out", "/nonexistent-folder/x.png"],
            "/nonexistent-folder/x.png",
        ),
    ];
    for (args, needle) in cases {
        let output = run(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
}
