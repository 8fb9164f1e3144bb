//! Rectangular tiling of permutable bands.
//!
//! A band with members `t_k` becomes a tile band `floor(t_k / s_k)` above a point band
//! `t_k` (isl's default tiling: tile loops not scaled, point loops not shifted). Tiling a
//! permutable band is always legal.

use super::tree::{BandKind, BandNode, Node, Tree};
use poly::isl::IslResult;
use std::num::NonZeroU32;

/// The tile size when none is given for a band member.
pub const DEFAULT_TILE_SIZE: NonZeroU32 = NonZeroU32::new(32).unwrap();

/// Tiles every permutable band of scheduler loops with at least two members; member `k`
/// gets size `sizes[k]` ([`DEFAULT_TILE_SIZE`] beyond the list).
pub fn tile(tree: &Tree, sizes: &[NonZeroU32]) -> IslResult<Tree> {
    let pick = |b: &BandNode| b.kind == BandKind::Loop && b.permutable && b.members.len() >= 2;
    Ok(Tree {
        domain: tree.domain.clone(),
        root: tile_where(&tree.root, sizes, &pick)?,
    })
}

/// Tiles the tile bands again (a second level of tiling, e.g. for a second cache level).
pub fn tile_tiles(tree: &Tree, sizes: &[NonZeroU32]) -> IslResult<Tree> {
    let pick = |b: &BandNode| matches!(b.kind, BandKind::Tile(_));
    Ok(Tree {
        domain: tree.domain.clone(),
        root: tile_where(&tree.root, sizes, &pick)?,
    })
}

fn tile_where(
    node: &Node,
    sizes: &[NonZeroU32],
    pick: &dyn Fn(&BandNode) -> bool,
) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) => {
            let below = BandNode {
                child: Box::new(tile_where(&b.child, sizes, pick)?),
                ..b.clone()
            };
            if pick(b) {
                Node::Band(tile_band(below, sizes)?)
            } else {
                Node::Band(below)
            }
        }
        Node::Sequence(cs) => {
            Node::Sequence(super::map_children(cs, |c| tile_where(c, sizes, pick))?)
        }
        Node::Set(cs) => Node::Set(super::map_children(cs, |c| tile_where(c, sizes, pick))?),
    })
}

fn tile_band(band: BandNode, sizes: &[NonZeroU32]) -> IslResult<BandNode> {
    let sizes: Vec<NonZeroU32> = (0..band.members.len())
        .map(|k| sizes.get(k).copied().unwrap_or(DEFAULT_TILE_SIZE))
        .collect();
    let ctx = band.members[0].ctx().clone();
    let members = band
        .members
        .iter()
        .zip(&sizes)
        .map(|(m, s)| m.apply_range(&ctx.union_map(&format!("{{ [x] -> [floor(x / {s})] }}"))?))
        .collect::<IslResult<Vec<_>>>()?;
    let inner_kind = match band.kind {
        BandKind::Loop => BandKind::Point,
        ref k => k.clone(),
    };
    Ok(BandNode {
        members,
        permutable: true,
        coincident: band.coincident.clone(),
        kind: BandKind::Tile(sizes),
        child: Box::new(Node::Band(BandNode {
            kind: inner_kind,
            ..band
        })),
    })
}
