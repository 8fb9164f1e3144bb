//! Accumulators in locals (scalar replacement): a sequential loop whose body is a small
//! rectangular nest of loops around one statement whose target element does not move with
//! the loop, such as gemm's `C[i, j] += alpha * A[i, k] * B[k, j]` under a register tile
//! (`k` outside, a few `i` and `j` inside), keeps those targets in a local array while the
//! loop runs: loaded before it, stored after it. The compiler then holds them in registers
//! instead of loading and storing memory at every step.
//!
//! Exactness is kept: every instance runs in the original order and computes the same
//! operations; only where the target's value lives changes. This is sound because the
//! statement is the only one in the loop, its right-hand side reads nothing of the target's
//! array but the target element itself, which it then reads from the accumulator
//! ([`Accumulable`]), its target is proven in bounds, and distinct iterations of the inner
//! loops write distinct elements (each inner iterator is one of the target's indices).
//!
//! The nest is printed twice: with constant trip counts (full register tiles, which the
//! compiler unrolls and vectorises) and with the actual ones (partial tiles).

use super::cexpr::hoistable;
use super::instances::Instances;
use super::stmt::Accumulable;
use crate::ast::{Expr, For, Node, Op};

/// At most this many accumulators per loop (4 x 32 doubles: sixteen AVX-512 registers).
pub const MAX_ACCUMULATORS: i64 = 128;

/// A loop whose statement's targets can be accumulated across it.
pub(super) struct Block<'n> {
    /// The loop the accumulators live across.
    pub(super) outer: &'n For,
    /// The loops inside it, outermost first, with their largest trip count.
    pub(super) inner: Vec<(&'n For, i64)>,
    /// The statement's tuple name and iteration vector.
    pub(super) tuple: &'n str,
    pub(super) args: &'n [Expr],
    /// How the target is held in an accumulator.
    pub(super) acc: &'n Accumulable,
}

impl<'n> Block<'n> {
    /// The block `f` heads, when it qualifies (see the module documentation).
    pub(super) fn of(f: &'n For, statements: &'n dyn Instances) -> Option<Block<'n>> {
        if f.parallel || f.step != 1 || hoistable(f).is_none() {
            return None;
        }
        let mut inner = Vec::new();
        let mut node: &Node = &f.body;
        let (tuple, args) = loop {
            match node {
                Node::Block(cs) if cs.len() == 1 => node = &cs[0],
                Node::For(g) => {
                    inner.push((g, max_trip(g)?));
                    node = &g.body;
                }
                Node::User(tuple, args) => break (tuple, args),
                _ => return None,
            }
        };
        let count: i64 = inner.iter().map(|(_, t)| *t).product();
        if inner.is_empty() || count > MAX_ACCUMULATORS {
            return None;
        }
        // Rectangular: no bound depends on the outer loop or on another inner loop.
        let moving: Vec<&str> = std::iter::once(f.iterator.as_str())
            .chain(inner.iter().map(|(g, _)| g.iterator.as_str()))
            .collect();
        for (g, _) in &inner {
            let bound = hoistable(g)?.1;
            if moving
                .iter()
                .any(|m| g.init.mentions(m) || bound.mentions(m))
            {
                return None;
            }
        }
        let acc = statements.accumulable(tuple)?;
        let target_args: Vec<&Expr> = acc.index_iterators.iter().map(|&p| &args[p]).collect();
        let injective = inner.iter().all(|(g, _)| {
            (target_args.iter()).any(|a| matches!(a, Expr::Id(n) if *n == g.iterator))
        });
        if !injective || target_args.iter().any(|a| a.mentions(&f.iterator)) {
            return None;
        }
        Some(Block {
            outer: f,
            inner,
            tuple,
            args,
            acc,
        })
    }
}

/// The largest trip count of `g` when its bound is `init + c` (possibly within a `min`), or
/// both its bounds are constants.
pub(super) fn max_trip(g: &For) -> Option<i64> {
    if g.step != 1 {
        return None;
    }
    let (op, bound) = hoistable(g)?;
    let candidates = match bound {
        Expr::Op(Op::Min, args) => args.as_slice(),
        b => std::slice::from_ref(b),
    };
    let last = candidates
        .iter()
        .filter_map(|a| offset_from(&g.init, a))
        .min()?;
    let trips = if op == "<" { last } else { last + 1 };
    (trips >= 1).then_some(trips)
}

/// `c` when `e` is `base + c` (or both are constants).
fn offset_from(base: &Expr, e: &Expr) -> Option<i64> {
    match (base, e) {
        (Expr::Int(b), Expr::Int(v)) => Some(v - b),
        _ if base == e => Some(0),
        (_, Expr::Op(Op::Add, args)) => match args.as_slice() {
            [x, Expr::Int(c)] | [Expr::Int(c), x] if x == base => Some(*c),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: &str) -> Expr {
        Expr::Id(n.into())
    }

    fn op(o: Op, args: Vec<Expr>) -> Expr {
        Expr::Op(o, args)
    }

    fn for_loop(it: &str, init: Expr, ub: Expr, body: Node) -> For {
        For {
            iterator: it.into(),
            init,
            cond: op(Op::Le, vec![id(it), ub]),
            step: 1,
            parallel: false,
            body: Box::new(body),
        }
    }

    #[test]
    fn trip_counts_of_tiles_are_read_from_their_bounds() {
        let lo = op(Op::Mul, vec![Expr::Int(16), id("c1")]);
        let hi = op(Op::Add, vec![lo.clone(), Expr::Int(15)]);
        let partial = op(Op::Min, vec![id("N"), hi.clone()]);
        assert_eq!(
            max_trip(&for_loop("c2", lo.clone(), hi, Node::Block(vec![]))),
            Some(16)
        );
        assert_eq!(
            max_trip(&for_loop("c2", lo.clone(), partial, Node::Block(vec![]))),
            Some(16)
        );
        assert_eq!(
            max_trip(&for_loop("c2", lo, id("N"), Node::Block(vec![]))),
            None
        );
        assert_eq!(
            max_trip(&for_loop(
                "c2",
                Expr::Int(2),
                Expr::Int(5),
                Node::Block(vec![])
            )),
            Some(4)
        );
    }
}
