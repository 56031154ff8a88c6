//! Wall time per pipeline stage, for the `stage_seconds` that the CUDA twins report.

use super::GpuError;
use cudarc::driver::CudaStream;
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
