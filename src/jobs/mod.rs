//! Progress reporting and cancellation shared by every long-running library call.
//!
//! Library code never prints: it reports through a [`Progress`] handle, which the CLI turns into
//! a terminal progress bar and the GUI into messages on a crossbeam channel.

pub mod worker;

pub use worker::{
    JobEvent, JobHandle, JobId, JobQueue, LatestWorker, VersionGate, Versioned, Waker,
    wait_for_workers,
};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The error returned when the user cancelled a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled")]
pub struct Cancelled;

/// A shared flag that asks a running job to stop at its next check.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every holder of this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether cancellation was asked for.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// One progress report: which stage, and how far through it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// Short name of the stage ("reading", "linking", "trials", ...).
    pub stage: String,
    /// Units of work done in this stage.
    pub done: u64,
    /// Units of work in this stage (0 when unknown).
    pub total: u64,
}

type ProgressCallback = dyn Fn(&ProgressUpdate) + Send + Sync;

/// Where a job reports progress and learns that it was cancelled. Cheap to clone.
#[derive(Clone, Default)]
pub struct Progress {
    callback: Option<Arc<ProgressCallback>>,
    cancel: CancelToken,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("has_callback", &self.callback.is_some())
            .field("cancelled", &self.cancel.is_cancelled())
            .finish()
    }
}

impl Progress {
    /// Reports nowhere and is never cancelled.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reports to `callback`; cancelled through `cancel`.
    pub fn new(
        callback: impl Fn(&ProgressUpdate) + Send + Sync + 'static,
        cancel: CancelToken,
    ) -> Self {
        Self {
            callback: Some(Arc::new(callback)),
            cancel,
        }
    }

    /// Never reports, but can be cancelled through `cancel`.
    pub fn with_cancel(cancel: CancelToken) -> Self {
        Self {
            callback: None,
            cancel,
        }
    }

    /// Reports that `done` of `total` units of `stage` are finished.
    pub fn report(&self, stage: &str, done: u64, total: u64) {
        if let Some(callback) = &self.callback {
            callback(&ProgressUpdate {
                stage: stage.to_owned(),
                done,
                total,
            });
        }
    }

    /// The cancellation token this handle watches.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// Whether the job should stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// `Err(Cancelled)` once cancellation was asked for; call between units of work.
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn reports_reach_the_callback_and_cancel_is_seen() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let token = CancelToken::new();
        let progress = Progress::new(
            move |u| sink.lock().expect("poisoned").push((u.done, u.total)),
            token.clone(),
        );
        progress.report("reading", 3, 10);
        assert_eq!(*seen.lock().expect("poisoned"), vec![(3, 10)]);
        assert_eq!(progress.check(), Ok(()));
        token.cancel();
        assert_eq!(progress.check(), Err(Cancelled));
    }
}
