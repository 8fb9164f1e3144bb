//! Rectangular tiling of permutable bands.
//!
//! A band with members `t_k` becomes a tile band `floor(t_k / s_k)` above a point band
//! `t_k` (isl's default tiling: tile loops not scaled, point loops not shifted). Tiling a
//! permutable band is always legal.

use super::tree::{BandKind, BandNode, Node, Tree};
use poly::isl::{IslResult, UnionMap, UnionSet};
use std::num::NonZeroU32;

/// The tile size when none is given for a band member.
pub const DEFAULT_TILE_SIZE: NonZeroU32 = NonZeroU32::new(32).unwrap();

/// Where a band sits in the tree, for choosing its tile sizes.
pub struct Position<'a> {
    /// Number of band members enclosing the band.
    pub depth: usize,
    /// The enclosing band members and the band's own, as one map `S[i] -> [p.., t..]`.
    pub schedule: &'a UnionMap,
    /// The statement instances the band schedules.
    pub instances: &'a UnionSet,
}

/// Chooses one tile size per member of a band, given where the band sits.
pub type ChooseSizes<'a> = dyn Fn(&BandNode, &Position) -> IslResult<Vec<NonZeroU32>> + 'a;

/// Tiles every permutable band of scheduler loops with at least two members; member `k`
/// gets size `sizes[k]` ([`DEFAULT_TILE_SIZE`] beyond the list).
pub fn tile(tree: &Tree, sizes: &[NonZeroU32]) -> IslResult<Tree> {
    tile_by(tree, &|b, _| Ok(padded(sizes, b.members.len())))
}

/// Tiles the bands [`tile`] tiles, with the sizes `choose` gives each of them.
pub fn tile_by(tree: &Tree, choose: &ChooseSizes) -> IslResult<Tree> {
    let pick = |b: &BandNode| b.kind == BandKind::Loop && b.permutable && b.members.len() >= 2;
    tile_tree(tree, choose, &pick)
}

/// Tiles the tile bands again (a second level of tiling, e.g. for a second cache level).
pub fn tile_tiles(tree: &Tree, sizes: &[NonZeroU32]) -> IslResult<Tree> {
    let pick = |b: &BandNode| matches!(b.kind, BandKind::Tile(_));
    tile_tree(tree, &|b, _| Ok(padded(sizes, b.members.len())), &pick)
}

/// `sizes` cut or padded with [`DEFAULT_TILE_SIZE`] to `n` members.
fn padded(sizes: &[NonZeroU32], n: usize) -> Vec<NonZeroU32> {
    (0..n)
        .map(|k| sizes.get(k).copied().unwrap_or(DEFAULT_TILE_SIZE))
        .collect()
}

fn tile_tree(
    tree: &Tree,
    choose: &ChooseSizes,
    pick: &dyn Fn(&BandNode) -> bool,
) -> IslResult<Tree> {
    Ok(Tree {
        domain: tree.domain.clone(),
        root: tile_where(&tree.root, (None, 0), &tree.domain, choose, pick)?,
    })
}

/// Tiles the picked bands of `node`, below the enclosing members (`prefix`: their schedule
/// and number).
fn tile_where(
    node: &Node,
    prefix: (Option<&UnionMap>, usize),
    instances: &UnionSet,
    choose: &ChooseSizes,
    pick: &dyn Fn(&BandNode) -> bool,
) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) => {
            let (outer, depth) = prefix;
            let mut schedule = outer.cloned();
            for m in &b.members {
                schedule = Some(match schedule {
                    None => m.clone(),
                    Some(p) => p.apply2(m, |p, m| p.flat_range_product(m))?,
                });
            }
            let schedule = schedule.expect("a band has at least one member");
            let below = BandNode {
                child: Box::new(tile_where(
                    &b.child,
                    (Some(&schedule), depth + b.members.len()),
                    instances,
                    choose,
                    pick,
                )?),
                ..b.clone()
            };
            if pick(b) {
                let position = Position {
                    depth,
                    schedule: &schedule,
                    instances,
                };
                let sizes = choose(b, &position)?;
                Node::Band(tile_band(below, sizes)?)
            } else {
                Node::Band(below)
            }
        }
        Node::Sequence(cs) => Node::Sequence(super::map_children_filtered(cs, |f, c| {
            tile_where(c, prefix, &instances.intersect(f)?, choose, pick)
        })?),
        Node::Set(cs) => Node::Set(super::map_children_filtered(cs, |f, c| {
            tile_where(c, prefix, &instances.intersect(f)?, choose, pick)
        })?),
    })
}

fn tile_band(band: BandNode, sizes: Vec<NonZeroU32>) -> IslResult<BandNode> {
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
