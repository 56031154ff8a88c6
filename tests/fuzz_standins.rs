//! Bounded stand-ins for the cargo-fuzz targets `cli` and `path_file` (fuzz/), run on every
//! `cargo test`: random argument vectors through the command-line parser and the movie option
//! limits, and damaged camera-path files through the parser, must return, never panic.

use clap::Parser;
use haloscope::cli::{Cli, Command};
use haloscope::movie::frame_plan::MAX_FRAMES;
use haloscope::movie::{FramePlan, parse_path};
use proptest::prelude::*;
use std::path::Path;

const DEMO_PATH: &str = include_str!("../assets/paths/demo-flythrough.toml");

/// Words the parser knows, and values that break limits.
const WORDS: &[&str] = &[
    "movie",
    "render",
    "twopoint",
    "fof",
    "info",
    "--demo",
    "--path",
    "--out",
    "--fps",
    "--frames",
    "--duration",
    "--width",
    "--height",
    "--mp4",
    "--trials",
    "--batch",
    "--knn",
    "--seed",
    "--bins",
    "0",
    "1",
    "-3",
    "NaN",
    "inf",
    "1e9",
    "1e300",
    "18446744073709551616",
    "1000000000000",
    "10000000000000",
    "16",
    "p.toml",
    "x",
    "",
];

fn args() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(WORDS).prop_map(str::to_owned),
            "[-=a-z0-9.]{0,12}",
        ],
        0..12,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_parser_and_the_movie_limits_never_panic(movie in any::<bool>(), words in args()) {
        let path = parse_path(DEMO_PATH, Path::new("demo.toml")).expect("demo path");
        // Half the vectors start as a complete movie command, so the limits are reached.
        let prefix = ["haloscope", "movie", "--demo", "10", "--path", "p.toml", "--out", "o"];
        let prefix = if movie { &prefix[..] } else { &prefix[..1] };
        let argv = prefix.iter().map(|w| (*w).to_owned()).chain(words);
        if let Ok(Cli {
            command: Some(Command::Movie(args)),
            ..
        }) = Cli::try_parse_from(argv)
            && let Ok(plan) = haloscope::cli::movie::check_options(&args, &path)
        {
            prop_assert!((1..=MAX_FRAMES).contains(&plan.n_frames));
            prop_assert!(plan.fps > 0.0 && plan.fps.is_finite());
        }
    }

    #[test]
    fn damaged_camera_paths_are_errors_or_usable_paths(
        cut in 0usize..DEMO_PATH.len(),
        insert in prop::sample::select(vec![
            "1e300", "-1e300", "nan", "inf", "0", "[", "]", "\"", "=", "\n[[keyframe]]\n", "",
        ]),
    ) {
        let mut text = DEMO_PATH.to_owned();
        let at = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        text.insert_str(at, insert);
        if let Ok(path) = parse_path(&text, Path::new("cam.toml")) {
            prop_assert!(path.duration_s().is_finite() && path.duration_s() > 0.0);
            if let Ok(plan) = FramePlan::try_real_time(&path, 30.0, 16, 16) {
                let last = path.sample(plan.time_of_frame(&path, plan.n_frames - 1));
                prop_assert!(last.pose.position.iter().all(|x| x.is_finite()));
            }
        }
    }
}
