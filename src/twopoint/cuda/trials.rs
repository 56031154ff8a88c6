//! Scrambled trials on the GPU.
//!
//! [`run_trials_cuda`] has the shape of the CPU's `run_trials`: same seed/trial-range contract,
//! batches handed over in trial order, cancellation between launches, and counts equal to the
//! CPU's trial for trial.

use super::count::CudaPairCounter;
use super::count::DEFAULT_TRIALS_PER_LAUNCH;
use crate::gpu::GpuDevice;
use crate::jobs::Progress;
use crate::twopoint::spread::spread_trials;
use crate::twopoint::{Prepared, TrialBatch, TwoPointError};
use std::ops::Range;
use std::sync::Arc;

/// Runs trials `trials` on `device` in batches of `batch` and hands each batch to `on_batch` in
/// trial order. A batch larger than the counter's trials per launch takes several launches;
/// cancellation is checked before each launch, and `Err(Cancelled)` leaves the batches already
/// handed over valid.
pub fn run_trials_cuda(
    device: &GpuDevice,
    prepared: &Prepared,
    seed: u64,
    trials: Range<u64>,
    batch: usize,
    progress: &Progress,
    mut on_batch: impl FnMut(TrialBatch),
) -> Result<(), TwoPointError> {
    let batch = batch.max(1) as u64;
    let total = trials.end.saturating_sub(trials.start);
    progress.report("trials", 0, total);
    if total == 0 {
        return Ok(());
    }
    progress.check()?;
    let mut counter = CudaPairCounter::with_trials_per_launch(device, prepared, batch as usize)?;
    let per_launch = counter.trials_per_launch() as u64;
    let mut first = trials.start;
    while first < trials.end {
        let end = (first + batch).min(trials.end);
        let mut counts = Vec::with_capacity((end - first) as usize);
        let mut launch_first = first;
        while launch_first < end {
            progress.check()?;
            let launch_end = (launch_first + per_launch).min(end);
            counts.extend(counter.trials(seed, launch_first..launch_end)?);
            launch_first = launch_end;
        }
        on_batch(TrialBatch {
            first_trial: first,
            counts,
        });
        first = end;
        progress.report("trials", first - trials.start, total);
    }
    Ok(())
}

/// Counters per device once a run has enough trials: each on its own stream, so that the GPU
/// counts one counter's launch while the host finishes the other's.
const COUNTERS_PER_DEVICE: usize = 2;

/// [`run_trials_cuda`] on every device of `devices`: [`COUNTERS_PER_DEVICE`] counters per
/// device (one where the run is shorter than a few launches per counter), each on its own
/// thread and stream, chunks of trial indices handed out in order and the counts put back in
/// trial order ([`spread_trials`]), so every batch equals one counter's. One counter on one
/// device runs [`run_trials_cuda`] itself.
pub fn run_trials_cuda_devices(
    devices: &[Arc<GpuDevice>],
    prepared: &Prepared,
    seed: u64,
    trials: Range<u64>,
    batch: usize,
    progress: &Progress,
    on_batch: impl FnMut(TrialBatch),
) -> Result<(), TwoPointError> {
    let total = trials.end.saturating_sub(trials.start);
    let per_device = counters_per_device(total, devices.len(), batch);
    let workers = devices.len() * per_device;
    if workers <= 1 {
        let device = devices
            .first()
            .ok_or(TwoPointError::Gpu("no CUDA device".into()))?;
        return run_trials_cuda(device, prepared, seed, trials, batch, progress, on_batch);
    }
    // Each counter needs work: a batch larger than a counter's share is cut into shares.
    let chunk = (batch.max(1) as u64)
        .min(total.div_ceil(workers as u64))
        .max(1);
    let make_counter = |w: usize| {
        let device = &devices[w % devices.len()];
        // The driver context is per thread: bind this device's before any call.
        device.context().bind_to_thread()?;
        let mut counter = CudaPairCounter::on_own_stream(device, prepared, chunk as usize)?;
        let per_launch = counter.trials_per_launch() as u64;
        Ok(move |range: Range<u64>| {
            let mut counts = Vec::with_capacity((range.end - range.start) as usize);
            let mut first = range.start;
            while first < range.end {
                let end = (first + per_launch).min(range.end);
                counts.extend(counter.trials(seed, first..end)?);
                first = end;
            }
            Ok(counts)
        })
    };
    spread_trials(
        workers,
        make_counter,
        trials,
        chunk,
        batch,
        progress,
        on_batch,
    )
}

/// Counters per device for `total` trials on `devices` devices in batches of `batch`:
/// [`COUNTERS_PER_DEVICE`] when every counter gets at least two full launches, else one (a
/// counter costs an upload and its work space, too much for the window's first short batches).
fn counters_per_device(total: u64, devices: usize, batch: usize) -> usize {
    let launch = batch.clamp(1, DEFAULT_TRIALS_PER_LAUNCH) as u64;
    let counters = (devices * COUNTERS_PER_DEVICE) as u64;
    if total >= counters * 2 * launch {
        COUNTERS_PER_DEVICE
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_runs_keep_one_counter_per_device() {
        assert_eq!(counters_per_device(100_000, 1, 128), 2);
        assert_eq!(counters_per_device(512, 1, 128), 2);
        assert_eq!(counters_per_device(511, 1, 128), 1);
        assert_eq!(counters_per_device(1_000, 2, 128), 1);
        assert_eq!(counters_per_device(2, 1, 2), 1);
        assert_eq!(counters_per_device(8, 1, 2), 2);
    }
}
