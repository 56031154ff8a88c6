//! `haloscope bench render FILE`: the user's snapshot timed with render's own style options,
//! colour and grey, and a bad style option reported as `render` reports it.

mod common;

use common::{haloscope_bin, shared_data};
use std::process::Command;

const GAS: &str = "snapshots/g2_lcdm_gas_snapshot_004.hdf5";

/// Runs `bench render GAS --backend cpu` at 32x24 with `style`.
fn bench(style: &[&str]) -> std::process::Output {
    Command::new(haloscope_bin())
        .args(["bench", "render"])
        .arg(shared_data(GAS))
        .args(["--backend", "cpu", "--width", "32", "--height", "24"])
        .args(["--species", "gas", "--repeat", "1", "--json"])
        .args(style)
        .output()
        .expect("haloscope runs")
}

#[test]
fn times_the_first_and_resident_frames_as_styled_and_grey() {
    let output = bench(&[
        "--intensity",
        "Density",
        "--log-intensity",
        "--color",
        "Density",
        "--log-color",
        "--grey",
        "off,on",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object");
    let cases = report["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2, "{report}");
    let gas_particles = report["cases"][0]["particles"].as_u64().expect("particles");
    assert!(gas_particles > 0);
    for (case, grey) in cases.iter().zip(["off", "on"]) {
        assert_eq!(case["case"], "file");
        assert_eq!(case["grey"], grey);
        assert_eq!(case["width"], 32);
        assert_eq!(case["particles"].as_u64(), Some(gas_particles));
        let result = &case["result"];
        assert_eq!(result["backend"], "cpu");
        for key in ["first_s", "frame_s"] {
            let seconds = result[key].as_f64().expect(key);
            assert!(seconds > 0.0 && seconds < 60.0, "{key} = {seconds}");
        }
        let counts = &result["counts"];
        let classes: u64 = ["inactive", "small", "medium", "large"]
            .iter()
            .map(|k| counts[*k].as_u64().expect("count"))
            .sum();
        assert_eq!(classes, gas_particles, "{counts}");
        assert!(
            result["first_stages_ms"]
                .as_array()
                .is_some_and(|s| !s.is_empty())
        );
    }
    assert!(stderr.contains("[as styled] first frame"), "{stderr}");
    assert!(stderr.contains("[grey] first frame"), "{stderr}");
}

#[test]
fn a_misspelt_field_is_one_error_naming_it() {
    let output = bench(&["--intensity", "Densty"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Densty"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty());
}
