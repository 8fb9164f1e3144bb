//! `polyc`: the command-line driver. Each subcommand lives in its own module under
//! `commands/`; this file only parses arguments and maps errors to exit codes.

mod commands;
mod error;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = commands::Cli::parse();
    match commands::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            ExitCode::from(err.exit_code())
        }
    }
}
