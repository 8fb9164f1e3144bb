//! What the dependences say about a tree: which members are parallel (coincident), which
//! bands are permutable, whether an order is legal.
//!
//! Everything walks the tree with the dependences still *live*: those whose source and sink
//! have the same value on every outer dimension. A band member with value `t` keeps the live
//! pairs with equal `t` for the dimensions below; a sequence or set child keeps the pairs
//! whose both ends it selects.

use super::tree::{BandNode, Node, Tree};
use crate::Problem;
use poly::isl::{IslResult, UnionMap, UnionSet};

/// The dependences transformations respect.
#[derive(Clone, Debug)]
pub struct TreeDeps {
    /// What every order must respect ([`Problem::validity`]: reductions dropped when the user
    /// allows them to be reordered).
    pub validity: UnionMap,
    /// Every dependence, reductions included: a loop carrying a reduction is not parallel.
    pub all: UnionMap,
}

impl TreeDeps {
    /// The dependences of a problem.
    pub fn of(problem: &Problem) -> IslResult<TreeDeps> {
        Ok(TreeDeps {
            validity: problem.validity()?,
            all: problem.deps.validity(false)?,
        })
    }
}

/// Pairs of instances on which `member` has the same value.
pub fn same_value(member: &UnionMap) -> IslResult<UnionMap> {
    member.apply_range(&member.reverse()?)
}

/// Pairs of instances whose `member` values are in order (`t(x) <= t(y)`).
pub fn in_order(member: &UnionMap) -> IslResult<UnionMap> {
    let le = member.ctx().union_map("{ [a] -> [b] : a <= b }")?;
    member.apply_range(&le)?.apply_range(&member.reverse()?)
}

/// The live pairs whose both ends are in `filter`.
pub fn live_in(live: &UnionMap, filter: &UnionSet) -> IslResult<UnionMap> {
    live.intersect_domain(filter)?.intersect_range(filter)
}

/// The live pairs left after the members of a band.
pub fn live_below(live: &UnionMap, members: &[UnionMap]) -> IslResult<UnionMap> {
    let mut live = live.clone();
    for m in members {
        live = live.intersect(&same_value(m)?)?;
    }
    Ok(live)
}

/// Whether every live pair is in order on every member (the members may be permuted).
pub fn permutable(live: &UnionMap, members: &[UnionMap]) -> IslResult<bool> {
    for m in members {
        if !live.is_subset(&in_order(m)?)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Recomputes every band's `permutable` flag and coincidence flags from the dependences.
pub fn annotate(tree: &mut Tree, deps: &TreeDeps) -> IslResult<()> {
    annotate_node(&mut tree.root, &deps.validity, &deps.all)
}

fn annotate_node(node: &mut Node, valid: &UnionMap, all: &UnionMap) -> IslResult<()> {
    match node {
        Node::Leaf => Ok(()),
        Node::Band(b) => {
            b.permutable = permutable(valid, &b.members)?;
            let mut all = all.clone();
            b.coincident.clear();
            for m in &b.members {
                let same = same_value(m)?;
                b.coincident.push(all.is_subset(&same)?);
                all = all.intersect(&same)?;
            }
            annotate_node(&mut b.child, &live_below(valid, &b.members)?, &all)
        }
        Node::Sequence(cs) | Node::Set(cs) => {
            for c in cs {
                annotate_node(
                    &mut c.child,
                    &live_in(valid, &c.filter)?,
                    &live_in(all, &c.filter)?,
                )?;
            }
            Ok(())
        }
    }
}

/// Why an order is illegal: `None` when every pair in `live` runs source first.
/// `tree` is the subtree of the instances concerned (the flat schedule of its root
/// orders them).
pub fn violation(tree: &Tree, live: &UnionMap) -> IslResult<Option<String>> {
    let flat = tree.to_schedule()?.map()?;
    let forward = flat.lex_lt_union_map(&flat)?;
    let wrong = live
        .intersect_domain(&tree.domain)?
        .intersect_range(&tree.domain)?;
    let wrong = wrong.subtract(&forward)?;
    if wrong.is_empty()? {
        return Ok(None);
    }
    let mut text = wrong.coalesce()?.to_string();
    if text.len() > 300 {
        text.truncate(300);
        text.push_str("...");
    }
    Ok(Some(format!(
        "these dependences would run backwards or in the same step: {text}"
    )))
}

/// The number of coincident (parallel) members of a band.
pub fn coincident_count(b: &BandNode) -> usize {
    b.coincident.iter().filter(|&&c| c).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use poly::isl::Ctx;

    fn tree(ctx: &Ctx, text: &str) -> Tree {
        Tree::from_schedule(&ctx.schedule(text).unwrap()).unwrap()
    }

    #[test]
    fn coincidence_follows_the_distances() {
        let ctx = Ctx::default();
        // S[i, j] reads S[i - 1, j]: i carries it, j is parallel.
        let deps = TreeDeps {
            validity: ctx
                .union_map("{ S[i, j] -> S[i + 1, j] : 0 <= i < 9 and 0 <= j < 10 }")
                .unwrap(),
            all: ctx
                .union_map("{ S[i, j] -> S[i + 1, j] : 0 <= i < 9 and 0 <= j < 10 }")
                .unwrap(),
        };
        let mut t = tree(
            &ctx,
            "{ domain: \"{ S[i, j] : 0 <= i, j < 10 }\", child: { schedule: \"[{ S[i, j] -> [(i)] }, { S[i, j] -> [(j)] }]\" } }",
        );
        annotate(&mut t, &deps).unwrap();
        let Node::Band(b) = &t.root else { panic!() };
        assert_eq!(b.coincident, vec![false, true]);
        assert!(b.permutable);
        assert_eq!(violation(&t, &deps.validity).unwrap(), None);
        // Reversing i runs the dependence backwards.
        let bad = tree(
            &ctx,
            "{ domain: \"{ S[i, j] : 0 <= i, j < 10 }\", child: { schedule: \"[{ S[i, j] -> [(-i)] }]\" } }",
        );
        assert!(violation(&bad, &deps.validity).unwrap().is_some());
    }
}
