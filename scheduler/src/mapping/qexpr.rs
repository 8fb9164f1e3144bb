//! Quasi-affine index expressions of memory mappings: sums, constant multiples, and floor
//! division and modulo by positive constants, over named integer variables.
//!
//! A memory mapping says which tensor element each operand element holds, e.g.
//! `I[i1 / 9, r1 / 9, i1 / 3 % 3 + r1 / 3 % 3, i1 % 3 + r1 % 3]`. The same expression is
//! evaluated in Rust (to replay counterexamples and to run mappings), turned into linear
//! facts for the solvers, printed and parsed (the mapping text format).

use super::formula::{Lin, Query};
use frontend::ir::{AffExpr, Var};
use std::fmt;

/// A quasi-affine integer expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QExpr {
    /// A constant.
    Const(i64),
    /// A named variable (a software loop, a fused intrinsic index, a parameter).
    Var(String),
    /// A sum of at least two terms.
    Sum(Vec<QExpr>),
    /// A constant multiple, the factor neither 0 nor 1.
    Scale(i64, Box<QExpr>),
    /// `floor(e / c)`, `c > 1`.
    Div(Box<QExpr>, i64),
    /// `e mod c` in `[0, c)`, `c > 1`.
    Mod(Box<QExpr>, i64),
}

impl QExpr {
    /// A variable.
    pub fn var(name: &str) -> QExpr {
        QExpr::Var(name.to_string())
    }
    /// `a + b`, with constants folded.
    pub fn sum(a: QExpr, b: QExpr) -> QExpr {
        let mut terms = Vec::new();
        let mut constant = 0;
        for e in [a, b] {
            match e {
                QExpr::Sum(ts) => terms.extend(ts),
                other => terms.push(other),
            }
        }
        terms.retain(|t| match t {
            QExpr::Const(c) => {
                constant += c;
                false
            }
            _ => true,
        });
        if constant != 0 || terms.is_empty() {
            terms.push(QExpr::Const(constant));
        }
        if terms.len() == 1 {
            terms.pop().unwrap_or(QExpr::Const(0))
        } else {
            QExpr::Sum(terms)
        }
    }
    /// `k * e`.
    pub fn scale(k: i64, e: QExpr) -> QExpr {
        match (k, e) {
            (0, _) => QExpr::Const(0),
            (1, e) => e,
            (k, QExpr::Const(c)) => QExpr::Const(k * c),
            (k, QExpr::Scale(j, e)) => QExpr::scale(k * j, *e),
            (k, e) => QExpr::Scale(k, Box::new(e)),
        }
    }
    /// `floor(e / c)`, `c > 0`.
    pub fn floor_div(e: QExpr, c: i64) -> QExpr {
        match (e, c) {
            (e, 1) => e,
            (QExpr::Const(k), c) => QExpr::Const(k.div_euclid(c)),
            (e, c) => QExpr::Div(Box::new(e), c),
        }
    }
    /// `e mod c`, `c > 0`.
    pub fn modulo(e: QExpr, c: i64) -> QExpr {
        match (e, c) {
            (_, 1) => QExpr::Const(0),
            (QExpr::Const(k), c) => QExpr::Const(k.rem_euclid(c)),
            (e, c) => QExpr::Mod(Box::new(e), c),
        }
    }

    /// The expression of an IR index with each variable replaced by `subst(var)`; `None`
    /// for `min`/`max`, which indices never contain.
    pub fn from_aff(e: &AffExpr, subst: &dyn Fn(&Var) -> QExpr) -> Option<QExpr> {
        let go = |e: &AffExpr| QExpr::from_aff(e, subst);
        Some(match e {
            AffExpr::Const(c) => QExpr::Const(*c),
            AffExpr::Var(v) => subst(v),
            AffExpr::Add(a, b) => QExpr::sum(go(a)?, go(b)?),
            AffExpr::Sub(a, b) => QExpr::sum(go(a)?, QExpr::scale(-1, go(b)?)),
            AffExpr::Neg(a) => QExpr::scale(-1, go(a)?),
            AffExpr::Mul(c, a) => QExpr::scale(*c, go(a)?),
            AffExpr::FloorDiv(a, c) => QExpr::floor_div(go(a)?, *c),
            AffExpr::CeilDiv(a, c) => QExpr::floor_div(QExpr::sum(go(a)?, QExpr::Const(c - 1)), *c),
            AffExpr::Mod(a, c) => QExpr::modulo(go(a)?, *c),
            AffExpr::Min(..) | AffExpr::Max(..) => return None,
        })
    }

    /// The value, with every variable valued by `env`.
    pub fn eval(&self, env: &dyn Fn(&str) -> i64) -> i64 {
        match self {
            QExpr::Const(c) => *c,
            QExpr::Var(v) => env(v),
            QExpr::Sum(ts) => ts.iter().map(|t| t.eval(env)).sum(),
            QExpr::Scale(k, e) => k * e.eval(env),
            QExpr::Div(e, c) => e.eval(env).div_euclid(*c),
            QExpr::Mod(e, c) => e.eval(env).rem_euclid(*c),
        }
    }

    /// The expression as a linear term of `query`, divisions becoming quotient variables.
    pub fn to_lin(&self, query: &mut Query, env: &dyn Fn(&str) -> Lin) -> Lin {
        match self {
            QExpr::Const(c) => Lin::constant(*c),
            QExpr::Var(v) => env(v),
            QExpr::Sum(ts) => ts
                .iter()
                .fold(Lin::constant(0), |acc, t| acc.add(&t.to_lin(query, env))),
            QExpr::Scale(k, e) => e.to_lin(query, env).scale(*k),
            QExpr::Div(e, c) => {
                let inner = e.to_lin(query, env);
                query.floor_div(&inner, *c)
            }
            QExpr::Mod(e, c) => {
                let inner = e.to_lin(query, env);
                query.modulo(&inner, *c)
            }
        }
    }

    /// The variables it mentions.
    pub fn vars(&self, out: &mut Vec<String>) {
        match self {
            QExpr::Const(_) => {}
            QExpr::Var(v) => {
                if !out.contains(v) {
                    out.push(v.clone())
                }
            }
            QExpr::Sum(ts) => ts.iter().for_each(|t| t.vars(out)),
            QExpr::Scale(_, e) | QExpr::Div(e, _) | QExpr::Mod(e, _) => e.vars(out),
        }
    }

    fn precedence(&self) -> u8 {
        match self {
            QExpr::Sum(_) => 1,
            QExpr::Scale(..) | QExpr::Div(..) | QExpr::Mod(..) => 2,
            QExpr::Const(c) if *c < 0 => 1,
            QExpr::Const(_) | QExpr::Var(_) => 3,
        }
    }
}

/// Writes `e`, in parentheses when it binds less tightly than `min`.
fn operand(f: &mut fmt::Formatter<'_>, e: &QExpr, min: u8) -> fmt::Result {
    if e.precedence() < min {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}

impl fmt::Display for QExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QExpr::Const(c) => write!(f, "{c}"),
            QExpr::Var(v) => f.write_str(v),
            QExpr::Sum(ts) => {
                for (k, t) in ts.iter().enumerate() {
                    match (k, t) {
                        (0, t) => operand(f, t, 1)?,
                        (_, QExpr::Const(c)) if *c < 0 => write!(f, " - {}", -c)?,
                        (_, QExpr::Scale(c, e)) if *c < 0 => {
                            f.write_str(" - ")?;
                            if *c != -1 {
                                write!(f, "{} * ", -c)?;
                            }
                            operand(f, e, 3)?
                        }
                        (_, t) => {
                            f.write_str(" + ")?;
                            operand(f, t, 2)?
                        }
                    }
                }
                Ok(())
            }
            QExpr::Scale(-1, e) => {
                f.write_str("-")?;
                operand(f, e, 3)
            }
            QExpr::Scale(k, e) => {
                write!(f, "{k} * ")?;
                operand(f, e, 3)
            }
            QExpr::Div(e, c) => {
                operand(f, e, 2)?;
                write!(f, " / {c}")
            }
            QExpr::Mod(e, c) => {
                operand(f, e, 2)?;
                write!(f, " % {c}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_what_it_means() {
        let l = QExpr::var("i1");
        let e = QExpr::sum(
            QExpr::modulo(QExpr::floor_div(l.clone(), 3), 3),
            QExpr::scale(-2, QExpr::sum(l.clone(), QExpr::Const(1))),
        );
        assert_eq!(e.to_string(), "i1 / 3 % 3 - 2 * (i1 + 1)");
        let v = e.eval(&|_| 10);
        assert_eq!(v, (10 / 3) % 3 - 2 * 11);
    }
}
