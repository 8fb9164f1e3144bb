//! Statements: free index variables, reductions, and their lowering to loops around
//! ordinary polyhedral statements.

use super::affine::same_extent;
use super::names::Namer;
use super::scope::{Resolved, Scope};
use super::value::{access, ValueChecker};
use crate::ast::{Expr, ExprKind, Ident, ReduceOp, StmtDecl};
use crate::diagnostics::{Code, Diagnostic};
use crate::ir::{self, AffExpr, ArrayId, AssignOp, ElemType, Loop, Node, Role, Stmt, Type};
use crate::span::Span;

/// A free index variable and the range it was given.
struct FreeVar {
    name: String,
    extent: AffExpr,
}

/// Checks a statement inside the loops of `scope` and lowers it to IR nodes (the statement
/// itself, or loops around an init and an update statement).
pub fn check_stmt(
    s: &StmtDecl,
    scope: &Scope,
    namer: &mut Namer,
) -> Result<Vec<Node>, Vec<Diagnostic>> {
    let target = target_array(s, scope).map_err(|d| vec![d])?;
    let mut diags = Vec::new();
    let array = scope.array(target);
    if array.role == Role::In {
        diags.push(
            Diagnostic::new(
                Code::WriteToInput,
                format!("cannot write to `{}`, an input", s.target.name),
                s.target.span,
                "written here",
            )
            .with_secondary(array.span, "declared as an input here")
            .with_note("declare it `inout` or `out` to write to it"),
        );
    }
    let (reduction, body) = match &s.rhs.kind {
        ExprKind::Reduce(op, vars, body) => (Some((*op, vars.as_slice())), body.as_ref()),
        _ => (None, &s.rhs),
    };
    if let Some(nested) = nested_reduction(body) {
        diags.push(
            Diagnostic::new(
                Code::ReductionNotWhole,
                "a reduction must be the whole right-hand side",
                nested,
                "nested inside an expression",
            )
            .with_note("a nested reduction is computed into a temporary before the statement, unless it reads the array the statement writes or uses a variable of an enclosing reduction")
            .with_note("compute it into a temporary yourself (`let t: f32[...];`) to say which values it reads"),
        );
        return Err(diags);
    }
    if let Some((op, _)) = reduction {
        if s.op != AssignOp::Assign && s.op != op.update_op() {
            diags.push(Diagnostic::new(
                Code::ReductionOperator,
                format!(
                    "a `{}` reduction can be assigned with `=` or `{}` only, not `{}`",
                    op.keyword(),
                    op.update_op().symbol(),
                    s.op.symbol()
                ),
                s.span,
                "incompatible assignment operator",
            ));
        }
    }
    let (spatial, reduced) = match free_variables(s, scope, target, reduction.map(|r| r.1), body) {
        Ok(v) => v,
        Err(mut errs) => {
            diags.append(&mut errs);
            return Err(diags);
        }
    };
    let mut inner = scope.clone();
    inner
        .loops
        .extend(spatial.iter().chain(&reduced).map(|v| v.name.clone()));
    let elem = array.elem;
    let target_access = access(&inner, target, &s.target, &s.indices, target_span(s));
    let rhs = ValueChecker { scope: &inner }.check(body, Some(Type::Elem(elem)));
    let (target_access, rhs) = match (target_access, rhs) {
        (Ok(t), Ok(r)) if diags.is_empty() => (t, r),
        (t, r) => {
            diags.extend(t.err());
            diags.extend(r.err());
            return Err(diags);
        }
    };
    let stmt = |name: String, op: AssignOp, rhs: ir::Expr| {
        Node::Stmt(Stmt {
            name,
            target: target_access.clone(),
            op,
            rhs,
            span: s.span,
        })
    };
    let label = s.label.as_ref().map(|l| l.name.as_str());
    let nodes = match reduction {
        None => vec![stmt(namer.name(label), s.op, rhs)],
        Some((op, _)) => {
            let mut nodes = Vec::new();
            if s.op == AssignOp::Assign {
                let init = ir::Expr {
                    kind: ir::ExprKind::Literal(identity(op, elem)),
                    ty: Type::Elem(elem),
                };
                nodes.push(stmt(namer.init_name(label), AssignOp::Assign, init));
            }
            let update = stmt(namer.name(label), op.update_op(), rhs);
            nodes.extend(wrap_loops(&reduced, vec![update], s.span));
            nodes
        }
    };
    Ok(wrap_loops(&spatial, nodes, s.span))
}

/// The span of a reduction inside `e`, if any.
fn nested_reduction(e: &Expr) -> Option<Span> {
    let mut found = None;
    e.walk(&mut |x| {
        if let ExprKind::Reduce(..) = x.kind {
            found = found.or(Some(x.span));
        }
    });
    found
}

fn target_span(s: &StmtDecl) -> Span {
    let end = s.indices.last().map_or(s.target.span, |i| i.span);
    s.target.span.to(Span::new(
        end.end,
        end.end + usize::from(!s.indices.is_empty()),
    ))
}

/// The array a statement writes.
fn target_array(s: &StmtDecl, scope: &Scope) -> Result<ArrayId, Diagnostic> {
    match scope.resolve(&s.target.name) {
        Resolved::Array(id) => {
            let rank = scope.array(id).dims.len();
            if rank != s.indices.len() {
                // Reported in full by `access`; checked here because free variables need the
                // target's dimensions.
                let ident = Ident {
                    name: s.target.name.clone(),
                    span: s.target.span,
                };
                return access(scope, id, &ident, &s.indices, target_span(s)).map(|_| id);
            }
            Ok(id)
        }
        Resolved::Unknown => Err(Diagnostic::new(
            Code::UnknownName,
            format!("unknown array `{}`", s.target.name),
            s.target.span,
            "not declared",
        )
        .with_note("declare it as an argument, an output (`-> (...)`) or a temporary (`let`)")),
        _ => Err(Diagnostic::new(
            Code::NotAnArray,
            format!("cannot assign to `{}`: it is not an array", s.target.name),
            s.target.span,
            "a loop variable or parameter",
        )),
    }
}

/// The initial value of a reduction: its operator's identity in `elem`.
fn identity(op: ReduceOp, elem: ElemType) -> f64 {
    let (lowest, highest) = match elem {
        ElemType::I8 => (i8::MIN as f64, i8::MAX as f64),
        ElemType::I32 => (i32::MIN as f64, i32::MAX as f64),
        _ => (f64::NEG_INFINITY, f64::INFINITY),
    };
    match op {
        ReduceOp::Sum => 0.0,
        ReduceOp::Prod => 1.0,
        ReduceOp::Max => lowest,
        ReduceOp::Min => highest,
    }
}

/// Nests `body` in loops over `vars` (outermost first), each from 0 to its extent.
fn wrap_loops(vars: &[FreeVar], body: Vec<Node>, span: Span) -> Vec<Node> {
    vars.iter().rev().fold(body, |body, v| {
        vec![Node::Loop(Loop {
            var: v.name.clone(),
            lower: AffExpr::Const(0),
            upper: v.extent.clone(),
            step: 1,
            reverse: false,
            body,
            span,
        })]
    })
}

/// A name that indexes a dimension bare (`A[.., k, ..]`), with that dimension's extent.
struct BareUse {
    name: String,
    extent: AffExpr,
    span: Span,
}

/// Names used in `e` that resolve to nothing, and the bare uses of them as array indices.
fn unresolved_names(
    e: &Expr,
    scope: &Scope,
    names: &mut Vec<(String, Span)>,
    bare: &mut Vec<BareUse>,
) {
    e.walk(&mut |x| match &x.kind {
        ExprKind::Name(n)
            if scope.resolve(n) == Resolved::Unknown && !names.iter().any(|(m, _)| m == n) =>
        {
            names.push((n.clone(), x.span));
        }
        ExprKind::Index(a, idx) => {
            if let Resolved::Array(id) = scope.resolve(&a.name) {
                let dims = &scope.array(id).dims;
                for (ix, dim) in idx.iter().zip(dims) {
                    if let ExprKind::Name(n) = &ix.kind {
                        if scope.resolve(n) == Resolved::Unknown {
                            bare.push(BareUse {
                                name: n.clone(),
                                extent: dim.clone(),
                                span: ix.span,
                            });
                        }
                    }
                }
            }
        }
        _ => {}
    });
}

/// Gives `name` the range of every use in `uses`; all must agree.
fn range_of(name: &str, uses: &[&BareUse]) -> Result<Option<FreeVar>, Diagnostic> {
    let Some(first) = uses.first() else {
        return Ok(None);
    };
    for u in &uses[1..] {
        if !same_extent(&first.extent, &u.extent) {
            return Err(Diagnostic::new(
                Code::RangeConflict,
                format!(
                    "conflicting ranges for index variable `{name}`: 0..{} and 0..{}",
                    first.extent, u.extent
                ),
                u.span,
                format!("ranges over 0..{} here", u.extent),
            )
            .with_secondary(first.span, format!("ranges over 0..{} here", first.extent)));
        }
    }
    Ok(Some(FreeVar {
        name: name.to_string(),
        extent: first.extent.clone(),
    }))
}

/// The spatial variables (in target-dimension order) and reduction variables (in listed
/// order) of a statement, with their ranges.
fn free_variables(
    s: &StmtDecl,
    scope: &Scope,
    target: ArrayId,
    reduction_vars: Option<&[Ident]>,
    body: &Expr,
) -> Result<(Vec<FreeVar>, Vec<FreeVar>), Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut target_names = Vec::new();
    let mut target_bare = Vec::new();
    for ix in &s.indices {
        unresolved_names(ix, scope, &mut target_names, &mut target_bare);
    }
    let dims = &scope.array(target).dims;
    let mut spatial_uses = Vec::new();
    for (ix, dim) in s.indices.iter().zip(dims) {
        if let ExprKind::Name(n) = &ix.kind {
            if scope.resolve(n) == Resolved::Unknown {
                spatial_uses.push(BareUse {
                    name: n.clone(),
                    extent: dim.clone(),
                    span: ix.span,
                });
            }
        }
    }
    let mut body_names = Vec::new();
    let mut operand_uses = Vec::new();
    unresolved_names(body, scope, &mut body_names, &mut operand_uses);
    // Target indices that are arrays' indices (`A[B[i]]` in a target) count as operands.
    operand_uses.extend(target_bare);

    let mut spatial = Vec::new();
    // Names already ranged or reported.
    let mut seen: Vec<&str> = Vec::new();
    for u in &spatial_uses {
        if seen.contains(&u.name.as_str()) {
            continue;
        }
        seen.push(&u.name);
        let uses: Vec<&BareUse> = spatial_uses.iter().filter(|w| w.name == u.name).collect();
        match range_of(&u.name, &uses) {
            Ok(Some(v)) => spatial.push(v),
            Ok(None) => {}
            Err(d) => diags.push(d),
        }
    }
    let mut reduced: Vec<FreeVar> = Vec::new();
    for v in reduction_vars.unwrap_or(&[]) {
        let problem = match scope.resolve(&v.name) {
            Resolved::Loop => Some("it is already a loop variable here".to_string()),
            Resolved::Param => Some("it is a parameter".to_string()),
            Resolved::Array(_) => Some("it is an array".to_string()),
            Resolved::Unknown if reduced.iter().any(|r| r.name == v.name) => {
                Some("it is listed twice".to_string())
            }
            Resolved::Unknown if spatial.iter().any(|r| r.name == v.name) => {
                Some("it also indexes the target".to_string())
            }
            Resolved::Unknown => None,
        };
        if let Some(why) = problem {
            diags.push(Diagnostic::new(
                Code::ReductionVariable,
                format!("`{}` cannot be a reduction variable: {why}", v.name),
                v.span,
                why,
            ));
            continue;
        }
        let uses: Vec<&BareUse> = operand_uses.iter().filter(|u| u.name == v.name).collect();
        match range_of(&v.name, &uses) {
            Ok(Some(r)) => reduced.push(r),
            Ok(None) => diags.push(
                Diagnostic::new(
                    Code::UnrangedReduction,
                    format!("cannot infer the range of reduction variable `{}`", v.name),
                    v.span,
                    "indexes no operand dimension by itself",
                )
                .with_note("a reduction variable takes its range from an operand it indexes directly, as in `A[i, k]`"),
            ),
            Err(d) => diags.push(d),
        }
    }
    let listed = |n: &str| reduction_vars.unwrap_or(&[]).iter().any(|v| v.name == n);
    for (n, span) in target_names.iter().chain(&body_names) {
        if seen.contains(&n.as_str()) || listed(n) {
            continue;
        }
        seen.push(n);
        if target_names.iter().any(|(m, _)| m == n) {
            diags.push(
                Diagnostic::new(
                    Code::FreeNotBare,
                    format!("index variable `{n}` of the target must be a whole index"),
                    *span,
                    "used inside an index expression",
                )
                .with_note("a free index variable of the target ranges over one target dimension: write it bare, as in `Y[i, j]`"),
            );
        } else if let Some(u) = operand_uses.iter().find(|u| &u.name == n) {
            diags.push(
                Diagnostic::new(
                    Code::UnboundFreeVariable,
                    format!(
                        "index variable `{n}` is neither in the target nor listed by a reduction"
                    ),
                    u.span,
                    "free index variable",
                )
                .with_note(format!(
                    "to reduce over it write `sum({n}) ...`; or bind it with a `for` loop"
                )),
            );
        } else {
            diags.push(Diagnostic::new(
                Code::UnknownName,
                format!("unknown name `{n}`"),
                *span,
                "not a parameter, array or loop variable",
            ));
        }
    }
    if diags.is_empty() {
        Ok((spatial, reduced))
    } else {
        Err(diags)
    }
}
