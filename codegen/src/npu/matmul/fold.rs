//! Constant folding of the program's expressions, so that the printed program reads like a
//! hand-written one (`m=64` rather than `m=16*4`), and the builder calls that fold what they
//! are given.

use npu_sim::builder::{Builder, IntoTarget};
use npu_sim::program::{CmpOp, Dma, Expr, MemRef, Pipe};

/// `e` simplified ([`Expr::simplified`]): constants computed, identities reduced, the
/// value the same for every variable.
pub(super) fn fold(e: Expr) -> Expr {
    e.simplified()
}

/// `min(max(e, 0), hi)`, folded when `e` is a constant.
pub(super) fn clamp(e: Expr, hi: i64) -> Expr {
    match e {
        Expr::Const(v) => Expr::Const(v.clamp(0, hi)),
        e => e.max(0).min(hi),
    }
}

/// `e - k`, folded when `e` is a constant.
pub(super) fn minus(e: &Expr, k: i64) -> Expr {
    match e {
        Expr::Const(v) => Expr::Const(v - k),
        e => e.clone() - k,
    }
}

/// `e > 0`, folded when `e` is a constant.
pub(super) fn positive(e: &Expr) -> Expr {
    match e {
        Expr::Const(v) => Expr::Const((*v > 0) as i64),
        e => e.clone().cmp(CmpOp::Gt, 0),
    }
}

/// `b.when`, folded: nothing or the body alone when `cond` is a constant.
pub(super) fn when(b: &mut Builder, name: &str, cond: Expr, body: impl FnOnce(&mut Builder)) {
    match fold(cond) {
        Expr::Const(0) => {}
        Expr::Const(_) => body(b),
        cond => b.when(name, cond, body),
    }
}

/// `b.repeat`, its extent folded.
pub(super) fn repeat(
    b: &mut Builder,
    name: &str,
    n: impl Into<Expr>,
    body: impl FnOnce(&mut Builder, Expr),
) {
    b.repeat(name, fold(n.into()), body);
}

/// `set_flag`, its id folded.
pub(super) fn set(b: &mut Builder, src: Pipe, dst: Pipe, id: impl Into<Expr>) {
    b.set_flag(src, dst, fold(id.into()));
}

/// `wait_flag`, its id folded.
pub(super) fn wait(b: &mut Builder, src: Pipe, dst: Pipe, id: impl Into<Expr>) {
    b.wait_flag(src, dst, fold(id.into()));
}

/// `b.at`, the index folded.
pub(super) fn at(
    b: &Builder,
    target: impl IntoTarget,
    index: impl IntoIterator<Item = Expr>,
) -> MemRef {
    b.at(target, index.into_iter().map(fold))
}

/// Pushes `d`, its sizes folded, with the origin `note`.
pub(super) fn push(b: &mut Builder, note: &str, mut d: Dma) {
    let z = &mut d.sizes;
    for e in [
        &mut z.count,
        &mut z.len,
        &mut z.src_stride,
        &mut z.dst_stride,
    ] {
        *e = fold(std::mem::replace(e, Expr::Const(0)));
    }
    b.origin(Some(note));
    b.push(d);
    b.origin(None);
}
