//! `polyc verify`: legal schedules exit 0, violations exit 1 with every violation printed,
//! malformed or foreign schedules exit 1 with a reason, never a panic.

mod common;

use common::polyc;

/// `polyc verify` with a schedule written to a temporary file.
fn verify(kernel: &str, schedule: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schedule.txt");
    std::fs::write(&path, schedule).unwrap();
    let mut args = vec!["verify", kernel, "--schedule", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = polyc(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code(), stdout, stderr)
}

#[test]
fn the_original_schedule_printed_by_show_is_legal() {
    let show = polyc(&[
        "show",
        "examples/polybench/gemm.pk",
        "--emit",
        "schedule",
        "-D",
        "NI=4",
    ]);
    assert_eq!(show.status.code(), Some(0));
    let tree = String::from_utf8(show.stdout).unwrap();
    let (code, stdout, _) = verify("examples/polybench/gemm.pk", &tree, &["-D", "NI=4"]);
    assert_eq!(code, Some(0));
    assert_eq!(stdout, "schedule is legal\n");
}

#[test]
fn corpus_files_verify_as_their_golden_reports_say() {
    for case in [
        "gemm.legal-interchange",
        "jacobi-1d.illegal-fusion",
        "seidel-2d.illegal-tiling",
    ] {
        let dir = "scheduler/tests/wrong";
        let schedule = format!("{dir}/{case}.schedule");
        let kernel = format!("examples/polybench/{}.pk", case.split('.').next().unwrap());
        let out = polyc(&["verify", &kernel, "--schedule", &schedule]);
        let expected = std::fs::read_to_string(format!("{dir}/{case}.expected")).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{case}");
        let legal = expected == "schedule is legal\n";
        assert_eq!(out.status.code(), Some(if legal { 0 } else { 1 }), "{case}");
    }
}

#[test]
fn a_reversed_loop_exits_1_with_the_violation() {
    // seidel-2d updates A in place: reversing i breaks A[i - 1, j] (written just before).
    let (code, stdout, stderr) = verify(
        "examples/polybench/seidel-2d.pk",
        "[TSTEPS, N] -> { S0[t, i, j] -> [t, -i, j] }",
        &["-D", "TSTEPS=3", "-D", "N=6"],
    );
    assert_eq!(code, Some(1));
    assert!(
        stdout.starts_with(
            "violation 1: RAW dependence reversed: the sink runs first, \
             the order flips at schedule dimension 1"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("with TSTEPS = 3, N = 6"), "{stdout}");
    assert!(stderr.contains("schedule is illegal"), "{stderr}");
}

#[test]
fn reductions_may_be_reordered_only_when_allowed() {
    // gemm's k loop reversed: only reduction dependences on C[i, j] run backwards.
    let schedule = "{ S0[i, j] -> [i, 0, j, 0]; S1[i, k, j] -> [i, 1, -k, j] }";
    let (code, stdout, _) = verify("examples/polybench/gemm.pk", schedule, &[]);
    assert_eq!(code, Some(1), "{stdout}");
    let (code, stdout, _) = verify(
        "examples/polybench/gemm.pk",
        schedule,
        &["--reorder-reductions"],
    );
    assert_eq!(code, Some(0), "{stdout}");
}

#[test]
fn malformed_and_foreign_schedules_are_user_errors() {
    let cases = [
        ("", "the schedule is empty"),
        (
            "{ S0[i, j] -> [i, j }",
            "malformed schedule: expected `]`, found `}`",
        ),
        (
            "{ domain: \"{ S0[i : }\" }",
            "malformed schedule: expected `]`, found `:`",
        ),
        (
            "{ S0[i, j] -> [i * j, 0] }",
            "malformed schedule: isl's reader refuses this piece",
        ),
        ("{ S7[i, j] -> [i, j] }", "`S7`, which is not a statement"),
        (
            "{ S0[i] -> [i] }",
            "gives statement `S0` 1 iterator(s), but it has 2",
        ),
        ("[Q] -> { S0[i, j] -> [Q] }", "parameter `Q`"),
    ];
    for (schedule, reason) in cases {
        let (code, _, stderr) = verify("examples/polybench/gemm.pk", schedule, &[]);
        assert_eq!(code, Some(1), "{schedule}: {stderr}");
        assert!(stderr.contains(reason), "{schedule}: {stderr}");
    }
    let out = polyc(&[
        "verify",
        "examples/polybench/gemm.pk",
        "--schedule",
        "no/such/file",
    ]);
    assert_eq!(out.status.code(), Some(1));
}

/// A legal schedule that runs two instances at the same time gets a warning naming them
/// (exit 0), and is refused with `--strict`; polyc's own schedulers' schedules are
/// injective (isl's scheduler leaves instances with no dependence between them at equal
/// times, and gets the warning).
#[test]
fn a_non_injective_schedule_is_warned_about_and_refused_when_strict() {
    let kernel = "examples/polybench/jacobi-2d.pk";
    let flat = "[TSTEPS, N] -> { S0[t, i, j] -> [t, 0]; S1[t, i, j] -> [t, 1] }";
    let (code, stdout, stderr) = verify(kernel, flat, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "schedule is legal\n");
    assert!(
        stderr.contains("warning: ")
            && stderr.contains("not injective: S0[0, 1, 1] and S0[0, 1, 2] both run at time [0, 0] (for TSTEPS = 1, N = 4)"),
        "{stderr}"
    );
    let (code, _, stderr) = verify(kernel, flat, &["--strict"]);
    assert_eq!(code, Some(1), "{stderr}");
    for scheduler in ["pluto", "feautrier", "identity"] {
        let out = polyc(&[
            "schedule",
            kernel,
            "--scheduler",
            scheduler,
            "--emit",
            "schedule",
        ]);
        let tree = String::from_utf8(out.stdout).unwrap();
        let (code, _, stderr) = verify(kernel, &tree, &["--strict"]);
        assert_eq!(code, Some(0), "{scheduler}: {stderr}");
    }
}

/// A hand-written schedule runs and compiles (`--schedule FILE` on `run --target cpu`,
/// `compile` and `schedule`) once checked: the interpreter's outputs when legal, the
/// checker's report and exit 1 when not.
#[test]
fn a_hand_written_schedule_runs_and_compiles_once_verified() {
    let dir = tempfile::tempdir().unwrap();
    let legal = dir.path().join("legal.txt");
    let illegal = dir.path().join("illegal.txt");
    std::fs::write(
        &legal,
        "[TSTEPS, N] -> { S0[t, i] -> [t, 0, i]; S1[t, i] -> [t, 1, i] }",
    )
    .unwrap();
    std::fs::write(
        &illegal,
        "[TSTEPS, N] -> { S0[t, i] -> [i, t, 0]; S1[t, i] -> [i, t, 1] }",
    )
    .unwrap();
    let kernel = "examples/polybench/jacobi-1d.pk";
    let sizes = ["-D", "TSTEPS=20", "-D", "N=100"];
    let run = |extra: &[&str]| {
        let mut args = vec!["run", kernel];
        args.extend(sizes);
        args.extend(extra);
        polyc(&args)
    };
    let want = run(&[]);
    let got = run(&["--target", "cpu", "--schedule", legal.to_str().unwrap()]);
    assert_eq!(
        got.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    let outputs = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("A ") || l.starts_with("B "))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(outputs(&got), outputs(&want));
    let refused = run(&["--target", "cpu", "--schedule", illegal.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("the schedule is illegal"));
    let tiled = polyc(&[
        "compile",
        kernel,
        "--schedule",
        legal.to_str().unwrap(),
        "--tile",
        "--parallel",
    ]);
    assert_eq!(
        tiled.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&tiled.stderr)
    );
    let shown = polyc(&["schedule", kernel, "--schedule", legal.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("(given)"));
}
