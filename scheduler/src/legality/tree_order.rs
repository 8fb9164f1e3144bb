//! The order rule on a [`Tree`], decided by walking it: which dependent pairs a tree (or a
//! transformation's candidate) does not run source first.
//!
//! This is the legality checker's fast path, used by every transformation to accept or
//! refuse a step. It decides the same order rule as [`super::check`] but does not look for
//! witnesses, and it walks the tree as [`annotate`](crate::transform::analysis::annotate)
//! does, keeping the live pairs each node leaves unordered, instead of comparing every two
//! instances of the flat schedule (isl's `lex_lt_union_map` of the flat schedule with itself
//! grows with the square of the statements and took most of deriche's compile time).
//! [`super::check`] runs on the optimizer's final tree, with witnesses.

use crate::transform::analysis::live_in;
use crate::transform::tree::{Node, Tree};
use poly::isl::{Ctx, IslResult, PairOrder, UnionMap, UnionSet};
use std::fmt;

/// The dependent pairs a tree does not run source first: run backwards by a band member or
/// by the order of a sequence's children, split between two children of a set (which run in
/// any order), left in the same step at a leaf, or with an end the tree does not schedule.
#[derive(Clone, Debug)]
pub struct Unordered {
    /// The pairs, as one relation from sources to sinks.
    pub pairs: UnionMap,
}

/// How much of the pairs' isl text [`Unordered`]'s display shows.
const SHOWN_CHARS: usize = 300;

impl fmt::Display for Unordered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.pairs.to_string();
        write!(
            f,
            "these dependences would run backwards or in the same step: "
        )?;
        match text.char_indices().nth(SHOWN_CHARS) {
            Some((cut, _)) => write!(f, "{}...", &text[..cut]),
            None => f.write_str(&text),
        }
    }
}

/// The pairs of `live` that `tree` does not run source first (`None`: it runs all of them
/// source first). `tree` is the subtree of the instances concerned (the flat schedule of its
/// root orders them).
pub fn unordered(tree: &Tree, live: &UnionMap) -> IslResult<Option<Unordered>> {
    let mut wrong = Vec::new();
    let live = live_in(live, &tree.domain)?;
    walk(&tree.root, &live, &tree.domain, &mut wrong)?;
    if wrong.is_empty() {
        return Ok(None);
    }
    let mut all = live.ctx().empty_union_map()?;
    for w in &wrong {
        all = all.union(w)?;
    }
    Ok(Some(Unordered {
        pairs: all.coalesce()?,
    }))
}

/// Pushes onto `wrong` the (non-empty) sets of pairs of `live` (between instances of
/// `reaching`) that `node` does not run source first.
fn walk(
    node: &Node,
    live: &UnionMap,
    reaching: &UnionSet,
    wrong: &mut Vec<UnionMap>,
) -> IslResult<()> {
    if live.is_empty()? {
        return Ok(());
    }
    match node {
        Node::Leaf => wrong.push(live.clone()),
        Node::Band(b) => {
            let mut live = live.clone();
            for m in &b.members {
                unscheduled(&live, reaching, &m.domain()?, wrong)?;
                push_nonempty(wrong, live.pairs_where(m, PairOrder::After)?)?;
                live = live.pairs_where(m, PairOrder::Equal)?;
            }
            walk(&b.child, &live, reaching, wrong)?;
        }
        Node::Sequence(cs) | Node::Set(cs) => {
            let ordered = matches!(node, Node::Sequence(_));
            let filters: Vec<&UnionSet> = cs.iter().map(|c| &c.filter).collect();
            unscheduled(live, reaching, &union_of(live.ctx(), &filters)?, wrong)?;
            let split = live.split_by_ends(&filters)?;
            for (k, c) in cs.iter().enumerate() {
                let inside = split.select(|d, r| d == k && r == k)?;
                walk(&c.child, &inside, &reaching.intersect(&c.filter)?, wrong)?;
            }
            // Earlier children of a sequence run first; any other child of a set may.
            push_nonempty(
                wrong,
                split.select(|d, r| if ordered { r < d } else { r != d })?,
            )?;
        }
    }
    Ok(())
}

/// Pushes onto `wrong` the pairs of `live` (between instances of `reaching`) with an end
/// outside `scheduled`.
fn unscheduled(
    live: &UnionMap,
    reaching: &UnionSet,
    scheduled: &UnionSet,
    wrong: &mut Vec<UnionMap>,
) -> IslResult<()> {
    if reaching.is_subset(scheduled)? {
        return Ok(());
    }
    push_nonempty(wrong, live.subtract(&live_in(live, scheduled)?)?)
}

fn push_nonempty(wrong: &mut Vec<UnionMap>, pairs: UnionMap) -> IslResult<()> {
    if !pairs.is_empty()? {
        wrong.push(pairs);
    }
    Ok(())
}

/// The union of `sets`.
fn union_of(ctx: &Ctx, sets: &[&UnionSet]) -> IslResult<UnionSet> {
    let mut out = ctx.empty_union_set()?;
    for s in sets {
        out = out.union(s)?;
    }
    Ok(out)
}
