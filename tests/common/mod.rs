//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The shared data folder (`../shared` beside the project, or `$HALOSCOPE_SHARED`).
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("HALOSCOPE_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    }
}

/// A file under `shared/data`; panics (failing the test) when it is missing, never skips.
pub fn shared_data(relative: &str) -> PathBuf {
    let path = shared_dir().join("data").join(relative);
    assert!(
        path.exists(),
        "shared data file missing: {}",
        path.display()
    );
    path
}

/// A file under `shared/reference`; panics (failing the test) when it is missing.
pub fn shared_reference(relative: &str) -> PathBuf {
    let path = shared_dir().join("reference").join(relative);
    assert!(
        path.exists(),
        "shared reference file missing: {}",
        path.display()
    );
    path
}

/// The release or debug `haloscope` binary built for these tests.
pub fn haloscope_bin() -> PathBuf {
    // A bundle on the GPU machine names its own binary: Cargo's path is this machine's.
    std::env::var_os("HALOSCOPE_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_haloscope")),
        PathBuf::from,
    )
}
