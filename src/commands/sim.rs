//! `polyc sim`: run a `.npu` program on the simulated NPU.

use crate::error::CliError;

/// Arguments of `polyc sim`.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// The program (`.npu` assembly), or `-` for standard input.
    pub program: String,
}

/// Runs `polyc sim`.
pub fn run(_args: &SimArgs) -> Result<(), CliError> {
    Err(CliError::Internal("the NPU simulator is not built yet".into()))
}
