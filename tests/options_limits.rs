//! Options whose values would make the program allocate without bound, or that make no sense
//! (`--fps 0`, `--duration NaN`), exit 1 at once with one line naming the option and the rule.

mod common;

use common::haloscope_bin;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const DEMO_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/paths/demo-flythrough.toml"
);

/// Runs `haloscope args…`, asserting that it fails with exit code 1 within a few seconds and
/// prints exactly one `error:` line; returns that line.
fn refused(args: &[&str], out: &Path) -> String {
    let started = Instant::now();
    let output: Output = Command::new(haloscope_bin())
        .args(args)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{args:?} took {:?}",
        started.elapsed()
    );
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("FramePlan"), "no Debug dump: {stderr}");
    assert!(!out.exists(), "{args:?} created {}", out.display());
    stderr
}

fn movie(extra: &[&str], out: &Path) -> String {
    let out_s = out.to_str().expect("utf-8 temp path");
    let mut args = vec![
        "movie", "--demo", "1000", "--path", DEMO_PATH, "--out", out_s,
    ];
    args.extend_from_slice(extra);
    refused(&args, out)
}

#[test]
fn huge_or_meaningless_movie_options_name_the_option() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("frames");
    let mp4 = dir.path().join("x.mp4");
    let mp4 = mp4.to_str().expect("utf-8 temp path");
    let cases: [(&[&str], &str); 12] = [
        (&["--fps", "1e9"], "--fps: frame rate 1000000000 frames/s"),
        (&["--fps", "0"], "--fps: frame rate 0 frames/s"),
        (&["--fps", "NaN"], "--fps: frame rate NaN frames/s"),
        (&["--fps=-30"], "--fps: frame rate -30 frames/s"),
        (
            &["--frames", "1000000000000"],
            "--frames: 1000000000000 frames",
        ),
        (
            &["--frames", "0"],
            "--frames: 0 frames: a movie has 1 to 1000000 frames",
        ),
        (&["--duration", "0"], "--duration: duration 0 s must be"),
        (&["--duration", "NaN"], "--duration: duration NaN s must be"),
        (&["--duration=-3"], "--duration: duration -3 s must be"),
        (
            &["--duration", "1e12"],
            "--duration with --fps: 1000000000000 s at 30 frames/s",
        ),
        (&["--width", "0"], "--width/--height: frame size 0×1080"),
        (
            &["--width", "1", "--height", "1", "--mp4", mp4],
            "--mp4 with --width/--height: frame size 1×1: an H.264 MP4 needs at least 16",
        ),
    ];
    for (extra, expected) in cases {
        let line = movie(extra, &out);
        assert!(line.contains(expected), "{extra:?}: {line}");
    }
    let line = refused(
        &[
            "movie",
            "--demo",
            "10000000000000",
            "--path",
            DEMO_PATH,
            "--out",
        ]
        .into_iter()
        .chain([out.to_str().expect("utf-8")])
        .collect::<Vec<_>>(),
        &out,
    );
    assert!(
        line.contains("--demo 10000000000000: the demo snapshot has at most 100000000 particles"),
        "{line}"
    );
}

#[test]
fn a_path_of_1e300_seconds_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("long.toml");
    let text = std::fs::read_to_string(DEMO_PATH)
        .expect("demo path")
        .replace("time_s = 12.0", "time_s = 1e300");
    std::fs::write(&file, text).expect("write");
    let out = dir.path().join("frames");
    let line = refused(
        &[
            "movie",
            "--demo",
            "1000",
            "--path",
            file.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
            "--frames",
            "3",
        ],
        &out,
    );
    assert!(
        line.contains("keyframe 4: time_s = 1e300 is outside ±1000000 s"),
        "{line}"
    );
}

#[test]
fn trials_whose_counts_would_not_fit_are_refused_up_front() {
    let dir = tempfile::tempdir().expect("tempdir");
    let events = dir.path().join("events.txt");
    std::fs::write(
        &events,
        "RA Dec logE\n10 20 3\n10.5 20.2 3.1\n200 -40 2.5\n201 -41 4\n",
    )
    .expect("write");
    let json = dir.path().join("out.json");
    let events_s = events.to_str().expect("utf-8");
    let line = refused(
        &[
            "twopoint",
            events_s,
            "--backend",
            "cpu",
            "--trials",
            "10000000000",
            "--bins",
            "10",
        ],
        &json,
    );
    assert!(
        line.contains(
            "--trials: 10000000000 trials: storing 40 counts per trial (10 bins × 4 cuts) allows \
             at most 53687091 trials (8 GiB of trial counts)"
        ),
        "{line}"
    );
    let line = refused(
        &["twopoint", events_s, "--backend", "cpu", "--batch", "0"],
        &json,
    );
    assert!(
        line.contains("--batch 0: a batch has 1 to 1048576 trials"),
        "{line}"
    );
}

/// OpenH264 refuses pictures below 16 pixels a side; the limit the options check must be the
/// encoder's own.
#[test]
fn the_mp4_minimum_side_is_the_encoders() {
    use haloscope::movie::{Mp4Encoder, Mp4Settings};
    let dir = tempfile::tempdir().expect("tempdir");
    let encode = |side: u32| -> Result<(), String> {
        let path = dir.path().join(format!("m{side}.mp4"));
        let mut encoder = Mp4Encoder::create(&path, side, side, 30.0, &Mp4Settings::default())
            .map_err(|e| e.to_string())?;
        let frame = image::RgbImage::from_pixel(side, side, image::Rgb([200, 30, 90]));
        encoder.push_frame(&frame).map_err(|e| e.to_string())?;
        encoder.push_frame(&frame).map_err(|e| e.to_string())?;
        encoder.finish().map(|_| ()).map_err(|e| e.to_string())
    };
    assert_eq!(
        encode(haloscope::movie::frame_plan::MIN_MP4_SIDE_PX),
        Ok(())
    );
    assert!(encode(haloscope::movie::frame_plan::MIN_MP4_SIDE_PX - 2).is_err());
}
