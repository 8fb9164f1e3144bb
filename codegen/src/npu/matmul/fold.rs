//! Constant folding of the program's expressions, so that the printed program reads like a
//! hand-written one (`m=64` rather than `m=16*4`).

use npu_sim::program::Expr;

/// `e` with its constant parts computed and `x + 0`, `1 * x`, `x / 1`, `(x % 16) % 4` and the
/// like simplified (the value is the same for every variable).
pub(super) fn fold(e: Expr) -> Expr {
    let e = e.with_children(e.children().into_iter().cloned().map(fold).collect());
    if is_constant(&e) {
        return Expr::Const(e.eval(&[], 0, 0));
    }
    match e {
        Expr::Add(a, b) => match (*a, *b) {
            (x, Expr::Const(0)) | (Expr::Const(0), x) => x,
            (a, b) => Expr::Add(Box::new(a), Box::new(b)),
        },
        Expr::Sub(a, b) => match (*a, *b) {
            (x, Expr::Const(0)) => x,
            (a, b) => Expr::Sub(Box::new(a), Box::new(b)),
        },
        Expr::Mul(c, a) => match (c, *a) {
            (1, x) => x,
            (c, Expr::Mul(d, x)) => Expr::Mul(c * d, x),
            (c, x) => Expr::Mul(c, Box::new(x)),
        },
        Expr::Div(a, c) => match (*a, c) {
            (x, 1) => x,
            (Expr::Mul(m, x), c) if m % c == 0 => fold(Expr::Mul(m / c, x)),
            (x, c) => Expr::Div(Box::new(x), c),
        },
        Expr::Mod(a, c) => match (*a, c) {
            (Expr::Mod(x, m), c) if m % c == 0 => Expr::Mod(x, c),
            (x, c) => Expr::Mod(Box::new(x), c),
        },
        Expr::Select(c, a, b) => match *c {
            Expr::Const(v) => {
                if v != 0 {
                    *a
                } else {
                    *b
                }
            }
            c => Expr::Select(Box::new(c), a, b),
        },
        e => e,
    }
}

/// Whether `e` has no variable, core or core count in it.
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Var(_) | Expr::Core | Expr::Cores => false,
        e => e.children().into_iter().all(is_constant),
    }
}
