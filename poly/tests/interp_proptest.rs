//! Random loop nests (IR built directly by a proptest strategy): `run_instances` over the
//! original enumeration must give the same result as the direct walk, bit for bit.

use frontend::ir::*;
use frontend::span::Span;
use poly::interp::{Interpreter, Memory, ParamValues};
use proptest::prelude::*;
use std::collections::BTreeMap;

const N: i64 = 6;

/// A loop bound; every variant stays within `0..=N` for outer values in `0..N`.
#[derive(Clone, Debug)]
enum Bound {
    Const(i64),
    N,
    /// `max(0, v - c)` of an outer loop variable (lower bounds).
    MaxOuter(usize, i64),
    /// `min(N, v + c)` of an outer loop variable (upper bounds).
    MinOuter(usize, i64),
    /// `floor(v / 2)` of an outer loop variable.
    Half(usize),
}

/// A random program shape; loop variables are named by depth, indices pick them modulo depth.
#[derive(Clone, Debug)]
enum Shape {
    Stmt {
        target: usize,
        op: usize,
        reads: (usize, usize),
        index: usize,
    },
    Loop {
        lower: Bound,
        upper: Bound,
        step: i64,
        reverse: bool,
        body: Vec<Shape>,
    },
    If {
        modulus: i64,
        body: Vec<Shape>,
    },
}

fn bound(lower: bool) -> impl Strategy<Value = Bound> {
    let special = if lower {
        (0..4usize, 0..3i64)
            .prop_map(|(v, c)| Bound::MaxOuter(v, c))
            .boxed()
    } else {
        (0..4usize, 1..4i64)
            .prop_map(|(v, c)| Bound::MinOuter(v, c))
            .boxed()
    };
    prop_oneof![
        (0..3i64).prop_map(Bound::Const),
        Just(Bound::N),
        special,
        (0..4usize).prop_map(Bound::Half),
    ]
}

fn shape() -> impl Strategy<Value = Vec<Shape>> {
    let stmt = (0..3usize, 0..6usize, (0..3usize, 0..3usize), 0..8usize).prop_map(
        |(target, op, reads, index)| Shape::Stmt {
            target,
            op,
            reads,
            index,
        },
    );
    let tree = stmt.prop_recursive(3, 12, 3, |inner| {
        let body = prop::collection::vec(inner, 1..3);
        prop_oneof![
            (
                bound(true),
                bound(false),
                1..3i64,
                any::<bool>(),
                body.clone()
            )
                .prop_map(|(lower, upper, step, reverse, body)| Shape::Loop {
                    lower,
                    upper,
                    step,
                    reverse,
                    body
                }),
            (2..4i64, body).prop_map(|(modulus, body)| Shape::If { modulus, body }),
        ]
    });
    prop::collection::vec(tree, 1..3)
}

fn var(depth: usize) -> AffExpr {
    AffExpr::Var(Var::Loop(format!("i{depth}")))
}

fn param() -> AffExpr {
    AffExpr::Var(Var::Param("N".into()))
}

/// The outer loop variable `v` picks, or 0 outside loops.
fn outer(v: usize, depth: usize) -> AffExpr {
    if depth == 0 {
        AffExpr::Const(0)
    } else {
        var(v % depth)
    }
}

fn bound_expr(b: &Bound, depth: usize) -> AffExpr {
    match b {
        Bound::Const(c) => AffExpr::Const(*c),
        Bound::N => param(),
        Bound::MaxOuter(v, c) => AffExpr::Max(
            Box::new(AffExpr::Const(0)),
            Box::new(AffExpr::Sub(
                Box::new(outer(*v, depth)),
                Box::new(AffExpr::Const(*c)),
            )),
        ),
        Bound::MinOuter(v, c) => AffExpr::Min(
            Box::new(param()),
            Box::new(AffExpr::Add(
                Box::new(outer(*v, depth)),
                Box::new(AffExpr::Const(*c)),
            )),
        ),
        Bound::Half(v) => AffExpr::FloorDiv(Box::new(outer(*v, depth)), 2),
    }
}

/// Arrays: `A: inout f32[N]`, `B: inout f32[N, N]`, `C: inout i32[N]`.
const ARRAYS: [(&str, ElemType, usize); 3] = [
    ("A", ElemType::F32, 1),
    ("B", ElemType::F32, 2),
    ("C", ElemType::I32, 1),
];

fn access(array: usize, index: usize, depth: usize) -> Access {
    let rank = ARRAYS[array].2;
    Access {
        array: ArrayId(array),
        indices: (0..rank).map(|d| outer(index + d, depth)).collect(),
        span: Span::default(),
    }
}

fn build(shapes: &[Shape], depth: usize, count: &mut usize) -> Vec<Node> {
    shapes
        .iter()
        .map(|s| match s {
            Shape::Stmt {
                target,
                op,
                reads,
                index,
            } => {
                let elem = ARRAYS[*target].1;
                // Reads of the target's type: the target's own array or another of its type.
                let same_type = |r: usize| if ARRAYS[r].1 == elem { r } else { *target };
                let read = |r: usize, k: usize| Expr {
                    kind: ExprKind::Read(access(same_type(r), index + k, depth)),
                    ty: Type::Elem(elem),
                };
                let binop = [BinOp::Add, BinOp::Mul, BinOp::Sub][op % 3];
                let rhs = Expr {
                    kind: ExprKind::Binary(
                        binop,
                        Box::new(read(reads.0, 1)),
                        Box::new(read(reads.1, 2)),
                    ),
                    ty: Type::Elem(elem),
                };
                let assign = [
                    AssignOp::Assign,
                    AssignOp::Add,
                    AssignOp::Mul,
                    AssignOp::Max,
                    AssignOp::Sub,
                    AssignOp::Min,
                ][*op];
                *count += 1;
                Node::Stmt(Stmt {
                    name: format!("S{}", *count - 1),
                    target: access(*target, *index, depth),
                    op: assign,
                    rhs,
                    span: Span::default(),
                })
            }
            Shape::Loop {
                lower,
                upper,
                step,
                reverse,
                body,
            } => Node::Loop(Loop {
                var: format!("i{depth}"),
                lower: bound_expr(lower, depth),
                upper: bound_expr(upper, depth),
                step: *step,
                reverse: *reverse,
                body: build(body, depth + 1, count),
                span: Span::default(),
            }),
            Shape::If { modulus, body } => Node::If(If {
                cond: Cond::Cmp(
                    AffExpr::Mod(Box::new(outer(0, depth)), *modulus),
                    CmpOp::Eq,
                    AffExpr::Const(0),
                ),
                then: build(body, depth, count),
                span: Span::default(),
            }),
        })
        .collect()
}

fn kernel(shapes: &[Shape]) -> Kernel {
    Kernel {
        name: "random".into(),
        params: vec![Param {
            name: "N".into(),
            default: Some(N),
            span: Span::default(),
        }],
        param_constraints: vec![],
        arrays: ARRAYS
            .iter()
            .map(|&(name, elem, rank)| Array {
                name: name.into(),
                elem,
                dims: vec![param(); rank],
                role: Role::InOut,
                span: Span::default(),
            })
            .collect(),
        body: build(shapes, 0, &mut 0),
    }
}

proptest! {
    #[test]
    fn listed_original_order_equals_the_walk(shapes in shape(), seed in any::<u64>()) {
        let kernel = kernel(&shapes);
        let params = ParamValues::resolve(&kernel, &BTreeMap::new(), &BTreeMap::new()).unwrap();
        let interp = Interpreter::new(&kernel, &params).unwrap();
        let mut walked = Memory::random(&kernel, &params, seed).unwrap();
        let mut listed = walked.clone();
        interp.run_original(&mut walked).unwrap();
        let instances = interp.original_instances();
        prop_assert_eq!(instances.len() as u64, interp.instance_count());
        for (k, iv) in &instances {
            prop_assert_eq!(iv.len(), kernel.statements()[*k].loops().count());
        }
        interp.run_instances(&mut listed, instances).unwrap();
        prop_assert!(walked.bit_identical(&listed));
    }
}
