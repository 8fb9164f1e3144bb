//! Wavefront parallelism: skew the outermost permutable band so that a loop near the top
//! of it is parallel when no loop of the band is parallel at its outermost position.
//!
//! In a permutable band every live dependence has non-negative distances `(d1, d2, ...)`;
//! replacing the first member `t1` by `t1 + t2` keeps the band permutable, and a dependence
//! left with distance 0 on `t1 + t2` has `d1 = d2 = 0`, so it no longer prevents the second
//! member from running in parallel. Applied to tile loops this runs tiles along
//! anti-diagonal wavefronts.
//!
//! A member that carries no live dependence at all is moved outermost instead (a
//! permutation of a permutable band is legal). A member that is parallel only once the
//! members outside it are fixed (a coincidence flag counts the outer members) is not: moved
//! outermost it would carry dependences again. Nor is the last member of a band that holds
//! the innermost loops: that is where the stride-1 loop belongs (heat-3d's untiled band
//! `(t, 2t+i, 2t+j, 2t+k)`, parallel on `2t+k` inside the others, is skewed so that
//! `2t+i` becomes parallel and `2t+k` stays innermost).

use super::analysis::{is_parallel, live_below, live_in_children};
use super::tree::{BandNode, Filtered, Node, Tree};
use poly::isl::{IslResult, UnionMap};

/// In the first permutable band of at least two members on every root-to-leaf path whose
/// outer member is not parallel: moves a member that carries none of the live dependences
/// `all` outermost if there is one (not the innermost loop), else skews the first member
/// by the second. The caller recomputes coincidence afterwards.
pub fn wavefront(tree: &Tree, all: &UnionMap) -> IslResult<Tree> {
    Ok(Tree {
        domain: tree.domain.clone(),
        root: skew_first(&tree.root, all)?,
    })
}

fn skew_first(node: &Node, live: &UnionMap) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) if b.permutable && b.members.len() >= 2 => {
            if b.coincident.first() == Some(&true) {
                node.clone()
            } else {
                match outer_parallel(b, live)? {
                    Some(k) => Node::Band(parallel_first(b, k)),
                    None => Node::Band(skew(b)?),
                }
            }
        }
        Node::Band(b) => Node::Band(BandNode {
            child: Box::new(skew_first(&b.child, &live_below(live, &b.members)?)?),
            ..b.clone()
        }),
        Node::Sequence(cs) => Node::Sequence(children(cs, live)?),
        Node::Set(cs) => Node::Set(children(cs, live)?),
    })
}

fn children(cs: &[Filtered], live: &UnionMap) -> IslResult<Vec<Filtered>> {
    let inside = live_in_children(live, cs)?;
    (cs.iter().zip(&inside))
        .map(|(c, live)| {
            Ok(Filtered {
                filter: c.filter.clone(),
                child: skew_first(&c.child, live)?,
            })
        })
        .collect()
}

/// The first member after the first that no `live` pair has different values on, except
/// the last member when the band holds the innermost loops.
fn outer_parallel(b: &BandNode, live: &UnionMap) -> IslResult<Option<usize>> {
    let innermost = matches!(*b.child, Node::Leaf);
    let candidates = b.members.len() - usize::from(innermost);
    for k in 1..candidates {
        if b.coincident[k] && is_parallel(live, &b.members[k])? {
            return Ok(Some(k));
        }
    }
    Ok(None)
}

/// Moves parallel member `k` outermost (legal: the band is permutable).
fn parallel_first(b: &BandNode, k: usize) -> BandNode {
    let mut band = b.clone();
    let m = band.members.remove(k);
    band.members.insert(0, m);
    let c = band.coincident.remove(k);
    band.coincident.insert(0, c);
    band
}

fn skew(b: &BandNode) -> IslResult<BandNode> {
    let both = b.members[0].flat_range_product(&b.members[1])?;
    let sum = both.apply_range(&b.members[0].ctx().union_map("{ [a, b] -> [a + b] }")?)?;
    let mut members = b.members.clone();
    members[0] = sum;
    Ok(BandNode {
        members,
        ..b.clone()
    })
}
