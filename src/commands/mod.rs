//! The subcommands of `polyc`, one module each.

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
    /// Simulate a program for the NPU (`.npu` assembly).
    Sim(sim::SimArgs),
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Sim(args) => sim::run(&args),
    }
}
