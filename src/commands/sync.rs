//! `polyc sync`: the flags a `.npu` program needs, placed from its dependences
//! (`codegen::npu::sync`): a program written without them (or with some) comes back
//! correct in the strict semantics, each placed flag with a note naming what it orders.

use super::sim::load;
use crate::error::CliError;
use codegen::npu::sync::{place_given, Refusal};
use std::path::PathBuf;

/// Arguments of `polyc sync`.
#[derive(clap::Args, Debug)]
pub struct SyncArgs {
    /// The program (`.npu` assembly), or `-` for standard input.
    pub program: String,
    /// A preset (ascend-like, ascend-like-halfgm, ub-only, mini) or a machine TOML file
    /// (its cores and flag ids).
    #[arg(long, default_value = "ascend-like")]
    pub machine: String,
    /// Write the synchronised program here instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Runs `polyc sync`.
pub fn run(args: &SyncArgs) -> Result<(), CliError> {
    let given = load(&args.program, &args.machine)?;
    let synced = place_given(given.program, &given.machine).map_err(|r| match r {
        Refusal::Given(d) => CliError::User(d.render(&given.name, &given.source)),
        Refusal::Internal(what) => CliError::Internal(what),
    })?;
    let text = npu_sim::print(&synced);
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| CliError::User(format!("{}: {e}", path.display()))),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
