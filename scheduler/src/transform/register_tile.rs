//! Register tiling (unroll-and-jam) of innermost permutable bands that carry a reduction.
//!
//! In an innermost permutable band with a stride-1 parallel last member `j`, a member `k`
//! that carries dependences, and a statement whose target stays the same along `k` (gemm's
//! `C[i, j] += A[i, k] * B[k, j]`), the band `(.., i, .., k, .., j)` becomes
//! `(.., i / RI, .., j / RJ, k)` followed by a point band `(i, j)`: for each small block of
//! `RI x RJ` targets, `k` runs innermost but for that block, whose targets the C printer then
//! keeps in local accumulators (`codegen::c::accumulate`) that the compiler holds in vector registers.
//! `i` is the innermost other parallel member (none: only `j` is blocked). Which bands
//! qualify, and the tile sizes that suit them, are the scheduler's register-block model
//! (`tile_size::blocked`), so that tiles hold whole blocks.
//!
//! Permuting and strip-mining the members of a permutable band is always legal; the caller
//! still checks the result against the dependences and keeps the band unchanged otherwise.

use super::tile_size::{RegisterBlocks, RegisterShape};
use super::{map_children, BandKind, BandNode, Node, Tree};
use poly::isl::{IslResult, UnionMap};
use poly::model::Program;
use std::num::NonZeroU32;

/// `tree` with every qualifying innermost band register-tiled (see the module doc).
///
/// An analysis of its own: it starts a fresh isl operation budget (and the legality check
/// of the result gets another). Without it, kernels with many statements (deriche: 47) ran
/// out of the budget the scheduler and the other transformations had left, and isl's parser
/// reports an exhausted budget while reading a relation as a "syntax error".
pub fn register_tile(tree: &Tree, program: &Program, blocks: RegisterBlocks) -> IslResult<Tree> {
    let _analysis = program.ctx.analysis();
    Ok(Tree {
        domain: tree.domain.clone(),
        root: visit(&tree.root, program, blocks)?,
    })
}

fn visit(node: &Node, program: &Program, blocks: RegisterBlocks) -> IslResult<Node> {
    let visit = |n: &Node| visit(n, program, blocks);
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) if !b.child.has_band() => match blocked(b, program, blocks)? {
            Some(n) => n,
            None => node.clone(),
        },
        Node::Band(b) => Node::Band(BandNode {
            child: Box::new(visit(&b.child)?),
            ..b.clone()
        }),
        Node::Sequence(cs) => Node::Sequence(map_children(cs, visit)?),
        Node::Set(cs) => Node::Set(map_children(cs, visit)?),
    })
}

/// The register-tiled band, or `None` when `b` does not qualify.
fn blocked(b: &BandNode, program: &Program, blocks: RegisterBlocks) -> IslResult<Option<Node>> {
    let n = b.members.len();
    let Some(shape) = RegisterShape::of(b, n.saturating_sub(1), program)? else {
        return Ok(None);
    };
    let block = blocks.of(&shape);
    let RegisterShape { i, j, k, .. } = shape;
    let ctx = b.members[0].ctx();
    let strip = |m: usize, size: u32| -> IslResult<UnionMap> {
        let floor = ctx.union_map(&format!("{{ [x] -> [floor(x / {size})] }}"))?;
        b.members[m].apply_range(&floor)
    };
    let cols = shape.cols(block);
    let mut outer = Vec::new();
    let mut sizes = Vec::new();
    for m in 0..n {
        if m == k {
            continue;
        }
        let size = match m {
            _ if m == j => cols,
            _ if Some(m) == i => block.rows,
            _ => 1,
        };
        outer.push(if size == 1 {
            b.members[m].clone()
        } else {
            strip(m, size)?
        });
        sizes.push(NonZeroU32::new(size).expect("sizes are at least 1"));
    }
    outer.push(b.members[k].clone());
    sizes.push(NonZeroU32::MIN);
    let inner: Vec<UnionMap> = i
        .iter()
        .chain([&j])
        .map(|&m| b.members[m].clone())
        .collect();
    let point = BandNode {
        coincident: vec![false; inner.len()],
        members: inner,
        permutable: true,
        kind: BandKind::Point,
        child: b.child.clone(),
    };
    Ok(Some(Node::Band(BandNode {
        coincident: vec![false; outer.len()],
        members: outer,
        permutable: true,
        kind: BandKind::Tile(sizes),
        child: Box::new(Node::Band(point)),
    })))
}
