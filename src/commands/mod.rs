//! The subcommands of `polyc`, one module each.

mod check;
mod sim;

use crate::error::CliError;
use clap::{Parser, Subcommand};

/// A polyhedral optimizing compiler for affine tensor kernels.
#[derive(Parser, Debug)]
#[command(name = "polyc", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse and check a kernel file; print its diagnostics.
    Check(check::CheckArgs),
    /// Simulate a program for the NPU (`.npu` assembly).
    Sim(sim::SimArgs),
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Sim(args) => sim::run(&args),
    }
}
