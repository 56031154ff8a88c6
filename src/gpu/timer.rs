//! Stage timers for the `stage_seconds` the CUDA twins report: [`StageTimer`] measures wall
//! time and synchronises the stream at every stage end (the stage includes the device work queued
//! during it); [`EventTimer`] times queued kernels on the device with CUDA events, without
//! synchronising between stages (a wall clock would only see the queueing).

use super::GpuError;
use cudarc::driver::{CudaEvent, CudaStream, sys};
use std::rc::Rc;
use std::time::Instant;

/// Wall seconds per named stage; each stage ends with a synchronisation of the stream, so a
/// stage's time includes the device work queued during it.
pub struct StageTimer<'a> {
    stream: &'a CudaStream,
    start: Instant,
    stages: Vec<(&'static str, f64)>,
}

impl<'a> StageTimer<'a> {
    /// Starts timing the first stage now.
    pub fn new(stream: &'a CudaStream) -> Self {
        Self {
            stream,
            start: Instant::now(),
            stages: Vec::new(),
        }
    }

    /// Waits for the stream, closes the current stage as `name` and starts the next.
    pub fn stage(&mut self, name: &'static str) -> Result<(), GpuError> {
        self.stream.synchronize()?;
        let now = Instant::now();
        self.stages
            .push((name, now.duration_since(self.start).as_secs_f64()));
        self.start = now;
        Ok(())
    }

    /// The closed stages, in order: (name, seconds).
    pub fn into_stages(self) -> Vec<(&'static str, f64)> {
        self.stages
    }
}

/// An event recorded on a stream; shared, because one event often ends a stage and starts the
/// next.
pub type Mark = Rc<CudaEvent>;

/// (stage, start, end) event pairs, summed per stage name once the stream has finished.
#[derive(Default)]
pub struct EventTimer {
    marks: Vec<(&'static str, Mark, Mark)>,
}

impl std::fmt::Debug for EventTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventTimer")
            .field("stages", &self.marks.len())
            .finish_non_exhaustive()
    }
}

impl EventTimer {
    /// An empty timer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an event on `stream` now (after the work queued so far).
    pub fn mark(stream: &CudaStream) -> Result<Mark, GpuError> {
        Ok(Rc::new(stream.record_event(Some(
            sys::CUevent_flags::CU_EVENT_DEFAULT,
        ))?))
    }

    /// Counts the device time between `start` and `end` to `stage`.
    pub fn stage(&mut self, stage: &'static str, start: &Mark, end: &Mark) {
        self.marks.push((stage, start.clone(), end.clone()));
    }

    /// Milliseconds per stage, in order of first appearance; call after the events completed
    /// (e.g. after synchronising the stream).
    pub fn times(&self) -> Result<Vec<(&'static str, f64)>, GpuError> {
        let mut out: Vec<(&'static str, f64)> = Vec::new();
        for (stage, a, b) in &self.marks {
            let ms = f64::from(a.elapsed_ms(b)?);
            match out.iter_mut().find(|(s, _)| s == stage) {
                Some(entry) => entry.1 += ms,
                None => out.push((stage, ms)),
            }
        }
        Ok(out)
    }
}
