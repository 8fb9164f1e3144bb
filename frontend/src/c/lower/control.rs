//! Control flow: `for` loops in the subset's forms and affine conditions of `if`s and loop
//! bounds.

use super::ctype::CTy;
use super::value::{cmp_op, outside};
use super::{LResult, Lowerer};
use crate::c::syntax::{BinOp, Expr, ExprKind, ForInit, Stmt, UnOp};
use crate::check::cond::negate;
use crate::diagnostics::{AffineContext, Code, Construct, Diagnostic};
use crate::ir::{self, AffExpr, CmpOp, Cond, Node};
use crate::span::Span;

/// Which way a loop's iterator moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// A bound of a loop condition: `iterator op bound`.
struct Bound {
    op: CmpOp,
    value: AffExpr,
    span: Span,
}

impl Lowerer<'_> {
    /// A `for` loop with its body.
    pub fn for_loop(
        &mut self,
        init: &ForInit,
        cond: Option<&Expr>,
        step: Option<&Expr>,
        body: &Stmt,
        span: Span,
    ) -> LResult<Node> {
        let form = |message: &str, at: Span| {
            outside(Construct::LoopForm, message.to_owned(), at, "not in the subset's form")
                .with_note("the subset's loops: `for (i = lo; i < hi; i++)`, with `<=`, `>`, `>=`, `!=`, `--`, `+= c`, `-= c` (c a constant), bounds affine in outer iterators and parameters")
        };
        let (var, first, var_span) = match init {
            ForInit::Expr(Expr {
                kind: ExprKind::Assign(None, target, value),
                ..
            }) => match &target.kind {
                ExprKind::Ident(n) => (n.clone(), value.as_ref(), target.span),
                _ => {
                    return Err(form(
                        "the loop must set its iterator, a variable",
                        target.span,
                    ))
                }
            },
            ForInit::Decl(d) => match d.declarators.as_slice() {
                [decl] if decl.init.is_some() => {
                    self.vars.declare(decl)?;
                    (
                        decl.name.clone(),
                        decl.init.as_ref().expect("checked"),
                        decl.name_span,
                    )
                }
                _ => return Err(form("the loop must declare and set one iterator", d.span)),
            },
            _ => return Err(form("the loop must set its iterator: `i = lo`", span)),
        };
        let ty = self.iterator_type(&var, var_span)?;
        if self.vars.loops.iter().any(|(n, _)| *n == var) {
            return Err(outside(
                Construct::IteratorUse,
                format!("`{var}` is already the iterator of an enclosing loop"),
                var_span,
                "iterator reused",
            ));
        }
        let first = self.bound(first)?;
        let step_expr = step.ok_or_else(|| form("the loop has no step", span))?;
        let (direction, stride) = self.step(&var, step_expr).ok_or_else(|| {
            form(
                "the step must be `i++`, `i--`, `i += c` or `i -= c` with a constant c",
                step_expr.span,
            )
        })?;
        let cond = cond.ok_or_else(|| form("the loop has no condition", span))?;
        let mut bounds = Vec::new();
        self.bounds(&var, cond, &mut bounds)?;
        let mut limit: Option<AffExpr> = None;
        for b in bounds {
            // The exclusive upper bound (going up) or the inclusive lower bound (going down).
            let value =
                match (direction, b.op) {
                    (Direction::Up, CmpOp::Lt) | (Direction::Down, CmpOp::Ge) => b.value,
                    (Direction::Up, CmpOp::Le) | (Direction::Down, CmpOp::Gt) => plus(b.value, 1),
                    (Direction::Up, CmpOp::Ne) if stride == 1 => b.value,
                    (Direction::Down, CmpOp::Ne) if stride == 1 => plus(b.value, 1),
                    _ => return Err(form(
                        "the condition does not bound the iterator in the direction of its step",
                        b.span,
                    )),
                };
            limit = Some(match (limit, direction) {
                (None, _) => value,
                (Some(l), Direction::Up) => AffExpr::Min(Box::new(l), Box::new(value)),
                (Some(l), Direction::Down) => AffExpr::Max(Box::new(l), Box::new(value)),
            });
        }
        let limit =
            limit.ok_or_else(|| form("the condition does not bound the iterator", cond.span))?;
        let (lower, upper, reverse) = match direction {
            Direction::Up => (first, limit, false),
            Direction::Down => {
                // first, first - c, ... down to `limit`: the values of the forward loop from
                // the smallest one congruent to `first` modulo c.
                let lowest = if stride == 1 {
                    limit
                } else {
                    AffExpr::Add(
                        Box::new(limit.clone()),
                        Box::new(AffExpr::Mod(
                            Box::new(AffExpr::Sub(Box::new(first.clone()), Box::new(limit))),
                            stride,
                        )),
                    )
                };
                (lowest, plus(first, 1), true)
            }
        };
        self.vars.loops.push((var.clone(), ty));
        let mut nodes = Vec::new();
        self.statement(body, &mut nodes);
        self.vars.loops.pop();
        Ok(Node::Loop(ir::Loop {
            var,
            lower,
            upper,
            step: stride,
            reverse,
            body: nodes,
            span,
        }))
    }

    /// The type of a loop iterator (an integer variable).
    fn iterator_type(&self, var: &str, span: Span) -> LResult<CTy> {
        let Some((decl, _)) = self.vars.declaration(var) else {
            return Err(Diagnostic::new(
                Code::UnknownName,
                format!("unknown name `{var}`"),
                span,
                "no declaration of it is visible here",
            ));
        };
        match CTy::of(decl.ty.base) {
            Some(t) if t.is_integer() && decl.ty.pointers == 0 && decl.ty.dims.is_empty() => Ok(t),
            _ => Err(outside(
                Construct::Type,
                format!(
                    "the iterator `{var}` has type `{}`; iterators are `int`, `long` or `char`",
                    decl.ty.base.name()
                ),
                span,
                "not an integer iterator",
            )
            .with_secondary(decl.name_span, "declared here")),
        }
    }

    /// The direction and stride of a step expression on `var`.
    fn step(&mut self, var: &str, e: &Expr) -> Option<(Direction, i64)> {
        let is_var = |x: &Expr| matches!(&x.kind, ExprKind::Ident(n) if n == var);
        let (sign, amount) = match &e.kind {
            ExprKind::IncDec(x, inc, _) if is_var(x) => (if *inc { 1 } else { -1 }, None),
            ExprKind::Assign(Some(op @ (BinOp::Add | BinOp::Sub)), x, c) if is_var(x) => {
                (if *op == BinOp::Add { 1 } else { -1 }, Some(c.as_ref()))
            }
            ExprKind::Assign(None, x, rhs) if is_var(x) => match &rhs.kind {
                ExprKind::Binary(BinOp::Add, a, c) if is_var(a) => (1, Some(c.as_ref())),
                ExprKind::Binary(BinOp::Add, c, a) if is_var(a) => (1, Some(c.as_ref())),
                ExprKind::Binary(BinOp::Sub, a, c) if is_var(a) => (-1, Some(c.as_ref())),
                _ => return None,
            },
            _ => return None,
        };
        let amount = match amount {
            None => 1,
            Some(c) => match self.value(c).ok()? {
                super::value::Val::Aff(AffExpr::Const(c), _) => c,
                _ => return None,
            },
        };
        let signed = amount.checked_mul(sign)?;
        match signed {
            0 => None,
            s if s > 0 => Some((Direction::Up, s)),
            s => Some((Direction::Down, s.checked_neg()?)),
        }
    }

    /// The bounds a loop condition puts on `var`: comparisons of it with affine bounds,
    /// joined by `&&`.
    fn bounds(&mut self, var: &str, e: &Expr, out: &mut Vec<Bound>) -> LResult<()> {
        let is_var = |x: &Expr| matches!(&x.kind, ExprKind::Ident(n) if n == var);
        match &e.kind {
            ExprKind::Binary(BinOp::And, a, b) => {
                self.bounds(var, a, out)?;
                self.bounds(var, b, out)
            }
            ExprKind::Binary(
                op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Ne),
                a,
                b,
            ) if is_var(a) != is_var(b) => {
                let (op, other) = if is_var(a) {
                    (cmp_op(*op), b)
                } else {
                    (flip(cmp_op(*op)), a)
                };
                let value = self.bound(other)?;
                out.push(Bound {
                    op,
                    value,
                    span: e.span,
                });
                Ok(())
            }
            _ => Err(outside(
                Construct::LoopForm,
                format!(
                    "the loop condition `{}` is not a comparison of `{var}` with a bound",
                    self.text(e.span)
                ),
                e.span,
                "not a bound of the iterator",
            )
            .with_note(
                "write `i < hi`, `i <= hi`, `i > lo`, `i >= lo` or `i != hi`, joined by `&&`",
            )),
        }
    }

    /// A loop bound: affine, or a minimum or maximum written with `?:`.
    fn bound(&mut self, e: &Expr) -> LResult<AffExpr> {
        match &e.kind {
            ExprKind::Cond(c, a, b) => {
                if let ExprKind::Binary(
                    op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                    x,
                    y,
                ) = &c.kind
                {
                    let (x, y) = (self.bound(x)?, self.bound(y)?);
                    let (a, b) = (self.bound(a)?, self.bound(b)?);
                    let less = matches!(op, BinOp::Lt | BinOp::Le);
                    let min = |p: AffExpr, q: AffExpr| AffExpr::Min(Box::new(p), Box::new(q));
                    let max = |p: AffExpr, q: AffExpr| AffExpr::Max(Box::new(p), Box::new(q));
                    if a == x && b == y {
                        return Ok(if less { min(x, y) } else { max(x, y) });
                    }
                    if a == y && b == x {
                        return Ok(if less { max(x, y) } else { min(x, y) });
                    }
                }
                Err(Diagnostic::new(
                    Code::NonAffine(AffineContext::Bound),
                    format!(
                        "the loop bound `{}` is a conditional that is not a minimum or maximum",
                        self.text(e.span)
                    ),
                    e.span,
                    "not affine",
                )
                .with_note("`a < b ? a : b` and `a > b ? a : b` (or macros that expand to them) are minimum and maximum"))
            }
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b)
                if contains_cond(a) || contains_cond(b) =>
            {
                let (a, b) = (Box::new(self.bound(a)?), Box::new(self.bound(b)?));
                Ok(if *op == BinOp::Add {
                    AffExpr::Add(a, b)
                } else {
                    AffExpr::Sub(a, b)
                })
            }
            _ => {
                let what = format!("the loop bound `{}`", self.text(e.span));
                self.affine(e, AffineContext::Bound, &what)
            }
        }
    }

    /// An affine condition: comparisons of affine expressions under `&&`, `||`, `!`.
    pub fn condition(&mut self, e: &Expr) -> LResult<Cond> {
        match &e.kind {
            ExprKind::Binary(BinOp::And | BinOp::Or, a, b) => {
                let (x, y) = (Box::new(self.condition(a)?), Box::new(self.condition(b)?));
                Ok(match &e.kind {
                    ExprKind::Binary(BinOp::And, ..) => Cond::And(x, y),
                    _ => Cond::Or(x, y),
                })
            }
            ExprKind::Unary(UnOp::Not, x) => Ok(negate(self.condition(x)?)),
            ExprKind::Binary(
                op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
                a,
                b,
            ) => {
                let what = format!("the condition `{}`", self.text(e.span));
                Ok(Cond::Cmp(
                    self.affine(a, AffineContext::Guard, &what)?,
                    cmp_op(*op),
                    self.affine(b, AffineContext::Guard, &what)?,
                ))
            }
            _ => {
                let what = format!("the condition `{}`", self.text(e.span));
                Ok(Cond::Cmp(
                    self.affine(e, AffineContext::Guard, &what)?,
                    CmpOp::Ne,
                    AffExpr::Const(0),
                ))
            }
        }
    }

    /// An `if`: its condition guards the `then` branch, its negation the `else` branch.
    pub fn if_statement(
        &mut self,
        cond: &Expr,
        then: &Stmt,
        otherwise: Option<&Stmt>,
        span: Span,
        out: &mut Vec<Node>,
    ) -> LResult<()> {
        let cond = self.condition(cond)?;
        let mut nodes = Vec::new();
        self.statement(then, &mut nodes);
        if !nodes.is_empty() {
            out.push(Node::If(ir::If {
                cond: cond.clone(),
                then: nodes,
                span,
            }));
        }
        if let Some(otherwise) = otherwise {
            let mut nodes = Vec::new();
            self.statement(otherwise, &mut nodes);
            if !nodes.is_empty() {
                out.push(Node::If(ir::If {
                    cond: negate(cond),
                    then: nodes,
                    span,
                }));
            }
        }
        Ok(())
    }
}

/// `e + c`.
fn plus(e: AffExpr, c: i64) -> AffExpr {
    match e {
        AffExpr::Const(v) if v.checked_add(c).is_some() => AffExpr::Const(v + c),
        e => AffExpr::Add(Box::new(e), Box::new(AffExpr::Const(c))),
    }
}

/// The comparison with its operands swapped (`a < b` is `b > a`).
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Ge => CmpOp::Le,
        op => op,
    }
}

/// Whether `e` holds a conditional (`?:`).
fn contains_cond(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Cond(..) => true,
        ExprKind::Binary(_, a, b) => contains_cond(a) || contains_cond(b),
        ExprKind::Unary(_, x) | ExprKind::Cast(_, x) => contains_cond(x),
        _ => false,
    }
}
