//! Interleaving independent recurrences: a parallel loop around inner loops that each carry
//! a recurrence is strip-mined, and its point loop sunk below every inner loop, so that the
//! innermost loop runs [`STRIP`] independent instances of the recurrence side by side.
//!
//! A recurrence through a long-latency operation (`p[i][j] = -c / (a * p[i][j - 1] + b)`,
//! adi's sweeps) runs at the latency of its chain, a division's 13 to 20 cycles a step,
//! however wide the machine. The parallel loop around it gives independent chains: once
//! interleaved, the out-of-order core (and the vectoriser, where the accesses allow) works
//! on several at once. adi's sweeps, interleaved by 16, ran 2.7x faster than the original
//! order with the same parallel loop.
//!
//! Only recurrences through a division or a call of `sqrt`, `exp`, `log`, `pow` or `tanh`
//! are interleaved: for sums of products the strided accesses the interleaving brings
//! (gesummv's `A[i][j]` walked down its columns) cost more than the latency it hides.
//! Deliberately absent: interleaving inside tiled bands (intra-tile reordering moves their
//! parallel members instead) and below an outer parallel loop.

use super::tree::{BandKind, BandNode, Filtered, Node, Tree};
use frontend::ir::{BinOp, Expr, ExprKind, Func};
use poly::isl::{IslResult, UnionMap};
use poly::model::Program;
use std::collections::BTreeSet;

/// The number of recurrences interleaved: enough independent chains to cover a division's
/// latency, few enough that their rows of each array (16 cache lines) stay in the L1 cache.
/// Measured on adi by editing polyc's output by hand to strips of 8, 16 and 32 (the
/// kernel's own timing, `-DPOLYBENCH_TIME`): 8 and 16 within 3% of each other, 32 12% slower.
pub const STRIP: u32 = 16;

/// `tree` with the first parallel one-member loop band of each path interleaved, where some
/// loop below it carries a recurrence (a band with no parallel member) through a
/// long-latency operation of `program`'s statements.
pub fn interleave(tree: &Tree, program: &Program) -> IslResult<Tree> {
    let slow: BTreeSet<String> = (program.kernel.statements().iter())
        .filter(|c| slow(&c.stmt.rhs))
        .filter_map(|c| program.statements.iter().find(|s| s.name == c.stmt.name))
        .map(|s| s.tuple.clone())
        .collect();
    Ok(Tree {
        domain: tree.domain.clone(),
        root: rewrite(&tree.root, &slow)?,
    })
}

/// Whether `e` divides floating-point values or calls a function of long latency.
fn slow(e: &Expr) -> bool {
    let here = match &e.kind {
        ExprKind::Binary(BinOp::Div, ..) => is_float(e),
        ExprKind::Call(f, _) => matches!(
            f,
            Func::Sqrt | Func::Exp | Func::Log | Func::Pow | Func::Tanh
        ),
        _ => false,
    };
    here || e.children().into_iter().any(slow)
}

fn is_float(e: &Expr) -> bool {
    matches!(e.ty, frontend::ir::Type::Elem(t) if t.is_float())
}

fn rewrite(node: &Node, slow: &BTreeSet<String>) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) if b.coincident.contains(&true) => {
            let candidate = b.kind == BandKind::Loop && b.members.len() == 1;
            if candidate && slow_recurrence(&b.child, slow)? {
                strip_and_sink(b)?
            } else {
                // The first parallel band of the path: nothing below it is interleaved.
                Node::Band(b.clone())
            }
        }
        Node::Band(b) => Node::Band(BandNode {
            child: Box::new(rewrite(&b.child, slow)?),
            ..b.clone()
        }),
        Node::Sequence(cs) => Node::Sequence(children(cs, slow)?),
        Node::Set(cs) => Node::Set(children(cs, slow)?),
    })
}

fn children(cs: &[Filtered], slow: &BTreeSet<String>) -> IslResult<Vec<Filtered>> {
    (cs.iter())
        .map(|c| {
            Ok(Filtered {
                filter: c.filter.clone(),
                child: rewrite(&c.child, slow)?,
            })
        })
        .collect()
}

/// Whether some band under `node` with no parallel member schedules a statement of `slow`
/// (isl tuples).
fn slow_recurrence(node: &Node, slow: &BTreeSet<String>) -> IslResult<bool> {
    if let Node::Band(b) = node {
        if !b.coincident.contains(&true) {
            for set in b.members[0].domain()?.sets()? {
                if set.tuple_name().is_some_and(|t| slow.contains(&t)) {
                    return Ok(true);
                }
            }
        }
    }
    for (_, c) in node.children() {
        if slow_recurrence(c, slow)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The parallel band `b` strip-mined by [`STRIP`], its point loop innermost everywhere.
fn strip_and_sink(b: &BandNode) -> IslResult<Node> {
    let member = &b.members[0];
    let strip = member
        .ctx()
        .union_map(&format!("{{ [x] -> [floor(x / {STRIP})] }}"))?;
    Ok(Node::Band(BandNode {
        members: vec![member.apply_range(&strip)?],
        permutable: true,
        coincident: vec![true],
        kind: BandKind::Loop,
        child: Box::new(sink(&b.child, member)?),
    }))
}

/// `node` with `member` (restricted to what each leaf schedules) as a band just above every
/// leaf, or above a sequence of leaves (the statements of one loop body stay together).
fn sink(node: &Node, member: &UnionMap) -> IslResult<Node> {
    let innermost = |node: &Node| {
        Node::Band(BandNode {
            members: vec![member.clone()],
            permutable: true,
            coincident: vec![true],
            kind: BandKind::Loop,
            child: Box::new(node.clone()),
        })
    };
    Ok(match node {
        Node::Leaf => innermost(node),
        Node::Sequence(cs) if cs.iter().all(|c| matches!(c.child, Node::Leaf)) => innermost(node),
        Node::Band(b) => Node::Band(BandNode {
            child: Box::new(sink(
                &b.child,
                &member.intersect_domain(&b.members[0].domain()?)?,
            )?),
            ..b.clone()
        }),
        Node::Sequence(cs) => Node::Sequence(sunk(cs, member)?),
        Node::Set(cs) => Node::Set(sunk(cs, member)?),
    })
}

fn sunk(cs: &[Filtered], member: &UnionMap) -> IslResult<Vec<Filtered>> {
    (cs.iter())
        .map(|c| {
            Ok(Filtered {
                filter: c.filter.clone(),
                child: sink(&c.child, &member.intersect_domain(&c.filter)?)?,
            })
        })
        .collect()
}
