//! Simplification of a program's expressions: constant parts computed, and `x + 0`,
//! `1 * x`, `x / 1`, `x % 1`, `(x % 16) % 4`, `select(1, a, b)`, `min(a, a)` and the like
//! reduced, the value the same for every variable, core and core count. Built programs
//! compute sizes as expressions of their loop counters; simplified, they read like written
//! ones (`m=64` rather than `m=16*4`, `core + slab` rather than `(1*core + slab)/1`).

use crate::program::{Expr, Program, Stmt};

impl Expr {
    /// The expression simplified (see the module's comment).
    pub fn simplified(&self) -> Expr {
        let e = self.with_children(self.children().into_iter().map(Expr::simplified).collect());
        if e.is_constant() {
            return Expr::Const(e.eval(&[], 0, 0));
        }
        match e {
            Expr::Add(a, b) => match (*a, *b) {
                (x, Expr::Const(c)) | (Expr::Const(c), x) => plus(x, c),
                (a, b) => Expr::Add(Box::new(a), Box::new(b)),
            },
            Expr::Sub(a, b) => match (*a, *b) {
                (x, Expr::Const(c)) => plus(x, -c),
                (a, b) if a == b => Expr::Const(0),
                (a, b) => Expr::Sub(Box::new(a), Box::new(b)),
            },
            // x + a < b: x < b - a
            Expr::Cmp(op, a, b) => match (*a, *b) {
                (x, Expr::Const(c)) => {
                    let (x, k) = offset(x);
                    Expr::Cmp(op, Box::new(x), Box::new(Expr::Const(c - k)))
                }
                (a, b) => Expr::Cmp(op, Box::new(a), Box::new(b)),
            },
            Expr::Mul(c, a) => match (c, *a) {
                (0, _) => Expr::Const(0),
                (1, x) => x,
                (c, Expr::Mul(d, x)) => Expr::Mul(c * d, x),
                (c, x) => Expr::Mul(c, Box::new(x)),
            },
            Expr::Div(a, c) => match (*a, c) {
                (x, 1) => x,
                (Expr::Mul(m, x), c) if m % c == 0 => Expr::Mul(m / c, x).simplified(),
                (x, c) => Expr::Div(Box::new(x), c),
            },
            Expr::Mod(a, c) => match (*a, c) {
                (_, 1) => Expr::Const(0),
                (Expr::Mod(x, m), c) if m % c == 0 => Expr::Mod(x, c),
                (Expr::Mul(m, _), c) if m % c == 0 => Expr::Const(0),
                (x, c) => Expr::Mod(Box::new(x), c),
            },
            Expr::Min(a, b) if a == b => *a,
            Expr::Max(a, b) if a == b => *a,
            Expr::Select(c, a, b) => match *c {
                Expr::Const(v) => {
                    if v != 0 {
                        *a
                    } else {
                        *b
                    }
                }
                _ if a == b => *a,
                c => Expr::Select(Box::new(c), a, b),
            },
            e => e,
        }
    }

    /// Whether no loop variable, core index or core count occurs in it.
    fn is_constant(&self) -> bool {
        match self {
            Expr::Var(_) | Expr::Core | Expr::Cores => false,
            e => e.children().into_iter().all(Expr::is_constant),
        }
    }
}

/// `x` as a term plus a constant: `(y, k)` for `y + k` or `y - k`, else `(x, 0)`.
fn offset(x: Expr) -> (Expr, i64) {
    if let Expr::Add(y, k) = &x {
        if let Expr::Const(k) = **k {
            return ((**y).clone(), k);
        }
    }
    (x, 0)
}

/// `x + c`, the constant merged into one `x` already ends with (`y + k + c` is `y + (k + c)`).
fn plus(x: Expr, c: i64) -> Expr {
    let (y, k) = offset(x);
    match k.wrapping_add(c) {
        0 => y,
        k => Expr::Add(Box::new(y), Box::new(Expr::Const(k))),
    }
}

/// Simplifies every expression of `p`: loop bounds, indices, sizes, options, flag ids.
pub fn simplify(p: &mut Program) {
    fn walk(body: &mut [Stmt]) {
        for s in body {
            match s {
                Stmt::Loop(l) => {
                    l.lo = l.lo.simplified();
                    l.hi = l.hi.simplified();
                    walk(&mut l.body);
                }
                Stmt::Instr(i) => {
                    for e in i.op.exprs_mut() {
                        *e = e.simplified();
                    }
                }
            }
        }
    }
    walk(&mut p.body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::VarId;

    fn v(i: u32) -> Expr {
        Expr::Var(VarId(i))
    }

    /// `e % 1`, built as a program would (the operator form is a lint).
    fn mod1(e: Expr) -> Expr {
        Expr::Mod(Box::new(e), 1)
    }

    #[test]
    fn identities_and_constants_fold() {
        let core_slab = (Expr::Mul(1, Box::new(Expr::Core)) + v(0)) / 1;
        assert_eq!(core_slab.simplified(), Expr::Core + v(0));
        assert_eq!(mod1(core_slab.clone()).simplified(), Expr::Const(0));
        assert_eq!((mod1(v(0)) * 9 + 3).simplified(), Expr::Const(3));
        assert_eq!(((v(1) % 16) % 4).simplified(), v(1) % 4);
        let lt = crate::program::CmpOp::Lt;
        assert_eq!((v(0) + 1 - 1).cmp(lt, 0).simplified(), v(0).cmp(lt, 0));
        assert_eq!((v(0) + 1 + 1).simplified(), v(0) + 2);
        assert_eq!((v(1) * 16 / 4).simplified(), v(1) * 4);
        assert_eq!((v(1) * 16 % 8).simplified(), Expr::Const(0));
        assert_eq!((v(1) - v(1)).simplified(), Expr::Const(0));
        assert_eq!(v(0).min(v(0)).simplified(), v(0));
        let sel = Expr::Const(2)
            .cmp(crate::program::CmpOp::Lt, 1)
            .select(v(0), v(1));
        assert_eq!(sel.simplified(), v(1));
    }

    /// Simplification keeps the value: random expressions evaluated before and after.
    #[test]
    fn values_are_kept() {
        let e = ((v(0) * 3 + Expr::Core) / 1 % 6 - mod1(v(1)) * 7)
            .max(0)
            .min(v(1) * 4 / 2 + 1)
            + v(0).cmp(crate::program::CmpOp::Ge, 2).select(v(1), v(1));
        let lt = crate::program::CmpOp::Lt;
        let e = e + (v(0) + 1 - 1).cmp(lt, 0) * 5 + (v(1) - 2 + 7).cmp(lt, v(0) + 1 - 3);
        let s = e.simplified();
        for a in -3..6 {
            for b in -3..6 {
                for core in 0..3 {
                    assert_eq!(e.eval(&[a, b], core, 3), s.eval(&[a, b], core, 3));
                }
            }
        }
    }
}
