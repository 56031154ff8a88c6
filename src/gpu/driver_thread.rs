//! Work inside the CUDA driver (opening devices, starting a renderer) on a thread of its own,
//! begun while a snapshot loads and joined when the caller reaches it.

use std::thread::JoinHandle;

/// A thread doing driver work, or nothing when none was started.
pub struct DriverThread<T>(Option<JoinHandle<T>>);

impl<T: Send + 'static> DriverThread<T> {
    /// Runs `work` on a new thread when `start`; else holds nothing.
    pub fn spawn_if(start: bool, work: impl FnOnce() -> T + Send + 'static) -> Self {
        Self(start.then(|| std::thread::spawn(work)))
    }
}

impl<T> DriverThread<T> {
    /// The thread's result, `None` when none was started (or it was joined before). A panic on
    /// the thread goes on on the caller's thread.
    pub fn join(&mut self) -> Option<T> {
        self.0.take().map(|thread| {
            thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

impl<T> Drop for DriverThread<T> {
    /// A thread never joined (the load failed) is waited for, so that the process never exits
    /// while the thread is inside the driver.
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_thread_gives_its_result_once_and_an_unstarted_one_none() {
        let mut started = DriverThread::spawn_if(true, || 7);
        assert_eq!(started.join(), Some(7));
        assert_eq!(started.join(), None);
        let mut unstarted = DriverThread::spawn_if(false, || 7);
        assert_eq!(unstarted.join(), None);
    }

    #[test]
    fn a_thread_never_joined_has_finished_when_dropped() {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        drop(DriverThread::spawn_if(true, move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }));
        assert!(done.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn a_panic_on_the_thread_goes_on_on_the_callers() {
        let mut panicking = DriverThread::spawn_if(true, || -> u8 { panic!("inside the driver") });
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| panicking.join()));
        assert!(caught.is_err());
    }
}
