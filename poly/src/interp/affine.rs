//! Affine expressions compiled for fast evaluation: known names (parameters) folded into
//! constants, the others (loop variables) turned into slots of a value vector, and linear parts
//! gathered into `c + sum a_k x_k` forms.

use super::arith::compare;
use frontend::ir::{AffExpr, CmpOp, Cond, Var};

/// What a name in an affine expression stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// A known value.
    Value(i64),
    /// Entry `k` of the vector passed to [`AffFn::eval`].
    Slot(usize),
}

/// `constant + sum coeff * x[slot]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Linear {
    /// The constant term.
    pub(crate) constant: i64,
    /// `(slot, coefficient)` pairs, slots distinct, coefficients non-zero.
    pub(crate) terms: Vec<(usize, i64)>,
}

impl Linear {
    fn constant(c: i64) -> Linear {
        Linear {
            constant: c,
            terms: Vec::new(),
        }
    }

    fn scaled(mut self, k: i64) -> Linear {
        self.constant = self.constant.wrapping_mul(k);
        for t in &mut self.terms {
            t.1 = t.1.wrapping_mul(k);
        }
        self.terms.retain(|t| t.1 != 0);
        self
    }

    fn plus(mut self, other: Linear) -> Linear {
        self.constant = self.constant.wrapping_add(other.constant);
        for (slot, coeff) in other.terms {
            match self.terms.iter_mut().find(|t| t.0 == slot) {
                Some(t) => t.1 = t.1.wrapping_add(coeff),
                None => self.terms.push((slot, coeff)),
            }
        }
        self.terms.retain(|t| t.1 != 0);
        self
    }

    /// The value at `x`.
    #[inline]
    pub(crate) fn eval(&self, x: &[i64]) -> i64 {
        self.terms
            .iter()
            .fold(self.constant, |acc, &(slot, coeff)| {
                acc.wrapping_add(coeff.wrapping_mul(x[slot]))
            })
    }
}

/// A compiled (quasi-)affine function of a vector of integers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AffFn {
    /// A linear form (the common case).
    Linear(Linear),
    /// Sum of two functions, one of them not linear.
    Sum(Box<AffFn>, Box<AffFn>),
    /// A constant multiple of a non-linear function.
    Scale(i64, Box<AffFn>),
    /// `floor(f / c)`.
    FloorDiv(Box<AffFn>, i64),
    /// `ceil(f / c)`.
    CeilDiv(Box<AffFn>, i64),
    /// `f mod c`, in `0..c`.
    Mod(Box<AffFn>, i64),
    /// Minimum.
    Min(Box<AffFn>, Box<AffFn>),
    /// Maximum.
    Max(Box<AffFn>, Box<AffFn>),
}

impl AffFn {
    /// Compiles `e`, resolving each name with `bind`; an unbound name is returned as the error.
    pub(crate) fn compile(
        e: &AffExpr,
        bind: &impl Fn(&Var) -> Option<Binding>,
    ) -> Result<AffFn, Var> {
        let unary = |inner: &AffExpr,
                     c: i64,
                     fold: fn(i64, i64) -> i64,
                     node: fn(Box<AffFn>, i64) -> AffFn| {
            Ok(match AffFn::compile(inner, bind)? {
                AffFn::Linear(l) if l.terms.is_empty() => {
                    AffFn::Linear(Linear::constant(fold(l.constant, c)))
                }
                f => node(Box::new(f), c),
            })
        };
        let binary = |a: &AffExpr,
                      b: &AffExpr,
                      fold: fn(i64, i64) -> i64,
                      node: fn(Box<AffFn>, Box<AffFn>) -> AffFn| {
            Ok(match (AffFn::compile(a, bind)?, AffFn::compile(b, bind)?) {
                (AffFn::Linear(x), AffFn::Linear(y))
                    if x.terms.is_empty() && y.terms.is_empty() =>
                {
                    AffFn::Linear(Linear::constant(fold(x.constant, y.constant)))
                }
                (x, y) => node(Box::new(x), Box::new(y)),
            })
        };
        match e {
            AffExpr::Const(c) => Ok(AffFn::Linear(Linear::constant(*c))),
            AffExpr::Var(v) => match bind(v).ok_or_else(|| v.clone())? {
                Binding::Value(c) => Ok(AffFn::Linear(Linear::constant(c))),
                Binding::Slot(k) => Ok(AffFn::Linear(Linear {
                    constant: 0,
                    terms: vec![(k, 1)],
                })),
            },
            AffExpr::Add(a, b) => Ok(AffFn::compile(a, bind)?.plus(AffFn::compile(b, bind)?)),
            AffExpr::Sub(a, b) => {
                Ok(AffFn::compile(a, bind)?.plus(AffFn::compile(b, bind)?.scaled(-1)))
            }
            AffExpr::Neg(a) => Ok(AffFn::compile(a, bind)?.scaled(-1)),
            AffExpr::Mul(c, a) => Ok(AffFn::compile(a, bind)?.scaled(*c)),
            AffExpr::FloorDiv(a, c) => unary(a, *c, floor_div, AffFn::FloorDiv),
            AffExpr::CeilDiv(a, c) => unary(a, *c, ceil_div, AffFn::CeilDiv),
            AffExpr::Mod(a, c) => unary(a, *c, i64::rem_euclid, AffFn::Mod),
            AffExpr::Min(a, b) => binary(a, b, i64::min, AffFn::Min),
            AffExpr::Max(a, b) => binary(a, b, i64::max, AffFn::Max),
        }
    }

    fn plus(self, other: AffFn) -> AffFn {
        match (self, other) {
            (AffFn::Linear(a), AffFn::Linear(b)) => AffFn::Linear(a.plus(b)),
            (a, b) => AffFn::Sum(Box::new(a), Box::new(b)),
        }
    }

    fn scaled(self, k: i64) -> AffFn {
        match self {
            AffFn::Linear(a) => AffFn::Linear(a.scaled(k)),
            f => AffFn::Scale(k, Box::new(f)),
        }
    }

    /// The value at `x`.
    #[inline]
    pub(crate) fn eval(&self, x: &[i64]) -> i64 {
        match self {
            AffFn::Linear(l) => l.eval(x),
            f => f.eval_quasi_affine(x),
        }
    }

    fn eval_quasi_affine(&self, x: &[i64]) -> i64 {
        match self {
            AffFn::Linear(l) => l.eval(x),
            AffFn::Sum(a, b) => a.eval(x).wrapping_add(b.eval(x)),
            AffFn::Scale(k, a) => k.wrapping_mul(a.eval(x)),
            AffFn::FloorDiv(a, c) => floor_div(a.eval(x), *c),
            AffFn::CeilDiv(a, c) => ceil_div(a.eval(x), *c),
            AffFn::Mod(a, c) => a.eval(x).rem_euclid(*c),
            AffFn::Min(a, b) => a.eval(x).min(b.eval(x)),
            AffFn::Max(a, b) => a.eval(x).max(b.eval(x)),
        }
    }
}

fn floor_div(a: i64, c: i64) -> i64 {
    a.div_euclid(c)
}

fn ceil_div(a: i64, c: i64) -> i64 {
    -(-a).div_euclid(c)
}

/// A compiled affine condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CondFn {
    /// `a op b`.
    Cmp(AffFn, CmpOp, AffFn),
    /// Both.
    And(Box<CondFn>, Box<CondFn>),
    /// Either.
    Or(Box<CondFn>, Box<CondFn>),
}

impl CondFn {
    /// Compiles `c` like [`AffFn::compile`].
    pub(crate) fn compile(
        c: &Cond,
        bind: &impl Fn(&Var) -> Option<Binding>,
    ) -> Result<CondFn, Var> {
        Ok(match c {
            Cond::Cmp(a, op, b) => {
                CondFn::Cmp(AffFn::compile(a, bind)?, *op, AffFn::compile(b, bind)?)
            }
            Cond::And(a, b) => CondFn::And(
                Box::new(CondFn::compile(a, bind)?),
                Box::new(CondFn::compile(b, bind)?),
            ),
            Cond::Or(a, b) => CondFn::Or(
                Box::new(CondFn::compile(a, bind)?),
                Box::new(CondFn::compile(b, bind)?),
            ),
        })
    }

    /// Whether the condition holds at `x`.
    pub(crate) fn holds(&self, x: &[i64]) -> bool {
        match self {
            CondFn::Cmp(a, op, b) => compare(*op)(a.eval(x), b.eval(x)),
            CondFn::And(a, b) => a.holds(x) && b.holds(x),
            CondFn::Or(a, b) => a.holds(x) || b.holds(x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(n: &str) -> Box<AffExpr> {
        Box::new(AffExpr::Var(Var::Loop(n.into())))
    }

    fn bind(v: &Var) -> Option<Binding> {
        match v.name() {
            "N" => Some(Binding::Value(10)),
            "i" => Some(Binding::Slot(0)),
            "j" => Some(Binding::Slot(1)),
            _ => None,
        }
    }

    #[test]
    fn linear_parts_are_gathered_and_parameters_folded() {
        // 2*(i + N) - (i - j) = i + j + 20
        let e = AffExpr::Sub(
            Box::new(AffExpr::Mul(2, Box::new(AffExpr::Add(var("i"), var("N"))))),
            Box::new(AffExpr::Sub(var("i"), var("j"))),
        );
        let f = AffFn::compile(&e, &bind).unwrap();
        let AffFn::Linear(l) = &f else {
            panic!("{f:?}")
        };
        assert_eq!(l.constant, 20);
        assert_eq!(l.terms, vec![(0, 1), (1, 1)]);
        assert_eq!(f.eval(&[3, 4]), 27);
    }

    #[test]
    fn quasi_affine_operators_round_towards_minus_infinity() {
        let floor = AffFn::compile(&AffExpr::FloorDiv(var("i"), 4), &bind).unwrap();
        let ceil = AffFn::compile(&AffExpr::CeilDiv(var("i"), 4), &bind).unwrap();
        let modulo = AffFn::compile(&AffExpr::Mod(var("i"), 4), &bind).unwrap();
        for (i, fl, ce, md) in [(-5, -2, -1, 3), (5, 1, 2, 1), (8, 2, 2, 0), (-8, -2, -2, 0)] {
            assert_eq!(
                (floor.eval(&[i]), ceil.eval(&[i]), modulo.eval(&[i])),
                (fl, ce, md),
                "i={i}"
            );
        }
        let min = AffFn::compile(&AffExpr::Min(var("i"), var("N")), &bind).unwrap();
        assert_eq!((min.eval(&[3]), min.eval(&[30])), (3, 10));
        let folded = AffFn::compile(&AffExpr::Max(var("N"), Box::new(AffExpr::Const(12))), &bind);
        assert_eq!(folded, Ok(AffFn::Linear(Linear::constant(12))));
    }

    #[test]
    fn unbound_names_are_reported() {
        assert_eq!(
            AffFn::compile(&AffExpr::Add(var("i"), var("k")), &bind),
            Err(Var::Loop("k".into()))
        );
    }
}
