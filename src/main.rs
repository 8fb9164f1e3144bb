//! `polyc`: the command-line driver. Each subcommand lives in its own module under
//! `commands/`; this file only parses arguments and maps errors to exit codes.

mod commands;
mod error;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = match commands::Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print to standard output and succeed; a usage error is
        // the user's (exit 1, as the README's table says), not polyc's own (exit 2).
        Err(usage) => {
            let _ = usage.print();
            return ExitCode::from(u8::from(usage.use_stderr()));
        }
    };
    match commands::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            ExitCode::from(err.exit_code())
        }
    }
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`polyc ... | head`) would panic;
/// restoring the default makes polyc end quietly there, like other command-line tools.
fn restore_default_sigpipe() {
    // SAFETY: called first thing in `main`, before any thread exists or any output is written.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
