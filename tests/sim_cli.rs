//! `polyc sim` end to end: exit codes, checksums, .npy outputs and inputs, the report and the
//! trace.

use std::path::Path;

mod common;

/// `polyc args`: exit code, standard output and standard error.
fn polyc(args: &[&str]) -> (i32, String, String) {
    let out = common::polyc(args);
    let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        s(out.stdout),
        s(out.stderr),
    )
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/npu")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn vadd_runs_and_prints_checksums_and_cycles() {
    let (code, out, err) = polyc(&["sim", &example("vadd.npu")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("z: f16[16384] sum="), "{out}");
    assert!(out.contains("cycles "), "{out}");
}

#[test]
fn outputs_are_written_and_read_back_as_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let trace = dir.path().join("trace.json").display().to_string();
    let (code, out, err) = polyc(&[
        "sim",
        &example("vadd.npu"),
        "--outputs",
        &d,
        "--report",
        "--trace",
        &trace,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("roofline"), "{out}");
    assert!(std::fs::read_to_string(&trace)
        .unwrap()
        .contains("\"traceEvents\""));
    // z = x + y; feed z back as x, with the same seed for y: the sum changes.
    std::fs::rename(dir.path().join("z.npy"), dir.path().join("x.npy")).unwrap();
    let (code, out2, err) = polyc(&["sim", &example("vadd.npu"), "--inputs", &d]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(out.lines().next(), out2.lines().next());
}

#[test]
fn a_run_stopped_by_a_race_still_writes_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("race.json").display().to_string();
    let (code, _, err) = polyc(&[
        "sim",
        &example("broken_double_buffer.npu"),
        "--trace",
        &trace,
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error[E0024]"), "{err}");
    let text = std::fs::read_to_string(&trace).expect("the trace is written");
    assert!(
        text.contains("\"traceEvents\"") && text.contains("\"dma\""),
        "{text}"
    );
}

#[test]
fn an_output_never_written_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("half.npu");
    std::fs::write(
        &path,
        "tensor x : f16[128] in\ntensor y : f16[128] out\ntensor z : f16[128] out\n\
         buffer a : ub f16[128]\ndma a[0], x[0], len=128\nset_flag MTE2, MTE3, 0\n\
         wait_flag MTE2, MTE3, 0\ndma y[0], a[0], len=128\n",
    )
    .unwrap();
    let path = path.display().to_string();
    let (code, _, err) = polyc(&["sim", &path, "--machine", "ub-only"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: output `z` was never written"),
        "{err}"
    );
    assert!(!err.contains("`y`"), "{err}");
}

#[test]
fn user_errors_exit_with_1_and_a_diagnostic() {
    let (code, _, err) = polyc(&["sim", &example("broken_double_buffer.npu")]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error[E0024]") && err.contains("broken_double_buffer.npu:"),
        "{err}"
    );
    let (code, _, err) = polyc(&["sim", &example("vadd.npu"), "--machine", "no-such-machine"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown machine"), "{err}");
    let (code, _, err) = polyc(&["sim", &example("vadd.npu"), "--machine", "mini"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[E0018]"), "{err}");
}

#[test]
fn the_timing_check_accepts_the_double_buffer_and_rejects_its_broken_variant_everywhere() {
    let (code, out, err) = polyc(&["sim", &example("double_buffer.npu"), "--check-timing", "8"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("timing check: 9 machines, same outputs"),
        "{out}"
    );
    let broken = example("broken_double_buffer.npu");
    let (code, _, err) = polyc(&["sim", &broken, "--check-timing", "8"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("timing check: 9 machines, all reject (E0024)"),
        "{err}"
    );
    assert!(err.contains("error[E0024]: race"), "{err}");
}

#[test]
fn the_relaxed_semantics_accepts_counting_flags_the_strict_one_rejects() {
    // One flag set twice before its two waits: a counting semaphore, not a hardware flag.
    let dir = tempfile::tempdir().unwrap();
    let counting = dir.path().join("counting.npu");
    std::fs::write(
        &counting,
        "tensor x : f16[8, 128] in\ntensor y : f16[8, 128] out\nbuffer a : ub f16[128]\n\
         dma a[0], x[core, 0], len=128\nset_flag MTE2, MTE3, 0\nset_flag MTE2, MTE3, 0\n\
         wait_flag MTE2, MTE3, 0\nwait_flag MTE2, MTE3, 0\ndma y[core, 0], a[0], len=128\n",
    )
    .unwrap();
    let counting = counting.display().to_string();
    let (code, _, err) = polyc(&["sim", &counting]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error[E0029]"), "{err}");
    let (code, out, err) = polyc(&["sim", &counting, "--relaxed"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("cycles "), "{out}");
}

/// `polyc sync` places the flags of a program written without them: the result simulates
/// race-free, agrees with itself on varied machines and computes what the hand-synchronised
/// program computes; the program without them races.
#[test]
fn sync_places_the_flags_a_program_needs() {
    let dir = tempfile::tempdir().unwrap();
    let hand = std::fs::read_to_string(example("double_buffer.npu")).unwrap();
    let bare: String = (hand.lines())
        .filter(|l| !l.starts_with("set_flag") && !l.trim_start().starts_with("set_flag"))
        .filter(|l| !l.trim_start().starts_with("wait_flag"))
        .map(|l| format!("{l}\n"))
        .collect();
    let bare_path = dir.path().join("bare.npu").display().to_string();
    std::fs::write(&bare_path, &bare).unwrap();
    let (code, _, err) = polyc(&["sim", &bare_path]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("race"), "{err}");
    let synced = dir.path().join("synced.npu").display().to_string();
    let (code, _, err) = polyc(&["sync", &bare_path, "-o", &synced]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&synced).unwrap();
    assert!(text.contains("set_flag MTE2, V, (t%2)"), "{text}");
    assert!(
        text.contains("flag placed by the dependence analysis"),
        "{text}"
    );
    let (code, out, err) = polyc(&["sim", &synced, "--check-timing", "4"]);
    assert_eq!(code, 0, "{err}");
    let (_, want, _) = polyc(&["sim", &example("double_buffer.npu")]);
    assert_eq!(out.lines().next(), want.lines().next());
}

/// What is wrong with a program as given is the user's, with its place: a wait no set
/// answers, an unknown tensor.
#[test]
fn sync_refuses_a_program_wrong_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.npu").display().to_string();
    let head = "tensor x : f16[8, 1024] in\nbuffer b : ub f16[1024]\n";
    std::fs::write(
        &path,
        format!("{head}wait_flag V, MTE2, 0\ndma b[0], x[core, 0], len=1024\n"),
    )
    .unwrap();
    let (code, _, err) = polyc(&["sync", &path]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("deadlock"), "{err}");
    std::fs::write(&path, format!("{head}dma b[0], y[core, 0], len=1024\n")).unwrap();
    let (code, _, err) = polyc(&["sync", &path]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("p.npu:3:"), "{err}");
}
