//! `polyc check`: parse and check a kernel file, render its diagnostics.

use super::input::{compile, CArgs};
use crate::error::CliError;
use std::io::IsTerminal;

/// Arguments of `polyc check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The kernel file (`.pk`; a `.c` file: its `#pragma scop` regions), or `-` for
    /// standard input.
    pub file: String,
    /// Also print the checked, lowered IR of every kernel.
    #[arg(long)]
    pub ir: bool,
    #[command(flatten)]
    pub c: CArgs,
}

/// Runs `polyc check`: diagnostics go to stderr; exit 1 if there is any error.
pub fn run(args: &CheckArgs) -> Result<(), CliError> {
    let file = super::input::read_source(&args.file)
        .map_err(|message| CliError::User(message.trim_end().to_string()))?;
    match compile(&args.file, &file, &args.c)? {
        Ok(kernels) => {
            for k in &kernels {
                if args.ir {
                    println!("{k}");
                } else {
                    let n = k.statements().len();
                    let plural = if n == 1 { "" } else { "s" };
                    println!("{}: ok ({n} statement{plural})", k.name);
                }
            }
            Ok(())
        }
        Err(diags) => {
            let color = std::io::stderr().is_terminal();
            eprint!("{}", diags.render(&file, color));
            Err(CliError::User(diags.summary(&file)))
        }
    }
}
