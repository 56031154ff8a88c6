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
        Some(Command::Fof(args)) => fof::run(args),
        Some(Command::Twopoint(args)) => twopoint::run(args),
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

/// The end of a command run by several ranks: when any rank failed, the error is printed now,
/// while every rank still runs (rank 0 prints an agreed error, the others stay quiet), and the
/// ranks wait for each other before returning. `mpirun` ends the whole job at the first rank
/// that exits with an error, which could otherwise kill rank 0 before it printed the message.
fn end_ranks(group: &dyn Collective, result: anyhow::Result<()>) -> anyhow::Result<()> {
    if group.size() <= 1 || !group.any_failed(result.is_err()) {
        return result;
    }
    if let Err(err) = &result {
        let quiet = err
            .downcast_ref::<crate::cluster::Agreed>()
            .is_some_and(|agreed| agreed.quiet);
        if !quiet {
            eprintln!("error: {err:#}");
        }
    }
    group.barrier();
    Err(crate::cluster::Agreed {
        message: "printed".into(),
        quiet: true,
    }
    .into())
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
