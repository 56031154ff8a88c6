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

/// Runs `haloscope ARGS...` and returns (exit code, stdout, stderr).
fn run_haloscope(args: &[&std::ffi::OsStr]) -> (Option<i32>, Vec<u8>, String) {
    let output = Command::new(haloscope_bin())
        .args(args)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), output.stdout, stderr)
}

fn os(text: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(text)
}

/// Style options shared with `haloscope render`, exercising fields, log, palette, per-species
/// factors, radii, tone and kNN smoothing lengths (the dark matter has none).
const STYLE: [&str; 15] = [
    "--species",
    "gas,dark",
    "--intensity",
    "gas=Density",
    "--log-intensity=gas",
    "--palette",
    "gas=viridis",
    "--size-factor",
    "dark=2",
    "--species-brightness",
    "dark=0.3",
    "--gamma",
    "0.8",
    "--min-radius=0.5",
    "--knn=16",
];

/// A two-keyframe path around the Gadget test box ([0, 50000)³).
const BOX_PATH: &str = "\
[[keyframe]]
time_s = 0.0
position = [25000.0, 25000.0, 130000.0]
look_at = [25000.0, 25000.0, 25000.0]
up = [0.0, 1.0, 0.0]
fov_deg = 45.0

[[keyframe]]
time_s = 2.0
position = [100000.0, 30000.0, 100000.0]
look_at = [25000.0, 25000.0, 25000.0]
fov_deg = 40.0
";

#[test]
fn style_options_reach_the_frames_as_they_reach_a_render() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = common::shared_data("snapshots/g2_lcdm_gas_snapshot_004.hdf5");
    let path_file = dir.path().join("box.toml");
    std::fs::write(&path_file, BOX_PATH).expect("write path");
    let frames = dir.path().join("frames");
    let mut args: Vec<&std::ffi::OsStr> = vec![os("movie"), snapshot.as_os_str()];
    args.extend([
        os("--path"),
        path_file.as_os_str(),
        os("--out"),
        frames.as_os_str(),
    ]);
    args.extend(
        [
            "--frames",
            "3",
            "--width",
            "80",
            "--height",
            "60",
            "--backend",
            "cpu",
            "--json",
        ]
        .map(os),
    );
    args.extend(STYLE.map(os));
    let (code, stdout, stderr) = run_haloscope(&args);
    assert_eq!(code, Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&stdout).expect("JSON");
    assert_eq!(report["species"], serde_json::json!(["gas", "dark"]));

    // The same style rendered once from the first keyframe's camera at the brightness the
    // movie fixed from it: frame 0 has the same pixels. (The movie's frames put that brightness
    // inside τ, as an explicit --brightness does; an auto-exposed render applies it after, which
    // may round one 8-bit level differently here and there.)
    let brightness = report["brightness"]
        .as_f64()
        .expect("brightness")
        .to_string();
    let render_png = dir.path().join("render.png");
    let mut args: Vec<&std::ffi::OsStr> = vec![os("render"), snapshot.as_os_str()];
    args.extend([os("--out"), render_png.as_os_str()]);
    args.extend(
        [
            "--width",
            "80",
            "--height",
            "60",
            "--backend",
            "cpu",
            "--camera",
            "25000,25000,130000",
            "--lookat",
            "25000,25000,25000",
            "--up",
            "0,1,0",
            "--fov",
            "45",
        ]
        .map(os),
    );
    args.extend(STYLE.map(os));
    args.extend([os("--brightness"), os(&brightness)]);
    let (code, _, stderr) = run_haloscope(&args);
    assert_eq!(code, Some(0), "{stderr}");
    let frame0 = image::open(frames.join("frame_00000.png"))
        .expect("frame")
        .into_rgb8();
    let rendered = image::open(&render_png).expect("render").into_rgb8();
    assert!(rendered.as_raw().iter().any(|&v| v > 0), "black render");
    assert_eq!(
        frame0, rendered,
        "frame 0 differs from the render of its camera"
    );
    let frame2 = image::open(frames.join("frame_00002.png"))
        .expect("frame")
        .into_rgb8();
    assert_ne!(frame0, frame2, "the camera did not move");
}

#[test]
fn backend_choice_is_reported_or_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let movie = |backend: &str, out: &str| {
        let out = dir.path().join(out);
        let mut args: Vec<&std::ffi::OsStr> = [
            "movie",
            "--demo",
            "2000",
            "--path",
            DEMO_PATH,
            "--frames",
            "2",
            "--width",
            "32",
            "--height",
            "24",
            "--json",
            "--backend",
            backend,
            "--out",
        ]
        .map(os)
        .to_vec();
        args.push(out.as_os_str());
        run_haloscope(&args)
    };
    let (code, stdout, stderr) = movie("cpu", "cpu");
    assert_eq!(code, Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&stdout).expect("JSON");
    assert_eq!(report["backend"], "cpu");
    assert_eq!(report["fallback_reason"], serde_json::Value::Null);
    assert_eq!(report["resident"], false);
    if haloscope::gpu::cuda_available().is_ok() {
        return; // the GPU side is tests/movie_cuda.rs
    }
    let (code, stdout, stderr) = movie("auto", "auto");
    assert_eq!(code, Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&stdout).expect("JSON");
    assert_eq!(report["backend"], "cpu");
    let reason = report["fallback_reason"]
        .as_str()
        .expect("a fallback reason");
    assert!(reason.starts_with("no CUDA device ("), "{reason}");
    let (code, stdout, stderr) = movie("cuda", "cuda");
    assert_eq!(code, Some(1));
    assert!(stdout.is_empty());
    assert!(
        stderr.starts_with("error: demo snapshot: CUDA: ") && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert!(
        !dir.path().join("cuda").exists(),
        "nothing is made without the back-end"
    );
}

#[test]
fn a_rerun_renders_only_the_missing_frames() {
    let dir = tempfile::tempdir().expect("tempdir");
    let frames = dir.path().join("frames");
    let movie = || {
        let mut args: Vec<&std::ffi::OsStr> = [
            "movie",
            "--demo",
            "5000",
            "--path",
            DEMO_PATH,
            "--frames",
            "4",
            "--width",
            "40",
            "--height",
            "30",
            "--backend",
            "cpu",
            "--json",
            "--out",
        ]
        .map(os)
        .to_vec();
        args.push(frames.as_os_str());
        let (code, stdout, stderr) = run_haloscope(&args);
        assert_eq!(code, Some(0), "{stderr}");
        serde_json::from_slice::<serde_json::Value>(&stdout).expect("JSON")
    };
    let first = movie();
    assert_eq!(
        (first["rendered"].clone(), first["skipped"].clone()),
        (4.into(), 0.into())
    );
    let frame2 = frames.join("frame_00002.png");
    let before = std::fs::read(&frame2).expect("frame 2");
    std::fs::remove_file(&frame2).expect("remove frame 2");
    let second = movie();
    assert_eq!(
        (second["rendered"].clone(), second["skipped"].clone()),
        (1.into(), 3.into())
    );
    // The exposure is fixed from frame 0 in both runs, so the frame comes back identical.
    assert_eq!(std::fs::read(&frame2).expect("frame 2 again"), before);
}
