//! A reduction nested inside an expression is computed through a temporary: the kernel runs
//! (interpreter, and every scheduler's C) and gives the outputs of the same kernel written
//! with the temporary by hand.

mod common;

use common::polyc;

/// `polyc ARGS` on `text` written to a file; its standard output (exit 0 asserted).
fn run(text: &str, args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.pk");
    std::fs::write(&file, text).unwrap();
    let mut all = vec!["run", file.to_str().unwrap()];
    all.extend(args);
    let o = polyc(&all);
    assert_eq!(
        o.status.code(),
        Some(0),
        "polyc {all:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // the first line names the kernel's parameters, the others its outputs
    String::from_utf8(o.stdout).unwrap()
}

// A reduction's body extends as far right as it can: `sum(k) A * B + 1.0` adds 1 to every
// term.
const NESTED: &str = "kernel k(alpha: f64, A: f64[NI, NK], B: f64[NK, NJ], X: f32[NI, NJ]) -> (C: f64[NI, NJ], Y: f32[NI, NJ])
  params NI = 9, NJ = 11, NK = 13
{
  C[i, j] = alpha * sum(k) A[i, k] * B[k, j] + 1.0;
  Y[b, l] = X[b, l] / (1.0 + sum(m) X[b, m] * X[b, m]);
}";

const BY_HAND: &str = "kernel k(alpha: f64, A: f64[NI, NK], B: f64[NK, NJ], X: f32[NI, NJ]) -> (C: f64[NI, NJ], Y: f32[NI, NJ])
  params NI = 9, NJ = 11, NK = 13
{
  let t: f64[NI, NJ];
  let s: f32[NI];
  t[i, j] = sum(k) A[i, k] * B[k, j] + 1.0;
  C[i, j] = alpha * t[i, j];
  s[b] = sum(m) X[b, m] * X[b, m];
  Y[b, l] = X[b, l] / (1.0 + s[b]);
}";

#[test]
fn a_nested_reduction_gives_what_the_temporary_written_by_hand_gives() {
    let want = run(BY_HAND, &["--seed", "3"]);
    assert!(want.contains("\nC f64[9, 11]"), "{want}");
    assert_eq!(run(NESTED, &["--seed", "3"]), want);
    for scheduler in ["pluto", "feautrier", "isl", "identity"] {
        let got = run(
            NESTED,
            &["--seed", "3", "--target", "cpu", "--scheduler", scheduler],
        );
        assert_eq!(got, want, "{scheduler}");
    }
}

#[test]
fn a_nested_reduction_that_reads_the_statements_own_target_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.pk");
    let text = "kernel k(A: inout f32[N, M]) params N = 4, M = 4 {\n  A[i, 0] = A[i, 0] + sum(j) A[i, j];\n}\n";
    std::fs::write(&file, text).unwrap();
    let o = polyc(&["run", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("error[E0501]") && err.contains("k.pk:2:23"),
        "{err}"
    );
}
