//! Property: printing any surface syntax tree and parsing the text back gives the same tree
//! (up to spans).

use frontend::ast::*;
use frontend::ir::{AssignOp, CmpOp, ElemType, LogicOp};
use frontend::printer::print_file;
use frontend::span::Span;
use frontend::{parse, SourceFile};
use proptest::prelude::*;

const NAMES: &[&str] = &[
    "a", "b", "i", "j", "k", "N", "M", "A", "B", "x_1", "max", "min", "sum", "exp", "f32", "rev",
    "floor",
];

fn ident() -> impl Strategy<Value = Ident> {
    prop::sample::select(NAMES).prop_map(|n| Ident {
        name: n.to_string(),
        span: Span::default(),
    })
}

/// A name that may be called: `sum(`/`prod(` always start a reduction.
fn callee() -> impl Strategy<Value = Ident> {
    ident().prop_filter("not a reduction keyword", |i| i.name != "sum")
}

fn e(kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::default(),
    }
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (0..=i64::MAX).prop_map(|n| e(ExprKind::Int(n))),
        (0.0f64..1e300).prop_map(|x| e(ExprKind::Float(x))),
        prop::sample::select(NAMES).prop_map(|n| e(ExprKind::Name(n.to_string()))),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        let b = |x: Expr| Box::new(x);
        let arith = prop::sample::select(vec![
            ArithOp::Add,
            ArithOp::Sub,
            ArithOp::Mul,
            ArithOp::Div,
            ArithOp::Mod,
        ]);
        let cmp = prop::sample::select(vec![
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
            CmpOp::Eq,
            CmpOp::Ne,
        ]);
        let logic = prop::sample::select(vec![LogicOp::And, LogicOp::Or]);
        let reduce = prop::sample::select(vec![
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Max,
            ReduceOp::Min,
        ]);
        prop_oneof![
            (ident(), prop::collection::vec(inner.clone(), 1..3))
                .prop_map(|(a, ix)| e(ExprKind::Index(a, ix))),
            (callee(), prop::collection::vec(inner.clone(), 0..3))
                .prop_map(|(f, args)| e(ExprKind::Call(f, args))),
            inner.clone().prop_map(move |x| e(ExprKind::Neg(b(x)))),
            inner.clone().prop_map(move |x| e(ExprKind::Not(b(x)))),
            (arith, inner.clone(), inner.clone()).prop_map(move |(op, x, y)| e(ExprKind::Arith(
                op,
                b(x),
                b(y)
            ))),
            (cmp, inner.clone(), inner.clone()).prop_map(move |(op, x, y)| e(ExprKind::Compare(
                op,
                b(x),
                b(y)
            ))),
            (logic, inner.clone(), inner.clone()).prop_map(move |(op, x, y)| e(ExprKind::Logic(
                op,
                b(x),
                b(y)
            ))),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(move |(c, x, y)| e(ExprKind::Select(b(c), b(x), b(y)))),
            (reduce, prop::collection::vec(ident(), 1..3), inner)
                .prop_map(move |(op, vs, x)| e(ExprKind::Reduce(op, vs, b(x)))),
        ]
    })
}

fn elem() -> impl Strategy<Value = ElemType> {
    prop::sample::select(ElemType::ALL.to_vec())
}

fn array_decl() -> impl Strategy<Value = ArrayDecl> {
    (
        ident(),
        elem(),
        prop::collection::vec(expr(), 0..3),
        prop::option::of(ident()),
    )
        .prop_map(|(name, elem, dims, tier)| ArrayDecl {
            name,
            elem,
            dims,
            tier,
            span: Span::default(),
        })
}

fn stmt() -> impl Strategy<Value = StmtDecl> {
    let ops = prop::sample::select(vec![
        AssignOp::Assign,
        AssignOp::Add,
        AssignOp::Sub,
        AssignOp::Mul,
        AssignOp::Div,
        AssignOp::Max,
        AssignOp::Min,
    ]);
    (
        prop::option::of(ident()),
        ident(),
        prop::collection::vec(expr(), 0..3),
        ops,
        expr(),
    )
        .prop_map(|(label, target, indices, op, rhs)| StmtDecl {
            label,
            target,
            indices,
            op,
            rhs,
            span: Span::default(),
        })
}

fn items() -> impl Strategy<Value = Vec<Item>> {
    let leaf = prop_oneof![
        stmt().prop_map(Item::Stmt),
        array_decl().prop_map(Item::Let),
    ];
    let item = leaf.prop_recursive(3, 12, 3, |inner| {
        let block = prop::collection::vec(inner, 0..3);
        prop_oneof![
            (
                ident(),
                expr(),
                expr(),
                any::<bool>(),
                prop::option::of(1..5i64),
                block.clone()
            )
                .prop_map(|(var, lower, upper, reverse, step, body)| {
                    Item::For(ForLoop {
                        var,
                        lower,
                        upper,
                        reverse,
                        step: step.map(|s| (s, Span::default())),
                        body,
                        span: Span::default(),
                    })
                }),
            (
                expr(),
                block.clone(),
                prop::option::of(block.clone()),
                any::<bool>()
            )
                .prop_map(|(cond, then, otherwise, chained)| {
                    let otherwise = otherwise.map(|b| match (chained, b.as_slice()) {
                        (true, [Item::If(inner)]) => Else::If(Box::new(inner.clone())),
                        _ => Else::Block(b),
                    });
                    Item::If(IfItem {
                        cond,
                        then,
                        otherwise,
                        span: Span::default(),
                    })
                }),
        ]
    });
    prop::collection::vec(item, 0..4)
}

fn kernel() -> impl Strategy<Value = KernelDecl> {
    let qualifier = prop::option::of(prop::sample::select(vec![
        Qualifier::In,
        Qualifier::Out,
        Qualifier::InOut,
    ]));
    let args = prop::collection::vec(
        (qualifier, array_decl()).prop_map(|(qualifier, decl)| Arg { qualifier, decl }),
        0..3,
    );
    let params = prop::collection::vec(
        (ident(), prop::option::of(-100..100i64))
            .prop_map(|(name, default)| ParamDecl { name, default }),
        0..3,
    );
    let kind = prop::sample::select(vec![DeclKind::Kernel, DeclKind::Intrinsic]);
    (
        (kind, ident()),
        args,
        prop::collection::vec(array_decl(), 0..2),
        params,
        prop::option::of(expr()),
        items(),
    )
        .prop_map(
            |((kind, name), args, outputs, params, constraint, body)| KernelDecl {
                kind,
                name,
                args,
                outputs,
                constraint: constraint.filter(|_| !params.is_empty()),
                params,
                body,
                span: Span::default(),
            },
        )
}

// ---- span erasure (the property holds up to spans) ----

fn erase_ident(i: &mut Ident) {
    i.span = Span::default();
}

fn erase_expr(x: &mut Expr) {
    x.span = Span::default();
    match &mut x.kind {
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Name(_) => {}
        ExprKind::Index(a, args) | ExprKind::Call(a, args) => {
            erase_ident(a);
            args.iter_mut().for_each(erase_expr);
        }
        ExprKind::Neg(y) | ExprKind::Not(y) => erase_expr(y),
        ExprKind::Reduce(_, vs, y) => {
            vs.iter_mut().for_each(erase_ident);
            erase_expr(y);
        }
        ExprKind::Arith(_, y, z) | ExprKind::Compare(_, y, z) | ExprKind::Logic(_, y, z) => {
            erase_expr(y);
            erase_expr(z);
        }
        ExprKind::Select(c, y, z) => {
            erase_expr(c);
            erase_expr(y);
            erase_expr(z);
        }
    }
}

fn erase_decl(d: &mut ArrayDecl) {
    d.span = Span::default();
    erase_ident(&mut d.name);
    d.dims.iter_mut().for_each(erase_expr);
    if let Some(t) = &mut d.tier {
        erase_ident(t);
    }
}

fn erase_if(i: &mut IfItem) {
    i.span = Span::default();
    erase_expr(&mut i.cond);
    erase_items(&mut i.then);
    match &mut i.otherwise {
        None => {}
        Some(Else::Block(b)) => erase_items(b),
        Some(Else::If(inner)) => erase_if(inner),
    }
}

fn erase_items(items: &mut [Item]) {
    for item in items {
        match item {
            Item::Let(d) => erase_decl(d),
            Item::For(l) => {
                l.span = Span::default();
                erase_ident(&mut l.var);
                erase_expr(&mut l.lower);
                erase_expr(&mut l.upper);
                if let Some((_, s)) = &mut l.step {
                    *s = Span::default();
                }
                erase_items(&mut l.body);
            }
            Item::If(i) => erase_if(i),
            Item::Stmt(s) => {
                s.span = Span::default();
                s.label.iter_mut().for_each(erase_ident);
                erase_ident(&mut s.target);
                s.indices.iter_mut().for_each(erase_expr);
                erase_expr(&mut s.rhs);
            }
        }
    }
}

fn erase(file: &mut File) {
    for k in &mut file.kernels {
        k.span = Span::default();
        erase_ident(&mut k.name);
        k.args.iter_mut().for_each(|a| erase_decl(&mut a.decl));
        k.outputs.iter_mut().for_each(erase_decl);
        k.params.iter_mut().for_each(|p| erase_ident(&mut p.name));
        k.constraint.iter_mut().for_each(erase_expr);
        erase_items(&mut k.body);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn printed_programs_parse_back_to_the_same_tree(kernels in prop::collection::vec(kernel(), 1..3)) {
        let file = File { kernels };
        let text = print_file(&file);
        let source = SourceFile::new("printed.pk", text.clone());
        let mut parsed = match parse(&source) {
            Ok(f) => f,
            Err(d) => return Err(TestCaseError::fail(format!("{text}\n{}", d.render(&source, false)))),
        };
        erase(&mut parsed);
        prop_assert_eq!(parsed, file, "printed as:\n{}", text);
    }
}

#[test]
fn the_examples_print_back_to_themselves() {
    let text = "kernel k(A: f32[N], C: inout f32[N]) -> (O: f32[N])\n  params N = 4 where N > 1 {\n  for i in (0..N).rev() step 2 {\n    O[i] = max(j) (-A[j]);\n  }\n}\n";
    let file = parse(&SourceFile::new("x.pk", text)).expect("parses");
    assert_eq!(print_file(&file), text);
}
