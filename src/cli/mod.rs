//! Headless subcommands. Thin: each parses its arguments, calls the library and reports.

pub mod backend_start;
pub mod bench;
pub mod cluster_check;
pub mod devices_args;
pub mod fof;
mod fof_ranks;
pub mod info;
pub mod info_catalogue;
pub mod interrupt;
pub mod movie;
pub mod movie_preset;
pub mod progress_bar;
pub mod region_args;
pub mod render;
pub mod render_ranks;
pub mod style_args;
pub mod twopoint;

use crate::cluster::Collective;
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

/// Command line of `haloscope`.
#[derive(Debug, Parser)]
#[command(
    name = "haloscope",
    version,
    about = "Explore cosmological simulation snapshots and neutrino event lists"
)]
pub struct Cli {
    /// What to do; with none, the desktop application opens.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Snapshots or event lists to open in the application (the demo data when none).
    pub files: Vec<PathBuf>,
}

/// The headless subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Describe snapshots and event lists.
    Info(info::InfoArgs),
    /// Render a snapshot to PNG (Splotch model).
    Render(render::RenderArgs),
    /// Find friends-of-friends halos.
    Fof(fof::FofArgs),
    /// Two-point autocorrelation of event lists with scrambled trials.
    Twopoint(twopoint::TwopointArgs),
    /// Render a camera fly-through to PNG frames and MP4.
    Movie(movie::MovieArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Checks every collective of the process group (`mpirun -n K haloscope cluster-check`).
    #[command(hide = true)]
    ClusterCheck(cluster_check::ClusterCheckArgs),
}

/// Runs the command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        None => crate::app::run(cli.files),
        Some(Command::Info(args)) => info::run(args),
        Some(Command::Render(args)) => {
            let cluster = crate::cluster::Cluster::from_environment()?;
            match cluster.collective() {
                group if group.size() > 1 => end_ranks(group, render_ranks::run(args, group)),
                _ => render::run(args),
            }
        }
        Some(Command::Fof(args)) => {
            let cluster = crate::cluster::Cluster::from_environment()?;
            match cluster.collective() {
                group if group.size() > 1 => end_ranks(group, fof_ranks::run(args, group)),
                _ => fof::run(args),
            }
        }
        Some(Command::Twopoint(args)) => {
            let cluster = crate::cluster::Cluster::from_environment()?;
            end_ranks(
                cluster.collective(),
                twopoint::run(args, cluster.collective()),
            )
        }
        Some(Command::Movie(args)) => {
            let cluster = crate::cluster::Cluster::from_environment()?;
            end_ranks(cluster.collective(), movie::run(args, cluster.collective()))
        }
        Some(Command::Bench(command)) => bench::run(command),
        Some(Command::ClusterCheck(args)) => {
            let cluster = crate::cluster::Cluster::from_environment()?;
            cluster_check::run(cluster.collective(), &args)
        }
    }
}

/// The end of a command run by several ranks: when any rank failed, rank 0 prints one error
/// now, while every rank still runs, and the ranks wait for each other before returning
/// (`mpirun` ends the whole job at the first rank that exits with an error, which could
/// otherwise kill rank 0 before it printed the message). The error printed is the lowest
/// failing rank's own, named by its rank; ranks that only stopped because another failed say
/// nothing, and an error the ranks already agreed on (`cluster::agree`) is printed as it is.
fn end_ranks(group: &dyn Collective, result: anyhow::Result<()>) -> anyhow::Result<()> {
    if group.size() <= 1 || !group.any_failed(result.is_err()) {
        return result;
    }
    let mine = match &result {
        Ok(()) => RankError::None,
        Err(err) => RankError::of(err),
    };
    let all = group.all_gather_bytes(&mine.to_bytes());
    if group.is_root() {
        let errors: Vec<RankError> = all.iter().map(|b| RankError::from_bytes(b)).collect();
        eprintln!("error: {}", RankError::message(&errors, group.size()));
    }
    group.barrier();
    Err(crate::cluster::Agreed {
        message: "printed".into(),
        quiet: true,
    }
    .into())
}

/// What a rank's error says, for [`end_ranks`].
#[derive(Debug, Clone, PartialEq)]
enum RankError {
    /// No error, or one that only says another rank failed.
    None,
    /// An error every rank agreed on, already naming the rank it came from.
    Agreed(String),
    /// This rank's own error.
    Own(String),
}

impl RankError {
    fn of(err: &anyhow::Error) -> Self {
        if let Some(agreed) = err.downcast_ref::<crate::cluster::Agreed>() {
            return if agreed.quiet {
                Self::None
            } else {
                Self::Agreed(agreed.message.clone())
            };
        }
        let another_failed = err.chain().any(|e| {
            matches!(
                e.downcast_ref::<crate::halo::FofError>(),
                Some(crate::halo::FofError::OtherRankFailed(_))
            ) || matches!(
                e.downcast_ref::<crate::twopoint::TwoPointError>(),
                Some(crate::twopoint::TwoPointError::OtherRank)
            )
        });
        if another_failed {
            Self::None
        } else {
            Self::Own(format!("{err:#}"))
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        let (tag, text) = match self {
            Self::None => (b'N', ""),
            Self::Agreed(text) => (b'A', text.as_str()),
            Self::Own(text) => (b'O', text.as_str()),
        };
        std::iter::once(tag).chain(text.bytes()).collect()
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        let text = || String::from_utf8_lossy(&bytes[1..]).into_owned();
        match bytes.first() {
            Some(b'A') => Self::Agreed(text()),
            Some(b'O') => Self::Own(text()),
            _ => Self::None,
        }
    }

    /// The one line for the job: the lowest rank's own error, else an agreed one.
    fn message(errors: &[Self], ranks: usize) -> String {
        let own = errors.iter().enumerate().find_map(|(rank, e)| match e {
            Self::Own(text) => Some(format!("rank {rank} of {ranks}: {text}")),
            _ => None,
        });
        let agreed = || {
            errors.iter().find_map(|e| match e {
                Self::Agreed(text) => Some(text.clone()),
                _ => None,
            })
        };
        own.or_else(agreed)
            .unwrap_or_else(|| "a rank failed without an error message".to_owned())
    }
}

/// A path as a JSON string: lossy where it is not UTF-8 (U+FFFD for each bad sequence); see
/// [`with_lossy_note`].
pub fn json_path(path: &Path) -> serde_json::Value {
    path.to_string_lossy().into_owned().into()
}

/// Adds `"path_lossy": true` to a JSON report, and says so on stderr, when one of `paths` is
/// not UTF-8 and so is only approximately in the report ([`json_path`]).
pub fn with_lossy_note<'a>(
    mut report: serde_json::Value,
    paths: impl IntoIterator<Item = &'a Path>,
) -> serde_json::Value {
    let lossy: Vec<&Path> = paths
        .into_iter()
        .filter(|path| path.to_str().is_none())
        .collect();
    if !lossy.is_empty() {
        for path in &lossy {
            eprintln!(
                "note: {} is not UTF-8; the JSON holds it with U+FFFD for the bad bytes \
                 (\"path_lossy\": true)",
                path.display()
            );
        }
        if let Some(object) = report.as_object_mut() {
            object.insert("path_lossy".into(), true.into());
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jobs_error_is_the_lowest_ranks_own_else_the_agreed_one() {
        let own = |t: &str| RankError::Own(t.to_owned());
        let agreed = |t: &str| RankError::Agreed(t.to_owned());
        for e in [RankError::None, own("bad file"), agreed("rank 1 of 3: x")] {
            assert_eq!(RankError::from_bytes(&e.to_bytes()), e);
        }
        let errors = [RankError::None, own("first"), own("second")];
        assert_eq!(RankError::message(&errors, 3), "rank 1 of 3: first");
        let errors = [agreed("rank 2 of 3: x"), RankError::None, own("mine")];
        assert_eq!(RankError::message(&errors, 3), "rank 2 of 3: mine");
        let errors = [agreed("rank 2 of 3: x"), RankError::None, RankError::None];
        assert_eq!(RankError::message(&errors, 3), "rank 2 of 3: x");
        assert!(RankError::message(&[RankError::None], 1).contains("without"));
    }

    #[test]
    fn an_error_that_only_says_another_rank_failed_is_not_printed() {
        let err = anyhow::Error::from(crate::halo::FofError::OtherRankFailed("linking"))
            .context("snap.tbin");
        assert_eq!(RankError::of(&err), RankError::None);
        let err = anyhow::anyhow!("snap.tbin: bad header");
        assert_eq!(
            RankError::of(&err),
            RankError::Own("snap.tbin: bad header".into())
        );
        let quiet = crate::cluster::Agreed {
            message: "rank 1 of 2: x".into(),
            quiet: true,
        };
        assert_eq!(RankError::of(&quiet.into()), RankError::None);
    }
}
