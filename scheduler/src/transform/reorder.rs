//! Intra-tile reordering: make a parallel loop with stride-1 accesses innermost.
//!
//! In the innermost permutable band of each nest, a member is scored by the number of
//! accesses whose element moves by exactly one in the last array dimension (and nowhere
//! else) when that member advances by one and every outer dimension stays put. The best
//! coincident member moves to the end of the band: a permutation of a permutable band is
//! legal, and a coincident member stays coincident when moved inwards.

use super::tree::{BandNode, Node, Tree};
use poly::isl::{IslResult, UnionMap};
use poly::model::Program;

/// One access relation and the isl name of its array.
struct Access {
    relation: UnionMap,
    array: String,
    rank: usize,
}

/// Moves the best stride-1 parallel member innermost in each innermost permutable band.
pub fn reorder_for_stride(tree: &Tree, program: &Program) -> IslResult<Tree> {
    let mut accesses = Vec::new();
    for s in &program.statements {
        for a in s.reads.iter().chain(std::iter::once(&s.write)) {
            let range = a.relation.range()?;
            let rank = range.n_dims()?;
            if let (Some(array), true) = (range.tuple_name(), rank > 0) {
                accesses.push(Access {
                    relation: a.relation.apply(isl_rs::UnionMap::from_map)?,
                    array,
                    rank,
                });
            }
        }
    }
    Ok(Tree {
        domain: tree.domain.clone(),
        root: reorder_node(&tree.root, None, &accesses)?,
    })
}

fn reorder_node(node: &Node, prefix: Option<&UnionMap>, accesses: &[Access]) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) => {
            let mut full = prefix.cloned();
            for m in &b.members {
                full = Some(match full {
                    None => m.clone(),
                    Some(p) => p.apply2(m, |p, m| p.flat_range_product(m))?,
                });
            }
            let mut band = BandNode {
                child: Box::new(reorder_node(&b.child, full.as_ref(), accesses)?),
                ..b.clone()
            };
            if b.permutable && b.members.len() >= 2 && !b.child.has_band() {
                if let Some(full) = &full {
                    move_best_inside(&mut band, full, accesses)?;
                }
            }
            Node::Band(band)
        }
        Node::Sequence(cs) => Node::Sequence(super::map_children(cs, |c| {
            reorder_node(c, prefix, accesses)
        })?),
        Node::Set(cs) => Node::Set(super::map_children(cs, |c| {
            reorder_node(c, prefix, accesses)
        })?),
    })
}

fn move_best_inside(band: &mut BandNode, full: &UnionMap, accesses: &[Access]) -> IslResult<()> {
    let n = band.members.len();
    let depth = full
        .range()?
        .sets()?
        .first()
        .map_or(Ok(0), |s| s.n_dims())?;
    let mut best: Option<(usize, usize)> = None;
    for k in (0..n).filter(|&k| band.coincident[k]) {
        let score = stride_one_count(full, depth, depth - n + k, accesses)?;
        if score > 0 && best.is_none_or(|(_, s)| score > s) {
            best = Some((k, score));
        }
    }
    if let Some((k, _)) = best.filter(|&(k, _)| k + 1 < n) {
        let m = band.members.remove(k);
        band.members.push(m);
        let c = band.coincident.remove(k);
        band.coincident.push(c);
    }
    Ok(())
}

/// The number of accesses that move by one element in their last dimension only when the
/// schedule dimension `pos` (of `depth`) advances by one.
fn stride_one_count(
    full: &UnionMap,
    depth: usize,
    pos: usize,
    accesses: &[Access],
) -> IslResult<usize> {
    let xs: Vec<String> = (0..depth).map(|d| format!("x{d}")).collect();
    let ys: Vec<String> = (0..depth)
        .map(|d| {
            if d == pos {
                format!("x{d} + 1")
            } else {
                format!("x{d}")
            }
        })
        .collect();
    let shift =
        full.ctx()
            .union_map(&format!("{{ [{}] -> [{}] }}", xs.join(", "), ys.join(", ")))?;
    let step = full.apply_range(&shift)?.apply_range(&full.reverse()?)?;
    let mut count = 0;
    for a in accesses {
        let moves = a
            .relation
            .reverse()?
            .apply_range(&step)?
            .apply_range(&a.relation)?;
        let deltas = moves.deltas()?;
        let zeros = vec!["0"; a.rank - 1].join(", ");
        let sep = if a.rank > 1 { ", " } else { "" };
        let unit = full.ctx().union_set(&format!(
            "{{ {0}[{zeros}{sep}1]; {0}[{zeros}{sep}-1] }}",
            a.array
        ))?;
        if !deltas.is_empty()? && deltas.is_subset(&unit)? {
            count += 1;
        }
    }
    Ok(count)
}
