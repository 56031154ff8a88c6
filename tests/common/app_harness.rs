//! Helpers shared by the tests that drive the real app through egui_kittest.
//! Included with `#[path = "common/app_harness.rs"] mod app_harness;` by the app tests only.
#![allow(dead_code)]

use egui_kittest::Harness;
use haloscope::app::HaloscopeApp;
use std::time::{Duration, Instant};

/// How long a test waits for a worker (render, FoF, trials, movie) before failing.
pub const WORKER_TIMEOUT: Duration = Duration::from_secs(120);

/// The app, created on the harness's first frame.
pub fn app<'h>(harness: &'h Harness<'_, Option<HaloscopeApp>>) -> &'h HaloscopeApp {
    harness
        .state()
        .as_ref()
        .expect("app created on the first frame")
}

/// The app, mutably.
pub fn app_mut<'h>(harness: &'h mut Harness<'_, Option<HaloscopeApp>>) -> &'h mut HaloscopeApp {
    harness
        .state_mut()
        .as_mut()
        .expect("app created on the first frame")
}

/// Steps frames until `done` holds (workers run on their own threads), failing after
/// [`WORKER_TIMEOUT`].
pub fn step_until(
    harness: &mut Harness<'_, Option<HaloscopeApp>>,
    what: &str,
    done: impl Fn(&HaloscopeApp) -> bool,
) {
    let deadline = Instant::now() + WORKER_TIMEOUT;
    loop {
        harness.step();
        if done(app(harness)) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
