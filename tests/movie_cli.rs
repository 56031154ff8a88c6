//! `haloscope movie` from the command line.

mod common;
mod movie_common;

use common::haloscope_bin;
use std::process::Command;

const DEMO_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/paths/demo-flythrough.toml"
);

#[test]
fn a_bad_path_file_is_one_error_line_naming_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("cam.toml");
    let text = std::fs::read_to_string(DEMO_PATH)
        .expect("demo path")
        .replace("time_s = 8.0", "time_s = 3.0");
    std::fs::write(&file, text).expect("write");
    let line = std::fs::read_to_string(&file)
        .expect("read")
        .lines()
        .position(|l| l == "time_s = 3.0")
        .expect("edited line")
        + 1;
    let output = Command::new(haloscope_bin())
        .args(["movie", "--demo", "100", "--path"])
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("frames"))
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected = format!(
        "error: {}:{line}: keyframe 3: time_s = 3 is not after the previous keyframe's 4\n",
        file.display()
    );
    assert_eq!(stderr, expected);
    assert!(output.stdout.is_empty());
    assert!(
        !dir.path().join("frames").exists(),
        "nothing is created for a bad path"
    );
}

#[test]
fn a_missing_path_file_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(haloscope_bin())
        .args([
            "movie",
            "--demo",
            "100",
            "--path",
            "/no/such/cam.toml",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: /no/such/cam.toml: "), "{stderr}");
}

#[test]
fn a_ten_frame_demo_movie_from_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let frames = dir.path().join("frames");
    let mp4 = dir.path().join("demo.mp4");
    let output = Command::new(haloscope_bin())
        .args([
            "movie", "--demo", "20000", "--path", DEMO_PATH, "--frames", "10",
        ])
        .args([
            "--width",
            "64",
            "--height",
            "48",
            "--backend",
            "cpu",
            "--json",
            "--out",
        ])
        .arg(&frames)
        .arg("--mp4")
        .arg(&mp4)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(report["frames"], 10);
    assert_eq!(report["rendered"], 10);
    assert_eq!(report["backend"], "cpu");
    for i in 0..10 {
        let png = image::open(frames.join(format!("frame_{i:05}.png"))).expect("png");
        assert_eq!((png.width(), png.height()), (64, 48));
    }
    let facts = movie_common::read_mp4(&std::fs::read(&mp4).expect("mp4"));
    assert_eq!(
        (facts.sample_count, facts.tkhd_size, facts.avc1_size),
        (10, (64, 48), (64, 48))
    );
}
