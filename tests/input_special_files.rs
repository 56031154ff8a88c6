//! Inputs that are not regular files (a FIFO here) are refused up front with one clear error,
//! never read (which would block forever); paths that are not UTF-8 never panic, and the JSON
//! holds them lossily and says so.

mod common;

use common::{haloscope_bin, shared_data};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const DEMO_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/paths/demo-flythrough.toml"
);

/// Runs haloscope with `args`; a run still going after 30 s is killed and fails the test (a
/// hang must fail, not stall CI).
fn run_with_timeout(args: &[&OsStr]) -> Output {
    let mut child = Command::new(haloscope_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start haloscope");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            child.kill().expect("kill");
            let _ = child.wait();
            panic!("haloscope {args:?} hung for 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let status = Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
    path
}

/// Asserts exit code 1 and the one error line saying the FIFO is a named pipe.
fn assert_fifo_refused(output: &Output, fifo: &Path, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
    let expected = format!("{}: is a named pipe (FIFO)", fifo.display());
    assert!(
        stderr.starts_with("error: ") && stderr.contains(&expected),
        "{what}: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
}

#[test]
fn a_fifo_as_snapshot_event_list_or_camera_path_is_refused_without_blocking() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pipe = fifo(dir.path(), "pipe");
    let out = dir.path().join("out.png");
    let frames = dir.path().join("frames");
    let cases: Vec<(&str, Vec<&OsStr>)> = vec![
        ("info", vec!["info".as_ref(), pipe.as_os_str()]),
        (
            "render",
            vec![
                "render".as_ref(),
                pipe.as_os_str(),
                "--out".as_ref(),
                out.as_os_str(),
            ],
        ),
        ("fof", vec!["fof".as_ref(), pipe.as_os_str()]),
        (
            "twopoint",
            vec![
                "twopoint".as_ref(),
                "--trials".as_ref(),
                "1".as_ref(),
                pipe.as_os_str(),
            ],
        ),
        (
            "movie --path",
            vec![
                "movie".as_ref(),
                "--demo".as_ref(),
                "100".as_ref(),
                "--path".as_ref(),
                pipe.as_os_str(),
                "--out".as_ref(),
                frames.as_os_str(),
            ],
        ),
        (
            "movie FILE",
            vec![
                "movie".as_ref(),
                pipe.as_os_str(),
                "--path".as_ref(),
                DEMO_PATH.as_ref(),
                "--out".as_ref(),
                frames.as_os_str(),
            ],
        ),
    ];
    for (what, args) in cases {
        let output = run_with_timeout(&args);
        assert_fifo_refused(&output, &pipe, what);
    }
    assert!(!out.exists() && !frames.exists(), "nothing is written");
}

/// The library readers refuse a FIFO too (the window opens files through them).
#[test]
fn the_readers_refuse_a_fifo_before_opening_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pipe = fifo(dir.path(), "pipe");
    let progress = haloscope::jobs::Progress::none();
    let options = haloscope::data::LoadOptions::default();
    let expected = format!(
        "{}: is a named pipe (FIFO), not a snapshot or event list",
        pipe.display()
    );
    let err = haloscope::data::load_any(&pipe, &options, &progress).expect_err("FIFO");
    assert_eq!(err.to_string(), expected);
    let err = haloscope::data::load_snapshot(&pipe, &options, &progress).expect_err("FIFO");
    assert_eq!(err.to_string(), expected);
    let err = haloscope::data::events::read(&[pipe.as_path()], &progress).expect_err("FIFO");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: is a named pipe (FIFO), not a regular file",
            pipe.display()
        )
    );
    let err = haloscope::movie::load_path(&pipe).expect_err("FIFO");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: is a named pipe (FIFO), not a regular file",
            pipe.display()
        )
    );
}

/// A file name with a byte that is not UTF-8 (0xFF), as Linux allows.
fn non_utf8(dir: &Path, stem: &str, extension: &str) -> PathBuf {
    let mut name = OsString::from(stem);
    name.push(OsStr::from_bytes(b"\xff"));
    name.push(extension);
    dir.join(name)
}

fn json_of(output: &Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("is not UTF-8"), "a note says so: {stderr}");
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

#[test]
fn movie_with_non_utf8_path_out_and_mp4_reports_them_lossily() {
    let dir = tempfile::tempdir().expect("tempdir");
    let camera = non_utf8(dir.path(), "cam", ".toml");
    std::fs::copy(DEMO_PATH, &camera).expect("copy path");
    let frames = non_utf8(dir.path(), "frames", "");
    let mp4 = non_utf8(dir.path(), "movie", ".mp4");
    let output = run_with_timeout(&[
        "movie".as_ref(),
        "--demo".as_ref(),
        "500".as_ref(),
        "--path".as_ref(),
        camera.as_os_str(),
        "--out".as_ref(),
        frames.as_os_str(),
        "--mp4".as_ref(),
        mp4.as_os_str(),
        "--frames".as_ref(),
        "2".as_ref(),
        "--width".as_ref(),
        "16".as_ref(),
        "--height".as_ref(),
        "16".as_ref(),
        "--json".as_ref(),
    ]);
    let report = json_of(&output);
    assert_eq!(report["path_lossy"], true);
    assert_eq!(report["path"], camera.to_string_lossy().as_ref());
    assert_eq!(report["out"], frames.to_string_lossy().as_ref());
    assert_eq!(report["mp4"], mp4.to_string_lossy().as_ref());
    assert!(frames.join("frame_00001.png").exists() && mp4.exists());
}

#[test]
fn twopoint_json_with_a_non_utf8_event_file_reports_it_lossily() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(shared_data("events/IC40_exp.csv")).expect("events");
    let head: String = text.lines().take(400).flat_map(|l| [l, "\n"]).collect();
    let events = non_utf8(dir.path(), "events", ".csv");
    std::fs::write(&events, head).expect("write events");
    let output = run_with_timeout(&[
        "twopoint".as_ref(),
        "--trials".as_ref(),
        "1".as_ref(),
        "--json".as_ref(),
        events.as_os_str(),
    ]);
    let report = json_of(&output);
    assert_eq!(report["path_lossy"], true);
    assert_eq!(
        report["files"],
        serde_json::json!([events.to_string_lossy()])
    );
    assert_eq!(report["n_events"], 399);
}
