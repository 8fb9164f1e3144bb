//! `polyc fuzz-schedules` end to end on one random program: every scheduler and setting,
//! executed by the interpreter and compiled to C, agrees with the original order.

mod common;

use common::{passing, polyc};

#[test]
fn one_random_program_agrees_under_every_schedule() {
    let stdout = passing(&[
        "fuzz-schedules",
        "--count",
        "1",
        "--seed",
        "1",
        "--compile",
        "--show",
    ]);
    assert!(stdout.contains("kernel fuzz1("), "{stdout}");
    assert!(
        stdout.contains(
            "20 schedules checked and compiled (8 distinct C programs built and run): 0 failing program(s)"
        ),
        "{stdout}"
    );
}

/// The fixed sample every run of the suite checks: 200 programs (seeds 0..200, the start of
/// the long runs' range), every scheduler and setting, interpreted and compiled to C. About
/// 600 s of CPU: the suite's largest test.
#[test]
fn two_hundred_random_programs_agree_under_every_schedule() {
    let stdout = passing(&[
        "fuzz-schedules",
        "--count",
        "200",
        "--seed",
        "0",
        "--compile",
    ]);
    assert!(
        stdout.starts_with("200 programs (seeds 0..200), "),
        "{stdout}"
    );
    assert!(stdout.contains(": 0 failing program(s)"), "{stdout}");
}

/// Programs checked on several threads are reported as on one: same text, same order.
#[test]
fn the_output_does_not_depend_on_the_number_of_threads() {
    let run = |jobs: &str| {
        let args = ["fuzz-schedules", "--count", "4", "--seed", "1", "--show"];
        passing(&[&args[..], &["--jobs", jobs]].concat())
    };
    let one = run("1");
    assert!(one.contains("kernel fuzz4("), "{one}");
    assert_eq!(one, run("3"));
}

/// The regression corpus: programs that once failed (shrunk by `--shrink`), each fixed since,
/// replayed under every scheduler and setting, interpreted and compiled.
#[test]
fn the_regression_corpus_passes() {
    let stdout = passing(&[
        "fuzz-schedules",
        "--replay",
        "tests/fuzz/regressions",
        "--compile",
    ]);
    assert!(stdout.contains(": 0 failing program(s)"), "{stdout}");
}

/// With `--npu`, each seed's affine kernel (as `f32`), tensor kernel, window reduction and
/// global pooling go through the NPU back end on two machines, and the tensor kernel with
/// long rows on `mini`: the affine ones are refused cleanly, the tensor kernels compile on
/// `ascend-like` and match the interpreter (seeds 100 and 101 do not fit `mini`; with long
/// rows, seed 100's does in column chunks of groups of one row, its per-row bf16 output kept
/// for the core's rows, where groups of 16 rows fitted no way; seed 101's does not), the
/// window reductions and global poolings compile on both and match it.
#[test]
fn random_tensor_kernels_match_the_interpreter_on_the_npu() {
    let stdout = passing(&["fuzz-schedules", "--count", "2", "--seed", "100", "--npu"]);
    assert!(
        stdout.contains("on the NPU 11 kernels compiled and matched, 7 refused"),
        "{stdout}"
    );
}

/// Seed 16532's tensor kernel squares an f16 row sum of 284 terms: most outputs overflow to
/// infinity, as the exact result rounded to f16 does, and at the edge of the range the
/// vector unit's more accurate sum overflows where the interpreter's sequential one (stuck
/// under half an ulp) does not. Judged against the exact result, the run passes.
#[test]
fn an_overflowing_f16_kernel_is_judged_against_the_exact_result() {
    let stdout = passing(&[
        "fuzz-schedules",
        "--count",
        "1",
        "--seed",
        "16532",
        "--npu-only",
    ]);
    // the tensor kernel on `ascend-like` (not on `mini`, nor with long rows), the seed's
    // window reduction on both machines, its global pooling (weighted, of arrays without
    // the images' dimension) on `ascend-like` (its weights, loaded whole, do not fit
    // `mini`'s UB)
    assert!(
        stdout.contains("on the NPU 4 kernels compiled and matched, 5 refused"),
        "{stdout}"
    );
}

/// Kernels on which isl's own scheduler gives up (`tests/fuzz/declined/`): every other
/// scheduler passes, and isl's five settings are counted as declined, not passed and not
/// failed.
#[test]
fn isl_declines_what_it_cannot_carry() {
    let stdout = passing(&["fuzz-schedules", "--replay", "tests/fuzz/declined"]);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/declined");
    let programs = std::fs::read_dir(dir).unwrap().count();
    assert!(programs > 0);
    assert!(
        stdout.contains(&format!(
            "{} schedules checked, {} declined by isl",
            15 * programs,
            5 * programs
        )),
        "{stdout}"
    );
}

/// The open failures (`tests/fuzz/open/`, each a shrunk program with its failure in its first
/// line, compiled to C as well) still fail, and the way their header says: when one starts to pass, it
/// belongs in the regression corpus, and this test says so.
#[test]
fn the_open_failures_still_fail_as_recorded() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/open");
    let open: Vec<_> = (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pk"))
        .collect();
    let out = polyc(&["fuzz-schedules", "--replay", "tests/fuzz/open", "--compile"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = if open.is_empty() { 0 } else { 2 };
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    for path in open {
        let text = std::fs::read_to_string(&path).unwrap();
        // "// Shrunk from progen's seed S: SCHEDULER / SETUP fails (FAULT)."
        let header = text.lines().next().unwrap();
        let (_, failure) = header.split_once(": ").unwrap();
        let (what, _) = failure.split_once(" fails").unwrap();
        let name = path.display().to_string();
        let name = &name[name.find("tests/fuzz/open").unwrap()..];
        assert!(
            stderr.contains(&format!("FAIL {name}: {what}: ")),
            "{name} no longer fails with {what}: move it to tests/fuzz/regressions\n{stderr}"
        );
    }
}
