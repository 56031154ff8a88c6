//! Background workers over crossbeam channels, in the manner of brush's training loop.
//!
//! Two shapes of work:
//! - [`JobQueue`]: one-off jobs (load a file, run FoF, run trials), each on its own thread, each
//!   with an id, a version and a cancel token; they send [`JobEvent`]s (progress, done, failed,
//!   cancelled) and wake the UI after every message. The UI drains with [`JobQueue::drain`]
//!   (`try_recv`), never blocking.
//! - [`LatestWorker`]: one long-lived thread for work where only the newest request matters
//!   (viewport renders). Submitting cancels the request in flight; the worker skips requests that
//!   were superseded before it started them; results carry the request's version so the UI can
//!   drop stale ones ([`VersionGate`]).

use super::{CancelToken, Progress, ProgressUpdate};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Called after every message a worker sends, e.g. `move || ctx.request_repaint()`.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// A waker that does nothing (headless use and tests).
pub fn no_waker() -> Waker {
    Arc::new(|| {})
}

/// Progress messages are sent at most this often per job (the last one always goes through).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(25);

/// Identifies one job of a [`JobQueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

/// What a one-off job tells the UI.
#[derive(Debug)]
pub enum JobEvent<T> {
    /// The job reached a new point of a stage.
    Progress {
        /// Which job.
        id: JobId,
        /// Stage and counts.
        update: ProgressUpdate,
    },
    /// The job finished.
    Done {
        /// Which job.
        id: JobId,
        /// The version the job was started with.
        version: u64,
        /// What it produced.
        result: T,
    },
    /// The job failed; `error` is readable text (the error and its causes).
    Failed {
        /// Which job.
        id: JobId,
        /// The version the job was started with.
        version: u64,
        /// What went wrong.
        error: String,
    },
    /// The job stopped because it was cancelled.
    Cancelled {
        /// Which job.
        id: JobId,
    },
}

impl<T> JobEvent<T> {
    /// The job this event belongs to.
    pub fn id(&self) -> JobId {
        match self {
            Self::Progress { id, .. }
            | Self::Done { id, .. }
            | Self::Failed { id, .. }
            | Self::Cancelled { id } => *id,
        }
    }
}

/// The UI's handle on a running one-off job.
#[derive(Debug, Clone)]
pub struct JobHandle {
    /// Its id.
    pub id: JobId,
    /// The version it was started with.
    pub version: u64,
    /// What it is doing, for the UI ("loading test4.tbin").
    pub label: String,
    cancel: CancelToken,
}

impl JobHandle {
    /// Asks the job to stop at its next `progress.check()`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Whether cancellation was asked for.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// One-off jobs producing `T`, each on its own thread, reporting over one channel.
pub struct JobQueue<T> {
    sender: Sender<JobEvent<T>>,
    receiver: Receiver<JobEvent<T>>,
    waker: Waker,
    next_id: u64,
}

impl<T: Send + 'static> JobQueue<T> {
    /// An empty queue whose jobs call `waker` after each message.
    pub fn new(waker: Waker) -> Self {
        let (sender, receiver) = crossbeam_channel::unbounded();
        Self {
            sender,
            receiver,
            waker,
            next_id: 0,
        }
    }

    /// Starts `work` on a new thread. Its error (any `Display`) becomes [`JobEvent::Failed`]
    /// unless the job was cancelled; a panic inside it becomes a failure too, never a crash.
    pub fn spawn<E: std::fmt::Display>(
        &mut self,
        label: impl Into<String>,
        version: u64,
        work: impl FnOnce(&Progress) -> Result<T, E> + Send + 'static,
    ) -> JobHandle {
        self.next_id += 1;
        let id = JobId(self.next_id);
        let cancel = CancelToken::new();
        let progress = throttled_progress(id, self.sender.clone(), self.waker.clone(), &cancel);
        let sender = self.sender.clone();
        let waker = self.waker.clone();
        let label = label.into();
        let thread_name = format!("job {}: {label}", id.0);
        let body = move || {
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&progress)));
            let event = match outcome {
                _ if progress.is_cancelled() => JobEvent::Cancelled { id },
                Ok(Ok(result)) => JobEvent::Done {
                    id,
                    version,
                    result,
                },
                Ok(Err(err)) => JobEvent::Failed {
                    id,
                    version,
                    error: err.to_string(),
                },
                Err(panic) => JobEvent::Failed {
                    id,
                    version,
                    error: format!("internal error: {}", panic_text(panic.as_ref())),
                },
            };
            // The UI may have gone away (window closed): nothing left to tell.
            let _ = sender.send(event);
            waker();
        };
        match std::thread::Builder::new().name(thread_name).spawn(body) {
            Ok(thread) => keep_running(thread),
            Err(err) => {
                let _ = self.sender.send(JobEvent::Failed {
                    id,
                    version,
                    error: format!("could not start a worker thread: {err}"),
                });
            }
        }
        JobHandle {
            id,
            version,
            label,
            cancel,
        }
    }

    /// Every message sent since the last call, without waiting.
    pub fn drain(&self) -> Vec<JobEvent<T>> {
        self.receiver.try_iter().collect()
    }
}

/// A [`Progress`] that forwards reports as [`JobEvent::Progress`], at most one per
/// [`PROGRESS_INTERVAL`] except the final one of a stage, so a tight loop cannot flood the UI.
fn throttled_progress<T: Send + 'static>(
    id: JobId,
    sender: Sender<JobEvent<T>>,
    waker: Waker,
    cancel: &CancelToken,
) -> Progress {
    let last_sent: Mutex<Option<Instant>> = Mutex::new(None);
    Progress::new(
        move |update| {
            let finished = update.total > 0 && update.done >= update.total;
            let now = Instant::now();
            let due = match last_sent.lock() {
                Ok(mut last) => {
                    let due =
                        finished || last.is_none_or(|t| now.duration_since(t) >= PROGRESS_INTERVAL);
                    if due {
                        *last = Some(now);
                    }
                    due
                }
                Err(_) => true,
            };
            if due {
                let _ = sender.send(JobEvent::Progress {
                    id,
                    update: update.clone(),
                });
                waker();
            }
        },
        cancel.clone(),
    )
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a worker panicked".to_owned()
    }
}

/// A result of a [`LatestWorker`], tagged with the version of the request that made it.
#[derive(Debug)]
pub struct Versioned<T> {
    /// The request's version (increasing with every submission).
    pub version: u64,
    /// The result, or a readable error.
    pub outcome: Result<T, String>,
}

struct Request<Req> {
    version: u64,
    request: Req,
    cancel: CancelToken,
}

/// One long-lived worker thread where only the newest request matters.
pub struct LatestWorker<Req, Res> {
    requests: Option<Sender<Request<Req>>>,
    results: Receiver<Versioned<Res>>,
    in_flight: Vec<CancelToken>,
    next_version: u64,
}

/// Cancel tokens kept for [`LatestWorker::submit_after_current`] (older requests have finished
/// or were coalesced away; cancelling those does nothing).
const KEPT_TOKENS: usize = 8;

impl<Req: Send + 'static, Res: Send + 'static> LatestWorker<Req, Res> {
    /// Starts the worker thread named `name`, which runs `work` for each request it takes and
    /// calls `waker` after each result. A panic inside `work` becomes an error result.
    pub fn new(
        name: &str,
        waker: Waker,
        mut work: impl FnMut(Req, &Progress) -> Result<Res, String> + Send + 'static,
    ) -> Self {
        let (request_tx, request_rx) = crossbeam_channel::unbounded::<Request<Req>>();
        let (result_tx, result_rx) = crossbeam_channel::unbounded();
        let body = move || {
            // Blocking here is the worker's job; it ends when the UI drops its sender.
            while let Ok(first) = request_rx.recv() {
                // Coalesce: only the newest waiting request is worth doing.
                let mut newest = first;
                loop {
                    match request_rx.try_recv() {
                        Ok(next) => newest = next,
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => return,
                    }
                }
                if newest.cancel.is_cancelled() {
                    continue;
                }
                let progress = Progress::with_cancel(newest.cancel.clone());
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    work(newest.request, &progress)
                }))
                .unwrap_or_else(|panic| Err(format!("internal error: {}", panic_text(&*panic))));
                if progress.is_cancelled() {
                    continue;
                }
                if result_tx
                    .send(Versioned {
                        version: newest.version,
                        outcome,
                    })
                    .is_err()
                {
                    return;
                }
                waker();
            }
        };
        let requests = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(body)
            .ok()
            .map(|thread| {
                keep_running(thread);
                request_tx
            });
        Self {
            requests,
            results: result_rx,
            in_flight: Vec::new(),
            next_version: 0,
        }
    }

    /// Queues `request`, cancelling the one before it; returns its version, or `None` when the
    /// worker thread could not be started or has stopped.
    pub fn submit(&mut self, request: Req) -> Option<u64> {
        for previous in self.in_flight.drain(..) {
            previous.cancel();
        }
        self.enqueue(request)
    }

    /// Queues `request` without cancelling the one running: that one finishes and delivers its
    /// result, then the newest request waiting runs (those in between are coalesced away).
    /// For progressive previews, which would otherwise never finish during a long drag.
    pub fn submit_after_current(&mut self, request: Req) -> Option<u64> {
        if self.in_flight.len() >= KEPT_TOKENS {
            self.in_flight.remove(0);
        }
        self.enqueue(request)
    }

    fn enqueue(&mut self, request: Req) -> Option<u64> {
        self.next_version += 1;
        let cancel = CancelToken::new();
        let sent = self.requests.as_ref()?.send(Request {
            version: self.next_version,
            request,
            cancel: cancel.clone(),
        });
        if sent.is_err() {
            self.requests = None;
            return None;
        }
        self.in_flight.push(cancel);
        Some(self.next_version)
    }

    /// The newest result that arrived since the last call (older ones are dropped), without
    /// waiting.
    pub fn latest(&self) -> Option<Versioned<Res>> {
        self.results
            .try_iter()
            .reduce(|a, b| if b.version >= a.version { b } else { a })
    }

    /// Whether the worker thread is running.
    pub fn is_alive(&self) -> bool {
        self.requests.is_some()
    }
}

/// A dropped worker's requests can no longer deliver: they are cancelled, so that its thread
/// ends soon (dropping the sender ends its loop once the running request returns).
impl<Req, Res> Drop for LatestWorker<Req, Res> {
    fn drop(&mut self) {
        for request in &self.in_flight {
            request.cancel();
        }
    }
}

/// The threads of jobs and workers that may still be running, for [`wait_for_workers`].
static RUNNING: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());

/// Adds `thread` to [`RUNNING`], forgetting those that have finished.
fn keep_running(thread: std::thread::JoinHandle<()>) {
    let mut running = RUNNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    running.retain(|t| !t.is_finished());
    running.push(thread);
}

/// Waits up to `limit` for the threads of every job and worker started so far to end; the
/// number still running after it. The window calls it after it closes, so that no render or
/// count is still inside a GPU driver while the process exits and the driver cleans up.
/// Workers end once their owners are dropped; jobs end when they finish or notice their
/// cancellation.
pub fn wait_for_workers(limit: Duration) -> usize {
    let deadline = Instant::now() + limit;
    let running = std::mem::take(
        &mut *RUNNING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    while Instant::now() < deadline && running.iter().any(|t| !t.is_finished()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (finished, left): (Vec<_>, Vec<_>) = running.into_iter().partition(|t| t.is_finished());
    for thread in finished {
        // A panic inside a job or worker was already reported as its result.
        let _ = thread.join();
    }
    let still_running = left.len();
    RUNNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .extend(left);
    still_running
}

/// Remembers the version of what is shown and accepts only newer results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VersionGate {
    shown: u64,
}

impl VersionGate {
    /// Whether a result of `version` is newer than what is shown; if so it becomes the shown one.
    pub fn accept(&mut self, version: u64) -> bool {
        if version > self.shown {
            self.shown = version;
            true
        } else {
            false
        }
    }

    /// The version shown (0 before anything was accepted).
    pub fn shown(&self) -> u64 {
        self.shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Drains `queue` until `done` says so, with a deadline so a bug fails instead of hanging.
    fn drain_until<T: Send + 'static>(
        queue: &JobQueue<T>,
        mut done: impl FnMut(&JobEvent<T>) -> bool,
    ) -> Vec<JobEvent<T>> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut events = Vec::new();
        while Instant::now() < deadline {
            for event in queue.drain() {
                let finished = done(&event);
                events.push(event);
                if finished {
                    return events;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("job did not finish within 10 s");
    }

    #[test]
    fn job_reports_progress_then_done_and_wakes_the_ui() {
        let wakes = Arc::new(AtomicUsize::new(0));
        let counter = wakes.clone();
        let mut queue = JobQueue::new(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        let handle = queue.spawn("sum", 7, |progress| {
            progress.report("adding", 0, 2);
            progress.report("adding", 2, 2);
            Ok::<u32, String>(40 + 2)
        });
        let events = drain_until(&queue, |e| matches!(e, JobEvent::Done { .. }));
        let progress: Vec<(u64, u64)> = events
            .iter()
            .filter_map(|e| match e {
                JobEvent::Progress { update, .. } => Some((update.done, update.total)),
                _ => None,
            })
            .collect();
        // The first report and the stage's final report always go through the throttle.
        assert_eq!(progress, vec![(0, 2), (2, 2)]);
        let Some(JobEvent::Done {
            id,
            version,
            result,
        }) = events.last()
        else {
            panic!("last event is not Done: {events:?}");
        };
        assert_eq!((*id, *version, *result), (handle.id, 7, 42));
        assert_eq!(wakes.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn failure_and_panic_become_readable_messages() {
        let mut queue = JobQueue::<u8>::new(no_waker());
        queue.spawn("bad", 1, |_| Err("test4.tbin: truncated at byte 32"));
        let events = drain_until(&queue, |e| matches!(e, JobEvent::Failed { .. }));
        assert!(matches!(events.last(), Some(JobEvent::Failed { error, .. })
            if error == "test4.tbin: truncated at byte 32"));

        queue.spawn("worse", 2, |_| -> Result<u8, String> {
            panic!("index out of range")
        });
        let events = drain_until(&queue, |e| matches!(e, JobEvent::Failed { .. }));
        assert!(
            matches!(events.last(), Some(JobEvent::Failed { error, version: 2, .. })
            if error == "internal error: index out of range")
        );
    }

    #[test]
    fn cancelled_job_reports_cancelled_not_failed() {
        let mut queue = JobQueue::<u8>::new(no_waker());
        let (started_tx, started_rx) = crossbeam_channel::bounded(1);
        let handle = queue.spawn("long", 1, move |progress| {
            let _ = started_tx.send(());
            while progress.check().is_ok() {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err("cancelled")
        });
        started_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("job did not start");
        handle.cancel();
        let events = drain_until(&queue, |e| !matches!(e, JobEvent::Progress { .. }));
        assert!(matches!(events.last(), Some(JobEvent::Cancelled { id }) if *id == handle.id));
    }

    #[test]
    fn latest_worker_cancels_superseded_requests_and_keeps_the_newest() {
        let (gate_tx, gate_rx) = crossbeam_channel::unbounded::<()>();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut worker = LatestWorker::new("test", no_waker(), move |req: u32, progress| {
            sink.lock().map_err(|e| e.to_string())?.push(req);
            if req == 1 {
                // Hold the first request until the test has queued more, then notice the cancel.
                let _ = gate_rx.recv_timeout(Duration::from_secs(10));
                progress.check().map_err(|e| e.to_string())?;
            }
            Ok(req * 10)
        });
        assert_eq!(worker.submit(1), Some(1));
        // Wait until request 1 is running.
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.lock().map(|s| s.is_empty()).unwrap_or(true) {
            assert!(Instant::now() < deadline, "worker never started");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(worker.submit(2), Some(2));
        assert_eq!(worker.submit(3), Some(3));
        gate_tx.send(()).expect("worker gone");
        let deadline = Instant::now() + Duration::from_secs(10);
        let result = loop {
            if let Some(result) = worker.latest() {
                break result;
            }
            assert!(Instant::now() < deadline, "no result");
            std::thread::sleep(Duration::from_millis(1));
        };
        // Request 1 was cancelled (no result), request 2 was coalesced away, 3 ran.
        assert_eq!(result.version, 3);
        assert_eq!(result.outcome, Ok(30));
        assert_eq!(*seen.lock().expect("poisoned"), vec![1, 3]);
    }

    #[test]
    fn submit_after_current_lets_the_running_request_finish() {
        let (gate_tx, gate_rx) = crossbeam_channel::unbounded::<()>();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut worker = LatestWorker::new("test", no_waker(), move |req: u32, progress| {
            sink.lock().map_err(|e| e.to_string())?.push(req);
            if req == 1 {
                let _ = gate_rx.recv_timeout(Duration::from_secs(10));
                progress.check().map_err(|e| e.to_string())?;
            }
            Ok(req * 10)
        });
        assert_eq!(worker.submit_after_current(1), Some(1));
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.lock().map(|s| s.is_empty()).unwrap_or(true) {
            assert!(Instant::now() < deadline, "worker never started");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(worker.submit_after_current(2), Some(2));
        assert_eq!(worker.submit_after_current(3), Some(3));
        gate_tx.send(()).expect("worker gone");
        let mut results = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while results.len() < 2 {
            results.extend(worker.results.try_iter().map(|r| (r.version, r.outcome)));
            assert!(Instant::now() < deadline, "no results");
            std::thread::sleep(Duration::from_millis(1));
        }
        // 1 finished (not cancelled), 2 was coalesced away, 3 ran after it.
        assert_eq!(results, vec![(1, Ok(10)), (3, Ok(30))]);
        assert_eq!(*seen.lock().expect("poisoned"), vec![1, 3]);
    }

    #[test]
    fn version_gate_drops_stale_results() {
        let mut gate = VersionGate::default();
        assert!(gate.accept(2));
        assert!(!gate.accept(1));
        assert!(!gate.accept(2));
        assert!(gate.accept(5));
        assert_eq!(gate.shown(), 5);
    }

    /// Dropping a worker cancels the request it is running, and its thread then ends: a work
    /// function that only returns once cancelled finishes, and `wait_for_workers` sees it end.
    #[test]
    fn a_dropped_worker_cancels_its_request_and_its_thread_ends() {
        let started = Arc::new(AtomicUsize::new(0));
        let ended = Arc::new(AtomicUsize::new(0));
        let mut worker = {
            let (started, ended) = (started.clone(), ended.clone());
            LatestWorker::new("until cancelled", no_waker(), move |(): (), progress| {
                started.fetch_add(1, Ordering::SeqCst);
                while !progress.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                ended.fetch_add(1, Ordering::SeqCst);
                Ok::<(), String>(())
            })
        };
        worker.submit(()).expect("submitted");
        let deadline = Instant::now() + Duration::from_secs(10);
        while started.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            started.load(Ordering::SeqCst),
            1,
            "the request never started"
        );
        drop(worker);
        wait_for_workers(Duration::from_secs(10));
        assert_eq!(
            ended.load(Ordering::SeqCst),
            1,
            "the request was not cancelled"
        );
    }
}
