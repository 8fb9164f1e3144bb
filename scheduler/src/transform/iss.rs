//! Index-set splitting: a band whose carried dependences all run from one part of its
//! instances to another becomes a sequence of the two parts, each under its own copy of the
//! band, in which those dependences are no longer carried.
//!
//! `A[i] = f(A[i], A[N - 1 - i])` reads, at every `i` below the middle, the element that
//! iteration `N - 1 - i` writes later, and above the middle the one it wrote earlier: every
//! dependence runs from the lower half to the upper one, so the loop is serial, while each
//! half alone is parallel. For a band member that is not parallel, the dependences it
//! carries (source before sink on it, equal on the members outside it) give the split: the
//! first part is their sources, the second everything else; it is a split only when no
//! instance is both a source and a sink (the sources' piece ends where the sinks' begins,
//! the "mid-point" of Pluto's `--iss`), and it is taken only when no live dependence runs
//! from the second part back to the first and the two copies have more parallel loops than
//! the band had.
//!
//! Deliberately absent: splitting before scheduling, so that each part gets hyperplanes of
//! its own (Pluto splits the statements and schedules the pieces: a periodic stencil's
//! halves reversed); more than two parts; splits along a dependence that is not carried by
//! a single member.

use super::analysis::{live_below, live_in};
use super::fusion::{band_domain, parallel_members};
use super::tree::{BandNode, Filtered, Node, Tree};
use super::TreeDeps;
use poly::isl::{IslResult, PairOrder, UnionMap, UnionSet};

/// Splits the index sets of every band that gains parallel loops by it (see the module
/// documentation), outermost first. The caller checks the result and recomputes the
/// marks.
pub fn split_index_sets(tree: &Tree, deps: &TreeDeps) -> IslResult<Tree> {
    Ok(Tree {
        domain: tree.domain.clone(),
        root: walk(&tree.root, &deps.validity, &deps.all, 0)?,
    })
}

fn walk(node: &Node, valid: &UnionMap, all: &UnionMap, depth: usize) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) => match split(b, valid, all, depth)? {
            Some(parts) => parts,
            None => Node::Band(BandNode {
                child: Box::new(walk(
                    &b.child,
                    &live_below(valid, &b.members)?,
                    &live_below(all, &b.members)?,
                    depth + b.members.len(),
                )?),
                ..b.clone()
            }),
        },
        Node::Sequence(cs) => Node::Sequence(children(cs, valid, all, depth)?),
        Node::Set(cs) => Node::Set(children(cs, valid, all, depth)?),
    })
}

fn children(
    cs: &[Filtered],
    valid: &UnionMap,
    all: &UnionMap,
    depth: usize,
) -> IslResult<Vec<Filtered>> {
    super::map_children_live_both(cs, valid, all, |c, valid, all| walk(c, valid, all, depth))
}

/// The band split into a sequence of two parts, if a member gives a split that is legal
/// and gains parallel loops.
fn split(b: &BandNode, valid: &UnionMap, all: &UnionMap, depth: usize) -> IslResult<Option<Node>> {
    let domain = band_domain(b)?;
    let local = TreeDeps {
        validity: live_in(valid, &domain)?,
        all: live_in(all, &domain)?,
    };
    let mut outer = local.all.clone();
    let mut before = None;
    for (k, member) in b.members.iter().enumerate() {
        let carried = outer.pairs_where(member, PairOrder::Before)?;
        outer = outer.pairs_where(member, PairOrder::Equal)?;
        if b.coincident.get(k) == Some(&true) || carried.is_empty()? {
            continue;
        }
        let first = carried.domain()?;
        if !first.intersect(&carried.range()?)?.is_empty()? {
            continue;
        }
        let second = domain.subtract(&first)?;
        let back = local
            .validity
            .intersect_domain(&second)?
            .intersect_range(&first)?;
        if !back.is_empty()? {
            continue;
        }
        let parts = Node::Sequence(vec![part(b, &first)?, part(b, &second)?]);
        let fused = match before {
            Some(n) => n,
            None => *before.insert(parallel_members(
                &Node::Band(b.clone()),
                &domain,
                &local,
                depth,
            )?),
        };
        if parallel_members(&parts, &domain, &local, depth)? > fused {
            return Ok(Some(parts));
        }
    }
    Ok(None)
}

/// A copy of `b` over the instances of `filter`.
fn part(b: &BandNode, filter: &UnionSet) -> IslResult<Filtered> {
    let members = (b.members.iter())
        .map(|m| m.intersect_domain(filter))
        .collect::<IslResult<Vec<_>>>()?;
    Ok(Filtered {
        filter: filter.clone(),
        child: Node::Band(BandNode {
            members,
            ..b.clone()
        }),
    })
}
