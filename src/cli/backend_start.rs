//! Opening the CUDA devices on a thread while a snapshot loads. A driver context takes about a
//! third of a second (cuInit, then one context at a time), which a command would otherwise
//! spend after a load of seconds. [`BackendStart::finish`] gives the back-end that
//! [`Backend::resolve_on`] gives, on the caller's thread after its own checks, so that bad input
//! is still reported alone and any fallback warns there, as without the thread.

use crate::backend::{Backend, BackendChoice, BackendError, DeviceSelection};
use crate::gpu::{DriverThread, GpuDevice, GpuError};
use std::sync::Arc;

/// Devices being opened on a thread (only for a choice that may use CUDA).
pub struct BackendStart {
    choice: BackendChoice,
    /// The devices the thread opens.
    selection: DeviceSelection,
    opening: DriverThread<Result<Vec<Arc<GpuDevice>>, GpuError>>,
}

impl BackendStart {
    /// Starts opening `selection` when `choice` may use CUDA.
    pub fn spawn(choice: BackendChoice, selection: DeviceSelection) -> Self {
        Self::spawn_reserving(choice, selection, 0)
    }

    /// [`Self::spawn`], then `bytes` of device memory mapped into the opened devices' pools,
    /// split evenly between them ([`reserve_on`]), for a command whose device arrays will take
    /// about that much once the file is in.
    pub fn spawn_reserving(
        choice: BackendChoice,
        selection: DeviceSelection,
        bytes: usize,
    ) -> Self {
        let may_use_cuda = matches!(choice, BackendChoice::Cuda | BackendChoice::Auto);
        let opened = selection.clone();
        let opening = DriverThread::spawn_if(may_use_cuda, move || {
            let devices = opened.open()?;
            reserve_on(&devices, bytes);
            Ok(devices)
        });
        Self {
            choice,
            selection,
            opening,
        }
    }

    /// The back-end on `wanted`, as [`Backend::resolve_on`] gives it: the thread's devices when
    /// they are the ones wanted; else resolved here while the thread's stay open, so that a
    /// device already opened is not created a second time.
    pub fn finish(mut self, wanted: &DeviceSelection) -> Result<Backend, BackendError> {
        let opened = self.opening.join();
        self.resolve(opened, wanted)
    }

    /// [`Self::finish`] on the selection `choose` makes from the devices the thread opened
    /// (none when it opened none, or failed).
    pub fn finish_choosing(
        mut self,
        choose: impl FnOnce(&[Arc<GpuDevice>]) -> DeviceSelection,
    ) -> Result<Backend, BackendError> {
        let opened = self.opening.join();
        let wanted = match &opened {
            Some(Ok(devices)) => choose(devices),
            _ => choose(&[]),
        };
        self.resolve(opened, &wanted)
    }

    fn resolve(
        &self,
        opened: Option<Result<Vec<Arc<GpuDevice>>, GpuError>>,
        wanted: &DeviceSelection,
    ) -> Result<Backend, BackendError> {
        match opened {
            Some(Ok(devices)) if *wanted == self.selection => {
                Ok(Backend::cuda_devices(devices, self.choice))
            }
            Some(Err(err)) if self.choice == BackendChoice::Cuda && *wanted == self.selection => {
                Err(err.into())
            }
            Some(opened) => {
                let backend = Backend::resolve_on(self.choice, wanted);
                drop(opened);
                backend
            }
            None => Backend::resolve_on(self.choice, wanted),
        }
    }
}

/// Maps `bytes` of device memory into the pools of `devices` ([`crate::gpu::reserve_pool`]),
/// an even share on each, at once: the driver maps fresh memory at about 0.13 s per 30 GiB, time
/// that a command would otherwise spend in its first allocations after the load. A share is
/// cut to 90 % of what the device has free. Best effort: where a share cannot be mapped, the
/// allocations map their memory as they would have, and report any error then.
fn reserve_on(devices: &[Arc<GpuDevice>], bytes: usize) {
    if bytes == 0 || devices.is_empty() {
        return;
    }
    let share = bytes.div_ceil(devices.len());
    std::thread::scope(|scope| {
        for device in devices {
            scope.spawn(move || {
                if let Ok((free, _)) = device.memory() {
                    let _ = crate::gpu::reserve_pool(device.stream(), share.min(free / 10 * 9));
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a back-end became: its kind, devices and fallback, or the error's message.
    fn outcome(backend: Result<Backend, BackendError>) -> Result<String, String> {
        backend
            .map(|b| {
                format!(
                    "{:?} {} {:?}",
                    b.kind(),
                    b.devices().len(),
                    b.fallback_reason()
                )
            })
            .map_err(|err| err.to_string())
    }

    #[test]
    fn a_started_back_end_is_the_one_resolved_directly_for_every_choice_and_selection() {
        let selections = [DeviceSelection::First, DeviceSelection::All];
        for choice in [BackendChoice::Cpu, BackendChoice::Cuda, BackendChoice::Auto] {
            for opened in &selections {
                for wanted in &selections {
                    let started = BackendStart::spawn(choice, opened.clone()).finish(wanted);
                    let chosen = BackendStart::spawn(choice, opened.clone())
                        .finish_choosing(|_| wanted.clone());
                    let direct = outcome(Backend::resolve_on(choice, wanted));
                    let case = format!("{choice:?}, {opened:?} opened, {wanted:?} wanted");
                    assert_eq!(outcome(started), direct, "{case}");
                    assert_eq!(outcome(chosen), direct, "{case}, chosen");
                }
            }
        }
    }
}
