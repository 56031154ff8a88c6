//! Ctrl-C during a long command: the first SIGINT cancels the command's `Progress`, so the
//! library stops at its next check and its temporary files are dropped (removed), never renamed
//! into place; a second SIGINT ends the process at once (the first restores the default action).

use crate::jobs::CancelToken;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by the signal handler; read by the watcher thread (a handler may only do so much).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// How often the watcher looks at [`INTERRUPTED`].
const POLL: Duration = Duration::from_millis(50);

#[cfg(unix)]
extern "C" fn on_sigint(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
    // SAFETY: signal() is async-signal-safe (POSIX); it restores the default action so that a
    // second Ctrl-C ends the process.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// Cancels `token` on the first Ctrl-C (SIGINT) from now on.
#[cfg(unix)]
pub fn cancel_on_interrupt(token: CancelToken) {
    // SAFETY: installs a handler that only stores to an atomic and calls signal().
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    std::thread::spawn(move || {
        while !INTERRUPTED.load(Ordering::Relaxed) {
            std::thread::sleep(POLL);
        }
        token.cancel();
    });
}

/// Elsewhere Ctrl-C keeps its default action (the next run removes the temporaries).
#[cfg(not(unix))]
pub fn cancel_on_interrupt(_token: CancelToken) {}

/// Whether a Ctrl-C arrived since [`cancel_on_interrupt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
