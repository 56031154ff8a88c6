//! libFuzzer target: the command-line parser (clap `try_parse_from`) over arbitrary argument
//! vectors (the input split at NUL bytes, not necessarily UTF-8), then the movie options'
//! limits; must return, never panic or allocate what an option asks for (run with
//! `cargo +nightly fuzz run cli` from the project root).
#![no_main]

use clap::Parser;
use haloscope::cli::{Cli, Command};
use haloscope::movie::parse_path;
use libfuzzer_sys::fuzz_target;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

const PATH: &str = "[[keyframe]]\ntime_s = 0.0\nposition = [0.0, 0.0, 3.0]\n\
look_at = [0.0, 0.0, 0.0]\n\n[[keyframe]]\ntime_s = 2.0\nposition = [3.0, 0.0, 0.0]\n\
look_at = [0.0, 0.0, 0.0]\n";

fuzz_target!(|data: &[u8]| {
    let args = std::iter::once(OsString::from("haloscope"))
        .chain(data.split(|&b| b == 0).map(|a| OsString::from_vec(a.to_vec())));
    let Ok(cli) = Cli::try_parse_from(args) else {
        return;
    };
    if let Some(Command::Movie(args)) = cli.command {
        let path = parse_path(PATH, Path::new("fuzz.toml")).expect("the fixed path parses");
        if let Ok(plan) = haloscope::cli::movie::check_options(&args, &path) {
            assert!(plan.n_frames >= 1 && plan.n_frames <= haloscope::movie::frame_plan::MAX_FRAMES);
            assert!(plan.fps > 0.0 && plan.fps.is_finite());
        }
    }
});
