//! Start-up timing: the time from the start of `main` to each step of the first start (window,
//! demo data made, first image on screen, first full-resolution image), logged once per step at
//! info level under the target [`TARGET`] (`RUST_LOG=haloscope::startup=info`, or set
//! `HALOSCOPE_STARTUP_LOG=1`, which `main` turns into that filter). Each line also gives the Unix
//! time in milliseconds, so a script that notes when it launched the process can add the time
//! spent before `main` (loading the binary).

use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The log target of the start-up lines.
pub const TARGET: &str = "haloscope::startup";

/// When `main` started (or the first step, if `main` did not mark it).
static START: OnceLock<Instant> = OnceLock::new();
/// Steps already logged (each is logged once).
static LOGGED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// Marks the start of the process; call first thing in `main`.
pub fn mark_process_start() {
    START.get_or_init(Instant::now);
}

/// Milliseconds since [`mark_process_start`].
pub fn elapsed_ms() -> f64 {
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

/// Logs `step` with the time since the start of the process, the first time it is reached.
/// Cheap after that (a short lock and a scan of a handful of names), so frames can call it.
pub fn step(step: &'static str) {
    if !log::log_enabled!(target: TARGET, log::Level::Info) {
        return;
    }
    let Ok(mut logged) = LOGGED.lock() else {
        return;
    };
    if logged.contains(&step) {
        return;
    }
    logged.push(step);
    let unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    log::info!(target: TARGET, "{:8.1} ms  (unix {unix_ms} ms)  {step}", elapsed_ms());
}

/// Logs `what` took `seconds` on a worker (e.g. making the demo data); logged every time.
pub fn duration(what: &str, seconds: f64) {
    log::info!(target: TARGET, "{:8.1} ms  {what} took {:.1} ms", elapsed_ms(), seconds * 1e3);
}
