//! Helpers shared by the end-to-end tests of the CLI.

use std::process::{Command, Output};

/// Runs the `polyc` binary with `args` from the project's root.
pub fn polyc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("polyc runs")
}
