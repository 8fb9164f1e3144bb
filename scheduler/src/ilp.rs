//! Small integer linear programs over named-less unknowns `x0, x1, ...`, solved exactly by
//! isl's lexicographic minimum (parametric integer programming, no floating point).

use poly::isl::{Ctx, IslError, IslResult};
use std::fmt::Write;

/// A linear expression `sum(coeff * x_var) + constant` (sparse; coefficients in `i128` so
/// that combining the small coefficients of schedules and Farkas duals cannot overflow).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinExpr {
    terms: Vec<(usize, i128)>,
    constant: i128,
}

impl LinExpr {
    /// The expression `x_var`.
    pub fn var(var: usize) -> LinExpr {
        LinExpr {
            terms: vec![(var, 1)],
            constant: 0,
        }
    }

    /// The constant expression `c`.
    pub fn constant(c: i128) -> LinExpr {
        LinExpr {
            terms: Vec::new(),
            constant: c,
        }
    }

    /// `self + k * other`.
    pub fn plus_scaled(mut self, other: &LinExpr, k: i128) -> LinExpr {
        if k == 0 {
            return self;
        }
        for &(v, c) in &other.terms {
            match self.terms.iter_mut().find(|(w, _)| *w == v) {
                Some((_, d)) => *d += k * c,
                None => self.terms.push((v, k * c)),
            }
        }
        self.terms.retain(|&(_, c)| c != 0);
        self.constant += k * other.constant;
        self
    }

    /// `self + other`.
    pub fn plus(self, other: &LinExpr) -> LinExpr {
        self.plus_scaled(other, 1)
    }

    /// `self - other`.
    pub fn minus(self, other: &LinExpr) -> LinExpr {
        self.plus_scaled(other, -1)
    }

    /// The sum of expressions.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a LinExpr>) -> LinExpr {
        parts
            .into_iter()
            .fold(LinExpr::default(), |acc, p| acc.plus(p))
    }

    /// `self >= 0`.
    pub fn ge0(self) -> Constraint {
        Constraint {
            expr: self,
            equality: false,
        }
    }

    /// `self = 0`.
    pub fn eq0(self) -> Constraint {
        Constraint {
            expr: self,
            equality: true,
        }
    }

    /// The value at a point.
    pub fn eval(&self, x: &[i64]) -> i128 {
        self.terms
            .iter()
            .map(|&(v, c)| c * i128::from(x[v]))
            .sum::<i128>()
            + self.constant
    }

    fn write(&self, out: &mut String) {
        for &(v, c) in &self.terms {
            let _ = write!(out, "{c}*x{v} + ");
        }
        let _ = write!(out, "{}", self.constant);
    }
}

/// `expr >= 0` or `expr = 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    /// The expression.
    pub expr: LinExpr,
    /// Whether it must be zero (else non-negative).
    pub equality: bool,
}

/// A system of linear constraints over `n_vars` integer unknowns.
#[derive(Clone, Debug, Default)]
pub struct Ilp {
    /// Number of unknowns.
    pub n_vars: usize,
    /// The constraints.
    pub constraints: Vec<Constraint>,
}

impl Ilp {
    /// An unconstrained system of `n_vars` unknowns.
    pub fn new(n_vars: usize) -> Ilp {
        Ilp {
            n_vars,
            constraints: Vec::new(),
        }
    }

    /// Adds a constraint.
    pub fn push(&mut self, c: Constraint) {
        self.constraints.push(c);
    }

    /// The lexicographically smallest integer solution `(x0, x1, ...)`, or `None` if there is
    /// none. Every unknown must be bounded below on the solutions (else isl reports an
    /// error).
    pub fn lexmin(&self, ctx: &Ctx) -> IslResult<Option<Vec<i64>>> {
        let vars: Vec<String> = (0..self.n_vars).map(|v| format!("x{v}")).collect();
        let mut text = format!("{{ [{}] : ", vars.join(", "));
        for (k, c) in self.constraints.iter().enumerate() {
            if k > 0 {
                text.push_str(" and ");
            }
            c.expr.write(&mut text);
            text.push_str(if c.equality { " = 0" } else { " >= 0" });
        }
        if self.constraints.is_empty() {
            text.push_str("true");
        }
        text.push_str(" }");
        let min = ctx.set(&text)?.lexmin()?;
        if min.is_empty()? {
            return Ok(None);
        }
        match min.points()?.as_slice() {
            [p] => Ok(Some(p.clone())),
            _ => Err(IslError::Isl(
                "the lexicographic minimum is unbounded (an unknown has no lower bound)".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexmin_is_exact_and_integer() {
        // 2 x0 >= 3, x1 >= x0 - 5, x1 >= 0: the rational minimum x0 = 1.5 is not integer.
        let ctx = Ctx::default();
        let x = |v| LinExpr::var(v);
        let mut ilp = Ilp::new(2);
        ilp.push(
            x(0).plus_scaled(&x(0), 1)
                .plus(&LinExpr::constant(-3))
                .ge0(),
        );
        ilp.push(x(1).minus(&x(0)).plus(&LinExpr::constant(5)).ge0());
        ilp.push(x(1).ge0());
        assert_eq!(ilp.lexmin(&ctx).unwrap(), Some(vec![2, 0]));
        assert_eq!(x(0).plus_scaled(&x(1), 3).eval(&[2, 1]), 5);
    }

    #[test]
    fn infeasible_and_unbounded_systems() {
        let ctx = Ctx::default();
        let mut ilp = Ilp::new(1);
        ilp.push(LinExpr::var(0).plus(&LinExpr::constant(-1)).eq0());
        ilp.push(LinExpr::constant(0).minus(&LinExpr::var(0)).ge0());
        assert_eq!(ilp.lexmin(&ctx).unwrap(), None);
        assert!(Ilp::new(1).lexmin(&ctx).is_err());
    }
}
