//! Wavefront parallelism: skew the outermost permutable band so that an inner loop is
//! parallel when no loop of the band is.
//!
//! In a permutable band every live dependence has non-negative distances `(d1, d2, ...)`;
//! replacing the first member `t1` by `t1 + t2` keeps the band permutable, and a dependence
//! left with distance 0 on `t1 + t2` has `d1 = d2 = 0`, so it no longer prevents the second
//! member from running in parallel. Applied to tile loops this runs tiles along
//! anti-diagonal wavefronts.

use super::tree::{BandNode, Node, Tree};
use poly::isl::IslResult;

/// In the first permutable band of at least two members on every root-to-leaf path whose
/// outer member is not parallel: moves a parallel member outermost if there is one, else
/// skews the first member by the second. The caller recomputes coincidence afterwards.
pub fn wavefront(tree: &Tree) -> IslResult<Tree> {
    Ok(Tree {
        domain: tree.domain.clone(),
        root: skew_first(&tree.root)?,
    })
}

fn skew_first(node: &Node) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) if b.permutable && b.members.len() >= 2 => {
            match b.coincident.iter().position(|&c| c) {
                Some(0) => node.clone(),
                Some(k) => Node::Band(parallel_first(b, k)),
                None => Node::Band(skew(b)?),
            }
        }
        Node::Band(b) => Node::Band(BandNode {
            child: Box::new(skew_first(&b.child)?),
            ..b.clone()
        }),
        Node::Sequence(cs) => Node::Sequence(super::map_children(cs, skew_first)?),
        Node::Set(cs) => Node::Set(super::map_children(cs, skew_first)?),
    })
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
