//! libFuzzer target: the camera-path TOML parser on arbitrary bytes must return, never panic,
//! and a path it accepts must sample to finite poses across its whole length (run with
//! `cargo +nightly fuzz run path_file` from the project root).
#![no_main]

use haloscope::movie::{FramePlan, parse_path};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(path) = parse_path(text, Path::new("fuzz.toml")) {
        assert!(path.keyframes().len() >= 2);
        assert!(path.duration_s().is_finite() && path.duration_s() > 0.0);
        // The plan a movie would make at 30 frames/s either fits the limits or is refused.
        if let Ok(plan) = FramePlan::try_real_time(&path, 30.0, 16, 16) {
            for index in [0, plan.n_frames / 2, plan.n_frames - 1] {
                let sample = path.sample(plan.time_of_frame(&path, index));
                let _camera = sample.pose.to_render_camera();
            }
        }
    }
});
