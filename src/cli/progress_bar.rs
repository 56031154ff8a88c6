//! Terminal progress bars for library jobs.

use crate::jobs::{CancelToken, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Mutex;

/// A [`Progress`] that draws an indicatif bar on stderr (hidden when stderr is not a terminal).
pub fn terminal_progress() -> Progress {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let stage = Mutex::new(String::new());
    Progress::new(
        move |update| {
            if let Ok(mut current) = stage.lock()
                && *current != update.stage
            {
                *current = update.stage.clone();
                bar.set_message(update.stage.clone());
            }
            bar.set_length(update.total);
            bar.set_position(update.done);
            if update.total > 0 && update.done >= update.total {
                bar.finish_and_clear();
            }
        },
        CancelToken::new(),
    )
}
