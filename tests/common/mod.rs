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

/// Runs `polyc` with `args`, which must succeed (a failure shows its standard error); its
/// standard output.
// (not every test file runs commands that must succeed)
#[allow(dead_code)]
pub fn passing(args: &[&str]) -> String {
    let out = polyc(args);
    assert!(
        out.status.success(),
        "polyc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
