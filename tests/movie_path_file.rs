//! Camera path files: round trip, the shipped demo path, and errors that name the line.

mod movie_common;

use haloscope::movie::{
    CameraPath, Keyframe, PathFileError, RenderSettings, Timing, load_path, parse_path, save_path,
    to_toml_string,
};
use std::path::Path;

const GOOD: &str = r#"# a comment
constant_speed = true
ease_s = 0.5

[[keyframe]]
time_s = 0
position = [0.0, 0.0, 3.0]
look_at = [0.0, 0.0, 0.0]

[[keyframe]]
time_s = 2.5
position = [3.0, 0.0, 0.0]
look_at = [0.0, 0.1, 0.0]
up = [0.0, 0.0, 1.0]
fov_deg = 30.0
brightness = 1.5
"#;

fn parse(text: &str) -> Result<CameraPath, PathFileError> {
    parse_path(text, Path::new("cam.toml"))
}

#[test]
fn a_good_file_parses_with_defaults() {
    let path = parse(GOOD).expect("valid");
    assert!(path.timing().constant_speed);
    assert_eq!(path.timing().ease_s, 0.5);
    assert!(!path.orthographic());
    let keys = path.keyframes();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0].up, [0.0, 1.0, 0.0]);
    assert_eq!(keys[0].fov_deg, 45.0);
    assert_eq!(keys[0].settings.brightness, None);
    assert_eq!(keys[1].time_s, 2.5);
    assert_eq!(keys[1].up, [0.0, 0.0, 1.0]);
    assert_eq!(keys[1].fov_deg, 30.0);
    assert_eq!(keys[1].settings.brightness, Some(1.5));
}

#[test]
fn saving_and_loading_round_trips_exactly() {
    let keyframes = vec![
        Keyframe {
            time_s: 0.1,
            position: [1.0 / 3.0, -2.5e-7, 1e6],
            look_at: [0.0, 0.0, 0.0],
            up: [0.0, 1.0, 0.0],
            fov_deg: 44.4,
            settings: RenderSettings {
                brightness: Some(0.7),
            },
        },
        Keyframe::new(0.35, [1.0, 2.0, 3.0], [0.5, 0.5, 0.5]),
    ];
    let timing = Timing {
        constant_speed: false,
        ease_s: 0.25,
    };
    let path = CameraPath::new(keyframes.clone(), timing, true).expect("valid");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("path.toml");
    save_path(&path, &file).expect("save");
    movie_common::assert_usual_file_mode(&file);
    let loaded = load_path(&file).expect("load");
    assert_eq!(loaded.keyframes(), keyframes.as_slice());
    assert_eq!(loaded.timing(), timing);
    assert!(loaded.orthographic());
    assert_eq!(to_toml_string(&loaded), to_toml_string(&path));
}

#[test]
fn the_shipped_demo_path_loads() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/paths/demo-flythrough.toml"
    );
    let path = load_path(Path::new(file)).expect("demo path");
    assert_eq!(path.keyframes().len(), 4);
    assert_eq!(path.duration_s(), 12.0);
    assert_eq!(path.sample(12.0).settings.brightness, Some(2.0));
}

/// The error for `text`, checked to name the file and `line`, with `words` in its message.
fn expect_error(text: &str, line: usize, words: &[&str]) {
    let err = parse(text).expect_err("must be rejected");
    let message = err.to_string();
    assert_eq!(err.line(), Some(line), "wrong line in: {message}");
    assert!(
        message.starts_with(&format!("cam.toml:{line}: ")),
        "{message}"
    );
    for word in words {
        assert!(message.contains(word), "{message:?} lacks {word:?}");
    }
}

#[test]
fn a_missing_field_names_its_keyframe() {
    let text = GOOD.replace("look_at = [0.0, 0.1, 0.0]\n", "");
    // The second [[keyframe]] table starts on line 10.
    expect_error(&text, 10, &["missing field", "look_at"]);
}

#[test]
fn a_single_keyframe_is_rejected_at_its_line() {
    let text = GOOD
        .split("\n[[keyframe]]\ntime_s = 2.5")
        .next()
        .expect("split")
        .to_owned();
    expect_error(&text, 5, &["at least 2 keyframes", "found 1"]);
    expect_error("ease_s = 1.0\n", 1, &["at least 2 keyframes", "found 0"]);
}

#[test]
fn non_increasing_times_name_the_time_line() {
    let text = GOOD.replace("time_s = 2.5", "time_s = 0.0");
    expect_error(&text, 11, &["keyframe 2", "time_s", "not after"]);
}

#[test]
fn nan_and_infinity_name_their_line() {
    expect_error(
        &GOOD.replace("fov_deg = 30.0", "fov_deg = nan"),
        15,
        &["fov_deg", "not a finite number"],
    );
    expect_error(
        &GOOD.replace("position = [3.0, 0.0, 0.0]", "position = [3.0, inf, 0.0]"),
        12,
        &["position", "not a finite number"],
    );
    expect_error(
        &GOOD.replace("ease_s = 0.5", "ease_s = nan"),
        3,
        &["ease_s"],
    );
}

#[test]
fn bad_values_and_types_name_their_line() {
    expect_error(
        &GOOD.replace("position = [3.0, 0.0, 0.0]", "position = [3.0, 0.0]"),
        12,
        &["expected an array of length 3"],
    );
    expect_error(
        &GOOD.replace("fov_deg = 30.0", "fov_deg = \"wide\""),
        15,
        &["invalid type"],
    );
    expect_error(
        &GOOD.replace("fov_deg = 30.0", "fov_deg = 180.0"),
        15,
        &["fov_deg", "(0, 180)"],
    );
    expect_error(
        &GOOD.replace("look_at = [0.0, 0.1, 0.0]", "look_at = [3.0, 0.0, 0.0]"),
        13,
        &["look_at equals position"],
    );
    expect_error(
        &GOOD.replace(
            "up = [0.0, 0.0, 1.0]",
            "up = [-1.0, 0.0333333333333333, 0.0]",
        ),
        14,
        &["up", "parallel"],
    );
    expect_error(
        &GOOD.replace("brightness = 1.5", "brightnes = 1.5"),
        16,
        &["brightnes"],
    );
    expect_error(
        &GOOD.replace("ease_s = 0.5", "ease_s = 0.5\nease_s = 1"),
        4,
        &["duplicate"],
    );
    expect_error("[[keyframe]\n", 1, &[]);
}

#[test]
fn a_missing_file_names_the_file() {
    let err = load_path(Path::new("/nonexistent/cam.toml")).expect_err("missing");
    assert!(
        err.to_string().starts_with("/nonexistent/cam.toml: "),
        "{err}"
    );
    assert_eq!(err.line(), None);
}
