//! Rectangular tiling of permutable bands.
//!
//! A band with members `t_k` becomes a tile band `floor(t_k / s_k)` above a point band
//! `t_k` (isl's default tiling: tile loops not scaled, point loops not shifted). Tiling a
//! permutable band is always legal.
//!
//! [`tile_by`], the pipeline's tiling, only tiles bands that carry reuse ([`carries_reuse`]):
//! tiles bring the instances that touch one element closer in time, and a band in which no
//! access touches an element twice gains nothing from them while its stride-1 inner loop is
//! cut into short, poorly vectorised pieces (a stencil's space loops within one time step ran
//! twice as slow tiled as in the original order).

use super::tree::{BandKind, BandNode, Node, Tree};
use poly::isl::{IslResult, UnionMap, UnionSet};
use poly::model::Program;
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

/// Which bands to tile: the band, the schedule of the members enclosing it (`None` at the
/// root) and the statement instances it schedules.
type Pick<'a> = dyn Fn(&BandNode, Option<&UnionMap>, &UnionSet) -> IslResult<bool> + 'a;

/// Whether `b` is a permutable band of scheduler loops with at least two members.
fn tileable(b: &BandNode) -> bool {
    b.kind == BandKind::Loop && b.permutable && b.members.len() >= 2
}

/// Tiles every permutable band of scheduler loops with at least two members; member `k`
/// gets size `sizes[k]` ([`DEFAULT_TILE_SIZE`] beyond the list).
pub fn tile(tree: &Tree, sizes: &[NonZeroU32]) -> IslResult<Tree> {
    let pick = |b: &BandNode, _: Option<&UnionMap>, _: &UnionSet| Ok(tileable(b));
    tile_tree(tree, &|b, _| Ok(padded(sizes, b.members.len())), &pick)
}

/// Tiles the bands [`tile`] tiles that also carry reuse of `program`'s arrays
/// ([`carries_reuse`]), with the sizes `choose` gives each of them.
pub fn tile_by(tree: &Tree, program: &Program, choose: &ChooseSizes) -> IslResult<Tree> {
    let accesses = array_accesses(program)?;
    let pick = |b: &BandNode, outer: Option<&UnionMap>, instances: &UnionSet| {
        Ok(tileable(b) && carries_reuse(outer, instances, &accesses)?)
    };
    tile_tree(tree, choose, &pick)
}

/// Tiles the tile bands again (a second level of tiling, e.g. for a second cache level).
pub fn tile_tiles(tree: &Tree, sizes: &[NonZeroU32]) -> IslResult<Tree> {
    let pick =
        |b: &BandNode, _: Option<&UnionMap>, _: &UnionSet| Ok(matches!(b.kind, BandKind::Tile(_)));
    tile_tree(tree, &|b, _| Ok(padded(sizes, b.members.len())), &pick)
}

/// Every access of `program` to an array of at least one dimension (scalars live in
/// registers: their reuse needs no tiles), as `S[i] -> A[e]`.
fn array_accesses(program: &Program) -> IslResult<Vec<UnionMap>> {
    let mut out = Vec::new();
    for s in &program.statements {
        for a in s.reads.iter().chain(std::iter::once(&s.write)) {
            if a.relation.range()?.n_dims()? > 0 {
                out.push(a.relation.to_union()?);
            }
        }
    }
    Ok(out)
}

/// Whether some access touches one element from two different `instances` that share the
/// values of the enclosing members `outer` (self-temporal reuse carried by the band or below
/// it, as gemm's `C[i, j]` along `k` or a time-tiled stencil's `A[i]` along `t`).
pub fn carries_reuse(
    outer: Option<&UnionMap>,
    instances: &UnionSet,
    accesses: &[UnionMap],
) -> IslResult<bool> {
    let same_outer = outer.map(super::analysis::same_value).transpose()?;
    let identity = instances.identity()?;
    for a in accesses {
        let a = a.intersect_domain(instances)?;
        if a.is_empty()? {
            continue;
        }
        let mut same = a.apply_range(&a.reverse()?)?;
        if let Some(o) = &same_outer {
            same = same.intersect(o)?;
        }
        if !same.is_subset(&identity)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `sizes` cut or padded with [`DEFAULT_TILE_SIZE`] to `n` members.
fn padded(sizes: &[NonZeroU32], n: usize) -> Vec<NonZeroU32> {
    (0..n)
        .map(|k| sizes.get(k).copied().unwrap_or(DEFAULT_TILE_SIZE))
        .collect()
}

fn tile_tree(tree: &Tree, choose: &ChooseSizes, pick: &Pick) -> IslResult<Tree> {
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
    pick: &Pick,
) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) => {
            let (outer, depth) = prefix;
            let mut schedule = outer.cloned();
            for m in &b.members {
                schedule = Some(match schedule {
                    None => m.clone(),
                    Some(p) => p.flat_range_product(m)?,
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
            if pick(b, outer, instances)? {
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

/// The tile loop of a band member: `S[i] -> [floor(m(i) / size)]`.
pub(super) fn tile_row(member: &UnionMap, size: NonZeroU32) -> IslResult<UnionMap> {
    let floor = format!("{{ [x] -> [floor(x / {size})] }}");
    member.apply_range(&member.ctx().union_map(&floor)?)
}

fn tile_band(band: BandNode, sizes: Vec<NonZeroU32>) -> IslResult<BandNode> {
    let members = (band.members.iter().zip(&sizes))
        .map(|(m, &s)| tile_row(m, s))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    #[test]
    fn reuse_is_carried_by_time_loops_and_reductions_only() {
        let jacobi = program("polybench/jacobi-2d.pk");
        let tree = Tree::from_schedule(&jacobi.schedule).unwrap();
        let Node::Band(time) = &tree.root else {
            panic!("jacobi-2d's original order starts with its time loop");
        };
        let accesses = array_accesses(&jacobi).unwrap();
        // Within one time step every access touches each element once: nothing to tile.
        let within_step = carries_reuse(Some(&time.members[0]), &tree.domain, &accesses);
        assert!(!within_step.unwrap());
        // Across time steps `A[i, j]` is touched again.
        assert!(carries_reuse(None, &tree.domain, &accesses).unwrap());
        // gemm's `C[i, j]` is touched at every `k`.
        let gemm = program("polybench/gemm.pk");
        let domain = Tree::from_schedule(&gemm.schedule).unwrap().domain;
        let accesses = array_accesses(&gemm).unwrap();
        assert!(carries_reuse(None, &domain, &accesses).unwrap());
    }
}
