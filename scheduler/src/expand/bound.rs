//! Bounds in the parameters alone of the values a loop variable takes: the extents of the
//! dimensions an expansion adds.

use frontend::ir::{AffExpr, Loop, Var};

/// Which side of a value is bounded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Lower,
    Upper,
}

impl Side {
    fn flip(self) -> Side {
        match self {
            Side::Lower => Side::Upper,
            Side::Upper => Side::Lower,
        }
    }
}

/// The range of `loops[k]`'s variable as `(lo, extent)`, both affine in the parameters, such
/// that every value `v` it takes has `0 <= v - lo < extent`; `loops` are the loops around
/// it, outermost first. `None` when a bound cannot be put in the parameters alone (a
/// `max` in an upper bound, a modulo).
pub fn range(loops: &[&Loop], k: usize) -> Option<(AffExpr, AffExpr)> {
    let outer = &loops[..k];
    let lo = bound(&loops[k].lower, outer, Side::Lower)?;
    let hi = bound(&loops[k].upper, outer, Side::Upper)?;
    let extent = AffExpr::Sub(Box::new(hi), Box::new(lo.clone()));
    Some((lo, extent))
}

/// Whether `e` names no loop variable.
pub fn is_parametric(e: &AffExpr) -> bool {
    match e {
        AffExpr::Const(_) | AffExpr::Var(Var::Param(_)) => true,
        AffExpr::Var(Var::Loop(_)) => false,
        AffExpr::Neg(x) | AffExpr::Mul(_, x) => is_parametric(x),
        AffExpr::FloorDiv(x, _) | AffExpr::CeilDiv(x, _) | AffExpr::Mod(x, _) => is_parametric(x),
        AffExpr::Add(x, y) | AffExpr::Sub(x, y) | AffExpr::Min(x, y) | AffExpr::Max(x, y) => {
            is_parametric(x) && is_parametric(y)
        }
    }
}

/// A bound of `e` on `side` over every value of the loop variables of `loops`, in the
/// parameters alone.
fn bound(e: &AffExpr, loops: &[&Loop], side: Side) -> Option<AffExpr> {
    let b = |e: &AffExpr, side| bound(e, loops, side).map(Box::new);
    Some(match e {
        AffExpr::Const(_) | AffExpr::Var(Var::Param(_)) => e.clone(),
        AffExpr::Var(Var::Loop(name)) => {
            let k = loops.iter().position(|l| &l.var == name)?;
            match side {
                Side::Lower => bound(&loops[k].lower, &loops[..k], side)?,
                // The largest value below an exclusive upper bound.
                Side::Upper => AffExpr::Sub(
                    Box::new(bound(&loops[k].upper, &loops[..k], side)?),
                    Box::new(AffExpr::Const(1)),
                ),
            }
        }
        AffExpr::Add(x, y) => AffExpr::Add(b(x, side)?, b(y, side)?),
        AffExpr::Sub(x, y) => AffExpr::Sub(b(x, side)?, b(y, side.flip())?),
        AffExpr::Neg(x) => AffExpr::Neg(b(x, side.flip())?),
        AffExpr::Mul(c, x) if *c >= 0 => AffExpr::Mul(*c, b(x, side)?),
        AffExpr::Mul(c, x) => AffExpr::Mul(*c, b(x, side.flip())?),
        AffExpr::FloorDiv(x, c) => AffExpr::FloorDiv(b(x, side)?, *c),
        AffExpr::CeilDiv(x, c) => AffExpr::CeilDiv(b(x, side)?, *c),
        // min(x, y) <= x and max(x, y) >= x.
        AffExpr::Min(x, _) if side == Side::Upper => return bound(x, loops, side),
        AffExpr::Max(x, _) if side == Side::Lower => return bound(x, loops, side),
        AffExpr::Min(..) | AffExpr::Max(..) | AffExpr::Mod(..) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontend::span::Span;

    fn lp(var: &str, lower: AffExpr, upper: AffExpr) -> Loop {
        Loop {
            var: var.into(),
            lower,
            upper,
            step: 1,
            reverse: false,
            body: Vec::new(),
            span: Span::default(),
        }
    }
    fn v(n: &str) -> AffExpr {
        AffExpr::Var(Var::Loop(n.into()))
    }
    fn p(n: &str) -> AffExpr {
        AffExpr::Var(Var::Param(n.into()))
    }

    #[test]
    fn triangular_loop_extent_is_bounded_by_the_outer_loop() {
        // for i in 0..n, for j in 0..i: j takes 0..n-2, extent (n - 1) - 1 + 1.
        let i = lp("i", AffExpr::Const(0), p("n"));
        let j = lp("j", AffExpr::Const(0), v("i"));
        let (lo, extent) = range(&[&i, &j], 1).unwrap();
        assert_eq!(lo, AffExpr::Const(0));
        assert_eq!(eval(&extent, 10), 9);
    }

    /// `e` with every parameter equal to `n`.
    fn eval(e: &AffExpr, n: i64) -> i64 {
        match e {
            AffExpr::Const(c) => *c,
            AffExpr::Var(_) => n,
            AffExpr::Add(a, b) => eval(a, n) + eval(b, n),
            AffExpr::Sub(a, b) => eval(a, n) - eval(b, n),
            AffExpr::Neg(a) => -eval(a, n),
            AffExpr::Mul(c, a) => c * eval(a, n),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_max_in_an_upper_bound_has_no_parametric_bound() {
        let i = lp(
            "i",
            AffExpr::Const(0),
            AffExpr::Max(Box::new(p("n")), Box::new(p("m"))),
        );
        assert!(range(&[&i], 0).is_none());
    }
}
