//! Pluto's `--rar` ([`Options::rar`]): read-after-read dependences in the objective only.
//!
//! On mvt, with `--fuse max`, the objective gives Pluto's PLDI'08 result (Pluto's own
//! `examples/mvt`, built with `--rar`): the two products fused, the second interchanged, so
//! that both statements walk `A` along the same dimension (`x1[i] += A[i][j] * y1[j]` and
//! `x2[j] += A[i][j] * y2[i]`). The input dependences never make a schedule illegal.

use poly::deps::{Dependences, Reuse};
use poly::isl::Ctx;
use poly::model::Program;
use poly::order::AnySchedule;
use scheduler::legality::check;
use scheduler::pluto::Pluto;
use scheduler::{AffineSchedule, FusePolicy, Options, Problem};
use std::collections::BTreeMap;

fn program(example: &str) -> Program {
    let path = format!("{}/../examples/{example}", env!("CARGO_MANIFEST_DIR"));
    let kernels = frontend::compile(&frontend::read_source(&path).unwrap()).unwrap();
    Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap()
}

/// Pluto's schedule of `program` under `--fuse max`, with or without `--rar`, checked legal
/// as a relation and as a tree.
fn mvt(rar: bool) -> (Program, AffineSchedule) {
    let p = program("polybench/mvt.pk");
    let deps = Dependences::compute(&p).unwrap();
    let options = Options {
        fuse: FusePolicy::Max,
        rar,
        ..Options::default()
    };
    let problem = Problem {
        program: &p,
        deps: &deps,
        options: options.clone(),
    };
    let s = Pluto::default().affine(&problem).unwrap();
    let relation = AnySchedule::Relation(s.to_union_map(&p).unwrap());
    let tree = AnySchedule::Tree(s.to_tree(&p).unwrap());
    for schedule in [relation, tree] {
        assert!(check(&p, &deps, &schedule, &options).unwrap().is_legal());
    }
    (p, s)
}

/// The iterator coefficients of statement `stmt` on each loop row.
fn loop_rows(s: &AffineSchedule, stmt: usize) -> Vec<Vec<i64>> {
    (s.rows.iter())
        .filter(|r| matches!(r.kind, scheduler::RowKind::Loop { .. }))
        .map(|r| r.stmts[stmt].iterators.clone())
        .collect()
}

#[test]
fn mvt_fuses_with_the_second_product_interchanged() {
    let (_, s) = mvt(true);
    // One band of two loops over both statements: S0 (i, j), S1 (j, i).
    assert_eq!(s.bands.len(), 1, "{s:?}");
    assert_eq!(s.bands[0].len, 2);
    assert_eq!(loop_rows(&s, 0), vec![vec![1, 0], vec![0, 1]]);
    assert_eq!(loop_rows(&s, 1), vec![vec![0, 1], vec![1, 0]]);
    // No scalar row separates them before the loops (fused).
    assert_eq!(s.bands[0].start, 0);
}

#[test]
fn without_rar_mvt_is_fused_in_its_own_loop_order() {
    let (_, s) = mvt(false);
    assert_eq!(loop_rows(&s, 0), vec![vec![1, 0], vec![0, 1]]);
    assert_eq!(loop_rows(&s, 1), vec![vec![1, 0], vec![0, 1]]);
}

#[test]
fn input_dependences_never_make_a_schedule_illegal() {
    // mvt's two nests share no written array: running the second product first is legal,
    // though it reverses every input dependence from S0's reads of `A` to S1's.
    let p = program("polybench/mvt.pk");
    let deps = Dependences::compute(&p).unwrap();
    let swapped = p
        .ctx
        .union_map("[N] -> { S0[i, j] -> [1, i, j]; S1[i, j] -> [0, i, j] }")
        .unwrap();
    let input = Reuse::compute(&p).unwrap().input;
    let between = p
        .ctx
        .union_map("[N] -> { S0[i, j] -> S1[i', j'] }")
        .unwrap();
    let shared_reads = input.intersect(&between).unwrap();
    let forward = swapped.lex_lt_union_map(&swapped).unwrap();
    assert!(
        !shared_reads.is_empty().unwrap(),
        "S0 -> S1 input dependences"
    );
    assert!(
        (shared_reads.intersect(&forward).unwrap().is_empty()).unwrap(),
        "every one reversed"
    );
    for rar in [false, true] {
        let options = Options {
            rar,
            ..Options::default()
        };
        let report = check(&p, &deps, &AnySchedule::Relation(swapped.clone()), &options);
        assert!(report.unwrap().is_legal(), "rar: {rar}");
    }
}
