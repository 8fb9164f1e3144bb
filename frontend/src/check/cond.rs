//! Affine conditions: guards and parameter constraints.

use super::affine::affine;
use super::scope::Scope;
use crate::ast::{Expr, ExprKind};
use crate::diagnostics::{AffineContext, Code, Diagnostic};
use crate::ir::{CmpOp, Cond, LogicOp};
use crate::printer::print_expr;

/// Converts `e` (comparisons of affine expressions under `and`/`or`/`not`) to a [`Cond`],
/// with `not` pushed into the comparisons.
pub fn condition(e: &Expr, scope: &Scope, ctx: AffineContext) -> Result<Cond, Diagnostic> {
    let what = match ctx {
        AffineContext::Constraint => "parameter constraint",
        _ => "guard",
    };
    match &e.kind {
        ExprKind::Compare(op, a, b) => {
            let text = format!("{what} `{}`", print_expr(e));
            Ok(Cond::Cmp(
                affine(a, scope, ctx, &text)?,
                *op,
                affine(b, scope, ctx, &text)?,
            ))
        }
        ExprKind::Logic(op, a, b) => {
            let (a, b) = (
                Box::new(condition(a, scope, ctx)?),
                Box::new(condition(b, scope, ctx)?),
            );
            Ok(match op {
                LogicOp::And => Cond::And(a, b),
                LogicOp::Or => Cond::Or(a, b),
            })
        }
        ExprKind::Not(x) => Ok(negate(condition(x, scope, ctx)?)),
        ExprKind::Index(a, _) => Err(Diagnostic::new(
            Code::DataDependent(ctx),
            format!("{what} depends on array data: reads array `{}`", a.name),
            e.span,
            "data-dependent",
        )),
        _ => Err(Diagnostic::new(
            Code::NonAffine(ctx),
            format!("{what} `{}` is not a condition", print_expr(e)),
            e.span,
            "expected a comparison such as `i < N`",
        )),
    }
}

/// The condition that holds exactly where `c` does not.
pub fn negate(c: Cond) -> Cond {
    match c {
        Cond::Cmp(a, op, b) => {
            let op = match op {
                CmpOp::Lt => CmpOp::Ge,
                CmpOp::Le => CmpOp::Gt,
                CmpOp::Gt => CmpOp::Le,
                CmpOp::Ge => CmpOp::Lt,
                CmpOp::Eq => CmpOp::Ne,
                CmpOp::Ne => CmpOp::Eq,
            };
            Cond::Cmp(a, op, b)
        }
        Cond::And(a, b) => Cond::Or(Box::new(negate(*a)), Box::new(negate(*b))),
        Cond::Or(a, b) => Cond::And(Box::new(negate(*a)), Box::new(negate(*b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AffExpr, Var};

    #[test]
    fn negation_is_de_morgan() {
        let i = || AffExpr::Var(Var::Loop("i".into()));
        let c = Cond::And(
            Box::new(Cond::Cmp(i(), CmpOp::Lt, AffExpr::Const(3))),
            Box::new(Cond::Cmp(i(), CmpOp::Eq, AffExpr::Const(1))),
        );
        let n = Cond::Or(
            Box::new(Cond::Cmp(i(), CmpOp::Ge, AffExpr::Const(3))),
            Box::new(Cond::Cmp(i(), CmpOp::Ne, AffExpr::Const(1))),
        );
        assert_eq!(negate(c.clone()), n);
        assert_eq!(negate(negate(c.clone())), c);
    }
}
