//! The NPU back end's vector path, differentially: every compiled program runs in the
//! simulator (strict semantics, race detector, unwritten outputs) on the interpreter's
//! random inputs and must give the interpreter's outputs, bit for bit where no reduction is
//! reordered and no transcendental function is computed, else within the documented
//! tolerance (`codegen::runner::tolerance`); the timing oracle must agree on the values;
//! kernels outside the path's reach are refused naming the statement.

// worst_error is for the tests that measure an error rather than compare
#[allow(dead_code)]
mod common;

use common::{example, kernel, sizes_of};

use codegen::npu::conv::Offer;
use codegen::npu::vector::{self, Plan};
use codegen::npu::{candidates, compile, Compiled, NpuError};
use codegen::runner::{disagreements, Comparison};
use npu_sim::Machine;

const PRESETS: [&str; 3] = ["ascend-like", "ascend-like-halfgm", "mini"];

/// A differential run: the kernel, its sizes, the machine, how outputs must agree and, if
/// given, the rows per group.
struct Run<'a> {
    text: &'a str,
    sizes: &'a [(&'a str, i64)],
    machine: &'a str,
    comparison: Comparison,
    group_rows: Option<i64>,
}

impl Run<'_> {
    /// Compiles, runs in the simulator on the interpreter's random inputs, checks every
    /// output and the timing oracle; returns the plan.
    fn check(&self) -> Plan {
        let k = kernel(self.text);
        let (params, all) = sizes_of(&k, self.sizes);
        let m = Machine::load(self.machine).unwrap();
        let at = format!("{} {:?}", self.machine, self.sizes);
        let (program, plan) = vector::compile_with(&k, &all, &m, true, self.group_rows)
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        let compiled = Compiled {
            program,
            plan: codegen::npu::Plan::Vector(plan.clone()),
        };
        let (want, got) = common::interpreted_and_simulated(&k, &params, &compiled, &m, 2, &at);
        let bad = disagreements(&k, &want, &got, self.comparison).unwrap();
        assert!(bad.is_empty(), "{at}: {bad:?}");
        plan
    }
}

/// [`Run::check`] with the model's groups.
fn differential(text: &str, sizes: &[(&str, i64)], machine: &str, comparison: Comparison) -> Plan {
    Run {
        text,
        sizes,
        machine,
        comparison,
        group_rows: None,
    }
    .check()
}

/// The refusal of `text` at its default sizes on `ascend-like`.
fn refusal(text: &str, reorder: bool) -> NpuError {
    let k = kernel(text);
    let (_, all) = sizes_of(&k, &[]);
    let m = Machine::load("ascend-like").unwrap();
    compile(&k, &all, &m, reorder).unwrap_err()
}

#[test]
fn softmax_matches_at_its_default_and_odd_sizes_on_every_preset() {
    let text = example("softmax.pk");
    for machine in PRESETS {
        // (mini's 4 KiB of UB holds a few rows of 64 values)
        let sizes: Vec<Vec<(&str, i64)>> = if machine == "mini" {
            vec![vec![("B", 9), ("L", 64)], vec![("B", 3), ("L", 37)]]
        } else {
            vec![
                vec![],
                vec![("B", 37), ("L", 1000)],
                vec![("B", 5), ("L", 70)],
            ]
        };
        for s in &sizes {
            differential(&text, s, machine, Comparison::Tolerant);
        }
    }
}

#[test]
fn layernorm_matches_at_its_default_and_odd_sizes_on_every_preset() {
    let text = example("layernorm.pk");
    for machine in PRESETS {
        let sizes: Vec<Vec<(&str, i64)>> = if machine == "mini" {
            vec![vec![("B", 7), ("D", 48)], vec![("B", 2), ("D", 33)]]
        } else {
            vec![
                vec![],
                vec![("B", 13), ("D", 777)],
                vec![("B", 3), ("D", 130)],
            ]
        };
        for s in &sizes {
            differential(&text, s, machine, Comparison::Tolerant);
        }
    }
}

#[test]
fn the_f16_kernels_match_within_the_f16_tolerance() {
    for (file, sizes) in [
        ("softmax-f16.pk", [("B", 24), ("L", 512)]),
        ("softmax-f16.pk", [("B", 5), ("L", 200)]),
        ("layernorm-f16.pk", [("B", 24), ("D", 512)]),
        ("layernorm-f16.pk", [("B", 9), ("D", 300)]),
    ] {
        differential(&example(file), &sizes, "ascend-like", Comparison::Tolerant);
    }
}

/// Scale, per-column bias and ReLU as a maximum with 0, in f32.
const SCALE_BIAS_RELU: &str = "kernel sbr(X: f32[M, N], bias: f32[N]) -> (Y: f32[M, N])
  params M = 40, N = 200
{ Y[i, j] = max(X[i, j] * 0.5 + bias[j], 0.0); }";

#[test]
fn element_wise_kernels_match_bit_for_bit() {
    let sbr_f16 = SCALE_BIAS_RELU.replace("f32", "f16");
    let cases: [(&str, Vec<(&str, i64)>); 8] = [
        (SCALE_BIAS_RELU, vec![]),
        // tails: columns not a multiple of 64 (f32 lanes) nor of 8 (32-byte blocks)
        (SCALE_BIAS_RELU, vec![("M", 11), ("N", 77)]),
        // the same in f16: every operation rounded to f16, as the interpreter does
        (&sbr_f16, vec![("M", 13), ("N", 200)]),
        // casts: f16 operands multiplied in f32, rounded back to f16 once
        (
            "kernel cast(A: f16[M, N], B: f16[M, N]) -> (Y: f16[M, N]) params M = 17, N = 300
             { Y[i, j] = f16(f32(A[i, j]) * f32(B[i, j]) + 1.0); }",
            vec![],
        ),
        // a leaky ReLU through a comparison and a selection, and a negation
        (
            "kernel leaky(X: f32[M, N]) -> (Y: f32[M, N]) params M = 9, N = 130
             { Y[i, j] = X[i, j] > 0.0 ? X[i, j] : -(X[i, j] * 0.125); }",
            vec![],
        ),
        // bf16 arithmetic, i8 converted to f32, i32 maxima
        (
            "kernel mixed(A: bf16[M, N], Q: i8[M, N], I: i32[M, N], J: i32[M, N])
               -> (Y: bf16[M, N], F: f32[M, N], K: i32[M, N]) params M = 10, N = 96
             { Y[i, j] = A[i, j] * A[i, j] - A[i, j];
               F[i, j] = f32(Q[i, j]) * 0.25;
               K[i, j] = max(I[i, j], J[i, j]); }",
            vec![],
        ),
        // an in-out tile updated in place, and a subtraction from a constant
        (
            "kernel acc(X: f32[M, N], Y: inout f32[M, N]) params M = 20, N = 64
             { Y[i, j] += X[i, j]; Y[i, j] = 1.0 - Y[i, j]; }",
            vec![],
        ),
        // an output accumulated before it is written (it starts at zero), a temporary tile
        (
            "kernel tmp(X: f32[M, N]) -> (Y: f32[M, N]) params M = 12, N = 40
             { let t: f32[M, N]; Y[i, j] += X[i, j]; t[i, j] = X[i, j] * 3.0; Y[i, j] *= t[i, j] + t[i, j]; }",
            vec![],
        ),
    ];
    for (text, sizes) in &cases {
        differential(text, sizes, "ascend-like", Comparison::Exact);
    }
}

#[test]
fn per_row_and_per_column_operands_are_broadcast() {
    // per-row scale and shift from GM, a per-column weight, a kernel-level scalar folded
    // from the parameters, an input scalar, and a per-row output
    let text = "kernel bcast(X: f32[B, D], r: f32[B], c: f32[D], w: f32[D], k: f32)
        -> (Y: f32[B, D], Z: f32[B])
      params B = 21, D = 100
    {
      let scale: f32;
      scale = 1.0 / sqrt(f32(D));
      Y[b, d] = (X[b, d] * r[b] + c[d]) * w[d] * scale - k;
      Z[b] = r[b] * k + scale;
    }";
    differential(text, &[], "ascend-like", Comparison::Exact);
    differential(text, &[("D", 8)], "mini", Comparison::Exact);
    // 3-d rows: two row loops flattened, the per-row operand indexed by both
    let text = "kernel rows3(X: f32[H, L, D], m: f32[H, L]) -> (Y: f32[H, L, D])
      params H = 3, L = 7, D = 40
    { Y[h, i, d] = X[h, i, d] - m[h, i]; }";
    differential(text, &[], "ascend-like", Comparison::Exact);
}

#[test]
fn one_dimensional_kernels_deal_their_rows_to_the_cores() {
    let text = "kernel axpb(X: f32[N], a: f32, b: f32) -> (Y: f32[N]) params N = 1000
    { Y[i] = X[i] * a + b; }";
    // more rows than cores and fewer; a long vector in groups of many rows
    for n in [1000, 5, 20000] {
        differential(text, &[("N", n)], "ascend-like", Comparison::Exact);
    }
}

#[test]
fn groups_of_forced_sizes_cover_every_row() {
    // several groups per core, the last one partial, rows split unevenly over the cores
    let text = example("softmax.pk");
    for (rows, sizes) in [(3, [("B", 37), ("L", 104)]), (1, [("B", 19), ("L", 296)])] {
        let plan = Run {
            text: &text,
            sizes: &sizes,
            machine: "ascend-like",
            comparison: Comparison::Tolerant,
            group_rows: Some(rows),
        }
        .check();
        assert_eq!(plan.group_rows, rows);
    }
    // rows of 5 f32 values (20 bytes): groups start on 8 rows, so that no two cores store
    // into one 32-byte block
    let plan = differential(
        SCALE_BIAS_RELU,
        &[("M", 30), ("N", 5)],
        "ascend-like",
        Comparison::Exact,
    );
    assert_eq!(plan.granule, 8, "{plan:?}");
}

#[test]
fn reductions_over_the_columns_combine_partial_results() {
    // minima and f16 sums, rows longer than one level of partial results (f16: 128 lanes,
    // so 16500 columns need three levels), an output per row
    let text = "kernel red(X: f16[B, L]) -> (lo: f16[B], total: f16[B])
      params B = 2, L = 16500
    { lo[b] = min(l) X[b, l]; total[b] = sum(l) X[b, l] * 0.001; }";
    differential(text, &[], "ascend-like", Comparison::Tolerant);
    differential(
        text,
        &[("B", 40), ("L", 129)],
        "ascend-like",
        Comparison::Tolerant,
    );
    // groups of 2 rows of 8192 values summed in f32: 256 partial results, more than one
    // instruction's repeats
    let plan = Run {
        text: "kernel center(X: f16[B, L]) -> (Y: f16[B, L]) params B = 16, L = 8192
               { let s: f32[B]; s[b] = sum(l) f32(X[b, l]); Y[b, l] = X[b, l] - f16(s[b]); }",
        sizes: &[],
        machine: "ascend-like",
        comparison: Comparison::Tolerant,
        group_rows: Some(2),
    }
    .check();
    assert_eq!(plan.group_rows, 2);
    // no row loop at all: the kernel is one row, on one core
    let text = "kernel total(X: f32[N]) -> (s: f32) params N = 1000 { s = sum(i) X[i]; }";
    differential(text, &[], "ascend-like", Comparison::Tolerant);
}

#[test]
fn what_the_vector_unit_cannot_do_is_refused_naming_the_statement() {
    let unsupported = |text: &str, stmt: &str, why: &str| match refusal(text, true) {
        NpuError::Unsupported(w) => assert!(
            w.contains(&format!("statement {stmt}: ")) && w.contains(why),
            "{w}"
        ),
        other => panic!("{other:?}"),
    };
    let two = |body: &str| {
        format!("kernel k(X: f32[M, N], I: i32[M, N]) -> (Y: f32[M, N], J: i32[M, N]) params M = 8, N = 64 {{ {body} }}")
    };
    unsupported(
        &two("Y[i, j] = X[i, j]; J[i, j] = I[i, j] / 3;"),
        "S1",
        "integer division",
    );
    unsupported(
        &two("Y[i, j] = X[i, j]; J[i, j] = I[i, j] + I[i, j];"),
        "S1",
        "wraps",
    );
    unsupported(
        &two("Y[i, j] = tanh(X[i, j]); J[i, j] = I[i, j];"),
        "S0",
        "`tanh`",
    );
    unsupported(
        &two("J[i, j] = I[i, j]; Y[i, j] = X[i, j] + f32(j);"),
        "S1",
        "loop variable",
    );
    unsupported(
        "kernel t(X: f32[N, N]) -> (Y: f32[N, N]) params N = 16 { Y[i, j] = X[j, i]; }",
        "S0",
        "indexed [j, i]",
    );
    unsupported(
        "kernel s(X: f32[M, N]) -> (Y: f32[M, N]) params M = 8, N = 16
         { for i in 0..M { for j in 0..N - 1 { Y[i, j] = X[i, j + 1]; } } }",
        "S0",
        "cover whole arrays",
    );
    // a sum over the rows (the first dimension) that the kernel goes on with: the vector
    // path's rows are the first dimension (a column sum alone is a view of global pooling,
    // `npu_window.rs`)
    unsupported(
        "kernel c(X: f32[M, N]) -> (Y: f32[M, N]) params M = 8, N = 16
         { let s: f32[N]; s[j] = sum(i) X[i, j]; Y[i, j] = X[i, j] / s[j]; }",
        "S0",
        "loops cover [16]",
    );
    unsupported(
        "kernel w(X: f32[M, N]) -> (s: f32[N]) params M = 8, N = 16 { s[j] = X[0, j] * 2.0; }",
        "S0",
        "indexed [0, j]",
    );
    unsupported(
        "kernel g(X: f32[M, N]) -> (Y: f32[M, N]) params M = 8, N = 16
         { for i in 0..M { for j in 0..N { if j < 4 { Y[i, j] = X[i, j]; } } } }",
        "S0",
        "guarded",
    );
    unsupported(
        "kernel d(X: f32[M, N], e: f32) -> (Y: f32[M, N]) params M = 8, N = 16
         { let c: f32; c = e * 2.0; Y[i, j] = X[i, j] * c; }",
        "S0",
        "input data",
    );
    unsupported(
        "kernel p(X: f32[M, N]) -> (Y: f32[M]) params M = 8, N = 16
         { for i in 0..M { Y[i] = 1.0; for j in 0..N { Y[i] *= X[i, j]; } } }",
        "S1",
        "product reduction",
    );
    // f64 is refused before any path looks at the kernel
    let f64 =
        "kernel f(X: f64[M, N]) -> (Y: f64[M, N]) params M = 8, N = 16 { Y[i, j] = X[i, j]; }";
    assert!(
        matches!(refusal(f64, true), NpuError::Unsupported(ref w) if w.starts_with("`X` is f64")),
        "{:?}",
        refusal(f64, true)
    );
    // attention goes to the fused attention program, which refuses f32 probabilities
    // (`npu_attention.rs`)
    unsupported(&example("attention.pk"), "S10", "f16 operands only");
    assert_eq!(
        refusal(&example("softmax.pk"), false),
        NpuError::ReorderNotAllowed
    );
}

/// Softmax that also stores its row maxima and sums, and normalises a copy of its input in
/// place: per-row outputs, an in-out tile read in one pass and written in another.
const SOFTMAX_ROWS_OUT: &str =
    "kernel k(X: f32[B, L], Z: inout f32[B, L]) -> (Y: f32[B, L], m: f32[B], s: f32[B])
  params B = 4, L = 8
{
  let t: f32[B];
  m[b] = max(l) X[b, l];
  s[b] = sum(l) exp(X[b, l] - m[b]);
  t[b] = sum(l) Z[b, l];
  Y[b, l] = exp(X[b, l] - m[b]) / s[b];
  Z[b, l] = Z[b, l] / t[b];
}";

/// A row sum of f16 values into f32: one pass, a per-row output.
const ROW_SUM: &str = "kernel rowsum(X: f16[B, L]) -> (s: f32[B]) params B = 4, L = 8
{ s[b] = sum(l) f32(X[b, l]); }";

#[test]
fn rows_too_long_for_ub_go_through_it_in_column_chunks() {
    // (kernel, sizes, machine, whether the inputs stay in UB for the group's passes)
    let softmax = example("softmax.pk");
    let layernorm = example("layernorm.pk");
    let softmax_f16 = example("softmax-f16.pk");
    type Case<'a> = (&'a str, Vec<(&'a str, i64)>, &'a str, bool);
    let cases: Vec<Case> = vec![
        // rows of 66 KB: whole per group, chunks with a narrower last one
        (
            &softmax,
            vec![("B", 20), ("L", 16_504)],
            "ascend-like",
            true,
        ),
        (
            &layernorm,
            vec![("B", 9), ("D", 9_000)],
            "ascend-like",
            true,
        ),
        (
            &layernorm,
            vec![("B", 12), ("D", 8_192)],
            "ascend-like-halfgm",
            true,
        ),
        // rows that share 32-byte blocks (stores ordered by a barrier) start groups on
        // blocks: 8 rows, too many to keep whole
        (
            &softmax,
            vec![("B", 20), ("L", 16_501)],
            "ascend-like",
            false,
        ),
        (
            &layernorm,
            vec![("B", 9), ("D", 9_001)],
            "ascend-like",
            false,
        ),
        // rows of 160 KB: every chunk of every pass loaded (per-column inputs per chunk)
        (
            &softmax,
            vec![("B", 3), ("L", 40_003)],
            "ascend-like",
            false,
        ),
        (
            &layernorm,
            vec![("B", 2), ("D", 40_000)],
            "ascend-like",
            false,
        ),
        (
            &softmax_f16,
            vec![("B", 17), ("L", 50_257)],
            "ascend-like",
            false,
        ),
        // mini's 4 KiB of UB
        (&softmax, vec![("B", 5), ("L", 700)], "mini", false),
        (&layernorm, vec![("B", 3), ("D", 336)], "mini", false),
        (
            SOFTMAX_ROWS_OUT,
            vec![("B", 10), ("L", 20_000)],
            "ascend-like-halfgm",
            false,
        ),
        (
            ROW_SUM,
            vec![("B", 19), ("L", 40_001)],
            "ascend-like",
            false,
        ),
    ];
    for (text, sizes, machine, resident) in cases {
        let plan = differential(text, &sizes, machine, Comparison::Tolerant);
        let chunks = plan
            .chunks
            .unwrap_or_else(|| panic!("{sizes:?}: whole rows"));
        assert!(chunks.count >= 2, "{sizes:?}: {chunks:?}");
        if text != ROW_SUM {
            assert_eq!(chunks.resident, resident, "{machine} {sizes:?}: {chunks:?}");
        }
    }
}

/// Rows of 66 repeats of f32 lanes back to back in UB: their 66 partial sums each reduce
/// again row by row, each row's from an aligned block (they were back to back, and the
/// simulator refused the second row's unaligned operand).
#[test]
fn partial_results_reduced_row_by_row_start_on_blocks() {
    let text = "kernel rowsum(X: f32[B, L]) -> (s: f32[B]) params B = 16, L = 4224
        { s[b] = sum(l) X[b, l]; }";
    for rows in [2, 4] {
        Run {
            text,
            sizes: &[],
            machine: "ascend-like",
            comparison: Comparison::Tolerant,
            group_rows: Some(rows),
        }
        .check();
    }
}

/// A few long rows: each group's chunks spread over a team of cores, whose partial
/// results meet through GM after each pass with reductions: inputs whole per group or
/// streamed, per-row outputs (stored by a team's first member), per-column inputs, an
/// initial value that is not the reduction's identity (counted once: the other members
/// start from the identity), element-wise passes with no meeting, and rows off 32-byte
/// blocks (a member's first chunk of a pass that stores waits for the others' stores).
#[test]
fn few_long_rows_spread_their_chunks_over_cores() {
    let softmax_f16 = example("softmax-f16.pk");
    let train = example("layernorm-train.pk");
    let layernorm = example("layernorm.pk");
    let biased = "kernel biased(X: f16[B, L]) -> (s: f32[B]) params B = 3, L = 8
        { s[b] = 1.5; s[b] += sum(l) f32(X[b, l]); }";
    // (kernel, sizes, machine, cores per team)
    type Case<'a> = (&'a str, Vec<(&'a str, i64)>, &'a str, i64);
    let cases: Vec<Case> = vec![
        (
            &softmax_f16,
            vec![("B", 1), ("L", 32_000)],
            "ascend-like",
            8,
        ),
        (
            &train,
            vec![("B", 16), ("D", 8_192)],
            "ascend-like-halfgm",
            4,
        ),
        (
            &softmax_f16,
            vec![("B", 3), ("L", 50_304)],
            "ascend-like-halfgm",
            8,
        ),
        (
            &train,
            vec![("B", 13), ("D", 12_000)],
            "ascend-like-halfgm",
            8,
        ),
        (&layernorm, vec![("B", 2), ("D", 40_000)], "ascend-like", 8),
        (
            SOFTMAX_ROWS_OUT,
            vec![("B", 11), ("L", 12_344)],
            "ascend-like",
            8,
        ),
        (biased, vec![("B", 3), ("L", 40_000)], "ascend-like", 8),
        (SCALE_BIAS_RELU, vec![("M", 1), ("N", 5_000)], "mini", 2),
        (
            &softmax_f16,
            vec![("B", 17), ("L", 50_257)],
            "ascend-like",
            8,
        ),
        (
            &train,
            vec![("B", 13), ("D", 12_001)],
            "ascend-like-halfgm",
            4,
        ),
        (&layernorm, vec![("B", 3), ("D", 40_001)], "ascend-like", 8),
        (&softmax_f16, vec![("B", 1), ("L", 4_096)], "mini", 2),
    ];
    for (text, sizes, machine, members) in cases {
        let plan = differential(text, &sizes, machine, Comparison::Tolerant);
        let spread = plan.chunks.map(|c| c.spread);
        assert_eq!(spread, Some(members), "{machine} {sizes:?}: {plan:?}");
    }
    // the members meet at the `sync_all`: without it nothing orders a member's load of the
    // team's partial results after the others' stores, nor MTE3's wait for V's flag before
    // V sets it again for the group's per-row outputs (the simulator's verdicts are
    // timing-independent; it reports the flag first)
    let k = kernel(biased);
    let (_, all) = sizes_of(&k, &[("B", 3), ("L", 40_000)]);
    let m = Machine::load("ascend-like").unwrap();
    let c = compile(&k, &all, &m, true).unwrap();
    let text = npu_sim::print(&c.program);
    assert_eq!(text.matches("sync_all").count(), 1, "{text}");
    let run = |text: &str| {
        let p = npu_sim::assemble(text).unwrap();
        npu_sim::run(&p, &m, &Default::default(), 0).map(|_| ())
    };
    if let Err(e) = run(&text) {
        panic!("{}", e.message);
    }
    let err = run(&text.replace("sync_all\n", "")).unwrap_err();
    let refused = [npu_sim::Code::FlagSetTwice, npu_sim::Code::Race];
    assert!(
        refused.contains(&err.code),
        "{:?}: {}",
        err.code,
        err.message
    );
    // rows off 32-byte blocks: without the `sync_all` before the members' first chunks of
    // the last pass, a member stores into a block its neighbour stores into at the same
    // time
    let k = kernel(&softmax_f16);
    let (_, all) = sizes_of(&k, &[("B", 17), ("L", 50_257)]);
    let c = compile(&k, &all, &m, true).unwrap();
    let text = npu_sim::print(&c.program);
    assert_eq!(text.matches("sync_all").count(), 3, "{text}");
    if let Err(e) = run(&text) {
        panic!("{}", e.message);
    }
    let cut = text.rfind("sync_all\n").unwrap();
    let err = run(&format!("{}{}", &text[..cut], &text[cut + 9..])).unwrap_err();
    assert_eq!(err.code, npu_sim::Code::Race, "{}", err.message);
}

#[test]
fn per_row_outputs_wait_in_ub_for_the_core_s_rows() {
    use vector::program::RowStores;
    // each row's mean and reciprocal standard deviation are f32 outputs too
    let text = example("layernorm-train.pk");
    // Groups of per-row f32 outputs stored group by group start on 8 rows (32-byte
    // blocks), too many for rows this long to stay whole in UB. Kept for all the core's
    // rows and stored once, they let groups of a row or two stay whole: every case runs in
    // groups of fewer than 8 rows, of whole rows (`None` below) or in column chunks with
    // the inputs whole per group (`Some(true)`) or streamed. Cores with fewer rows than the
    // others and none (37 rows: 8 on four cores, 5 on one), and slots with gaps between
    // groups (groups of 1 or 2 rows: an f32 slot is 8 elements). On `mini` (4 KiB of UB)
    // groups of 8 rows fit no way, and groups of 1 or 2 rows do (all refused before).
    let cases = [
        (vec![("B", 64), ("D", 4_096)], "ascend-like", None),
        (vec![("B", 37), ("D", 4_096)], "ascend-like", None),
        (vec![("B", 37), ("D", 3_000)], "ascend-like-halfgm", None),
        (vec![("B", 9), ("D", 48)], "mini", None),
        (vec![("B", 30), ("D", 40)], "mini", None),
        (vec![("B", 37), ("D", 9_000)], "ascend-like", Some(true)),
        (vec![("B", 13), ("D", 5_000)], "ascend-like-halfgm", None),
        (vec![("B", 5), ("D", 20_000)], "mini", Some(false)),
    ];
    for (sizes, machine, resident) in cases {
        let plan = differential(&text, &sizes, machine, Comparison::Tolerant);
        assert_eq!(
            (plan.chunks.map(|c| c.resident), plan.row_stores),
            (resident, Some(RowStores::OncePerCore)),
            "{machine} {sizes:?}: {plan:?}"
        );
        assert!(plan.group_rows < 8, "{machine} {sizes:?}: {plan:?}");
    }
    // the model's candidates store them both ways, and each way matches
    let k = kernel(&text);
    let (params, all) = sizes_of(&k, &[("B", 37), ("D", 9_000)]);
    let m = Machine::load("ascend-like").unwrap();
    let found = candidates(&k, &all, &m, true, 40, Offer::Tilings).unwrap();
    for way in ["stored once per core", "stored per group"] {
        let c = (found.iter())
            .find(|c| c.label.ends_with(way))
            .unwrap_or_else(|| panic!("no candidate {way}"));
        let (want, got) =
            common::interpreted_and_simulated(&k, &params, &c.compiled, &m, 1, &c.label);
        let bad = disagreements(&k, &want, &got, Comparison::Tolerant).unwrap();
        assert!(bad.is_empty(), "{}: {bad:?}", c.label);
    }
}

/// A row sum stores no tile, so the flag the dependence analysis places before its per-row
/// output's one store per core is all that orders the store after V's last sums, in whole
/// rows and in column chunks: without it, the simulator finds the race.
#[test]
fn the_once_per_core_store_waits_for_v() {
    use vector::program::RowStores;
    let k = kernel(ROW_SUM);
    let m = Machine::load("ascend-like").unwrap();
    // (enough rows that no team shares a group's chunks)
    for (rows, columns, chunked) in [(19, 30_000, false), (100, 40_001, true)] {
        let (_, all) = sizes_of(&k, &[("B", rows), ("L", columns)]);
        let c = compile(&k, &all, &m, true).unwrap();
        let codegen::npu::Plan::Vector(plan) = &c.plan else {
            panic!("{:?}", c.plan)
        };
        assert_eq!(plan.chunks.is_some(), chunked, "{plan:?}");
        assert_eq!(plan.row_stores, Some(RowStores::OncePerCore), "{plan:?}");
        let text = npu_sim::print(&c.program);
        // the flag the dependence analysis placed before the store, outside every loop
        let lines: Vec<&str> = text.lines().collect();
        let placed = |i: usize| {
            let l = lines[i];
            (l.starts_with("set_flag V, MTE3") || l.starts_with("wait_flag V, MTE3"))
                && i > 0
                && lines[i - 1].ends_with("before 'store s rows'")
        };
        assert_eq!((0..lines.len()).filter(|&i| placed(i)).count(), 2, "{text}");
        let run = |text: &str| {
            let p = npu_sim::assemble(text).unwrap();
            npu_sim::run(&p, &m, &Default::default(), 0).map(|_| ())
        };
        if let Err(e) = run(&text) {
            panic!("{columns} columns: {}", e.message);
        }
        let cut: String = (0..lines.len())
            .filter(|&i| !placed(i))
            .map(|i| format!("{}\n", lines[i]))
            .collect();
        let err = run(&cut).unwrap_err();
        assert_eq!(err.code, npu_sim::Code::Race, "{columns}: {}", err.message);
    }
}

#[test]
fn chunked_candidates_are_the_models_and_each_matches() {
    let text = example("softmax.pk");
    let k = kernel(&text);
    let sizes = [("B", 20), ("L", 16_504)];
    let (params, all) = sizes_of(&k, &sizes);
    let m = Machine::load("ascend-like").unwrap();
    let found = candidates(&k, &all, &m, true, 4, Offer::Tilings).unwrap();
    assert_eq!(found.len(), 4);
    let chosen = compile(&k, &all, &m, true).unwrap();
    assert_eq!(found[0].compiled.program, chosen.program);
    let mut programs = Vec::new();
    for c in &found {
        assert!(c.label.starts_with("chunks of "), "{}", c.label);
        assert!(
            !programs.contains(&&c.compiled.program),
            "{} twice",
            c.label
        );
        programs.push(&c.compiled.program);
        let (want, got) =
            common::interpreted_and_simulated(&k, &params, &c.compiled, &m, 1, &c.label);
        let bad = disagreements(&k, &want, &got, Comparison::Tolerant).unwrap();
        assert!(bad.is_empty(), "{}: {bad:?}", c.label);
    }
    // cheapest first by the model
    assert!(found.windows(2).all(|w| w[0].predicted <= w[1].predicted));
}

#[test]
fn chunked_rows_refuse_what_cannot_stay_in_a_pass() {
    // a tile computed in one pass and read in the next would have to go through GM
    let tile = "kernel k(X: f32[B, L]) -> (Y: f32[B, L]) params B = 4, L = 100000 {
                  let t: f32[B, L]; let s: f32[B];
                  t[b, l] = X[b, l] * 2.0;
                  s[b] = sum(l) t[b, l];
                  Y[b, l] = t[b, l] / s[b];
                }";
    match refusal(tile, true) {
        NpuError::Unsupported(why) => assert!(
            why.contains("no group of rows fits")
                && why.contains("in column chunks: statement S")
                && why.contains("reads `t` in a later pass"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    // an in-out tile streamed chunk by chunk whose rows share 32-byte blocks: a chunk's
    // load would race with the previous chunk's store
    let inout = "kernel k(Z: inout f32[B, L]) params B = 4, L = 100001 {
                   let t: f32[B];
                   t[b] = sum(l) Z[b, l];
                   Z[b, l] = Z[b, l] / t[b];
                 }";
    match refusal(inout, true) {
        NpuError::Unsupported(why) => assert!(
            why.contains(
                "inputs cannot come chunk by chunk: `Z` is read and written in rows that share 32-byte blocks"
            ),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    // a per-row input is loaded with each chunk, not between passes
    let row_input = "kernel k(X: f32[B, L], g: f32[B]) -> (Y: f32[B, L]) params B = 4, L = 100000 {
                       let s: f32[B];
                       s[b] = g[b] * 2.0;
                       Y[b, l] = X[b, l] * s[b];
                     }";
    match refusal(row_input, true) {
        NpuError::Unsupported(why) => {
            assert!(
                why.contains("reads `g`, an input per row, outside the column loop"),
                "{why}"
            )
        }
        other => panic!("{other:?}"),
    }
}

mod random_sizes {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 20, ..ProptestConfig::default() })]

        /// Random rows and columns on the three presets: softmax, layernorm, a broadcast
        /// kernel and the training layernorm (per-row outputs) match the interpreter, or no
        /// group fits UB and the kernel is refused with that reason.
        #[test]
        fn any_size_matches_or_is_refused(
            rows in 1i64..40, cols in 1i64..400, which in 0usize..4, machine in 0usize..3
        ) {
            let (text, names, comparison) = [
                (example("softmax.pk"), ("B", "L"), Comparison::Tolerant),
                (example("layernorm.pk"), ("B", "D"), Comparison::Tolerant),
                (SCALE_BIAS_RELU.to_string(), ("M", "N"), Comparison::Exact),
                (example("layernorm-train.pk"), ("B", "D"), Comparison::Tolerant),
            ][which].clone();
            let sizes = [(names.0, rows), (names.1, cols)];
            let k = kernel(&text);
            let (_, all) = sizes_of(&k, &sizes);
            let m = Machine::load(PRESETS[machine]).unwrap();
            match vector::compile(&k, &all, &m, true) {
                Ok(_) => {
                    differential(&text, &sizes, PRESETS[machine], comparison);
                }
                Err(NpuError::Unsupported(why)) => prop_assert!(why.contains("no group of rows fits"), "{why}"),
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }
    }
}

mod random_long_rows {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        /// Rows too long for `mini`'s 4 KiB of UB, at random sizes: softmax, layernorm, the
        /// broadcast kernel, a softmax with per-row outputs and an in-out tile, a row sum
        /// and the training layernorm (per-row outputs) match the interpreter in column
        /// chunks, or nothing fits and the kernel is refused saying so.
        #[test]
        fn long_rows_match_or_are_refused(
            rows in 1i64..12, cols in 300i64..3000, blocks in any::<bool>(), which in 0usize..6
        ) {
            // rows of whole 32-byte blocks deal groups of any rows; others groups of 8
            let cols = if blocks { cols / 8 * 8 } else { cols };
            // the row sum needs least UB: a row of 300 f16 values fits whole (found with
            // PROPTEST_CASES=400), so its rows are 4 times as long
            let cols = if which == 4 { 4 * cols } else { cols };
            let (text, names, comparison) = [
                (example("softmax.pk"), ("B", "L"), Comparison::Tolerant),
                (example("layernorm.pk"), ("B", "D"), Comparison::Tolerant),
                (SCALE_BIAS_RELU.to_string(), ("M", "N"), Comparison::Exact),
                (SOFTMAX_ROWS_OUT.to_string(), ("B", "L"), Comparison::Tolerant),
                (ROW_SUM.to_string(), ("B", "L"), Comparison::Tolerant),
                (example("layernorm-train.pk"), ("B", "D"), Comparison::Tolerant),
            ][which].clone();
            let sizes = [(names.0, rows), (names.1, cols)];
            let k = kernel(&text);
            let (_, all) = sizes_of(&k, &sizes);
            match vector::compile(&k, &all, &Machine::load("mini").unwrap(), true) {
                Ok((_, plan)) => {
                    prop_assert!(plan.chunks.is_some(), "{plan:?}");
                    differential(&text, &sizes, "mini", comparison);
                }
                Err(NpuError::Unsupported(why)) => prop_assert!(
                    why.contains("no group of rows fits") && why.contains("in column chunks"),
                    "{why}"
                ),
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }
    }
}

mod random_expressions {
    use super::*;
    use proptest::prelude::*;

    /// A random f32 expression over a tile `A`, a tile `Z` of f16, a per-row `r`, a
    /// per-column `c`, a scalar `s` and literals, with every operation the vector path
    /// computes exactly (no `exp`/`log`, whose last bit may differ).
    fn expression() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("A[b, l]".to_string()),
            Just("f32(Z[b, l])".to_string()),
            Just("r[b]".to_string()),
            Just("c[l]".to_string()),
            Just("s".to_string()),
            (-8i32..8).prop_map(|k| format!("{:.2}", k as f64 * 0.25)),
        ];
        leaf.prop_recursive(4, 24, 3, |e| {
            prop_oneof![
                (e.clone(), e.clone(), 0usize..6).prop_map(|(a, b, op)| match op {
                    0 => format!("({a} + {b})"),
                    1 => format!("({a} - {b})"),
                    2 => format!("({a} * {b})"),
                    3 => format!("({a} / {b})"),
                    4 => format!("max({a}, {b})"),
                    _ => format!("min({a}, {b})"),
                }),
                e.clone().prop_map(|a| format!("-({a})")),
                e.clone().prop_map(|a| format!("sqrt(abs({a}))")),
                e.clone().prop_map(|a| format!("f32(f16({a}))")),
                (e.clone(), e.clone(), e)
                    .prop_map(|(a, b, c)| format!("({a} > A[b, l] ? {b} : {c})")),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random element-wise expressions with tiles, per-row and per-column operands,
        /// scalars, constants, conversions and selections, at random sizes: the same bits as
        /// the interpreter (NaN where it has NaN).
        #[test]
        fn random_element_wise_expressions_match_bit_for_bit(
            e in expression(), rows in 1i64..24, cols in 1i64..150, tiny in any::<bool>()
        ) {
            let text = format!(
                "kernel e(A: f32[B, L], Z: f16[B, L], r: f32[B], c: f32[L], s: f32)
                   -> (Y: f32[B, L]) params B = 4, L = 4 {{ Y[b, l] = {e}; }}"
            );
            let (machine, cols) = if tiny { ("mini", cols.min(24)) } else { ("ascend-like", cols) };
            let k = kernel(&text);
            let sizes = [("B", rows), ("L", cols)];
            let (_, all) = sizes_of(&k, &sizes);
            match vector::compile(&k, &all, &Machine::load(machine).unwrap(), true) {
                Ok(_) => {
                    differential(&text, &sizes, machine, Comparison::Exact);
                }
                Err(NpuError::Unsupported(why)) => prop_assert!(why.contains("no group of rows fits"), "{why}"),
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }
    }
}
