//! Errors agreed over the ranks: before each collective step every rank says whether it failed,
//! so a rank that cannot go on (an unreadable share, a bad option) ends every rank with its
//! error instead of leaving the others waiting in the next collective call.

use super::Collective;

/// The error that ended a job: the message of the lowest failing rank.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Agreed {
    /// The failing rank's message (prefixed with its rank when the job has several).
    pub message: String,
    /// Whether this rank should end without printing (every rank but 0 when several ranks
    /// run: rank 0 prints the one message).
    pub quiet: bool,
}

/// `result` on every rank when no rank failed; else every rank gets the lowest failing rank's
/// error (collective: every rank must call it at the same step).
pub fn agree<T, E: std::fmt::Display>(
    group: &dyn Collective,
    result: Result<T, E>,
) -> Result<T, Agreed> {
    let mine = match &result {
        Ok(_) => String::new(),
        Err(err) => format!("{err:#}"),
    };
    if !group.any_failed(result.is_err()) {
        // Every rank answered "not failed", so this rank's result is Ok.
        return result.map_err(|err| Agreed {
            message: err.to_string(),
            quiet: false,
        });
    }
    let messages = group.all_gather_bytes(mine.as_bytes());
    let (rank, text) = messages
        .iter()
        .enumerate()
        .find(|(_, m)| !m.is_empty())
        .map(|(rank, m)| (rank, String::from_utf8_lossy(m).into_owned()))
        .unwrap_or((0, "a rank failed".to_owned()));
    let message = if group.size() > 1 {
        format!("rank {rank} of {}: {text}", group.size())
    } else {
        text
    };
    Err(Agreed {
        message,
        quiet: group.size() > 1 && !group.is_root(),
    })
}
