//! isl's AST generator must execute a schedule's instances in the schedule's order. isl 0.27
//! did not when it "shifted" statements with strided schedule dimensions to a common
//! offset: a statement that shares no outer schedule values with the reference statement got
//! an arbitrary offset and was then reordered with a third statement (found by the schedule
//! fuzzer, seed 20019, under Feautrier's scaled rows). The vendored isl carries the fix
//! (`vendor/README.md`); this test walks the generated AST and compares its order with the
//! schedule's.

use poly::isl::{ast, build_ast, AstOptions, Ctx};
use std::collections::HashMap;

/// Three statements whose second schedule dimension is strided by 2 with different
/// offsets: `S1` (odd) meets `S2` (even) only at `c0 = 2`, `S3` (even) meets `S2` only at
/// `c0 = 0`, and `S1` and `S3` never meet.
const SCHEDULE: &str = "{ domain: \"[N] -> { S3[i, j, k] : 0 <= i < N and 0 <= j < N and \
     k >= 0 and 2k <= -2 + N; S2[i, j, k] : 0 <= i < N and 0 <= j < N and k >= 0 and \
     2k <= -2 + N; S1[i, j] : 0 <= i < N and 0 <= j < N }\", child: { schedule: \"[N] -> \
     [{ S3[i, j, k] -> [(0)]; S2[i, j, k] -> [(2i - 2k)]; S1[i, j] -> [(2)] }, \
     { S3[i, j, k] -> [(-2j)]; S2[i, j, k] -> [(-2j)]; S1[i, j] -> [(-1 - 2j)] }, \
     { S3[i, j, k] -> [(1 - 2i + 2k)]; S2[i, j, k] -> [(0)]; S1[i, j] -> [(0)] }]\" } }";

/// The schedule above, written out: the time stamp of an instance.
fn time(name: &str, x: &[i64]) -> [i64; 3] {
    match (name, x) {
        ("S1", [_, j]) => [2, -1 - 2 * j, 0],
        ("S2", [i, j, k]) => [2 * i - 2 * k, -2 * j, 0],
        ("S3", [i, j, k]) => [0, -2 * j, 1 - 2 * i + 2 * k],
        _ => panic!("unexpected instance {name}{x:?}"),
    }
}

fn eval(e: &ast::Expr, env: &HashMap<String, i64>) -> i64 {
    use ast::Op::*;
    match e {
        ast::Expr::Int(v) => *v,
        ast::Expr::Id(name) => env[name],
        ast::Expr::Op(op, args) => {
            let a: Vec<i64> = args.iter().map(|x| eval(x, env)).collect();
            let b = |x: bool| i64::from(x);
            match op {
                And => b(a[0] != 0 && a[1] != 0),
                Or => b(a[0] != 0 || a[1] != 0),
                Max => a.iter().copied().max().unwrap(),
                Min => a.iter().copied().min().unwrap(),
                Minus => -a[0],
                Add => a[0] + a[1],
                Sub => a[0] - a[1],
                Mul => a[0] * a[1],
                Div => {
                    assert_eq!(a[0] % a[1], 0, "inexact division in {e:?}");
                    a[0] / a[1]
                }
                FloorDiv | PosDiv => a[0].div_euclid(a[1]),
                PosRem | ZeroRem => a[0].rem_euclid(a[1]),
                Select => {
                    if a[0] != 0 {
                        a[1]
                    } else {
                        a[2]
                    }
                }
                Eq => b(a[0] == a[1]),
                Le => b(a[0] <= a[1]),
                Lt => b(a[0] < a[1]),
                Ge => b(a[0] >= a[1]),
                Gt => b(a[0] > a[1]),
            }
        }
    }
}

/// The instances the AST executes, in its order.
fn walk(node: &ast::Node, env: &mut HashMap<String, i64>, out: &mut Vec<(String, Vec<i64>)>) {
    match node {
        ast::Node::For(f) => {
            let mut v = eval(&f.init, env);
            loop {
                env.insert(f.iterator.clone(), v);
                if eval(&f.cond, env) == 0 {
                    break;
                }
                walk(&f.body, env, out);
                v += f.step;
            }
            env.remove(&f.iterator);
        }
        ast::Node::If(c, t, e) => {
            if eval(c, env) != 0 {
                walk(t, env, out);
            } else if let Some(e) = e {
                walk(e, env, out);
            }
        }
        ast::Node::Block(nodes) => nodes.iter().for_each(|n| walk(n, env, out)),
        ast::Node::User(name, args) => {
            out.push((name.clone(), args.iter().map(|a| eval(a, env)).collect()))
        }
    }
}

#[test]
fn shifted_strides_keep_the_schedules_order() {
    let ctx = Ctx::default();
    let schedule = ctx.schedule(SCHEDULE).unwrap();
    let context = ctx.set("[N] -> { : N >= 4 }").unwrap();
    let tree = build_ast(&schedule, &context, &AstOptions::default()).unwrap();
    for n in 4..=7 {
        let mut env = HashMap::from([("N".to_string(), n)]);
        let mut order = Vec::new();
        walk(&tree, &mut env, &mut order);
        let half = (n - 2).div_euclid(2);
        let expected = 2 * n * n * (half + 1) + n * n;
        assert_eq!(order.len() as i64, expected, "N = {n}: every instance once");
        let times: Vec<[i64; 3]> = order.iter().map(|(s, x)| time(s, x)).collect();
        for (k, pair) in times.windows(2).enumerate() {
            assert!(
                pair[0] <= pair[1],
                "N = {n}: {}{:?} at {:?} runs before {}{:?} at {:?}",
                order[k].0,
                order[k].1,
                pair[0],
                order[k + 1].0,
                order[k + 1].1,
                pair[1]
            );
        }
    }
}
