//! Opening the CUDA devices on a thread while a snapshot loads. A driver context takes about a
//! third of a second (cuInit, then one context at a time), which a command would otherwise
//! spend after a load of seconds. [`BackendStart::finish`] gives the back-end that
//! [`Backend::resolve_on`] gives, on the caller's thread after its own checks, so that bad input
//! is still reported alone and any fallback warns there, as without the thread.

use crate::backend::{Backend, BackendChoice, BackendError, DeviceSelection};
use crate::gpu::{GpuDevice, GpuError};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Devices being opened on a thread (only for a choice that may use CUDA).
pub struct BackendStart {
    choice: BackendChoice,
    /// The devices the thread opens.
    selection: DeviceSelection,
    opening: Option<JoinHandle<Result<Vec<Arc<GpuDevice>>, GpuError>>>,
}

impl BackendStart {
    /// Starts opening `selection` when `choice` may use CUDA.
    pub fn spawn(choice: BackendChoice, selection: DeviceSelection) -> Self {
        let opening = matches!(choice, BackendChoice::Cuda | BackendChoice::Auto).then(|| {
            let selection = selection.clone();
            std::thread::spawn(move || selection.open())
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
        match self.opening.take().map(join) {
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

impl Drop for BackendStart {
    /// An unfinished start (the load failed) is waited for, so that the process never exits
    /// while the thread is inside the driver.
    fn drop(&mut self) {
        if let Some(thread) = self.opening.take() {
            let _ = thread.join();
        }
    }
}

/// The thread's result; its panic goes on on the caller's thread.
fn join<T>(thread: JoinHandle<T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
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
                    let direct = Backend::resolve_on(choice, wanted);
                    assert_eq!(
                        outcome(started),
                        outcome(direct),
                        "{choice:?}, {opened:?} opened, {wanted:?} wanted"
                    );
                }
            }
        }
    }
}
