//! `haloscope twopoint` end to end: JSON keys and values, errors with exit code 1.

mod common;

use common::{haloscope_bin, shared_data, shared_reference};
use std::process::Command;

#[test]
fn json_output_has_the_issue_keys_and_reference_counts() {
    let events = shared_data("events/IC40_exp.csv");
    let output = Command::new(haloscope_bin())
        .args(["twopoint", "--trials", "3", "--seed", "7", "--json"])
        .arg(&events)
        .output()
        .expect("run haloscope");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object");
    let text = std::fs::read_to_string(shared_reference("twopoint/ic40_reference.json"))
        .expect("reference");
    let reference: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(report["n_events"], reference["n_events"]);
    assert_eq!(report["bins_deg"], reference["bins_deg"]);
    assert_eq!(
        report["observed"]["counts"],
        reference["observed"]["counts"]
    );
    for cut in ["all", "top10", "top1", "top0.1"] {
        assert_eq!(
            report["energy_cuts"][cut]["n_pass"],
            reference["energy_cuts"][cut]["n_pass"]
        );
        for key in ["background_mean", "ts", "p_value", "significance_sigma"] {
            assert_eq!(
                report[key][cut].as_array().map(Vec::len),
                Some(20),
                "{key} {cut}"
            );
        }
    }
    assert_eq!(report["coordinate_grid_deg"], serde_json::Value::Null);
    assert_eq!(report["scramble"], "continuous");
    assert_eq!(report["bin_edges_on_grid_deg"], serde_json::json!([]));
    assert_eq!(report["trials"], 3);
    assert_eq!(report["backend"], "cpu");
    assert!(report["seconds"].as_f64().is_some());
    let post = report["post_trial_p"].as_f64().expect("post-trial p");
    assert!(post > 0.0 && post <= 1.0);
    // p = (trials ≥ observed + 1)/(trials + 1) takes values k/4 with 3 trials.
    let p = report["p_value"]["all"][0].as_f64().expect("p");
    assert!([0.25, 0.5, 0.75, 1.0].contains(&p), "{p}");
}

#[test]
fn errors_name_the_file_and_exit_1() {
    let events = shared_data("events/IC40_exp.csv");
    // Only on machines without CUDA can the CUDA back-end be refused.
    if haloscope::gpu::cuda_available().is_err() {
        let cuda = Command::new(haloscope_bin())
            .args(["twopoint", "--backend", "cuda"])
            .arg(&events)
            .output()
            .expect("run haloscope");
        assert_eq!(cuda.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&cuda.stderr).starts_with("error: --backend cuda"));
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "RA Dec logE\n10 95 3\n").expect("write");
    let output = Command::new(haloscope_bin())
        .args(["twopoint", "--trials", "0"])
        .arg(&bad)
        .output()
        .expect("run haloscope");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: ") && stderr.contains("bad.txt: line 2: column Dec"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
}

/// A list rounded to 0.5°: the JSON and the text say the grid, the scramble and the edges on it.
#[test]
fn grid_and_scramble_are_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("rounded.txt");
    let mut text = String::from("RA Dec logE\n");
    for i in 0..400u32 {
        let ra = f64::from((i * 37) % 720) * 0.5;
        let dec = f64::from((i * 11) % 120) * 0.5 - 30.0;
        text += &format!("{ra} {dec} {}\n", 2.0 + f64::from(i % 7) * 0.3);
    }
    std::fs::write(&file, text).expect("write");
    let run = |extra: &[&str]| {
        let output = Command::new(haloscope_bin())
            .args(["twopoint", "--trials", "2", "--bins", "4", "--cuts", "1"])
            .args(extra)
            .arg(&file)
            .output()
            .expect("run haloscope");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    };
    let report: serde_json::Value =
        serde_json::from_slice(&run(&["--json"]).stdout).expect("one JSON object");
    assert_eq!(report["coordinate_grid_deg"], 0.5);
    assert_eq!(report["scramble"], "grid");
    assert_eq!(
        report["bin_edges_on_grid_deg"],
        serde_json::json!([0.5, 1.0])
    );
    let report: serde_json::Value =
        serde_json::from_slice(&run(&["--json", "--scramble", "continuous"]).stdout)
            .expect("one JSON object");
    assert_eq!(report["coordinate_grid_deg"], 0.5);
    assert_eq!(report["scramble"], "continuous");
    let stderr = String::from_utf8(run(&[]).stderr).expect("utf-8");
    assert!(
        stderr.contains(
            "coordinates on a 0.5° grid: RA scrambled on the same grid (720 values), so that \
             trials share the data's ties\n\
             bin edges 0.5°, 1° are multiples of the 0.5° grid: pairs at exactly those \
             separations are counted as inside (≤)\n"
        ),
        "{stderr}"
    );
}

#[test]
fn json_and_text_give_one_significance_per_bin_and_the_cut_thresholds() {
    let events = shared_data("events/IC40_exp.csv");
    let run = |json: bool| {
        let mut command = Command::new(haloscope_bin());
        command.args([
            "twopoint",
            "--trials",
            "20",
            "--seed",
            "3",
            "--backend",
            "cpu",
        ]);
        if json {
            command.arg("--json");
        }
        let output = command.arg(&events).output().expect("run haloscope");
        assert!(output.status.success());
        output
    };
    let report: serde_json::Value = serde_json::from_slice(&run(true).stdout).expect("json");
    // IC40: k = ceil(f·N) of 36,900 events; events tying with the k-th pass as well.
    for (cut, k, n_events, ties) in [
        ("all", 36_900, 36_900, 0),
        ("top10", 3_690, 3_732, 42),
        ("top1", 369, 391, 22),
        ("top0.1", 37, 39, 2),
    ] {
        let entry = &report["energy_cuts"][cut];
        assert_eq!(entry["k"], k, "{cut}");
        assert_eq!(entry["n_events"], n_events, "{cut}");
        assert_eq!(entry["n_pass"], n_events, "{cut}");
        assert_eq!(entry["ties_at_threshold"], ties, "{cut}");
        assert_eq!(entry["threshold_log10_e"], entry["threshold"], "{cut}");
    }
    let (mut resolved, mut beyond) = (0, 0);
    for cut in ["all", "top10", "top1", "top0.1"] {
        for bin in 0..20 {
            let p = report["p_value"][cut][bin].as_f64().expect("p");
            let significance = &report["significance"][cut][bin];
            // p = (n ≥ observed + 1)/21: n = 0 means beyond all 20 trials, p < 1/21 a bound.
            if (p * 21.0).round() == 1.0 {
                beyond += 1;
                assert_eq!(significance["kind"], "beyond_all_trials");
                assert_eq!(significance["p_upper_bound"], 1.0 / 21.0);
                assert!(significance.get("p").is_none());
                if significance.get("fitted_p").is_some() {
                    assert_eq!(significance["fitted_is_extrapolation"], true);
                    assert_eq!(significance["fitted_p"], report["p_value_fit"][cut][bin]);
                }
            } else {
                resolved += 1;
                assert_eq!(significance["kind"], "resolved");
                assert_eq!(significance["p"], p);
                assert_eq!(
                    significance["sigma"],
                    report["significance_sigma"][cut][bin]
                );
                assert!(significance.get("fitted_p").is_none());
            }
        }
    }
    assert_eq!(resolved + beyond, 80);
    let post = &report["post_trial"];
    assert!(["resolved", "beyond_all_trials"].contains(&post["kind"].as_str().expect("kind")));

    let text = String::from_utf8(run(false).stderr).expect("utf-8");
    assert!(text.contains("top 10 %: E ≥ 10^5.84 GeV"), "{text}");
    assert!(
        text.contains("3,732 events (42 more than k = 3,690: ties at the threshold pass)"),
        "{text}"
    );
    assert!(text.contains("most significant bin: "), "{text}");
    // Every table row of a bin beyond all trials says so, with the bound.
    let rows_beyond = text
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains("beyond all 20 trials (p < 4.762e-2"))
        .count();
    assert_eq!(rows_beyond, beyond, "{text}");
}
