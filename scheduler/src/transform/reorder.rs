//! Intra-tile reordering: make a parallel loop with stride-1 accesses innermost (any loop,
//! in a band with no parallel member).
//!
//! In the innermost permutable band of each nest, a member is scored by the number of
//! accesses whose element moves by exactly one in the last array dimension (and nowhere
//! else) when that member advances by one and every outer dimension stays put. The best
//! coincident member moves to the end of the band: a permutation of a permutable band is
//! legal, and a coincident member stays coincident when moved inwards. A band with no
//! coincident member (the point loops of a wavefront's tiles) has no parallel loop to
//! keep: its best member of all moves innermost (lu's `j`, contiguous in `A[i][j]` and
//! `A[k][j]`, in place of the reduction `k`).

use super::tree::{BandNode, Node, Tree};
use poly::isl::{IslResult, UnionMap};
use poly::model::Program;
use std::collections::BTreeMap;

/// One access relation and the isl name of its array.
pub(crate) struct Access {
    relation: UnionMap,
    array: String,
    rank: usize,
}

/// The array accesses (at least one dimension) of `s`.
pub(crate) fn accesses_of(s: &poly::model::Statement) -> IslResult<Vec<Access>> {
    let mut accesses = Vec::new();
    for a in s.reads.iter().chain(std::iter::once(&s.write)) {
        let range = a.relation.range()?;
        let rank = range.n_dims()?;
        if let (Some(array), true) = (range.tuple_name(), rank > 0) {
            accesses.push(Access {
                relation: a.relation.to_union()?,
                array,
                rank,
            });
        }
    }
    Ok(accesses)
}

/// Moves the best stride-1 parallel member innermost in each innermost permutable band.
pub fn reorder_for_stride(tree: &Tree, program: &Program) -> IslResult<Tree> {
    let mut accesses = Vec::new();
    for s in &program.statements {
        accesses.extend(accesses_of(s)?);
    }
    Ok(Tree {
        domain: tree.domain.clone(),
        root: reorder_node(&tree.root, None, &accesses)?,
    })
}

/// For each statement of `program` (by name) with the most loops, how many of its array
/// accesses are *strided* in its innermost loop: they neither stay on one element nor move
/// by one element in the array's last dimension (contiguous) when that loop advances. Such
/// an access defeats vectorisation and wastes most of each cache line it loads.
pub fn strided_accesses(tree: &Tree, program: &Program) -> IslResult<BTreeMap<String, usize>> {
    let mut leaves = Vec::new();
    leaf_schedules(&tree.root, None, &mut leaves)?;
    let most = program
        .statements
        .iter()
        .map(|s| s.iterators.len())
        .max()
        .unwrap_or(0);
    let mut out = BTreeMap::new();
    for s in program
        .statements
        .iter()
        .filter(|s| s.iterators.len() == most)
    {
        let domain = s.domain.to_union()?;
        let accesses = accesses_of(s)?;
        for leaf in &leaves {
            let full = leaf.intersect_domain(&domain)?;
            if full.is_empty()? {
                continue;
            }
            *out.entry(s.name.clone()).or_default() += innermost_strided(&full, &accesses)?;
        }
    }
    Ok(out)
}

/// The schedule from the root to each leaf (`S[i] -> [t..]`, every member on the path).
fn leaf_schedules(
    node: &Node,
    prefix: Option<&UnionMap>,
    out: &mut Vec<UnionMap>,
) -> IslResult<()> {
    match node {
        Node::Leaf => out.extend(prefix.cloned()),
        Node::Band(b) => {
            let full = extended(prefix, &b.members)?;
            leaf_schedules(&b.child, full.as_ref(), out)?;
        }
        Node::Sequence(cs) | Node::Set(cs) => {
            for c in cs {
                let below = prefix.map(|p| p.intersect_domain(&c.filter)).transpose()?;
                leaf_schedules(&c.child, below.as_ref(), out)?;
            }
        }
    }
    Ok(())
}

/// The strided accesses among `accesses` along the innermost schedule dimension of `full`
/// (one statement's schedule) that takes more than one value.
fn innermost_strided(full: &UnionMap, accesses: &[Access]) -> IslResult<usize> {
    let depth = schedule_depth(full)?;
    for pos in (0..depth).rev() {
        let step = step_along(full, depth, pos)?;
        if step.is_empty()? {
            continue;
        }
        let mut strided = 0;
        for a in accesses {
            if matches!(movement(&step, a)?, Movement::Strided) {
                strided += 1;
            }
        }
        return Ok(strided);
    }
    Ok(0)
}

/// The schedule `prefix` followed by the band `members`.
fn extended(prefix: Option<&UnionMap>, members: &[UnionMap]) -> IslResult<Option<UnionMap>> {
    let mut full = prefix.cloned();
    for m in members {
        full = Some(match full {
            None => m.clone(),
            Some(p) => p.flat_range_product(m)?,
        });
    }
    Ok(full)
}

fn reorder_node(node: &Node, prefix: Option<&UnionMap>, accesses: &[Access]) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) => {
            let full = extended(prefix, &b.members)?;
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
    let depth = schedule_depth(full)?;
    // A band with a parallel member keeps one innermost; in a band with none (the point
    // loops of a wavefront's tiles), every member may go innermost.
    let sequential = !band.coincident.contains(&true);
    let mut best: Option<(usize, usize)> = None;
    for k in (0..n).filter(|&k| sequential || band.coincident[k]) {
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

/// The number of dimensions of the schedule `full`.
fn schedule_depth(full: &UnionMap) -> IslResult<usize> {
    full.range()?.sets()?.first().map_or(Ok(0), |s| s.n_dims())
}

/// The pairs of instances `x -> y` where schedule dimension `pos` (of `depth`) of `full`
/// advances by one and every other dimension stays put.
fn step_along(full: &UnionMap, depth: usize, pos: usize) -> IslResult<UnionMap> {
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
    full.apply_range(&shift)?.apply_range(&full.reverse()?)
}

/// How an access's element moves along a step.
pub(crate) enum Movement {
    /// It stays on one element (or has no instance along the step).
    Invariant,
    /// It moves by one element in the last dimension only.
    Contiguous,
    /// Anything else.
    Strided,
}

/// How `a`'s element moves along `step` (pairs of instances).
pub(crate) fn movement(step: &UnionMap, a: &Access) -> IslResult<Movement> {
    let moves = a
        .relation
        .reverse()?
        .apply_range(step)?
        .apply_range(&a.relation)?;
    let deltas = moves.deltas()?;
    if deltas.is_empty()? {
        return Ok(Movement::Invariant);
    }
    let zeros = vec!["0"; a.rank].join(", ");
    let still = step
        .ctx()
        .union_set(&format!("{{ {}[{zeros}] }}", a.array))?;
    if deltas.is_subset(&still)? {
        return Ok(Movement::Invariant);
    }
    let zeros = vec!["0"; a.rank - 1].join(", ");
    let sep = if a.rank > 1 { ", " } else { "" };
    let unit = step.ctx().union_set(&format!(
        "{{ {0}[{zeros}{sep}1]; {0}[{zeros}{sep}-1] }}",
        a.array
    ))?;
    Ok(if deltas.is_subset(&unit)? {
        Movement::Contiguous
    } else {
        Movement::Strided
    })
}

/// The number of accesses that move by one element in their last dimension only when the
/// schedule dimension `pos` (of `depth`) advances by one.
fn stride_one_count(
    full: &UnionMap,
    depth: usize,
    pos: usize,
    accesses: &[Access],
) -> IslResult<usize> {
    let step = step_along(full, depth, pos)?;
    let mut count = 0;
    for a in accesses {
        if matches!(movement(&step, a)?, Movement::Contiguous) {
            count += 1;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use poly::isl::Ctx;

    #[test]
    fn a_column_walk_in_the_innermost_loop_is_strided() {
        let path = format!(
            "{}/../examples/polybench/mvt.pk",
            env!("CARGO_MANIFEST_DIR")
        );
        let kernels = frontend::compile(&frontend::read_source(&path).unwrap()).unwrap();
        let mvt = Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap();
        let tree = Tree::from_schedule(&mvt.schedule).unwrap();
        // `x1[i] += A[i, j] * y_1[j]` walks rows; `x2[i] += A[j, i] * y_2[j]` walks a column.
        let strided = strided_accesses(&tree, &mvt).unwrap();
        let names: Vec<&String> = strided.keys().collect();
        assert_eq!(names.len(), 2);
        assert_eq!(strided.values().copied().collect::<Vec<_>>(), vec![0, 1]);
    }
}
