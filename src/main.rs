//! `polyc`: the command-line driver ([`polyc::main`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    polyc::main()
}
