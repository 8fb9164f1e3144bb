//! `--rar` end to end: `polyc schedule --rar --fuse max` gives mvt Pluto's fused schedule
//! with the second product interchanged, and the other commands that schedule take the flag.

mod common;

use common::{passing, polyc};

const MVT: &str = "examples/polybench/mvt.pk";

/// The schedule `polyc schedule` prints for mvt under `--fuse max` with `extra` flags, the
/// scheduler's own (neither tiled nor made parallel).
fn mvt_schedule(extra: &[&str]) -> String {
    let mut args = vec!["schedule", MVT, "--scheduler", "pluto", "--fuse", "max"];
    args.extend(["--no-tile", "--no-parallel"]);
    args.extend(["--emit", "schedule"]);
    args.extend(extra);
    passing(&args)
}

#[test]
fn schedule_interchanges_mvt_second_product_under_rar() {
    let band =
        "[{ S0[i, j] -> [(i)]; S1[i, j] -> [(j)] }, { S0[i, j] -> [(j)]; S1[i, j] -> [(i)] }]";
    assert!(mvt_schedule(&["--rar"]).contains(band));
    assert!(!mvt_schedule(&[]).contains(band));
}

#[test]
fn scheduling_commands_take_rar() {
    for args in [
        vec!["compare", MVT, "--schedulers", "pluto", "--rar"],
        vec!["compile", MVT, "--rar"],
    ] {
        let out = polyc(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for command in ["bench", "run"] {
        let out = polyc(&[command, "--help"]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("--rar"),
            "{command}"
        );
    }
}

#[test]
fn emit_deps_lists_read_after_read_under_rar() {
    let with = passing(&["schedule", MVT, "--emit", "deps", "--rar"]);
    // `A[i, j]` and `A[j, i]`: the two products read every element of A, in either order.
    assert!(with.contains("RAR S0 -> S1  (no common loop)"), "{with}");
    assert!(with.contains("RAR S0 -> S0  loops (i, j)"), "{with}");
    let without = passing(&["schedule", MVT, "--emit", "deps"]);
    assert!(!without.contains("RAR"), "{without}");
}
