//! Transformations a caller adds after the optimizer's own ([`super::optimize`]'s `passes`).
//!
//! A pass is not checked step by step as the built-in transformations are: the optimizer's
//! final legality check is what stands between it and a back end. That is the point of
//! [`ReverseOutermost`], a deliberately wrong pass: with it, `polyc compile` must refuse
//! the kernel with the checker's counterexample instead of emitting code.

use crate::transform::{map_children, BandNode, Node, Tree};
use poly::isl::IslResult;
use poly::model::Program;

/// A transformation of schedule trees.
pub trait Pass {
    /// The name users select it by.
    fn name(&self) -> &'static str;
    /// The transformed tree.
    fn apply(&self, tree: &Tree, program: &Program) -> IslResult<Tree>;
}

/// Runs the first member of each outermost band backwards (`t -> -t`): illegal whenever
/// that member carries a dependence (a time loop, a reduction).
pub struct ReverseOutermost;

impl Pass for ReverseOutermost {
    fn name(&self) -> &'static str {
        "reverse-outermost"
    }
    fn apply(&self, tree: &Tree, _: &Program) -> IslResult<Tree> {
        Ok(Tree {
            domain: tree.domain.clone(),
            root: reverse_first_band(&tree.root)?,
        })
    }
}

fn reverse_first_band(node: &Node) -> IslResult<Node> {
    Ok(match node {
        Node::Band(b) => {
            let mut members = b.members.clone();
            let negate = members[0].ctx().union_map("{ [t] -> [-t] }")?;
            members[0] = members[0].apply_range(&negate)?;
            Node::Band(BandNode {
                members,
                ..b.clone()
            })
        }
        Node::Leaf => Node::Leaf,
        Node::Sequence(cs) => Node::Sequence(map_children(cs, reverse_first_band)?),
        Node::Set(cs) => Node::Set(map_children(cs, reverse_first_band)?),
    })
}

/// The passes users can name (`polyc compile --pass NAME`, a debugging aid).
pub fn pass_named(name: &str) -> Option<&'static dyn Pass> {
    [&ReverseOutermost as &'static dyn Pass]
        .into_iter()
        .find(|p| p.name() == name)
}
