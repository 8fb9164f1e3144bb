//! AST integer expressions as C text, and the loop facts read off them that both the
//! deciding modules and the printer use (hoistable bounds, constant trip counts).

use crate::ast::{Expr, For, Op};
use std::collections::BTreeMap;

/// Spells AST expressions in C: parameters by their C names, operations with the runtime's
/// helpers (`pc_min`, `pc_max`, `pc_floord`).
#[derive(Clone, Copy)]
pub struct CExprs<'a> {
    /// How the parameters' isl names are spelled in C.
    pub params: &'a BTreeMap<String, String>,
}

impl CExprs<'_> {
    /// `e` as a C expression.
    pub fn expr(&self, e: &Expr) -> String {
        match e {
            Expr::Int(v) => v.to_string(),
            Expr::Id(name) => self
                .params
                .get(name)
                .cloned()
                .unwrap_or_else(|| name.clone()),
            Expr::Op(op, args) => {
                let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
                let bin = |sym: &str| format!("({} {sym} {})", a[0], a[1]);
                match op {
                    Op::And => bin("&&"),
                    Op::Or => bin("||"),
                    Op::Max | Op::Min => {
                        let f = if *op == Op::Max { "pc_max" } else { "pc_min" };
                        let mut it = a.iter();
                        let first = it.next().cloned().unwrap_or_default();
                        it.fold(first, |acc, x| format!("{f}({acc}, {x})"))
                    }
                    Op::Minus => format!("(-({}))", a[0]),
                    Op::Add => bin("+"),
                    Op::Sub => bin("-"),
                    Op::Mul => bin("*"),
                    Op::Div | Op::PosDiv => bin("/"),
                    Op::FloorDiv => format!("pc_floord({}, {})", a[0], a[1]),
                    Op::PosRem | Op::ZeroRem => bin("%"),
                    Op::Select => format!("({} ? {} : {})", a[0], a[1], a[2]),
                    Op::Eq => bin("=="),
                    Op::Le => bin("<="),
                    Op::Lt => bin("<"),
                    Op::Ge => bin(">="),
                    Op::Gt => bin(">"),
                }
            }
        }
    }

    /// The C condition that `f` (with a hoistable bound) runs at least once.
    pub fn runs_once(&self, f: &For) -> Option<String> {
        let (op, bound) = hoistable(f)?;
        Some(format!("{} {op} {}", self.expr(&f.init), self.expr(bound)))
    }
}

/// `(op, bound)` when the loop's condition is `iterator op bound` with a bound that does not
/// depend on the iterator (so it can be computed once before the loop).
pub fn hoistable(f: &For) -> Option<(&'static str, &Expr)> {
    let Expr::Op(op, args) = &f.cond else {
        return None;
    };
    let sym = match op {
        Op::Le => "<=",
        Op::Lt => "<",
        _ => return None,
    };
    match args.as_slice() {
        [Expr::Id(it), bound] if *it == f.iterator && !bound.mentions(it) => Some((sym, bound)),
        _ => None,
    }
}

/// The iterator's values when `f` is sequential with at most `limit` constant iterations
/// (a loop worth unrolling).
pub fn unrolled_values(f: &For, limit: u32) -> Option<Vec<i64>> {
    let (Expr::Int(lo), Some((op, Expr::Int(hi)))) = (&f.init, hoistable(f)) else {
        return None;
    };
    let last = if op == "<" { *hi - 1 } else { *hi };
    let values: Vec<i64> = (*lo..=last).step_by(f.step.max(1) as usize).collect();
    (!f.parallel && !values.is_empty() && values.len() as u32 <= limit).then_some(values)
}
