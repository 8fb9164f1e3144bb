//! Wavefront parallelism: skew the outermost permutable band so that an inner loop is
//! parallel when no outer one is.
//!
//! In a permutable band every live dependence has non-negative distances `(d1, d2, ...)`;
//! replacing the first member `t1` by `t1 + t2` keeps the band permutable, and a dependence
//! left with distance 0 on `t1 + t2` has `d1 = d2 = 0`, so it no longer prevents the second
//! member from running in parallel. Applied to tile loops this runs tiles along
//! anti-diagonal wavefronts.

use super::tree::{BandNode, Node, Tree};
use poly::isl::IslResult;

/// Skews the first permutable band of at least two members on every root-to-leaf path
/// whose outer member is not parallel. The caller recomputes coincidence afterwards.
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
            if b.coincident.first() == Some(&true) {
                node.clone()
            } else {
                Node::Band(skew(b)?)
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

fn skew(b: &BandNode) -> IslResult<BandNode> {
    let both = b.members[0].apply2(&b.members[1], |a, c| a.flat_range_product(c))?;
    let sum = both.apply_range(&b.members[0].ctx().union_map("{ [a, b] -> [a + b] }")?)?;
    let mut members = b.members.clone();
    members[0] = sum;
    Ok(BandNode {
        members,
        ..b.clone()
    })
}
