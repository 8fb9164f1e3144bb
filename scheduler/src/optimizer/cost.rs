//! The optimizer's cost decisions: when the scheduler's order is not worth its price on a
//! CPU and the original loop order is kept instead ([`KeepOriginal`]).
//!
//! Each rule was found by measuring a PolyBench kernel that ran slower under the new order
//! than under the original one (`docs/performance.md`); each is a property of the tree
//! alone, judged before the back end sees it.

use crate::transform::reorder::strided_accesses;
use crate::transform::tile_size::{at_params, bounds, param_point, single_set};
use crate::transform::{BandKind, BandNode, KeepOriginal, Node, Tree};
use crate::Problem;
use poly::isl::{IslError, IslResult, UnionSet};
use poly::model::Program;

/// Fewer statement instances than this per step of a sequential loop around parallel loops
/// do not pay for the barrier that ends each step: the wavefront of trisolv's 128 x 128
/// tiles at N = 2000 has 31 steps of about 129,000 instances by the estimate of
/// [`steps_too_small`] (half that in fact) and ran up to 2.5x slower than the original
/// order on 2 threads. Of the 30 PolyBench kernels only trisolv's, atax's and jacobi-1d's
/// schedules fall under it (their notes say so: `polyc compile K.pk --tile= --parallel`);
/// the stencils' time steps and the pivots of lu and cholesky keep theirs.
pub const MIN_INSTANCES_PER_STEP: i64 = 1 << 18;

/// Why `tree` is worse than the original order, if it is: the first of
/// [`gains_nothing`], [`steps_too_small`] and [`ruined_strides`] that holds (each an
/// analysis of its own).
pub fn worse_than_original(problem: &Problem, tree: &Tree) -> IslResult<Option<KeepOriginal>> {
    if let Some(why) = gains_nothing(tree) {
        return Ok(Some(why));
    }
    let program = problem.program;
    let too_small = {
        let _analysis = program.ctx.analysis();
        steps_too_small(program, tree)?
    };
    if too_small.is_some() {
        return Ok(too_small);
    }
    let _analysis = program.ctx.analysis();
    ruined_strides(problem, tree)
}

/// Why `tree` is worse than the original order for vectorisation and cache lines, if it is:
/// the statements with the most loops have, together, more strided accesses in their
/// innermost loops than in the original ([`strided_accesses`]); tiles and parallel loops do
/// not make up for it (bicg's fused, transposed `q[i] += A[i, j] * p[j]` ran 3x slower than
/// the original). A trade between statements (mvt's two products, each transposed) is kept.
pub fn ruined_strides(problem: &Problem, tree: &Tree) -> IslResult<Option<KeepOriginal>> {
    let program = problem.program;
    let now = strided_accesses(tree, program)?;
    let before = strided_accesses(&Tree::from_schedule(&program.schedule)?, program)?;
    let (now, before): (usize, usize) = (now.values().sum(), before.values().sum());
    Ok((now > before).then_some(KeepOriginal::StridedAccesses { now, before }))
}

/// Why `tree` cannot beat the original order, if it cannot: it has neither a parallel loop
/// nor a tiled band, so a reordering (a shift, a skew, a fusion) only costs the original's
/// simple loop bounds and access patterns (durbin ran 1.5x slower under Pluto's shifts).
pub fn gains_nothing(tree: &Tree) -> Option<KeepOriginal> {
    (!has_parallel(&tree.root) && !has_tiles(&tree.root)).then_some(KeepOriginal::NothingToGain)
}

/// Why the parallel loops of `tree` cannot pay for their barriers, if they cannot: the
/// outermost band of some path is sequential and encloses parallel loops, and its first
/// member has so many steps that each runs fewer than [`MIN_INSTANCES_PER_STEP`] statement
/// instances. Both are counted at the parameter values the tile-size model assumes (`-D`,
/// else the declared defaults); the instances of a statement are estimated by the volume of
/// the box around its domain. Loops whose parameters have no value are not judged.
pub fn steps_too_small(program: &Program, tree: &Tree) -> IslResult<Option<KeepOriginal>> {
    let params = param_point(program)?;
    let heaviest = heaviest_statements(program);
    for b in outermost_bands(&tree.root) {
        if b.coincident[0] || !(b.coincident.contains(&true) || has_parallel(&b.child)) {
            continue;
        }
        // Only the bands that hold the bulk of the work are judged: ludcmp's forward
        // substitution, a wavefront of small steps, runs a square's worth of instances
        // beside the cube of its tiled LU band.
        let members = b.members[0].domain()?.sets()?;
        if !(members.iter()).any(|s| s.tuple_name().is_some_and(|t| heaviest.contains(&t))) {
            continue;
        }
        let first = at_params(&b.members[0].intersect_domain(&tree.domain)?, &params)?;
        let Some(range) = single_set(&first.range()?)? else {
            continue;
        };
        let (Ok(steps), Ok(instances)) = (
            bounds(&range).map(|b| b[0].1 - b[0].0 + 1),
            first.domain()?.sets()?.iter().try_fold(0i64, |sum, s| {
                let volume: i64 = bounds(s)?.iter().map(|(lo, hi)| hi - lo + 1).product();
                Ok::<i64, IslError>(sum.saturating_add(volume))
            }),
        ) else {
            continue;
        };
        let per_step = instances / steps.max(1);
        if per_step < MIN_INSTANCES_PER_STEP {
            return Ok(Some(KeepOriginal::StepsTooSmall { steps, per_step }));
        }
    }
    Ok(None)
}

/// Whether every statement with the most loops of `program` runs inside a parallel loop of
/// `tree` (on every path that reaches it): then the parallel loops hold the bulk of the
/// work. lu's original order has a parallel loop, but only around its trailing update:
/// the other product, as heavy, stays sequential and untiled there, and the original ran
/// 3x slower than lu's tiled, wavefronted band.
pub fn parallel_covers_heaviest(program: &Program, tree: &Tree) -> IslResult<bool> {
    let mut serial = Vec::new();
    serial_statements(&tree.root, &tree.domain, &mut serial)?;
    Ok(heaviest_statements(program)
        .iter()
        .all(|s| !serial.contains(s)))
}

/// The isl tuples of the statements with the most loops.
fn heaviest_statements(program: &Program) -> Vec<String> {
    let most = program.statements.iter().map(|s| s.iterators.len()).max();
    (program.statements.iter())
        .filter(|s| Some(s.iterators.len()) == most)
        .map(|s| s.tuple.clone())
        .collect()
}

/// The names of the statements of `domain` that reach a leaf of `node` outside every
/// parallel band member.
fn serial_statements(node: &Node, domain: &UnionSet, out: &mut Vec<String>) -> IslResult<()> {
    match node {
        Node::Band(b) if b.coincident.contains(&true) => Ok(()),
        Node::Leaf => {
            for set in domain.sets()? {
                out.extend(set.tuple_name());
            }
            Ok(())
        }
        n => n.children().into_iter().try_for_each(|(filter, child)| {
            let below = match filter {
                Some(f) => domain.intersect(f)?,
                None => domain.clone(),
            };
            serial_statements(child, &below, out)
        }),
    }
}

/// The bands of `node` that no band encloses.
fn outermost_bands(node: &Node) -> Vec<&BandNode> {
    match node {
        Node::Band(b) => vec![b],
        n => n
            .children()
            .into_iter()
            .flat_map(|(_, c)| outermost_bands(c))
            .collect(),
    }
}

/// Whether some band is a tile band.
fn has_tiles(node: &Node) -> bool {
    matches!(node, Node::Band(b) if matches!(b.kind, BandKind::Tile(_)))
        || node.children().iter().any(|(_, c)| has_tiles(c))
}

/// Whether the wavefront would skew a band: the first permutable band of at least two
/// members on some path has no parallel member.
pub fn needs_skew(node: &Node) -> bool {
    match node {
        Node::Band(b) if b.permutable && b.members.len() >= 2 => !b.coincident.contains(&true),
        n => n.children().iter().any(|(_, c)| needs_skew(c)),
    }
}

/// Whether some band member is parallel.
pub fn has_parallel(node: &Node) -> bool {
    matches!(node, Node::Band(b) if b.coincident.contains(&true))
        || node.children().iter().any(|(_, c)| has_parallel(c))
}
