//! Mutation test of the mapping verifier: correct mappings are perturbed at random (a
//! constant, a variable, a stride, two indices swapped, a loop dropped from a group or two
//! loops swapped in one, a tail left unpadded), and a brute-force oracle, written
//! independently in plain Rust over every instance, decides whether the mutant still
//! computes the statement. Every mutant that changes the computation must be refuted by
//! Z3, and every refutation must be one the oracle confirms.

use frontend::ir::Kernel;
use frontend::source::SourceFile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scheduler::mapping::conditions::Condition;
use scheduler::mapping::enumerate;
use scheduler::mapping::intrinsic::{bind, Intrinsic};
use scheduler::mapping::physical::{Layout, Mapping, Pad};
use scheduler::mapping::qexpr::QExpr;
use scheduler::mapping::software::{Sizes, Software};
use scheduler::mapping::verify::{Options, Outcome};
use scheduler::target::Target;
use std::collections::{BTreeMap, HashMap, HashSet};

const KERNELS: [&str; 3] = [
    "kernel gemm(A: f16[M, K], B: f16[K, N]) -> (C: f32[M, N]) params M = 20, N = 18, K = 33
     { C[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]); }",
    "kernel conv1d(I: f16[N, C, H], Wt: f16[K, C, R]) -> (O: f32[N, K, H - R + 1])
     params N = 2, C = 5, H = 9, K = 3, R = 3
     { O[n, k, p] = sum(c, r) f32(I[n, c, p + r]) * f32(Wt[k, c, r]); }",
    "kernel bmm(A: f16[G, M, K], B: f16[G, K, N]) -> (C: f32[G, M, N]) params G = 3, M = 17, N = 5, K = 7
     { C[g, i, j] = sum(k) f32(A[g, i, k]) * f32(B[g, k, j]); }",
];

fn compile(text: &str) -> Kernel {
    frontend::compile(&SourceFile::new("t.pk", text.to_string()))
        .unwrap()
        .remove(0)
}

/// Every instance of the statement (small shapes).
fn instances(sw: &Software, params: &BTreeMap<String, i64>) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for l in &sw.loops {
        let mut next = Vec::new();
        for prefix in out {
            let (lo, hi) = (
                sw.eval_aff(&l.lower, &prefix_pad(&prefix, sw), params),
                sw.eval_aff(&l.upper, &prefix_pad(&prefix, sw), params),
            );
            for v in (lo..hi).step_by(l.step as usize) {
                let mut p = prefix.clone();
                p.push(v);
                next.push(p);
            }
        }
        out = next;
    }
    out.retain(|v| sw.contains(v, params));
    out
}

fn prefix_pad(prefix: &[i64], sw: &Software) -> Vec<i64> {
    let mut v = prefix.to_vec();
    v.resize(sw.loops.len(), 0);
    v
}

/// A call (outer loop values, tiles) and an element or a position within it.
type CallKey = (Vec<i64>, Vec<i64>, Vec<i64>);

/// The oracle: which of conditions 1 to 5 the mutant violates, by enumeration.
fn oracle(
    sw: &Software,
    intr: &Intrinsic,
    binding: &[frontend::ir::Access],
    m: &Mapping,
    params: &BTreeMap<String, i64>,
) -> Vec<Condition> {
    let mut bad = Vec::new();
    let layout = Layout::new(sw, &m.groups).unwrap();
    let extents: Vec<i64> = layout
        .extents
        .iter()
        .map(|e| e.eval(&|p| params[p]))
        .collect();
    let all = instances(sw, params);
    let placed: Vec<_> = all
        .iter()
        .map(|v| m.place(&layout, intr, v, params))
        .collect();
    if placed
        .iter()
        .any(|p| p.fused.iter().zip(&extents).any(|(f, e)| *f < 0 || f >= e))
    {
        bad.push(Condition::Coverage);
    }
    let distinct: HashSet<(Vec<i64>, Vec<i64>)> = placed
        .iter()
        .map(|p| (p.outer.clone(), p.fused.clone()))
        .collect();
    if distinct.len() != all.len() {
        bad.push(Condition::Injective);
    }
    let wrong = (all.iter().zip(&placed)).any(|(v, p)| {
        (0..intr.operands.len()).any(|o| {
            m.operands[o].tensor != binding[o].array
                || m.held(sw, &layout, intr, o, p, params) != sw.element_at(&binding[o], v, params)
        })
    });
    if wrong {
        bad.push(Condition::Operands);
    }
    // kinds: within a call, element <-> output position must be a bijection
    let out_loops: Vec<usize> = intr.loops_of(intr.output).collect();
    let mut pos_of: HashMap<CallKey, HashSet<Vec<i64>>> = HashMap::new();
    let mut elem_of: HashMap<CallKey, HashSet<Vec<i64>>> = HashMap::new();
    for (v, p) in all.iter().zip(&placed) {
        let e = sw.element_at(&sw.stmt.target, v, params);
        let pos: Vec<i64> = out_loops.iter().map(|&x| p.point[x]).collect();
        pos_of
            .entry((p.outer.clone(), p.tiles.clone(), e.clone()))
            .or_default()
            .insert(pos.clone());
        elem_of
            .entry((p.outer.clone(), p.tiles.clone(), pos))
            .or_default()
            .insert(e);
    }
    if pos_of.values().chain(elem_of.values()).any(|s| s.len() > 1) {
        bad.push(Condition::Kinds);
    }
    // padding: a padded point of a real call, stored, with no identity-padded factor
    let outers: HashSet<Vec<i64>> = placed.iter().map(|p| p.outer.clone()).collect();
    let tiles: Vec<i64> = extents
        .iter()
        .zip(&intr.loops)
        .map(|(e, x)| (e + x.extent - 1) / x.extent)
        .collect();
    let leaks = !outers.is_empty() && {
        let mut any = false;
        let mut fused = vec![0i64; intr.loops.len()];
        let total: i64 = tiles
            .iter()
            .zip(&intr.loops)
            .map(|(t, x)| t * x.extent)
            .product();
        for mut k in 0..total {
            for x in (0..intr.loops.len()).rev() {
                let span = tiles[x] * intr.loops[x].extent;
                fused[x] = k % span;
                k /= span;
            }
            let within = |x: usize| fused[x] < extents[x];
            let padded = (0..fused.len()).any(|x| !within(x));
            let stored = intr.loops_of(intr.output).all(within);
            let cancelled = intr
                .annihilators
                .iter()
                .any(|&o| m.operands[o].pad == Pad::Identity && !intr.loops_of(o).all(within));
            if padded && stored && !cancelled {
                any = true;
                break;
            }
        }
        any
    };
    if leaks {
        bad.push(Condition::Padding);
    }
    bad
}

/// A random subexpression changed.
fn mutate_expr(e: &QExpr, rng: &mut ChaCha8Rng, vars: &[String]) -> QExpr {
    match e {
        QExpr::Sum(ts) if rng.random_bool(0.7) => {
            let k = rng.random_range(0..ts.len());
            let mut ts = ts.clone();
            ts[k] = mutate_expr(&ts[k], rng, vars);
            ts.into_iter().reduce(QExpr::sum).unwrap_or(QExpr::Const(0))
        }
        QExpr::Scale(c, a) if rng.random_bool(0.5) => QExpr::scale(*c, mutate_expr(a, rng, vars)),
        QExpr::Div(a, c) if rng.random_bool(0.5) => QExpr::floor_div(mutate_expr(a, rng, vars), *c),
        QExpr::Mod(a, c) if rng.random_bool(0.5) => QExpr::modulo(mutate_expr(a, rng, vars), *c),
        QExpr::Div(a, c) => QExpr::floor_div(
            (**a).clone(),
            c + if rng.random_bool(0.5) { 1 } else { -1 }.max(1 - c),
        ),
        QExpr::Mod(a, c) => QExpr::modulo((**a).clone(), (c + 1).max(2)),
        other => match rng.random_range(0..4) {
            0 => QExpr::sum(
                other.clone(),
                QExpr::Const(if rng.random_bool(0.5) { 1 } else { -1 }),
            ),
            1 => QExpr::scale(2, other.clone()),
            2 => QExpr::var(&vars[rng.random_range(0..vars.len())]),
            _ => QExpr::Const(0),
        },
    }
}

fn mutate(m: &Mapping, rng: &mut ChaCha8Rng, vars: &[String]) -> Mapping {
    let mut m = m.clone();
    match rng.random_range(0..6) {
        0 | 1 => {
            let o = rng.random_range(0..m.operands.len());
            let d = rng.random_range(0..m.operands[o].index.len());
            m.operands[o].index[d] = mutate_expr(&m.operands[o].index[d], rng, vars);
        }
        2 => {
            let o = rng.random_range(0..m.operands.len());
            let n = m.operands[o].index.len();
            let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
            m.operands[o].index.swap(a, b);
        }
        3 => {
            let x = rng.random_range(0..m.groups.len());
            if m.groups[x].len() > 1 {
                let k = rng.random_range(0..m.groups[x].len());
                m.groups[x].remove(k);
            }
        }
        4 => {
            let x = rng.random_range(0..m.groups.len());
            let n = m.groups[x].len();
            let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
            m.groups[x].swap(a, b);
        }
        _ => {
            let o = rng.random_range(0..m.operands.len());
            m.operands[o].pad = Pad::Garbage;
        }
    }
    m
}

#[test]
fn every_mutant_that_changes_the_computation_is_refuted_and_every_refutation_is_real() {
    let target = Target::npu("ascend-like").unwrap();
    let lib = scheduler::mapping::library::builtin(&target).unwrap();
    let intr = lib.into_iter().find(|i| i.name == "mmad_f16").unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let (mut changed, mut total) = (0, 0);
    for text in KERNELS {
        let k = compile(text);
        let stmts = k.statements();
        let ctx = stmts.last().unwrap();
        let params: BTreeMap<String, i64> = k
            .params
            .iter()
            .map(|p| (p.name.clone(), p.default.unwrap()))
            .collect();
        let sw = Software::new(&k, ctx, Sizes::Concrete(params.clone()));
        let binding = bind(&intr, ctx.stmt, &k).unwrap();
        for groups in enumerate::mappings(&sw, &intr, &binding) {
            let good = Mapping::derive(&sw, &intr, &binding, groups).unwrap();
            assert!(oracle(&sw, &intr, &binding, &good, &params).is_empty());
            let mut vars: Vec<String> = intr.loops.iter().map(|l| l.name.clone()).collect();
            let layout = Layout::new(&sw, &good.groups).unwrap();
            vars.extend(layout.outer.iter().map(|&l| sw.loops[l].var.clone()));
            for _ in 0..60 {
                let mutant = mutate(&good, &mut rng, &vars);
                if mutant == good {
                    continue;
                }
                total += 1;
                let expected = oracle(&sw, &intr, &binding, &mutant, &params);
                let r = scheduler::mapping::check(
                    &sw,
                    &intr,
                    &binding,
                    &mutant,
                    &target,
                    true,
                    &Options::default(),
                )
                .unwrap();
                let found: Vec<Condition> = r
                    .refuted()
                    .into_iter()
                    .filter(|c| c.number() <= 5)
                    .collect();
                assert!(r
                    .verdicts
                    .iter()
                    .all(|v| !matches!(v.outcome, Outcome::Unknown(_))));
                assert_eq!(found, expected, "mutant of {}:\n{mutant:?}", k.name);
                if !expected.is_empty() {
                    changed += 1;
                }
            }
        }
    }
    assert!(total >= 250, "only {total} mutants");
    assert!(
        changed * 2 >= total,
        "only {changed} of {total} mutants change the computation"
    );
    eprintln!("{changed} of {total} mutants change the computation; all refuted, by the oracle's conditions");
}
