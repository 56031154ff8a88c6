//! `haloscope`: with no subcommand, the desktop application; with one, headless work.

use clap::Parser;
use std::process::ExitCode;

/// Large blocks on transparent huge pages (see `huge_pages`): fresh columns fault in 2 MiB at a
/// time rather than 4 KiB.
#[global_allocator]
static ALLOCATOR: haloscope::huge_pages::HugePagesForLargeBlocks =
    haloscope::huge_pages::HugePagesForLargeBlocks;

fn main() -> ExitCode {
    haloscope::app::startup_log::mark_process_start();
    let mut logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"));
    if std::env::var_os("HALOSCOPE_STARTUP_LOG").is_some() {
        // Start-up timing lines (app::startup_log) without the rest of the info logs.
        logger.filter_module(haloscope::app::startup_log::TARGET, log::LevelFilter::Info);
    }
    logger.init();
    // Usage errors exit 1, as every other error (README); clap's own exit would give 2.
    // --help and --version print to stdout and exit 0.
    let cli = match haloscope::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // Printing fails only when stdout/stderr is closed; nothing more to say then.
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if cli.command.is_some() {
        // Headless output is piped into other tools (`… --json | head`): end quietly when the
        // reader goes away, as Unix tools do, rather than panic in `println!`.
        restore_default_sigpipe();
    }
    match haloscope::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Under MPI every rank fails with the same agreed error; rank 0 alone prints it.
            let quiet = err
                .downcast_ref::<haloscope::cluster::Agreed>()
                .is_some_and(|agreed| agreed.quiet);
            if !quiet {
                eprintln!("error: {err:#}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Lets SIGPIPE end the process. Rust ignores it, so a write to a closed pipe fails and
/// `println!` panics ("failed printing to stdout: Broken pipe").
#[cfg(unix)]
fn restore_default_sigpipe() {
    // SAFETY: sets one signal's disposition to its default, at start-up, before this program
    // starts any thread of its own.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Windows has no SIGPIPE.
#[cfg(not(unix))]
fn restore_default_sigpipe() {}
