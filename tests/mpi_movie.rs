//! `mpirun -n K haloscope movie` (K = 1..3, CPU): the ranks split the frames on key-frame
//! segment boundaries, and every PNG and the MP4 are byte for byte one process's, from scratch
//! and when resuming; a bad camera path ends every rank with one error and exit code 1.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::haloscope_bin;
use mpi_common::{mpirun, solo};
use std::path::Path;

/// 130 frames: three key-frame segments of the MP4 (60, 60 and 10 frames).
const FRAMES: usize = 130;

fn demo_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/paths/demo-flythrough.toml")
        .to_str()
        .expect("UTF-8 path")
        .to_owned()
}

/// The movie's arguments, writing frames into `name/` and `name.mp4`.
fn args(path: &str, name: &str) -> Vec<String> {
    let frames = FRAMES.to_string();
    [
        "movie",
        "--demo",
        "3000",
        "--path",
        path,
        "--frames",
        &frames,
        "--width",
        "64",
        "--height",
        "48",
        "--backend",
        "cpu",
        "--json",
        "--out",
        name,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain(["--mp4".to_owned(), format!("{name}.mp4")])
    .collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The JSON report without its wall times and the paths that name the run.
fn report(stdout: &[u8]) -> serde_json::Value {
    let mut report: serde_json::Value = serde_json::from_slice(stdout).expect("one JSON object");
    let object = report.as_object_mut().expect("an object");
    for key in ["seconds", "render_seconds", "out", "mp4"] {
        assert!(object.remove(key).is_some(), "no {key}");
    }
    report
}

/// Every frame's bytes and the MP4's.
fn outputs(dir: &Path, name: &str) -> (Vec<Vec<u8>>, Vec<u8>) {
    let frames = (0..FRAMES)
        .map(|i| std::fs::read(dir.join(name).join(format!("frame_{i:05}.png"))).expect("frame"))
        .collect();
    let mp4 = std::fs::read(dir.join(format!("{name}.mp4"))).expect("mp4");
    (frames, mp4)
}

#[test]
fn frames_and_mp4_of_one_to_three_ranks_equal_one_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = demo_path();
    let one = solo(&haloscope_bin(), &refs(&args(&path, "one")), dir.path());
    assert!(
        one.status.success(),
        "one process: {}",
        String::from_utf8_lossy(&one.stderr)
    );
    let want_report = report(&one.stdout);
    assert_eq!(want_report["rendered"], FRAMES);
    let (want_frames, want_mp4) = outputs(dir.path(), "one");
    assert!(want_mp4.len() > 1000);
    for ranks in 1..=3 {
        let name = format!("k{ranks}");
        let out = mpirun(
            &haloscope_bin(),
            ranks,
            &refs(&args(&path, &name)),
            dir.path(),
        );
        assert!(
            out.status.success(),
            "{ranks} ranks: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(report(&out.stdout), want_report, "{ranks} ranks: report");
        let (frames, mp4) = outputs(dir.path(), &name);
        for (i, (got, want)) in frames.iter().zip(&want_frames).enumerate() {
            assert!(got == want, "{ranks} ranks: frame {i} differs");
        }
        assert!(mp4 == want_mp4, "{ranks} ranks: the MP4 differs");
    }

    // Resume: two frames and the MP4 gone; two ranks render those frames again, read the
    // others back for the MP4, and give the same bytes.
    for frame in [5, 100] {
        std::fs::remove_file(dir.path().join(format!("k3/frame_{frame:05}.png"))).expect("rm");
    }
    std::fs::remove_file(dir.path().join("k3.mp4")).expect("rm mp4");
    let out = mpirun(&haloscope_bin(), 2, &refs(&args(&path, "k3")), dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resumed = report(&out.stdout);
    assert_eq!(resumed["rendered"], 2);
    assert_eq!(resumed["skipped"], FRAMES - 2);
    let (frames, mp4) = outputs(dir.path(), "k3");
    assert!(frames == want_frames, "resumed frames differ");
    assert!(mp4 == want_mp4, "resumed MP4 differs");
}

#[test]
fn a_missing_camera_path_ends_every_rank_with_one_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "movie",
        "--demo",
        "100",
        "--path",
        "missing.toml",
        "--out",
        "frames",
    ];
    let out = mpirun(&haloscope_bin(), 2, &args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("error: ").count(), 1, "{stderr}");
    assert!(stderr.contains("missing.toml"), "{stderr}");
    assert!(!dir.path().join("frames").exists());
}
