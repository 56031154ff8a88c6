//! Every usage error exits 1, as the README promises (clap's parse errors included), with
//! clap's message on stderr; --help and --version still exit 0.

mod common;

use common::haloscope_bin;
use std::process::{Command, Output};

fn haloscope(args: &[&str]) -> Output {
    Command::new(haloscope_bin())
        .args(args)
        .output()
        .expect("run haloscope")
}

fn assert_usage_error(args: &[&str], expected: &str) {
    let output = haloscope(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(output.stdout.is_empty(), "{args:?}");
}

#[test]
fn parse_errors_exit_1_with_clap_message() {
    assert_usage_error(
        &["twopoint", "--trials=-1", "events.csv"],
        "invalid value '-1' for '--trials <TRIALS>'",
    );
    assert_usage_error(
        &["twopoint", "--seed", "18446744073709551616", "events.csv"],
        "invalid value '18446744073709551616' for '--seed <SEED>'",
    );
    assert_usage_error(&["render", "--no-such-option"], "unexpected argument");
    assert_usage_error(&["frobnicate", "x", "--y"], "unexpected argument");
}

#[test]
fn an_empty_output_path_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = dir.path().join("snap");
    std::fs::write(&snapshot, b"not read").expect("write");
    let snapshot = snapshot.to_str().expect("utf-8 temp dir");
    assert_usage_error(&["render", snapshot, "--out", ""], "--out");
    assert_usage_error(
        &["render", snapshot, "--out", "x.png", "--tau-out", ""],
        "--tau-out",
    );
    assert_usage_error(&["fof", snapshot, "--out", ""], "--out");
    assert_usage_error(
        &["movie", "--demo", "10", "--path", snapshot, "--out", ""],
        "--out",
    );
}

#[test]
fn help_and_version_exit_0_on_stdout() {
    for args in [&["--help"][..], &["--version"], &["render", "--help"]] {
        let output = haloscope(args);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        assert!(!output.stdout.is_empty(), "{args:?}");
    }
}
