//! Conversion of surface expressions to (quasi-)affine expressions, with the reason when an
//! expression is not affine.

use super::scope::{Resolved, Scope};
use crate::ast::{ArithOp, Expr, ExprKind};
use crate::diagnostics::{AffineContext, Code, Diagnostic};
use crate::ir::{AffExpr, Var};
use crate::printer::print_expr;
use crate::span::Span;

/// Why an expression is not an acceptable affine expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AffErrorKind {
    /// Not affine (a product of variables, a float, a division, ...).
    NonAffine,
    /// Reads an array.
    DataDependent,
    /// Uses an undeclared name.
    UnknownName,
    /// `min`/`max` where they are not allowed.
    MinMax,
    /// A divisor that is not a positive constant.
    Divisor,
    /// Constant arithmetic overflows.
    Overflow,
}

/// An affinity error before it is put in context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffError {
    /// The kind.
    pub kind: AffErrorKind,
    /// Why, in a few words (`product of loop variables i and j`).
    pub reason: String,
    /// The offending sub-expression.
    pub span: Span,
}

fn err(kind: AffErrorKind, reason: impl Into<String>, span: Span) -> AffError {
    AffError {
        kind,
        reason: reason.into(),
        span,
    }
}

/// Converts `e` to an affine expression in `ctx`, describing it as `what` (`index A[i * j]`)
/// in the diagnostic if it is not one.
pub fn affine(
    e: &Expr,
    scope: &Scope,
    ctx: AffineContext,
    what: &str,
) -> Result<AffExpr, Diagnostic> {
    to_aff(e, scope, ctx == AffineContext::Bound).map_err(|err| {
        let (code, message) = match err.kind {
            AffErrorKind::NonAffine => (
                Code::NonAffine(ctx),
                format!("{what} is not affine: {}", err.reason),
            ),
            AffErrorKind::DataDependent => (
                Code::DataDependent(ctx),
                format!("{what} depends on array data: {}", err.reason),
            ),
            AffErrorKind::UnknownName => (Code::UnknownName, err.reason.clone()),
            AffErrorKind::MinMax => (Code::MinMaxOutsideBound, err.reason.clone()),
            AffErrorKind::Divisor => (Code::BadDivisor, err.reason.clone()),
            AffErrorKind::Overflow => (Code::ConstantOverflow, err.reason.clone()),
        };
        let d = Diagnostic::new(code, message, err.span, err.reason);
        match ctx {
            AffineContext::Extent | AffineContext::Constraint => {
                d.with_note("extents and parameter constraints may use parameters only")
            }
            _ => d,
        }
    })
}

/// Converts `e` to an affine expression over the loop variables and parameters of `scope`;
/// `min`/`max` are accepted only if `allow_minmax`.
pub fn to_aff(e: &Expr, scope: &Scope, allow_minmax: bool) -> Result<AffExpr, AffError> {
    let go = |x: &Expr| to_aff(x, scope, allow_minmax);
    match &e.kind {
        ExprKind::Int(n) => Ok(AffExpr::Const(*n)),
        ExprKind::Float(_) => Err(err(
            AffErrorKind::NonAffine,
            format!("`{}` is not an integer", print_expr(e)),
            e.span,
        )),
        ExprKind::Name(n) => match scope.resolve(n) {
            Resolved::Loop => Ok(AffExpr::Var(Var::Loop(n.clone()))),
            Resolved::Param => Ok(AffExpr::Var(Var::Param(n.clone()))),
            Resolved::Array(_) => Err(err(
                AffErrorKind::DataDependent,
                format!("reads array `{n}`"),
                e.span,
            )),
            Resolved::Unknown => Err(err(
                AffErrorKind::UnknownName,
                format!("unknown name `{n}`"),
                e.span,
            )),
        },
        ExprKind::Index(a, _) => Err(err(
            AffErrorKind::DataDependent,
            format!("reads array `{}`", a.name),
            e.span,
        )),
        ExprKind::Neg(x) => Ok(match go(x)? {
            AffExpr::Const(c) => AffExpr::Const(checked(c.checked_neg(), e.span)?),
            a => AffExpr::Neg(Box::new(a)),
        }),
        ExprKind::Arith(op, a, b) => arith(*op, a, b, e.span, scope, allow_minmax),
        ExprKind::Call(f, args) => call(&f.name, args, e.span, scope, allow_minmax),
        ExprKind::Compare(..)
        | ExprKind::Logic(..)
        | ExprKind::Not(_)
        | ExprKind::Select(..)
        | ExprKind::Reduce(..) => Err(err(
            AffErrorKind::NonAffine,
            format!("`{}` is not an integer expression", print_expr(e)),
            e.span,
        )),
    }
}

fn checked(v: Option<i64>, span: Span) -> Result<i64, AffError> {
    v.ok_or_else(|| {
        err(
            AffErrorKind::Overflow,
            "integer overflow in a constant expression",
            span,
        )
    })
}

/// The first variable `a` mentions.
fn first_var(a: &AffExpr) -> Option<&Var> {
    match a {
        AffExpr::Const(_) => None,
        AffExpr::Var(v) => Some(v),
        AffExpr::Neg(x)
        | AffExpr::Mul(_, x)
        | AffExpr::FloorDiv(x, _)
        | AffExpr::CeilDiv(x, _)
        | AffExpr::Mod(x, _) => first_var(x),
        AffExpr::Add(x, y) | AffExpr::Sub(x, y) | AffExpr::Min(x, y) | AffExpr::Max(x, y) => {
            first_var(x).or_else(|| first_var(y))
        }
    }
}

/// "product of loop variables i and j", "product of loop variable i and parameter N".
fn describe_product(a: &AffExpr, b: &AffExpr) -> String {
    let describe = |v: &Var| match v {
        Var::Loop(n) => format!("loop variable {n}"),
        Var::Param(n) => format!("parameter {n}"),
    };
    match (first_var(a), first_var(b)) {
        (Some(Var::Loop(x)), Some(Var::Loop(y))) => {
            format!("product of loop variables {x} and {y}")
        }
        (Some(Var::Param(x)), Some(Var::Param(y))) => format!("product of parameters {x} and {y}"),
        (Some(x), Some(y)) => format!("product of {} and {}", describe(x), describe(y)),
        _ => "product of two variable expressions".to_string(),
    }
}

fn arith(
    op: ArithOp,
    a: &Expr,
    b: &Expr,
    span: Span,
    scope: &Scope,
    allow_minmax: bool,
) -> Result<AffExpr, AffError> {
    if op == ArithOp::Div {
        return Err(err(
            AffErrorKind::NonAffine,
            "division; write floor(e / c) or ceil(e / c)",
            span,
        ));
    }
    let x = to_aff(a, scope, allow_minmax)?;
    if op == ArithOp::Mod {
        let c = divisor(b, scope, "%")?;
        return Ok(match x {
            AffExpr::Const(v) => AffExpr::Const(v.rem_euclid(c)),
            x => AffExpr::Mod(Box::new(x), c),
        });
    }
    let y = to_aff(b, scope, allow_minmax)?;
    Ok(match (op, x, y) {
        (ArithOp::Add, AffExpr::Const(p), AffExpr::Const(q)) => {
            AffExpr::Const(checked(p.checked_add(q), span)?)
        }
        (ArithOp::Sub, AffExpr::Const(p), AffExpr::Const(q)) => {
            AffExpr::Const(checked(p.checked_sub(q), span)?)
        }
        (ArithOp::Mul, AffExpr::Const(p), AffExpr::Const(q)) => {
            AffExpr::Const(checked(p.checked_mul(q), span)?)
        }
        (ArithOp::Add, x, y) => AffExpr::Add(Box::new(x), Box::new(y)),
        (ArithOp::Sub, x, y) => AffExpr::Sub(Box::new(x), Box::new(y)),
        (ArithOp::Mul, AffExpr::Const(c), y) => AffExpr::Mul(c, Box::new(y)),
        (ArithOp::Mul, x, AffExpr::Const(c)) => AffExpr::Mul(c, Box::new(x)),
        (_, x, y) => {
            return Err(err(AffErrorKind::NonAffine, describe_product(&x, &y), span));
        }
    })
}

/// A divisor of `floor`/`ceil`/`%`: a positive integer constant.
fn divisor(b: &Expr, scope: &Scope, what: &str) -> Result<i64, AffError> {
    match to_aff(b, scope, false) {
        Ok(AffExpr::Const(c)) if c > 0 => Ok(c),
        Err(e) if e.kind == AffErrorKind::Overflow => Err(e),
        _ => Err(err(
            AffErrorKind::Divisor,
            format!("the divisor of `{what}` must be a positive integer constant"),
            b.span,
        )),
    }
}

fn call(
    name: &str,
    args: &[Expr],
    span: Span,
    scope: &Scope,
    allow_minmax: bool,
) -> Result<AffExpr, AffError> {
    match (name, args) {
        ("floor" | "ceil", [arg]) => {
            let ExprKind::Arith(ArithOp::Div, num, den) = &arg.kind else {
                return Err(err(
                    AffErrorKind::NonAffine,
                    format!("`{name}` takes a division `e / c`"),
                    arg.span,
                ));
            };
            let x = to_aff(num, scope, allow_minmax)?;
            let c = divisor(den, scope, name)?;
            Ok(match (name, x) {
                ("floor", AffExpr::Const(v)) => AffExpr::Const(v.div_euclid(c)),
                ("floor", x) => AffExpr::FloorDiv(Box::new(x), c),
                (_, AffExpr::Const(v)) => AffExpr::Const(-((-v).div_euclid(c))),
                (_, x) => AffExpr::CeilDiv(Box::new(x), c),
            })
        }
        ("min" | "max", [a, b]) => {
            if !allow_minmax {
                return Err(err(
                    AffErrorKind::MinMax,
                    format!("`{name}` is only allowed in loop bounds"),
                    span,
                ));
            }
            let x = Box::new(to_aff(a, scope, allow_minmax)?);
            let y = Box::new(to_aff(b, scope, allow_minmax)?);
            Ok(if name == "min" {
                AffExpr::Min(x, y)
            } else {
                AffExpr::Max(x, y)
            })
        }
        _ => Err(err(
            AffErrorKind::NonAffine,
            format!("call to `{name}` is not an affine operation"),
            span,
        )),
    }
}

/// Coefficients by variable (keyed by `(is a parameter, name)`) and a constant.
pub type LinearForm = (std::collections::BTreeMap<(bool, String), i64>, i64);

/// The linear form `(coefficients by variable, constant)` of `a`, if it is linear; used to
/// compare extents.
pub fn linear_form(a: &AffExpr) -> Option<LinearForm> {
    fn add(into: &mut LinearForm, from: LinearForm, k: i64) -> Option<()> {
        for (v, c) in from.0 {
            let e = into.0.entry(v).or_insert(0);
            *e = e.checked_add(c.checked_mul(k)?)?;
        }
        into.1 = into.1.checked_add(from.1.checked_mul(k)?)?;
        Some(())
    }
    let mut out: LinearForm = Default::default();
    match a {
        AffExpr::Const(c) => out.1 = *c,
        AffExpr::Var(v) => {
            out.0
                .insert((matches!(v, Var::Param(_)), v.name().to_string()), 1);
        }
        AffExpr::Add(x, y) => {
            add(&mut out, linear_form(x)?, 1)?;
            add(&mut out, linear_form(y)?, 1)?;
        }
        AffExpr::Sub(x, y) => {
            add(&mut out, linear_form(x)?, 1)?;
            add(&mut out, linear_form(y)?, -1)?;
        }
        AffExpr::Neg(x) => add(&mut out, linear_form(x)?, -1)?,
        AffExpr::Mul(c, x) => add(&mut out, linear_form(x)?, *c)?,
        _ => return None,
    }
    out.0.retain(|_, c| *c != 0);
    Some(out)
}

/// Whether two extents are the same expression (as linear forms, else structurally).
pub fn same_extent(a: &AffExpr, b: &AffExpr) -> bool {
    match (linear_form(a), linear_form(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Array, ElemType, Param, Role};

    fn parse_expr(text: &str) -> Expr {
        let file = crate::SourceFile::new("t.pk", format!("kernel k() {{ x = {text}; }}"));
        match &crate::parse(&file).expect("parses").kernels[0].body[0] {
            crate::ast::Item::Stmt(s) => s.rhs.clone(),
            _ => unreachable!("a statement"),
        }
    }

    fn convert(text: &str, minmax: bool) -> Result<AffExpr, AffError> {
        let params = [Param {
            name: "N".into(),
            default: None,
            span: Span::default(),
        }];
        let arrays = [Array {
            name: "A".into(),
            elem: ElemType::F32,
            dims: vec![],
            role: Role::In,
            span: Span::default(),
        }];
        let mut scope = Scope::new(&params, &arrays);
        scope.loops = vec!["i".into(), "j".into()];
        to_aff(&parse_expr(text), &scope, minmax)
    }

    #[test]
    fn constants_fold_and_products_need_a_constant() {
        assert_eq!(convert("2 * 3 + 1", false), Ok(AffExpr::Const(7)));
        assert_eq!(convert("floor(-7 / 2)", false), Ok(AffExpr::Const(-4)));
        assert_eq!(convert("ceil(7 / 2)", false), Ok(AffExpr::Const(4)));
        assert_eq!(convert("-7 % 3", false), Ok(AffExpr::Const(2)));
        assert!(matches!(convert("i * 4", false), Ok(AffExpr::Mul(4, _))));
        let e = convert("i * N", false).unwrap_err();
        assert_eq!(e.reason, "product of loop variable i and parameter N");
    }

    #[test]
    fn error_kinds() {
        let kind = |t: &str, mm| convert(t, mm).unwrap_err().kind;
        assert_eq!(kind("A + i", false), AffErrorKind::DataDependent);
        assert_eq!(kind("min(i, j)", false), AffErrorKind::MinMax);
        assert!(convert("min(i, j)", true).is_ok());
        assert_eq!(kind("i % N", false), AffErrorKind::Divisor);
        assert_eq!(kind("q + 1", false), AffErrorKind::UnknownName);
        assert_eq!(
            kind("9223372036854775807 + 1", false),
            AffErrorKind::Overflow
        );
        assert_eq!(kind("i / 2", false), AffErrorKind::NonAffine);
    }

    #[test]
    fn extents_compare_as_linear_forms() {
        let a = convert("N - 1 + i", false).unwrap();
        let b = convert("i + (N - 1)", false).unwrap();
        let c = convert("N + i", false).unwrap();
        assert!(same_extent(&a, &b));
        assert!(!same_extent(&a, &c));
    }
}
