//! `haloscope`: with no subcommand, the desktop application; with one, headless work.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    haloscope::app::startup_log::mark_process_start();
    let mut logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"));
    if std::env::var_os("HALOSCOPE_STARTUP_LOG").is_some() {
        // Start-up timing lines (app::startup_log) without the rest of the info logs.
        logger.filter_module(haloscope::app::startup_log::TARGET, log::LevelFilter::Info);
    }
    logger.init();
    let cli = haloscope::cli::Cli::parse();
    match haloscope::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
