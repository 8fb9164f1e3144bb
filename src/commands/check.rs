//! `polyc check`: parse and check a kernel file.

use crate::error::CliError;

/// Arguments of `polyc check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The kernel file (`.pk`), or `-` for standard input.
    pub file: String,
}

/// Runs `polyc check`.
pub fn run(_args: &CheckArgs) -> Result<(), CliError> {
    Err(CliError::Internal("the front end is not built yet".into()))
}
