//! Intrinsic mapping: the enumeration's counts, every candidate proved by Z3, wrong
//! mappings refuted by the right condition, counterexamples replayed, Z3 and isl agreeing.

use frontend::ir::Kernel;
use frontend::source::SourceFile;
use scheduler::mapping::conditions::Setup;
use scheduler::mapping::enumerate;
use scheduler::mapping::intrinsic::{bind, Intrinsic};
use scheduler::mapping::physical::{Layout, Mapping};
use scheduler::mapping::software::{Sizes, Software};
use scheduler::mapping::verify::{verify, Options, Outcome};
use scheduler::target::Target;
use std::collections::BTreeMap;

fn compile(text: &str) -> Kernel {
    let file = SourceFile::new("test.pk", text.to_string());
    frontend::compile(&file).expect("compiles").remove(0)
}

/// The built-in 16x16x16 matrix intrinsic of `ascend-like`.
fn mmad() -> Intrinsic {
    let target = Target::npu("ascend-like").unwrap();
    let lib = scheduler::mapping::library::builtin(&target).unwrap();
    lib.into_iter().find(|i| i.name == "mmad_f16").unwrap()
}

fn defaults(k: &Kernel) -> BTreeMap<String, i64> {
    k.params
        .iter()
        .map(|p| (p.name.clone(), p.default.unwrap_or(1)))
        .collect()
}

/// Calls `f` with the last statement of the kernel in `text` (a reduction's update) at its
/// default sizes, the matrix intrinsic, the statement's accesses bound to its operands, and
/// the `ascend-like` target.
fn with_last<R>(
    text: &str,
    f: impl FnOnce(&Software, &Intrinsic, &[frontend::ir::Access], &Target) -> R,
) -> R {
    let k = compile(text);
    let intr = mmad();
    let target = Target::npu("ascend-like").unwrap();
    let stmts = k.statements();
    let ctx = stmts.last().unwrap();
    let sw = Software::new(&k, ctx, Sizes::Concrete(defaults(&k)));
    let binding = bind(&intr, ctx.stmt, &k).expect("matches");
    f(&sw, &intr, &binding, &target)
}

/// The mappings of the kernel's last statement (a reduction's update) and whether each is proved.
fn mappings(text: &str, allow: bool) -> Vec<(Vec<Vec<String>>, bool)> {
    with_last(text, |sw, intr, binding, target| {
        enumerate::mappings(sw, intr, binding)
            .into_iter()
            .map(|groups| {
                let names = groups
                    .iter()
                    .map(|g| g.iter().map(|&l| sw.loops[l].var.clone()).collect())
                    .collect();
                let m = Mapping::derive(sw, intr, binding, groups).unwrap();
                let layout = Layout::new(sw, &m.groups).unwrap();
                let setup = Setup {
                    sw,
                    intr,
                    binding,
                    mapping: &m,
                    layout: &layout,
                    target,
                    allow_reorder: allow,
                };
                let r = verify(&setup, &Options::default());
                if !r.proved() {
                    for v in &r.verdicts {
                        if let Outcome::Refuted(c) = &v.outcome {
                            eprintln!("{:?} {}: {}", names, v.condition, c.describe(&setup));
                        }
                    }
                }
                (names, r.proved())
            })
            .collect()
    })
}

const CONV1D: &str = "kernel conv1d(I: f16[N, C, H], Wt: f16[K, C, R]) -> (O: f32[N, K, H - R + 1])
  params N = 2, C = 5, H = 9, K = 3, R = 3
{ O[n, k, p] = sum(c, r) f32(I[n, c, p + r]) * f32(Wt[k, c, r]); }";

const CONV2D: &str =
    "kernel conv2d(I: f16[N, C, H, W], Wt: f16[K, C, R, S]) -> (O: f32[N, K, H - R + 1, W - S + 1])
  params N = 2, C = 3, H = 6, W = 7, K = 5, R = 3, S = 2
{ O[n, k, p, q] = sum(c, r, s) f32(I[n, c, p + r, q + s]) * f32(Wt[k, c, r, s]); }";

const CONV3D: &str = "kernel conv3d(I: f16[N, C, D, H, W], Wt: f16[K, C, T, R, S]) -> (O: f32[N, K, D - T + 1, H - R + 1, W - S + 1])
  params N = 1, C = 2, D = 4, H = 4, W = 5, K = 3, T = 2, R = 2, S = 3
{ O[n, k, d, p, q] = sum(c, t, r, s) f32(I[n, c, d + t, p + r, q + s]) * f32(Wt[k, c, t, r, s]); }";

const GEMM: &str =
    "kernel gemm(A: f16[M, K], B: f16[K, N]) -> (C: f32[M, N]) params M = 20, N = 18, K = 33
{ C[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]); }";

const BMM: &str = "kernel bmm(A: f16[G, M, K], B: f16[G, K, N]) -> (C: f32[G, M, N]) params G = 2, M = 20, N = 18, K = 33
{ C[g, i, j] = sum(k) f32(A[g, i, k]) * f32(B[g, k, j]); }";

#[test]
fn counts_match_amos_and_every_candidate_is_proved() {
    for (text, count) in [
        (GEMM, 1),
        (BMM, 1),
        (CONV1D, 6),
        (CONV2D, 35),
        (CONV3D, 180),
    ] {
        let ms = mappings(text, true);
        assert_eq!(ms.len(), count, "{text}");
        assert!(ms.iter().all(|(_, ok)| *ok), "{ms:?}");
    }
}

use scheduler::mapping::conditions::{Condition, Violation};
use scheduler::mapping::text;
use scheduler::mapping::verify::{Counterexample, Report};

/// Checks a mapping written in the text format against the kernel's last statement.
fn check_text(kernel: &str, mapping: &str, allow: bool, second: bool) -> Report {
    with_last(kernel, |sw, intr, binding, target| {
        let parsed = text::parse(mapping).unwrap();
        let m = text::resolve(&parsed, sw, intr).unwrap();
        let options = Options {
            second_opinion: second,
            ..Options::default()
        };
        let r = scheduler::mapping::check(sw, intr, binding, &m, target, allow, &options).unwrap();
        assert!(
            r.disagreements.is_empty(),
            "Z3 and isl disagree: {:?}",
            r.disagreements
        );
        r
    })
}

fn refuted(r: &Report, c: Condition) -> &Counterexample {
    match r.outcome(c) {
        Outcome::Refuted(cx) => cx,
        other => panic!("{c} is not refuted: {other:?}\n{r:#?}"),
    }
}

const GEMM_OK: &str = "statement S1
intrinsic mmad_f16
i1 <- i
i2 <- j
r1 <- k
A <- A[i1, r1]
B <- B[r1, i2]
C <- C[i1, i2]
";

#[test]
fn a_hand_written_gemm_mapping_is_proved_by_both_solvers() {
    let r = check_text(GEMM, GEMM_OK, true, true);
    assert!(r.proved(), "{r:#?}");
}

#[test]
fn batch_and_output_channel_on_one_intrinsic_loop_is_refuted_by_the_operands() {
    // i2 receives the batch g and the output column j (N = 18): B and C can follow, but A
    // is indexed by (i1, r1) and cannot see the batch its rows belong to
    let m = "statement S1\nintrinsic mmad_f16\ni1 <- i\ni2 <- g, j\nr1 <- k\n\
             A <- A[i2 / 18, i1, r1]\nB <- B[i2 / 18, r1, i2 % 18]\nC <- C[i2 / 18, i1, i2 % 18]\n";
    let r = check_text(BMM, m, true, true);
    let cx = refuted(&r, Condition::Operands);
    assert_eq!(cx.what, Violation::WrongElement);
    assert_eq!(cx.operand, Some(0), "{}", cx.text);
    assert!(cx.text.contains("operand A"), "{}", cx.text);
    // the same loops on their own intrinsic loops are fine
    let ok = "statement S1\nintrinsic mmad_f16\ni1 <- i\ni2 <- j\nr1 <- k\n\
              A <- A[g, i1, r1]\nB <- B[g, r1, i2]\nC <- C[g, i1, i2]\n";
    assert!(check_text(BMM, ok, true, true).proved());
}

#[test]
fn a_spatial_loop_on_the_reduction_dimension_is_refuted_by_the_kinds() {
    let m = "statement S1\nintrinsic mmad_f16\ni1 <- i\ni2 <- j\nr1 <- g\n\
             A <- A[r1, i1, k]\nB <- B[r1, k, i2]\nC <- C[r1, i1, i2]\n";
    let r = check_text(BMM, m, true, true);
    assert_eq!(
        refuted(&r, Condition::Kinds).what,
        Violation::MixedAccumulation
    );
}

const CONV1D_STRIDE2: &str =
    "kernel conv1d(I: f16[N, C, H], Wt: f16[K, C, R]) -> (O: f32[N, K, floor((H - R) / 2) + 1])
  params N = 2, C = 5, H = 21, K = 3, R = 3
{ O[n, k, p] = sum(c, r) f32(I[n, c, 2 * p + r]) * f32(Wt[k, c, r]); }";

#[test]
fn a_stride_two_convolution_mapped_as_stride_one_is_refuted_with_a_replayable_counterexample() {
    let mapping = |a: &str| {
        format!(
            "statement S1\nintrinsic mmad_f16\ni1 <- p\ni2 <- k\nr1 <- c\n\
             A <- I[n, r1, {a}]\nB <- Wt[i2, r1, r]\nC <- O[n, i2, i1]\n"
        )
    };
    assert!(check_text(CONV1D_STRIDE2, &mapping("2 * i1 + r"), true, true).proved());
    let r = check_text(CONV1D_STRIDE2, &mapping("i1 + r"), true, true);
    let cx = refuted(&r, Condition::Operands);
    assert_eq!(cx.operand, Some(0));
    // replay: the instance reads I[n, c, 2p + r], the operand holds I[n, c, p + r]
    let (n, p, c, r_) = (
        cx.instances[0][0],
        cx.instances[0][2],
        cx.instances[0][3],
        cx.instances[0][4],
    );
    assert_ne!(p + r_, 2 * p + r_, "{}", cx.text);
    assert!(
        cx.text.contains(&format!("I[{n}, {c}, {}]", p + r_)),
        "{}",
        cx.text
    );
    assert!(
        cx.text.contains(&format!("I[{n}, {c}, {}]", 2 * p + r_)),
        "{}",
        cx.text
    );
}

#[test]
fn a_tail_padded_with_garbage_is_refuted_by_the_padding_condition() {
    // K = 33: the last tile of r1 holds one real value and fifteen padded ones
    let garbage = GEMM_OK
        .replace("A[i1, r1]", "A[i1, r1] pad garbage")
        .replace("B[r1, i2]", "B[r1, i2] pad garbage");
    let r = check_text(GEMM, &garbage, true, true);
    assert_eq!(
        refuted(&r, Condition::Padding).what,
        Violation::PaddingLeaks
    );
    assert_eq!(r.refuted(), vec![Condition::Padding]);
    // padding only one factor with the identity is enough
    let one = GEMM_OK.replace("B[r1, i2]", "B[r1, i2] pad garbage");
    assert!(check_text(GEMM, &one, true, true).proved());
}

#[test]
fn a_block_one_row_too_big_for_l0a_is_refuted_by_the_capacity_condition() {
    // 128 x 128 f16, double-buffered: exactly L0A's 64 KiB
    let fits = format!("{GEMM_OK}blocks i1 = 128, i2 = 16, r1 = 128\n");
    assert!(check_text(GEMM, &fits, true, true).proved());
    for rows in [129, 144] {
        let big = format!("{GEMM_OK}blocks i1 = {rows}, i2 = 16, r1 = 128\n");
        let r = check_text(GEMM, &big, true, true);
        let cx = refuted(&r, Condition::Capacity);
        assert_eq!(cx.operand, Some(0), "{}", cx.text);
        assert_eq!(r.refuted(), vec![Condition::Capacity]);
    }
}

#[test]
fn without_permission_every_float_convolution_mapping_is_refuted_and_each_counterexample_replays() {
    let k = compile(CONV2D);
    let intr = mmad();
    let target = Target::npu("ascend-like").unwrap();
    let stmts = k.statements();
    let ctx = stmts.last().unwrap();
    let sizes = defaults(&k);
    let sw = Software::new(&k, ctx, Sizes::Concrete(sizes.clone()));
    let binding = bind(&intr, ctx.stmt, &k).unwrap();
    let all = enumerate::mappings(&sw, &intr, &binding);
    assert_eq!(all.len(), 35);
    for groups in all {
        let m = Mapping::derive(&sw, &intr, &binding, groups).unwrap();
        let layout = Layout::new(&sw, &m.groups).unwrap();
        let r = scheduler::mapping::check(
            &sw,
            &intr,
            &binding,
            &m,
            &target,
            false,
            &Options::default(),
        )
        .unwrap();
        assert_eq!(r.refuted(), vec![Condition::Reordering]);
        let cx = refuted(&r, Condition::Reordering);
        assert_eq!(cx.what, Violation::ReductionReordered);
        let (a, b) = (&cx.instances[0], &cx.instances[1]);
        assert_ne!(a, b);
        assert!(sw.contains(a, &sizes) && sw.contains(b, &sizes));
        let (pa, pb) = (
            m.place(&layout, &intr, a, &sizes),
            m.place(&layout, &intr, b, &sizes),
        );
        assert_eq!(
            (pa.outer, pa.tiles),
            (pb.outer, pb.tiles),
            "not one call: {}",
            cx.text
        );
        assert_eq!(
            sw.element_at(&ctx.stmt.target, a, &sizes),
            sw.element_at(&ctx.stmt.target, b, &sizes),
            "{}",
            cx.text
        );
    }
}

#[test]
fn z3_and_isl_agree_on_every_condition_of_the_corpus() {
    for kernel in [GEMM, BMM, CONV1D, CONV1D_STRIDE2] {
        with_last(kernel, |sw, intr, binding, target| {
            for groups in enumerate::mappings(sw, intr, binding) {
                let m = Mapping::derive(sw, intr, binding, groups).unwrap();
                for allow in [false, true] {
                    let options = Options {
                        second_opinion: true,
                        ..Options::default()
                    };
                    let r =
                        scheduler::mapping::check(sw, intr, binding, &m, target, allow, &options)
                            .unwrap();
                    assert!(r.disagreements.is_empty(), "{:?}", r.disagreements);
                }
            }
        })
    }
}

#[test]
fn the_built_in_library_of_ascend_like_checks_and_matches_the_kernels_it_should() {
    use scheduler::mapping::library;
    let target = Target::npu("ascend-like").unwrap();
    let lib = library::builtin(&target).unwrap();
    let names: Vec<&str> = lib.iter().map(|i| i.name.as_str()).collect();
    assert!(
        names.contains(&"mmad_f16") && names.contains(&"mmad_i8") && names.contains(&"vredmax_f32"),
        "{names:?}"
    );
    let find = |n: &str| lib.iter().find(|i| i.name == n).unwrap();
    // i8 cube: 16 x 32 x 16, i32 accumulation
    assert_eq!(
        find("mmad_i8")
            .loops
            .iter()
            .map(|l| l.extent)
            .collect::<Vec<_>>(),
        vec![16, 16, 32]
    );
    // f16 vector lanes: 256 bytes per repeat
    assert_eq!(find("vadd_f16").loops[0].extent, 128);
    let k = compile(CONV2D);
    let stmts = k.statements();
    let matched: Vec<&str> = lib
        .iter()
        .filter(|i| bind(i, stmts.last().unwrap().stmt, &k).is_some())
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(matched, vec!["mmad_f16"]);
    let softmax = compile(
        "kernel sm(X: f32[B, L]) -> (Y: f32[B, L]) params B = 4, L = 100 {
        let m: f32[B];
        m[b] = max(l) X[b, l];
        Y[b, l] = exp(X[b, l] - m[b]);
    }",
    );
    let by_stmt: Vec<Vec<&str>> = softmax
        .statements()
        .iter()
        .map(|s| {
            lib.iter()
                .filter(|i| bind(i, s.stmt, &softmax).is_some())
                .map(|i| i.name.as_str())
                .collect()
        })
        .collect();
    assert!(
        by_stmt.iter().any(|m| m == &vec!["vredmax_f32"]),
        "{by_stmt:?}"
    );
}

#[test]
fn a_tier_the_machine_lacks_is_reported_with_its_position() {
    use scheduler::mapping::library;
    let target = Target::npu("ascend-like").unwrap();
    let file = SourceFile::new(
        "mine.pki",
        "intrinsic v(X: f16[8] @ UB) -> (Z: f16[8] @ L2) { Z[l] = X[l]; }",
    );
    let err = library::parse(&file, &target).unwrap_err().to_string();
    assert!(
        err.starts_with("mine.pki:1:45: `ascend-like` has no on-chip tier `L2`"),
        "{err}"
    );
}
