//! Data-driven CLI tests: each `cli/NAME.cmd` holds the arguments of one `polyc` run (one per
//! line, paths relative to the repository root); `cli/NAME.out` beside it holds the expected
//! exit code, standard output and standard error. `UPDATE_EXPECT=1 cargo test` rewrites them.

use std::path::Path;
use std::process::Command;

#[test]
fn cli_golden() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmds: Vec<_> = std::fs::read_dir(root.join("tests/cli"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cmd"))
        .collect();
    cmds.sort();
    assert!(!cmds.is_empty());
    for cmd in cmds {
        let args: Vec<String> = std::fs::read_to_string(&cmd)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_polyc"))
            .args(&args)
            .current_dir(root)
            .output()
            .unwrap();
        let actual = format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout),
            strip_timing(&String::from_utf8_lossy(&out.stderr)),
        );
        expect_test::expect_file![cmd.with_extension("out")].assert_eq(&actual);
    }
}

/// Drops lines that report elapsed time, which varies from run to run.
fn strip_timing(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains(" s") || !l.contains("instances in"))
        .map(|l| format!("{l}\n"))
        .collect()
}
