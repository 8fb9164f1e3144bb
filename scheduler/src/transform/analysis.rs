//! What the dependences say about a tree: which members are parallel (coincident), which
//! bands are permutable (whether an order is legal is [`crate::legality::tree_order`]'s).
//!
//! Everything walks the tree with the dependences still *live*: those whose source and sink
//! have the same value on every outer dimension. A band member with value `t` keeps the live
//! pairs with equal `t` for the dimensions below; a sequence or set child keeps the pairs
//! whose both ends it selects.

use super::tree::{BandNode, Filtered, Node, Tree};
use crate::Problem;
use poly::isl::{IslResult, PairOrder, UnionMap, UnionSet};

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
    /// The dependences of a problem, coalesced (the union of the three kinds holds a
    /// piece per kind where one would do, and every analysis walks each piece).
    pub fn of(problem: &Problem) -> IslResult<TreeDeps> {
        let all = problem.deps.validity(false)?.coalesce()?;
        let validity = if problem.options.reorder_reductions {
            problem.validity()?.coalesce()?
        } else {
            all.clone()
        };
        Ok(TreeDeps { validity, all })
    }
}

/// Pairs of instances on which `member` has the same value.
pub fn same_value(member: &UnionMap) -> IslResult<UnionMap> {
    member.apply_range(&member.reverse()?)
}

/// Whether some pair of `pairs` has ends that `member` compares as `order`.
fn any_compared(pairs: &UnionMap, member: &UnionMap, order: PairOrder) -> IslResult<bool> {
    Ok(!pairs.pairs_where(member, order)?.is_empty()?)
}

/// Whether no pair of `live` has different values on `member` (a loop over it alone,
/// outermost, would be parallel).
pub fn is_parallel(live: &UnionMap, member: &UnionMap) -> IslResult<bool> {
    Ok(!any_compared(live, member, PairOrder::Before)?
        && !any_compared(live, member, PairOrder::After)?)
}

/// The live pairs whose both ends are in `filter`.
pub fn live_in(live: &UnionMap, filter: &UnionSet) -> IslResult<UnionMap> {
    live.intersect_domain(filter)?.intersect_range(filter)
}

/// The live pairs within each child of a sequence or set, in the children's order (one
/// pass over `live`, not one per child).
pub fn live_in_children(live: &UnionMap, children: &[Filtered]) -> IslResult<Vec<UnionMap>> {
    let split = live.split_by_ends(&filters(children))?;
    (0..children.len())
        .map(|k| split.select(|d, r| d == k && r == k))
        .collect()
}

fn filters(children: &[Filtered]) -> Vec<&UnionSet> {
    children.iter().map(|c| &c.filter).collect()
}

/// The live pairs left after the members of a band.
pub fn live_below(live: &UnionMap, members: &[UnionMap]) -> IslResult<UnionMap> {
    let mut live = live.clone();
    for m in members {
        live = live.pairs_where(m, PairOrder::Equal)?;
    }
    Ok(live)
}

/// Whether no live pair runs backwards on any member (the members may be permuted). Pairs
/// with an end that a member does not schedule are not the band's (a well-formed band
/// schedules every instance below it, which [`crate::legality::tree_order`] checks).
pub fn permutable(live: &UnionMap, members: &[UnionMap]) -> IslResult<bool> {
    for m in members {
        if any_compared(live, m, PairOrder::After)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Recomputes every band's `permutable` flag and coincidence flags from the dependences.
pub fn annotate(tree: &mut Tree, deps: &TreeDeps) -> IslResult<()> {
    annotate_node(&mut tree.root, &deps.validity, &deps.all, &tree.domain)
}

/// Annotates the subtree of the instances `reaching` it; a band that does not schedule all
/// of them is marked neither permutable nor parallel.
fn annotate_node(
    node: &mut Node,
    valid: &UnionMap,
    all: &UnionMap,
    reaching: &UnionSet,
) -> IslResult<()> {
    match node {
        Node::Leaf => Ok(()),
        Node::Band(b) => {
            let covered = schedules_all(&b.members, reaching)?;
            b.permutable = covered && permutable(valid, &b.members)?;
            // Without reordered reductions both are the same relation all the way down.
            let same = all.is_same_object(valid);
            let mut all = all.clone();
            b.coincident.clear();
            for m in &b.members {
                let parallel = covered && is_parallel(&all, m)?;
                b.coincident.push(parallel);
                all = all.pairs_where(m, PairOrder::Equal)?;
            }
            let valid = if same {
                all.clone()
            } else {
                live_below(valid, &b.members)?
            };
            annotate_node(&mut b.child, &valid, &all, reaching)
        }
        Node::Sequence(cs) | Node::Set(cs) => {
            let valid_in = live_in_children(valid, cs)?;
            let all_in = if all.is_same_object(valid) {
                valid_in.clone()
            } else {
                live_in_children(all, cs)?
            };
            for ((c, valid), all) in cs.iter_mut().zip(&valid_in).zip(&all_in) {
                annotate_node(&mut c.child, valid, all, &reaching.intersect(&c.filter)?)?;
            }
            Ok(())
        }
    }
}

/// Whether every member gives a value to every instance of `reaching`.
fn schedules_all(members: &[UnionMap], reaching: &UnionSet) -> IslResult<bool> {
    for m in members {
        if !reaching.is_subset(&m.domain()?)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The parallel loops of a tree: the coincident members of every band that holds a
/// statement with more iterators than there are band members above it. A band over
/// statements whose loops are all outside it (a copy of a band for a statement without
/// loops of its own, as distribution makes) runs each of them once: not a loop. `depth`
/// band members lie above the tree's root (it is a subtree).
pub fn parallel_loops(tree: &Tree, depth: usize) -> IslResult<usize> {
    parallel_loops_in(&tree.root, depth)
}

fn parallel_loops_in(node: &Node, depth: usize) -> IslResult<usize> {
    match node {
        Node::Band(b) => {
            let mut iterates = false;
            for s in b.members[0].domain()?.sets()? {
                iterates |= s.n_dims()? > depth;
            }
            let own = if iterates { coincident_count(b) } else { 0 };
            Ok(own + parallel_loops_in(&b.child, depth + b.members.len())?)
        }
        other => {
            let mut sum = 0;
            for (_, c) in other.children() {
                sum += parallel_loops_in(c, depth)?;
            }
            Ok(sum)
        }
    }
}

/// The number of coincident (parallel) members of a band.
pub fn coincident_count(b: &BandNode) -> usize {
    b.coincident.iter().filter(|&&c| c).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legality::tree_order::unordered;
    use poly::isl::Ctx;

    /// The order rule's verdict as text.
    fn violation(tree: &Tree, live: &UnionMap) -> IslResult<Option<String>> {
        Ok(unordered(tree, live)?.map(|u| u.to_string()))
    }

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

    /// `S[i]` writes `A[i]`, `T[i]` reads it: `S[i] -> T[i]`.
    fn producer_consumer(ctx: &Ctx, order: &str) -> Option<String> {
        let live = ctx.union_map("{ S[i] -> T[i] : 0 <= i < 10 }").unwrap();
        let t = tree(
            ctx,
            &format!(
                "{{ domain: \"{{ S[i] : 0 <= i < 10; T[i] : 0 <= i < 10 }}\", child: {order} }}"
            ),
        );
        violation(&t, &live).unwrap()
    }

    #[test]
    fn sequences_order_their_children_and_sets_do_not() {
        let ctx = Ctx::default();
        let children = |first: &str, second: &str| {
            format!("[ {{ filter: \"{{ {first}[i] }}\" }}, {{ filter: \"{{ {second}[i] }}\" }} ]")
        };
        let sequence = |a, b| format!("{{ sequence: {} }}", children(a, b));
        assert_eq!(producer_consumer(&ctx, &sequence("S", "T")), None);
        let why = producer_consumer(&ctx, &sequence("T", "S")).unwrap();
        assert!(why.contains("S[i] -> T[i]"), "{why}");
        // A set may run its children in any order.
        let set = format!("{{ set: {} }}", children("S", "T"));
        assert!(producer_consumer(&ctx, &set).is_some());
    }

    #[test]
    fn a_fused_loop_needs_an_order_inside_each_iteration() {
        let ctx = Ctx::default();
        let fused = "{ schedule: \"[{ S[i] -> [(i)]; T[i] -> [(i)] }]\"";
        // S[i] and T[i] in the same step: nothing orders them.
        let why = producer_consumer(&ctx, &format!("{fused} }}")).unwrap();
        assert!(why.contains("same step"), "{why}");
        let inner = "child: { sequence: [ { filter: \"{ S[i] }\" }, { filter: \"{ T[i] }\" } ] }";
        assert_eq!(
            producer_consumer(&ctx, &format!("{fused}, {inner} }}")),
            None
        );
        // T one iteration earlier than S: backwards.
        let shifted = "{ schedule: \"[{ S[i] -> [(i)]; T[i] -> [(i - 1)] }] \" }";
        assert!(producer_consumer(&ctx, shifted).is_some());
    }

    #[test]
    fn a_band_that_misses_instances_is_neither_legal_nor_parallel() {
        let ctx = Ctx::default();
        // The band schedules S only; T reaches it too.
        let partial = "{ schedule: \"[{ S[i] -> [(i)] }]\" }";
        assert!(producer_consumer(&ctx, partial).is_some());
        let deps = TreeDeps {
            validity: ctx.union_map("{ S[i] -> T[i] : 0 <= i < 10 }").unwrap(),
            all: ctx.union_map("{ S[i] -> T[i] : 0 <= i < 10 }").unwrap(),
        };
        let mut t = tree(
            &ctx,
            &format!(
                "{{ domain: \"{{ S[i] : 0 <= i < 10; T[i] : 0 <= i < 10 }}\", child: {partial} }}"
            ),
        );
        annotate(&mut t, &deps).unwrap();
        let Node::Band(b) = &t.root else { panic!() };
        assert_eq!(b.coincident, vec![false]);
        assert!(!b.permutable);
    }
}
