//! `polyc mappings` and `polyc verify-mapping` end to end: counts, verdicts, JSON, exit
//! codes and positions in errors.

mod common;

use common::polyc;

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = polyc(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code(), stdout, stderr)
}

#[test]
fn conv2d_has_35_proved_mappings_and_each_is_refuted_without_permission_to_reorder() {
    let (code, out, _) = run(&["mappings", "examples/conv2d.pk", "--reorder-reductions"]);
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with("S1 onto mmad_f16: 35 mappings, 35 proved, 0 refuted, 0 undecided\n"),
        "{out}"
    );
    let (code, out, _) = run(&["mappings", "examples/conv2d.pk"]);
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with("S1 onto mmad_f16: 35 mappings, 0 proved, 35 refuted"),
        "{out}"
    );
    assert!(out.contains("--reorder-reductions"), "{out}");
}

#[test]
fn json_lists_every_mapping_with_its_verdicts() {
    let (code, out, _) = run(&[
        "mappings",
        "examples/batched-matmul.pk",
        "--emit",
        "json",
        "--reorder-reductions",
        "--second-opinion",
    ]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let maps = &v[0]["mappings"];
    assert_eq!(v[0]["intrinsic"], "mmad_f16");
    assert_eq!(maps.as_array().unwrap().len(), 1);
    assert_eq!(maps[0]["proved"], true);
    assert_eq!(maps[0]["groups"]["r1"], serde_json::json!(["k"]));
    assert_eq!(maps[0]["conditions"]["padding"]["verdict"], "proved");
}

#[test]
fn a_correct_hand_written_mapping_exits_0_and_a_wrong_one_exits_1_with_its_counterexample() {
    let (code, out, _) = run(&[
        "verify-mapping",
        "examples/conv2d.pk",
        "--mapping",
        "examples/mappings/conv2d-im2col.map",
        "--reorder-reductions",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.ends_with("mapping is correct: all 7 conditions proved\n"));
    let (code, out, err) = run(&[
        "verify-mapping",
        "examples/conv2d.pk",
        "--mapping",
        "examples/mappings/conv2d-wrong-stride.map",
        "--reorder-reductions",
    ]);
    assert_eq!(code, Some(1));
    assert!(out.contains("(3) operands      refuted: S1["), "{out}");
    assert!(out.contains("there operand A holds I["), "{out}");
    assert!(
        err.contains("mapping is wrong: 1 condition refuted"),
        "{err}"
    );
    let (code, out, _) = run(&[
        "verify-mapping",
        "examples/batched-matmul.pk",
        "--mapping",
        "examples/mappings/batched-matmul.map",
        "--reorder-reductions",
        "--symbolic",
    ]);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn malformed_mappings_and_intrinsic_files_exit_1_with_a_position() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.map");
    std::fs::write(
        &bad,
        "statement S1\nintrinsic mmad_f16\ni1 <- i\nA <- A[b, i1 * i2, r1]\n",
    )
    .unwrap();
    let (code, _, err) = run(&[
        "verify-mapping",
        "examples/batched-matmul.pk",
        "--mapping",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("bad.map:4:16: a product needs a constant factor"),
        "{err}"
    );
    let lib = dir.path().join("lib.pki");
    std::fs::write(
        &lib,
        "intrinsic v(X: f16[8] @ UB) -> (Z: f16[8] @ L7) { Z[l] = X[l]; }\n",
    )
    .unwrap();
    let (code, _, err) = run(&[
        "mappings",
        "examples/softmax.pk",
        "--intrinsics",
        lib.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("lib.pki:1:45: `ascend-like` has no on-chip tier `L7`"),
        "{err}"
    );
    let (code, _, err) = run(&[
        "mappings",
        "examples/conv2d.pk",
        "--intrinsics",
        "examples/conv2d.pk",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("error[E0600]: a `kernel` in an intrinsic file"),
        "{err}"
    );
}

#[test]
fn a_fused_extent_beyond_64_bits_is_undecided_not_wrapped() {
    let (code, out, _) = run(&[
        "mappings",
        "examples/conv2d.pk",
        "--reorder-reductions",
        "-D",
        "H=4000000000",
        "-D",
        "W=4000000000",
    ]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains(
            "not decided: fusing loop `p` makes the intrinsic loop's extent exceed 64 bits"
        ),
        "{out}"
    );
}
