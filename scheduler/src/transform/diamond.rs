//! Diamond tiling: tiles of a time-tiled band that start concurrently (Bandishti,
//! Pananilath and Bondhugula, SC 2012; Pluto's `--diamond-tile`).
//!
//! A stencil's band `(t, 2t + i)`, tiled, runs its tiles along the wavefront `T_t + T_i`,
//! which starts with a single tile and needs as many steps to fill the machine as there are
//! tiles across `i`: *pipelined* start. When the face `t = const` lies strictly inside the
//! cone of two tiling hyperplanes, every tile along the first time steps can start at once:
//! *concurrent* start. With the band's *face* member `f` (the outermost iterator of every
//! statement of the band, up to a shift) and a *partner* member `r`, the cone complement
//! `h = k f - r + c_S` (per statement `S` a shift `c_S >= 0`) satisfies `h + r = k f` up to
//! the shifts, so the tile loops `(h / s, r / s', ..)` run, after the wavefront step's
//! skew `T_h + T_r`, along the face. `k` is the smallest from 1 up to [`MAX_FACTOR`] for
//! which some partner and shifts put every live dependence at a non-negative distance on
//! `h` (the band stays permutable); the shifts are the smallest, from a system of
//! difference constraints `c_T - c_S >= -min (h_T - h_S)` over the dependences, solved as
//! a longest path. jacobi-1d's `(t, 2t + i)` gets `h = t - i` (`k = 3`).
//!
//! Only the tile loops change. The point loops keep the band's members: the rows of a
//! band are all valid on the dependences a tile holds, and the original rows keep the
//! innermost loop contiguous (Pluto likewise keeps the evicted hyperplane for the
//! intra-tile loops).
//!
//! Deliberately absent: a face that is not a band member (the band must contain the
//! statements' outermost iterator); full concurrent start along several space dimensions
//! (one partner, as Pluto's partial concurrent start); bands with a parallel member (the
//! wavefront step moves it outermost, no skew and so no pipelined start). No concurrent
//! start exists when a dependence runs inside one value of the face with a positive
//! distance on every partner (seidel-2d's in-place updates within a time step): the band
//! is left as it is.

use super::analysis::live_below;
use super::tile::tile_row;
use super::tree::{BandKind, BandNode, Node, Tree};
use poly::isl::{End, IslResult, UnionMap};
use std::collections::BTreeMap;
use std::num::NonZeroU32;

/// The largest `k` tried for the cone complement `k f - r`.
pub const MAX_FACTOR: i64 = 8;

/// Replaces, in the first tiled band of every root-to-leaf path that has no parallel
/// member, the tile loop of the face member by its cone complement, if one exists (see the
/// module documentation); `validity` holds the dependences every order respects. The caller
/// checks the result and recomputes the marks.
pub fn diamond(tree: &Tree, validity: &UnionMap) -> IslResult<Tree> {
    Ok(Tree {
        domain: tree.domain.clone(),
        root: rewrite(&tree.root, validity)?,
    })
}

fn rewrite(node: &Node, live: &UnionMap) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(
            b @ BandNode {
                kind: BandKind::Tile(sizes),
                ..
            },
        ) => match &*b.child {
            Node::Band(point) if candidate(b, point) => match cone_complement(point, live)? {
                Some(cone) => Node::Band(retile(b, sizes, point, &cone)?),
                None => node.clone(),
            },
            _ => node.clone(),
        },
        Node::Band(b) => Node::Band(BandNode {
            child: Box::new(rewrite(&b.child, &live_below(live, &b.members)?)?),
            ..b.clone()
        }),
        Node::Sequence(cs) => Node::Sequence(super::map_children_live(cs, live, rewrite)?),
        Node::Set(cs) => Node::Set(super::map_children_live(cs, live, rewrite)?),
    })
}

/// Whether the tile band `tiles` over `point` would start its tiles in a pipeline: at
/// least two members, none of them parallel.
fn candidate(tiles: &BandNode, point: &BandNode) -> bool {
    point.kind == BandKind::Point
        && tiles.permutable
        && tiles.members.len() >= 2
        && !tiles.coincident.iter().any(|&c| c)
}

/// The cone complement of a band: which member is the face, which its partner, and the
/// new hyperplane `h` (per statement, shifts included).
#[derive(Debug)]
struct Cone {
    face: usize,
    partner: usize,
    h: UnionMap,
}

/// The cone complement of `band`'s face with the smallest factor (the earliest partner
/// among equals), if there is one.
fn cone_complement(band: &BandNode, live: &UnionMap) -> IslResult<Option<Cone>> {
    let Some(face) = face(band)? else {
        return Ok(None);
    };
    let pieces = live.maps()?;
    for k in 1..=MAX_FACTOR {
        for partner in (0..band.members.len()).filter(|&p| p != face) {
            let linear = combination(&band.members[face], k, &band.members[partner])?;
            if let Some(shifts) = shifts(&linear, &pieces)? {
                let h = shifted(&linear, &shifts)?;
                return Ok(Some(Cone { face, partner, h }));
            }
        }
    }
    Ok(None)
}

/// The member that is, for every statement, its outermost iterator plus a constant.
fn face(band: &BandNode) -> IslResult<Option<usize>> {
    for (k, member) in band.members.iter().enumerate() {
        if outermost_plus_constant(member)? {
            return Ok(Some(k));
        }
    }
    Ok(None)
}

/// Whether `member` is, for every statement, its outermost iterator plus a constant.
fn outermost_plus_constant(member: &UnionMap) -> IslResult<bool> {
    for piece in member.maps()? {
        let n = piece.n_dims(End::Source)?;
        if n == 0 {
            return Ok(false);
        }
        let its: Vec<String> = (0..n).map(|d| format!("i{d}")).collect();
        let name = piece.tuple_name_of(End::Source);
        let first =
            (piece.ctx()).union_map(&format!("{{ {name}[{}] -> [i0] }}", its.join(", ")))?;
        let offset = combination(&piece.to_union()?, 1, &first)?;
        let Some(values) = offset.range()?.sets()?.into_iter().next() else {
            return Ok(false);
        };
        let (lo, hi) = values.dim_range(0)?;
        let lo = lo.as_i64()?;
        if lo.is_none() || lo != hi.as_i64()? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `k a - b`, member by member: `S[i] -> [k a(i) - b(i)]`.
fn combination(a: &UnionMap, k: i64, b: &UnionMap) -> IslResult<UnionMap> {
    let both = a.flat_range_product(b)?;
    both.apply_range(
        &a.ctx()
            .union_map(&format!("{{ [a, b] -> [{k} * a - b] }}"))?,
    )
}

/// The smallest non-negative shifts per statement (by name) under which every dependence
/// piece has a non-negative distance on `linear`, or `None` when none exist.
fn shifts(
    linear: &UnionMap,
    pieces: &[poly::isl::Map],
) -> IslResult<Option<BTreeMap<String, i64>>> {
    // c_T >= c_S + weight, per dependence piece S -> T.
    let mut edges = Vec::new();
    for piece in pieces {
        let distances = piece
            .to_union()?
            .apply_domain(linear)?
            .apply_range(linear)?
            .deltas()?;
        let Some(values) = distances.sets()?.into_iter().next() else {
            continue;
        };
        let Some(lowest) = values.dim_range(0)?.0.as_i64()? else {
            return Ok(None);
        };
        let (source, sink) = (
            piece.tuple_name_of(End::Source),
            piece.tuple_name_of(End::Sink),
        );
        edges.push((source, sink, -lowest));
    }
    let mut shift: BTreeMap<String, i64> = BTreeMap::new();
    for m in linear.maps()? {
        shift.insert(m.tuple_name_of(End::Source), 0);
    }
    // Longest paths from zero (Bellman-Ford): a change in round `n + 1` is a positive cycle.
    for _ in 0..=shift.len() {
        let mut changed = false;
        for (source, sink, weight) in &edges {
            let from = shift.get(source).copied().unwrap_or(0);
            let to = shift.entry(sink.clone()).or_insert(0);
            if from + weight > *to {
                *to = from + weight;
                changed = true;
            }
        }
        if !changed {
            return Ok(Some(shift));
        }
    }
    Ok(None)
}

/// `linear` with each statement's value raised by its shift.
fn shifted(linear: &UnionMap, shifts: &BTreeMap<String, i64>) -> IslResult<UnionMap> {
    let mut out: Option<UnionMap> = None;
    for piece in linear.maps()? {
        let c = shifts
            .get(&piece.tuple_name_of(End::Source))
            .copied()
            .unwrap_or(0);
        let moved = (piece.to_union()?)
            .apply_range(&piece.ctx().union_map(&format!("{{ [x] -> [x + {c}] }}"))?)?;
        out = Some(match out {
            None => moved,
            Some(o) => o.union(&moved)?,
        });
    }
    Ok(out.unwrap_or_else(|| linear.clone()))
}

/// The tile band with the face's tile loop replaced by the cone complement's: members
/// `(h, partner, the others in order)`, each over its point member's tile size (the
/// complement takes the face's), above the unchanged point band.
fn retile(
    tiles: &BandNode,
    sizes: &[NonZeroU32],
    point: &BandNode,
    cone: &Cone,
) -> IslResult<BandNode> {
    let first = [cone.face, cone.partner];
    let rest = (0..point.members.len()).filter(|k| !first.contains(k));
    let order: Vec<usize> = first.into_iter().chain(rest).collect();
    let mut members = Vec::new();
    let mut new_sizes: Vec<NonZeroU32> = Vec::new();
    for &k in &order {
        let row = if k == cone.face {
            &cone.h
        } else {
            &point.members[k]
        };
        members.push(tile_row(row, sizes[k])?);
        new_sizes.push(sizes[k]);
    }
    Ok(BandNode {
        coincident: vec![false; members.len()],
        members,
        permutable: true,
        kind: BandKind::Tile(new_sizes),
        child: tiles.child.clone(),
    })
}
