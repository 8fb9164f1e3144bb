//! A program's expressions in isl's notation.
//!
//! Sums, constant multiples, floor divisions, remainders, `min` and `max` are written as
//! isl writes them; a comparison or a selection (which isl's notation has no term for)
//! becomes an existential variable with the disjunction that defines it.

use npu_sim::program::{CmpOp, Expr, VarId};
use std::collections::HashMap;

/// The constraints of one instruction's instances, in isl's notation: its conditions and
/// the existential variables they need.
#[derive(Default)]
pub(super) struct Constraints {
    /// Existential variables, `t0`, `t1`, ...
    exists: usize,
    /// Conditions that must all hold.
    conds: Vec<String>,
    /// The variable of each comparison and selection met so far: a program repeats them
    /// (a tile's size in its loop bound, its index and its length), and each is a
    /// disjunction isl would otherwise multiply out again.
    named: HashMap<String, String>,
}

/// The isl name of loop variable `v`.
pub(super) fn var(v: VarId) -> String {
    format!("v{}", v.0)
}

impl Constraints {
    /// Adds a condition.
    pub(super) fn require(&mut self, cond: String) {
        self.conds.push(cond);
    }

    /// A new existential variable.
    pub(super) fn fresh(&mut self) -> String {
        self.exists += 1;
        format!("t{}", self.exists - 1)
    }

    /// `e` as an isl term; the core count is the constant `cores`.
    pub(super) fn term(&mut self, e: &Expr, cores: i64) -> String {
        self.written(&e.simplified(), cores)
    }

    /// [`Constraints::term`] of a simplified expression.
    fn written(&mut self, e: &Expr, cores: i64) -> String {
        if matches!(e, Expr::Cmp(..) | Expr::Select(..)) {
            let key = format!("{e:?}");
            if let Some(t) = self.named.get(&key) {
                return t.clone();
            }
            let t = self.defined(e, cores);
            self.named.insert(key, t.clone());
            return t;
        }
        self.defined(e, cores)
    }

    /// `e` written out, a comparison or a selection as a new variable.
    fn defined(&mut self, e: &Expr, cores: i64) -> String {
        match e {
            Expr::Const(c) if *c < 0 => format!("(0 - {})", c.unsigned_abs()),
            Expr::Const(c) => c.to_string(),
            Expr::Var(v) => var(*v),
            Expr::Core => "core".into(),
            Expr::Cores => cores.to_string(),
            Expr::Add(a, b) => format!("({} + {})", self.written(a, cores), self.written(b, cores)),
            Expr::Sub(a, b) => format!("({} - {})", self.written(a, cores), self.written(b, cores)),
            Expr::Mul(k, a) if *k < 0 => {
                format!("(0 - {}*{})", k.unsigned_abs(), self.written(a, cores))
            }
            Expr::Mul(k, a) => format!("({k}*{})", self.written(a, cores)),
            Expr::Div(a, k) => format!("floor(({})/{k})", self.written(a, cores)),
            Expr::Mod(a, k) => format!("(({}) mod {k})", self.written(a, cores)),
            Expr::Min(a, b) => format!(
                "min({}, {})",
                self.written(a, cores),
                self.written(b, cores)
            ),
            Expr::Max(a, b) => format!(
                "max({}, {})",
                self.written(a, cores),
                self.written(b, cores)
            ),
            Expr::Cmp(op, a, b) => {
                let (holds, fails) = self.comparison(*op, a, b, cores);
                let t = self.fresh();
                self.require(format!("(({t} = 1 and {holds}) or ({t} = 0 and {fails}))"));
                t
            }
            Expr::Select(c, a, b) => {
                let (holds, fails) = match &**c {
                    Expr::Cmp(op, x, y) => self.comparison(*op, x, y, cores),
                    c => {
                        let c = self.written(c, cores);
                        (format!("{c} != 0"), format!("{c} = 0"))
                    }
                };
                let (a, b) = (self.written(a, cores), self.written(b, cores));
                let t = self.fresh();
                self.require(format!(
                    "(({holds} and {t} = {a}) or ({fails} and {t} = {b}))"
                ));
                t
            }
        }
    }

    /// `a OP b` and its negation.
    fn comparison(&mut self, op: CmpOp, a: &Expr, b: &Expr, cores: i64) -> (String, String) {
        let (a, b) = (self.written(a, cores), self.written(b, cores));
        let (yes, no) = match op {
            CmpOp::Lt => ("<", ">="),
            CmpOp::Le => ("<=", ">"),
            CmpOp::Gt => (">", "<="),
            CmpOp::Ge => (">=", "<"),
            CmpOp::Eq => ("=", "!="),
            CmpOp::Ne => ("!=", "="),
        };
        (format!("{a} {yes} {b}"), format!("{a} {no} {b}"))
    }

    /// The conditions as one isl formula (`true` if there are none).
    pub(super) fn formula(&self) -> String {
        let all = if self.conds.is_empty() {
            "0 = 0".to_string()
        } else {
            self.conds.join(" and ")
        };
        match self.exists {
            0 => all,
            n => {
                let names: Vec<String> = (0..n).map(|k| format!("t{k}")).collect();
                format!("exists ({} : {all})", names.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poly::isl::Ctx;

    fn set_of(e: &Expr) -> String {
        let mut c = Constraints::default();
        let t = c.term(e, 8);
        c.require(format!("x = {t}"));
        c.require("0 <= v0 < 10 and 0 <= core < 8".into());
        format!("{{ [core, v0, x] : {} }}", c.formula())
    }

    /// Every construct, parsed by isl, holds exactly the points `eval` gives.
    #[test]
    fn isl_agrees_with_the_simulator_on_every_construct() {
        let v = || Expr::Var(VarId(0));
        let exprs = [
            (v() * 3 - Expr::Core) / 4 + (v() % 3) * -2,
            v().min(Expr::Core + 1).max(c(2)),
            (v().cmp(CmpOp::Lt, Expr::Core)).select(v() * 5, Expr::Cores - v()),
            (v().cmp(CmpOp::Eq, c(3)) + v().cmp(CmpOp::Ne, c(4))) * 7,
            (v() % 2).select(c(-1), v().cmp(CmpOp::Ge, c(5))),
        ];
        let ctx = Ctx::default();
        for e in exprs {
            let mut pts = ctx.set(&set_of(&e)).unwrap().points().unwrap();
            pts.sort();
            let mut want: Vec<Vec<i64>> = (0..8)
                .flat_map(|core| (0..10).map(move |x| (core, x)))
                .map(|(core, x)| vec![core, x, e.eval(&[x], core, 8)])
                .collect();
            want.sort();
            assert_eq!(pts, want, "{e:?}");
        }
    }

    fn c(v: i64) -> Expr {
        Expr::Const(v)
    }
}
