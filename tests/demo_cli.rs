//! `polyc demo`, the main job of `make run`: every stage of the pipeline on the embedded gemm
//! at its default size must agree, the interpreter's run of the new order included (which
//! once exhausted isl's operation budget while enumerating the order's 266,240 instances).

mod common;

use common::polyc;

#[test]
fn the_demo_runs_every_stage_at_its_default_size() {
    let out = polyc(&["demo"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("== 6. interpreter: 266240 instances in the new order give bit-identical"),
        "{stdout}"
    );
    assert!(
        stdout.contains("== 7. generated C") || stdout.contains("== 7. no C compiler found"),
        "{stdout}"
    );
}
