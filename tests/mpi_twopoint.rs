#![cfg(feature = "mpi")]
//! `mpirun -n K haloscope twopoint … --json` (K = 1..4, CPU back-end) prints the same JSON as
//! one process, wall times aside, byte for byte: the ranks split the trials by index and rank 0
//! merges their counts. Input that no rank can read ends every rank with exit code 1, no hang.

mod common;

use common::{haloscope_bin, shared_data};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Longest a run may take before the test calls it a hang.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A subset of IC86-2011 (the upgoing list, 69,227 events) keeps four ranks on two cores fast.
fn events() -> std::path::PathBuf {
    shared_data("events/IC86-2011/upgoing_events.txt")
}

/// `haloscope ARGS`, under `mpirun -n ranks` when `ranks` is given; killed after [`TIMEOUT`].
fn haloscope(ranks: Option<usize>, args: &[&std::ffi::OsStr]) -> Output {
    let mut command = match ranks {
        Some(n) => {
            let mut mpirun = Command::new("mpirun");
            mpirun
                .args(["--oversubscribe", "--allow-run-as-root", "-n"])
                .arg(n.to_string())
                .arg(haloscope_bin());
            mpirun
        }
        None => Command::new(haloscope_bin()),
    };
    let mut child = command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start haloscope (is mpirun installed? scripts/setup.sh)");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            panic!("{ranks:?} ranks: no answer within {TIMEOUT:?} (a hang)");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// The `--json` of a CPU run of 13 trials, minus its wall times.
fn twopoint_json(ranks: Option<usize>) -> String {
    let events = events();
    let args: Vec<&std::ffi::OsStr> = [
        "twopoint",
        "--backend",
        "cpu",
        "--trials",
        "13",
        "--seed",
        "11",
        "--first-trial",
        "4",
        "--json",
    ]
    .iter()
    .map(std::ffi::OsStr::new)
    .chain([events.as_os_str()])
    .collect();
    let out = haloscope(ranks, &args);
    assert!(
        out.status.success(),
        "{ranks:?} ranks: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{ranks:?} ranks: one JSON line, from rank 0: {text}"
    );
    let mut json: serde_json::Value = serde_json::from_str(lines[0]).expect("json");
    let object = json.as_object_mut().expect("object");
    for wall in ["seconds", "stage_seconds", "seconds_per_trial"] {
        assert!(object.remove(wall).is_some(), "no {wall}");
    }
    assert_eq!(object["trials"], 13);
    serde_json::to_string(&json).expect("json")
}

#[test]
fn every_rank_count_gives_one_process_json() {
    let one = twopoint_json(None);
    for ranks in 1..=4 {
        assert_eq!(twopoint_json(Some(ranks)), one, "{ranks} ranks");
    }
}

#[test]
fn unreadable_input_ends_every_rank_with_exit_code_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("events.txt");
    std::fs::write(&bad, "not an event list\n1 2 3\n").expect("write");
    let args = [
        std::ffi::OsStr::new("twopoint"),
        std::ffi::OsStr::new("--backend"),
        std::ffi::OsStr::new("cpu"),
        bad.as_os_str(),
    ];
    let out = haloscope(Some(3), &args);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("events.txt"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Every rank fails alike; rank 0 prints the one line for the job.
    assert_eq!(stderr.matches("error: ").count(), 1, "{stderr}");
    assert!(stderr.contains("rank 0 of 3"), "{stderr}");
    assert!(out.stdout.is_empty());
}
