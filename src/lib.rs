//! `polyc` as a library: the command-line driver, so that a crate providing schedulers
//! (a plug-in) can run the whole CLI with them registered from its own one-line `main`
//! ([`main_with_schedulers`]; `docs/scheduling.md`, "Writing a scheduling heuristic").
//! Each subcommand lives in its own module under `commands/`; this file only parses
//! arguments and maps errors to exit codes.

mod commands;
mod error;

use clap::{Command, CommandFactory, FromArgMatches};
use scheduler::registry::{plugins, register, Factory};
use std::process::ExitCode;

/// Runs polyc on the process's arguments: what the `polyc` binary does.
pub fn main() -> ExitCode {
    restore_default_sigpipe();
    let parsed = with_plugins_in_help(commands::Cli::command())
        .try_get_matches()
        .and_then(|matches| commands::Cli::from_arg_matches(&matches));
    let cli = match parsed {
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

/// Registers the plug-in schedulers `schedulers` makes, then runs polyc as [`main`] does:
/// every command that takes a scheduler (`--scheduler NAME`, `compare`, `fuzz-schedules`)
/// sees them beside the built-in ones. A name already taken is an error (exit 1).
pub fn main_with_schedulers(schedulers: &[Factory]) -> ExitCode {
    for &factory in schedulers {
        if let Err(e) = register(factory) {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    }
    main()
}

/// The command line with the registered plug-ins named in the help of every option that
/// takes a scheduler (`--scheduler`, `--schedulers`).
fn with_plugins_in_help(command: Command) -> Command {
    let names: Vec<&str> = plugins().iter().map(|s| s.name()).collect();
    if names.is_empty() {
        return command;
    }
    let note = format!("Plug-ins: {}.", names.join(", "));
    let subcommands: Vec<String> = (command.get_subcommands())
        .map(|c| c.get_name().to_string())
        .collect();
    subcommands.iter().fold(command, |command, name| {
        command.mut_subcommand(name, |sub| {
            let ids: Vec<String> = (sub.get_arguments())
                .map(|a| a.get_id().to_string())
                .filter(|id| id == "scheduler" || id == "schedulers")
                .collect();
            ids.iter().fold(sub, |sub, id| {
                sub.mut_arg(id, |arg| {
                    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                    let long = arg
                        .get_long_help()
                        .map(|h| h.to_string())
                        .unwrap_or(help.clone());
                    // clap drops the last full stop of a one-sentence help.
                    let noted = |h: &str| format!("{}. {note}", h.trim_end_matches('.'));
                    arg.help(noted(&help)).long_help(noted(&long))
                })
            })
        })
    })
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`polyc ... | head`) would panic;
/// restoring the default makes polyc end quietly there, like other command-line tools.
fn restore_default_sigpipe() {
    // SAFETY: called first thing in `main`, before any thread exists or any output is written.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
