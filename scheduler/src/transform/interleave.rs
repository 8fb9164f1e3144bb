//! Interleaving independent recurrences: a loop around inner loops that each carry a
//! recurrence is strip-mined, and its point loop sunk below the loops that carry it, so that
//! the innermost loop runs several independent instances of the recurrence side by side.
//!
//! A recurrence runs at the latency of its chain however wide the machine: a division's 13
//! to 20 cycles a step (`p[i][j] = -c / (a * p[i][j - 1] + b)`, adi's sweeps), an addition's
//! 4 (`tmp[i] = tmp[i] + A[i][j] * x[j]`, atax's dot products, where the core could start
//! two multiply-adds every cycle). A loop around it whose iterations the recurrence's
//! statements do not depend on gives independent chains: once interleaved, the out-of-order
//! core (and the vectoriser, where the accesses allow) works on several at once.
//!
//! - **Through a division or a call** of `sqrt`, `exp`, `log`, `pow` or `tanh`: the first
//!   parallel loop of the path is strip-mined by [`STRIP`] and its point loop sunk innermost
//!   everywhere below it. adi's sweeps, interleaved by 16, ran 2.7x faster than the original
//!   order with the same parallel loop.
//! - **Through an addition** (a sum into the statement's own target element): the first loop
//!   of the path whose iterations the sums neither depend on nor feed, parallel or not, is jammed by
//!   [`JAM`]: its point loop goes below the loops that carry the sums and above every other
//!   loop, so the parallel (vectorisable) loops beside the sums keep their order. The C
//!   printer holds the [`JAM`] sums in locals and unrolls their loop
//!   (`codegen::c::accumulate`). Larger strips walked the sums' rows as strided accesses
//!   (gesummv's `A[i][j]` down its columns) and cost more than the latency they hid.
//!
//! Deliberately absent: interleaving inside tiled bands (intra-tile reordering and register
//! tiling move their members instead), and below an outer parallel loop.

use super::analysis::is_parallel;
use super::map_children;
use super::tree::{BandKind, BandNode, Filtered, Node, Tree};
use frontend::ir::{ArrayId, AssignOp, BinOp, Expr, ExprKind, Func, Stmt};
use poly::isl::{IslResult, UnionMap};
use poly::model::Program;
use std::collections::BTreeSet;

/// The number of sums jammed: an addition's latency (4 cycles) times the two additions a
/// cycle the core can start would want 8, but 4 sums, unrolled, already keep the loads of
/// their rows busy, and 4 is what the C printer unrolls (`LoopOptions::unroll_limit`).
pub const JAM: u32 = 4;

/// The number of recurrences interleaved: enough independent chains to cover a division's
/// latency, few enough that their rows of each array (16 cache lines) stay in the L1 cache.
/// Measured on adi by editing polyc's output by hand to strips of 8, 16 and 32 (the
/// kernel's own timing, `-DPOLYBENCH_TIME`): 8 and 16 within 3% of each other, 32 12% slower.
pub const STRIP: u32 = 16;

/// `tree` with its recurrences interleaved (see the module documentation): the first
/// parallel one-member loop band of each path above a recurrence through a long-latency
/// operation of `program`'s statements, else the first one-member loop band above sums
/// whose statements no dependence of `deps` carried by it reaches.
pub fn interleave(tree: &Tree, program: &Program, deps: &UnionMap) -> IslResult<Tree> {
    let statements = program.kernel.statements();
    let tuples = |chain: fn(&Stmt) -> bool| -> BTreeSet<String> {
        (statements.iter())
            .filter(|c| chain(c.stmt))
            .filter_map(|c| program.statements.iter().find(|s| s.name == c.stmt.name))
            .map(|s| s.tuple.clone())
            .collect()
    };
    let chains = Chains {
        slow: tuples(|s| slow(&s.rhs)),
        sums: tuples(sum),
        deps,
    };
    Ok(Tree {
        domain: tree.domain.clone(),
        root: chains.rewrite(&tree.root)?,
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

/// Whether `s` adds a floating-point value to its own target element (`t += e`, `t -= e`,
/// `t = t + e`, `t = e + t`, `t = t - e`), reading nothing else of the target's array.
fn sum(s: &Stmt) -> bool {
    let target = &s.target;
    let own = |e: &Expr| match &e.kind {
        ExprKind::Read(a) => a.array == target.array && a.indices == target.indices,
        _ => false,
    };
    let apart = |e: &Expr| !reads_array(e, target.array);
    let float = is_float(&s.rhs);
    float
        && match (&s.op, &s.rhs.kind) {
            (AssignOp::Add | AssignOp::Sub, _) => apart(&s.rhs),
            (AssignOp::Assign, ExprKind::Binary(BinOp::Add, a, b)) => {
                (own(a) && apart(b)) || (apart(a) && own(b))
            }
            (AssignOp::Assign, ExprKind::Binary(BinOp::Sub, a, b)) => own(a) && apart(b),
            _ => false,
        }
}

fn reads_array(e: &Expr, array: ArrayId) -> bool {
    matches!(&e.kind, ExprKind::Read(a) if a.array == array)
        || e.children().into_iter().any(|c| reads_array(c, array))
}

fn is_float(e: &Expr) -> bool {
    matches!(e.ty, frontend::ir::Type::Elem(t) if t.is_float())
}

/// The statements whose recurrences are interleaved (isl tuples) and the dependences that
/// decide whether a loop's iterations give independent sums.
struct Chains<'d> {
    slow: BTreeSet<String>,
    sums: BTreeSet<String>,
    deps: &'d UnionMap,
}

impl Chains<'_> {
    fn rewrite(&self, node: &Node) -> IslResult<Node> {
        Ok(match node {
            Node::Leaf => Node::Leaf,
            Node::Band(b) => {
                let parallel = b.coincident.contains(&true);
                let candidate = b.kind == BandKind::Loop && b.members.len() == 1;
                if candidate && parallel && !recurrences(&b.child, &self.slow, false)?.is_empty() {
                    strip_and_sink(b, STRIP, &|c, m| sink(c, m))?
                } else if candidate && self.independent_sums(b, parallel)? {
                    strip_and_sink(b, JAM, &|c, m| self.sink_below_sums(c, m))?
                } else if parallel {
                    // The first parallel band of the path: nothing below it is interleaved.
                    node.clone()
                } else {
                    Node::Band(BandNode {
                        child: Box::new(self.rewrite(&b.child)?),
                        ..b.clone()
                    })
                }
            }
            Node::Sequence(cs) => Node::Sequence(map_children(cs, |c| self.rewrite(c))?),
            Node::Set(cs) => Node::Set(map_children(cs, |c| self.rewrite(c))?),
        })
    }

    /// Whether some band below `b` carries sums and, unless `b` is `parallel`, no
    /// dependence carried by `b`'s member reaches those sums or leaves them (a row's sum read
    /// by the next row's first statement, which the jam would run before the sum is done).
    fn independent_sums(&self, b: &BandNode, parallel: bool) -> IslResult<bool> {
        let carried = recurrences(&b.child, &self.sums, true)?;
        if carried.is_empty() || parallel {
            return Ok(!carried.is_empty());
        }
        let member = &b.members[0];
        let mut sums = member.ctx().empty_union_set()?;
        for set in member.domain()?.sets()? {
            if set.tuple_name().is_some_and(|t| carried.contains(&t)) {
                sums = sums.union(&set.to_union()?)?;
            }
        }
        let reaching = self.deps.intersect_range(&sums)?;
        let leaving = self.deps.intersect_domain(&sums)?;
        is_parallel(&reaching.union(&leaving)?, member)
    }

    /// `node` with `member` as a band below every band that carries a sum (a band with no
    /// parallel member scheduling one) and above everything else.
    fn sink_below_sums(&self, node: &Node, member: &UnionMap) -> IslResult<Node> {
        let above = |node: &Node| point(member, node);
        Ok(match node {
            Node::Band(b)
                if !b.coincident.contains(&true) && !scheduled(b, &self.sums)?.is_empty() =>
            {
                Node::Band(BandNode {
                    child: Box::new(self.sink_below_sums(
                        &b.child,
                        &member.intersect_domain(&b.members[0].domain()?)?,
                    )?),
                    ..b.clone()
                })
            }
            Node::Sequence(cs) if !leaves(cs) => {
                Node::Sequence(sunk(cs, member, &|c, m| self.sink_below_sums(c, m))?)
            }
            Node::Set(cs) if !leaves(cs) => {
                Node::Set(sunk(cs, member, &|c, m| self.sink_below_sums(c, m))?)
            }
            _ => above(node),
        })
    }
}

/// The statements of `tuples` that some band under `node` with no parallel member
/// schedules: the recurrences below `node`. With `alone`, only a band whose body is that one
/// statement counts: the C printer holds sums in locals only there, and gesummv's two sums
/// per loop body, jammed but loaded and stored at every step, ran 20% slower than
/// unjammed in locals (its rewrite with this rule lifted, median of 11 runs of
/// `-DPOLYBENCH_TIME`, LARGE: 1.70 ms against 1.39 ms).
fn recurrences(node: &Node, tuples: &BTreeSet<String>, alone: bool) -> IslResult<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    if let Node::Band(b) = node {
        let body =
            !alone || (matches!(*b.child, Node::Leaf) && b.members[0].domain()?.sets()?.len() == 1);
        if !b.coincident.contains(&true) && body {
            found.extend(scheduled(b, tuples)?);
        }
    }
    for (_, c) in node.children() {
        found.extend(recurrences(c, tuples, alone)?);
    }
    Ok(found)
}

/// The statements of `tuples` that `b` schedules.
fn scheduled(b: &BandNode, tuples: &BTreeSet<String>) -> IslResult<Vec<String>> {
    Ok((b.members[0].domain()?.sets()?.iter())
        .filter_map(|set| set.tuple_name())
        .filter(|t| tuples.contains(t))
        .collect())
}

/// The parallel band `b` strip-mined by `strip`, its point loop placed by `sink`.
fn strip_and_sink(
    b: &BandNode,
    strip: u32,
    sink: &dyn Fn(&Node, &UnionMap) -> IslResult<Node>,
) -> IslResult<Node> {
    let member = &b.members[0];
    let tiles = member
        .ctx()
        .union_map(&format!("{{ [x] -> [floor(x / {strip})] }}"))?;
    Ok(Node::Band(BandNode {
        members: vec![member.apply_range(&tiles)?],
        permutable: true,
        coincident: b.coincident.clone(),
        kind: BandKind::Loop,
        child: Box::new(sink(&b.child, member)?),
    }))
}

/// `node` under a one-member loop band of `member`.
fn point(member: &UnionMap, node: &Node) -> Node {
    Node::Band(BandNode {
        members: vec![member.clone()],
        permutable: true,
        coincident: vec![true],
        kind: BandKind::Loop,
        child: Box::new(node.clone()),
    })
}

/// Whether every child is a leaf (the statements of one loop body, kept together).
fn leaves(cs: &[Filtered]) -> bool {
    cs.iter().all(|c| matches!(c.child, Node::Leaf))
}

/// `node` with `member` (restricted to what each leaf schedules) as a band just above every
/// leaf, or above a sequence of leaves (the statements of one loop body stay together).
fn sink(node: &Node, member: &UnionMap) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => point(member, node),
        Node::Sequence(cs) | Node::Set(cs) if leaves(cs) => point(member, node),
        Node::Band(b) => Node::Band(BandNode {
            child: Box::new(sink(
                &b.child,
                &member.intersect_domain(&b.members[0].domain()?)?,
            )?),
            ..b.clone()
        }),
        Node::Sequence(cs) => Node::Sequence(sunk(cs, member, &sink)?),
        Node::Set(cs) => Node::Set(sunk(cs, member, &sink)?),
    })
}

/// The children `cs` with `member`, restricted to each one's filter, placed by `sink`.
fn sunk(
    cs: &[Filtered],
    member: &UnionMap,
    sink: &dyn Fn(&Node, &UnionMap) -> IslResult<Node>,
) -> IslResult<Vec<Filtered>> {
    (cs.iter())
        .map(|c| {
            Ok(Filtered {
                filter: c.filter.clone(),
                child: sink(&c.child, &member.intersect_domain(&c.filter)?)?,
            })
        })
        .collect()
}
