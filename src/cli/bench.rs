//! `haloscope bench …`: timed benchmarks whose numbers go into BENCHMARKS.md.

mod fof;
mod fof_cuda;
mod fof_domains;
mod gui;
mod load;
mod movie;
mod render;
mod render_file;
mod twopoint;
mod twopoint_cuda;

use clap::Subcommand;

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Snapshot loading speed and peak memory.
    Load(load::BenchLoadArgs),
    /// Render stages on synthetic and shared snapshots, or on a file with the user's style.
    Render(render::BenchRenderArgs),
    /// Friends-of-friends.
    Fof(fof::BenchFofArgs),
    /// Two-point pair counting and trials.
    Twopoint(twopoint::BenchTwopointArgs),
    /// Movie frames per second.
    Movie(movie::BenchMovieArgs),
    /// UI frame times of the application while renders, FoF and trials run.
    Gui(gui::BenchGuiArgs),
}

/// Runs one benchmark.
pub fn run(command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::Load(args) => load::run(args),
        BenchCommand::Render(args) => render::run(args),
        BenchCommand::Fof(args) => fof::run(args),
        BenchCommand::Twopoint(args) => twopoint::run(args),
        BenchCommand::Movie(args) => movie::run(args),
        BenchCommand::Gui(args) => gui::run(args),
    }
}
