//! `polyc compile --target npu`: a matrix product and a softmax become programs the simulator
//! accepts in strict mode; what the back end cannot compile exits 1 with the reason.

mod common;

use common::polyc;

/// `polyc compile FILE --target npu --reorder-reductions EXTRA -o X.npu`, which must succeed
/// and simulate race-free in strict mode on the timing oracle's machines; the program's text.
fn compiled_and_simulated(file: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.npu");
    let mut args = vec!["compile", file, "--target", "npu", "--reorder-reductions"];
    args.extend(extra);
    args.extend(["-o", out.to_str().unwrap()]);
    let o = polyc(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let sim = polyc(&["sim", out.to_str().unwrap(), "--check-timing", "3"]);
    assert_eq!(
        sim.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&sim.stderr)
    );
    std::fs::read_to_string(&out).unwrap()
}

#[test]
fn a_matrix_product_compiles_and_simulates_race_free() {
    let text = compiled_and_simulated("examples/batched-matmul.pk", &[]);
    assert!(
        text.starts_with("# batched_matmul compiled by polyc for `ascend-like` (8 cores)"),
        "{text}"
    );
    assert!(text.contains("#   i1 <- i\n"), "{text}");
}

#[test]
fn refusals_exit_1_with_the_reason() {
    let o = polyc(&["compile", "examples/batched-matmul.pk", "--target", "npu"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--reorder-reductions"));
    let o = polyc(&["compile", "examples/softmax.pk", "--target", "npu"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--reorder-reductions"));
    let o = polyc(&[
        "compile",
        "examples/attention.pk",
        "--target",
        "npu",
        "--reorder-reductions",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the NPU back end does not compile this kernel: statement S10: the cube multiplies f16 operands only"),
        "{err}"
    );
}

/// Pooling and a depthwise convolution: window reductions on the vector unit, with no
/// `--reorder-reductions` (each output's terms keep the kernel's order), the NCHW depthwise
/// convolution refused with the reason.
#[test]
fn window_reductions_compile_run_and_match_without_reordering() {
    let text = compiled_and_simulated("examples/maxpool.pk", &["-D", "OH=9", "-D", "OW=7"]);
    assert!(
        text.contains(
            "# Window reduction (statement S3): max pooling of `I` (1 x 18 x 14 x 64, NHWC)"
        ),
        "{text}"
    );
    let run = polyc(&[
        "run",
        "examples/depthwise-conv-nhwc.pk",
        "--target",
        "npu",
        "-D",
        "H=10",
        "-D",
        "W=9",
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("checked against the interpreter: every output bit for bit"),
        "{err}"
    );
    let o = polyc(&["compile", "examples/depthwise-conv.pk", "--target", "npu"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("slides along `I`'s innermost dimension"),
        "{err}"
    );
}

#[test]
fn a_softmax_compiles_to_the_vector_unit_and_simulates_race_free() {
    let text = compiled_and_simulated("examples/softmax.pk", &["-D", "B=37", "-D", "L=1000"]);
    assert!(
        text.contains("# Vector path: 37 rows of 1000 columns"),
        "{text}"
    );
}

#[test]
fn run_on_the_npu_prints_the_interpreters_lines_and_the_cycles() {
    let npu = polyc(&[
        "run",
        "examples/batched-matmul.pk",
        "--target",
        "npu",
        "--reorder-reductions",
        "-D",
        "M=40",
    ]);
    assert_eq!(
        npu.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&npu.stderr)
    );
    let interp = polyc(&["run", "examples/batched-matmul.pk", "-D", "M=40"]);
    let (a, b) = (
        String::from_utf8_lossy(&npu.stdout),
        String::from_utf8_lossy(&interp.stdout),
    );
    assert_eq!(a.lines().next(), b.lines().next());
    assert!(a.contains("C f32[4, 40, 64] sum="), "{a}");
    let err = String::from_utf8_lossy(&npu.stderr);
    assert!(err.contains("cycles on `ascend-like`"), "{err}");
    assert!(
        err.contains("checked against the interpreter: `C` within 1e-3"),
        "{err}"
    );
}

/// `--no-check` skips the interpreter and says so; on another target it is a user error.
#[test]
fn run_on_the_npu_without_the_check_says_so() {
    let args = [
        "run",
        "examples/bias-relu.pk",
        "--target",
        "npu",
        "--no-check",
    ];
    let o = polyc(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("not checked against the interpreter"), "{err}");
    assert!(!err.contains("checked against the interpreter:"), "{err}");
    let o = polyc(&["run", "examples/bias-relu.pk", "--no-check"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--target npu"));
}

/// `polyc run --target npu --report --trace FILE`: the simulator's report on standard error
/// (standard output keeps the interpreter's lines) and the timeline as Chrome trace JSON;
/// on another target both options are a user error.
#[test]
fn run_on_the_npu_reports_and_traces() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let args = [
        "run",
        "examples/matmul-bias-relu.pk",
        "--target",
        "npu",
        "--reorder-reductions",
        "-D",
        "M=64",
        "-D",
        "N=64",
        "-D",
        "K=64",
        "--report",
        "--trace",
        trace.to_str().unwrap(),
    ];
    let o = polyc(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("roofline") && err.contains("GM traffic"),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("roofline"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = json
        .get("traceEvents")
        .and_then(|e| e.as_array())
        .unwrap_or_else(|| json.as_array().unwrap());
    assert!(
        events.iter().any(|e| e["name"] == "mmad"),
        "no mmad in the trace"
    );
    let interp = polyc(&["run", "examples/matmul.pk", "--report", "-D", "M=8"]);
    assert_eq!(interp.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&interp.stderr).contains("--target npu"));
}

/// `polyc bench --target npu`: every candidate simulated side by side, the model's choice
/// first, with the ranking's agreement with the simulator; a user error exits 1.
#[test]
fn bench_compares_the_back_ends_candidates_in_the_simulator() {
    let o = polyc(&[
        "bench",
        "examples/matmul-f16.pk",
        "--target",
        "npu",
        "--reorder-reductions",
        "-D",
        "M=256",
        "-D",
        "N=256",
        "-D",
        "K=256",
        "--candidates",
        "3",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.starts_with("matmul_f16 on `ascend-like` (8 cores): "),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with(char::is_numeric))
        .collect();
    assert!(!rows.is_empty() && rows.len() <= 3, "{stdout}");
    assert!(
        rows[0].contains('%') && rows[0].contains("schedule"),
        "{stdout}"
    );
    let o = polyc(&["bench", "examples/softmax.pk", "--target", "npu"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--reorder-reductions"));
}

/// `polyc bench --target npu` on several convolutions: their tilings as candidates, the
/// ranking per kernel and in total, as JSON and as CSV (a line per candidate).
#[test]
fn bench_ranks_convolution_tilings_over_several_files() {
    let args = |format: &'static str| {
        [
            "bench",
            "examples/conv2d.pk",
            "examples/resnet50/conv5-expand.pk",
            "--target",
            "npu",
            "--reorder-reductions",
            "--candidates",
            "3",
            "--format",
            format,
        ]
    };
    let o = polyc(&args("json"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(report["command"], "bench", "{stdout}");
    let json = &report["results"];
    let kernels = json["kernels"].as_array().expect("kernels");
    assert_eq!(kernels.len(), 2, "{stdout}");
    let mut pairs = 0;
    for k in kernels {
        let n = k["candidates"].as_array().expect("candidates").len();
        assert!((2..=3).contains(&n), "{stdout}");
        assert!(k["candidates"][0]["label"]
            .as_str()
            .unwrap()
            .contains("slabs"));
        pairs += k["ranking"]["pairs"].as_u64().unwrap();
    }
    assert_eq!(json["total"]["pairs"].as_u64(), Some(pairs), "{stdout}");
    let o = polyc(&args("csv"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("kernel,machine,candidate,predicted,simulated"));
    assert!(lines[1].starts_with("conv2d,ascend-like,1,"), "{stdout}");
    assert!(
        lines.iter().any(|l| l.starts_with("conv5_expand,")),
        "{stdout}"
    );
    let o = polyc(&["bench", "examples/matmul.pk", "--format", "csv"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--target npu"));
}
