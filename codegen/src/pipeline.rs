//! From a lifted program to the schedule the back end prints: a scheduler, then the
//! transformations of `scheduler::transform` (which also mark the coincident loops, every
//! dependence included, so that only loops free of reductions become OpenMP loops), then
//! register tiling ([`crate::register_tile`]) where it is legal.

use crate::register_tile::register_tile;
use crate::CodegenError;
use poly::deps::Dependences;
use poly::isl::{IslResult, Schedule};
use poly::model::Program;
use scheduler::transform::analysis::{annotate, violation};
use scheduler::transform::reorder::strided_accesses;
use scheduler::transform::tile_size::{at_params, bounds, param_point, single_set};
use scheduler::transform::{BandKind, BandNode, Node, Staged, TransformOptions, Tree};
use scheduler::{Options, Problem, Scheduler};

/// A schedule ready for code generation, with what the transformations did.
pub struct Scheduled {
    /// The schedule tree.
    pub schedule: Schedule,
    /// One line per transformation applied or refused.
    pub notes: Vec<String>,
}

/// Schedules `program` with `scheduler`, applies `transforms`, then register-tiles with
/// their register block (`None`: no register tiling).
pub fn schedule(
    program: &Program,
    deps: &Dependences,
    scheduler: &dyn Scheduler,
    options: Options,
    transforms: &TransformOptions,
) -> Result<Scheduled, CodegenError> {
    let problem = Problem {
        program,
        deps,
        options,
    };
    let schedule = scheduler
        .schedule(&problem)
        .map_err(|e| CodegenError::Schedule(e.to_string()))?;
    let mut original = Original {
        problem: &problem,
        transforms,
        merged: None,
    };
    let mut optimized = avoid_skewing(&problem, &schedule, transforms, &mut original)?.finish()?;
    if transforms.parallel {
        // A profitability check: if isl fails on it, the schedule stays. The original order
        // is kept as written, with its parallel loops (and no tiles, which it did not need).
        program.ctx.reset_budget();
        let verdict = match gains_nothing(&optimized.tree) {
            Some(why) => Ok(Some(why)),
            None => match steps_too_small(program, &optimized.tree) {
                Ok(None) => {
                    program.ctx.reset_budget();
                    ruined_strides(&problem, &optimized.tree)
                }
                found => found,
            },
        };
        program.ctx.reset_budget();
        match verdict {
            Ok(Some(why)) => match original.merged().and_then(|o| Ok(o.clone().finish()?)) {
                Ok(mut original) => {
                    original
                        .notes
                        .push(format!("schedule refused, original order kept: {why}"));
                    optimized = original;
                }
                Err(e) => {
                    program.ctx.reset_budget();
                    optimized
                        .notes
                        .push(format!("original order refused ({e}), although {why}"));
                }
            },
            Ok(None) => {}
            Err(e) => optimized.notes.push(format!("stride check refused: {e}")),
        }
    }
    let mut tree = optimized.tree;
    let mut notes = optimized.notes;
    let deps = optimized.deps;
    if let Some(block) = transforms.register {
        // Register tiling is an optimisation: if isl fails on it, the kernel goes without.
        let checked = (|| -> IslResult<(Tree, Option<String>)> {
            let mut blocked = register_tile(&tree, program, block)?;
            annotate(&mut blocked, &deps)?;
            let why = violation(&blocked, &deps.validity)?;
            Ok((blocked, why))
        })();
        match checked {
            Ok((blocked, None)) => {
                notes.push("register tiling: applied".into());
                tree = blocked;
            }
            Ok((_, Some(why))) => notes.push(format!("register tiling refused: {why}")),
            Err(e) => {
                program.ctx.reset_budget();
                notes.push(format!("register tiling refused: {e}"));
            }
        }
    }
    Ok(Scheduled {
        schedule: tree.to_schedule()?,
        notes,
    })
}

/// `schedule` fused, merged and tiled, or the original loop order instead when the
/// wavefront would have to skew `schedule` to find parallelism (a permutable band has no
/// parallel member) while the original order has a parallel loop: a skewed wavefront forks
/// and joins threads at every step of a sequential outer loop and loses the original's
/// contiguous inner loops (jacobi-2d ran 3x slower than the original that way), whereas
/// the original's parallel loops need neither.
fn avoid_skewing<'a>(
    problem: &'a Problem<'a>,
    schedule: &Schedule,
    transforms: &'a TransformOptions,
    original: &mut Original<'a>,
) -> Result<Staged<'a>, CodegenError> {
    let mut staged = Staged::merged(problem, schedule, transforms)?;
    staged.tile()?;
    if !transforms.parallel || !needs_skew(&staged.tree().root) {
        return Ok(staged);
    }
    let mut identity = original.merged()?.clone();
    identity.tile()?;
    Ok(if has_parallel(&identity.tree().root) {
        identity
    } else {
        staged
    })
}

/// The original loop order, fused and merged as the schedule is, analysed at most once
/// (both the skewing and the profitability checks may fall back on it).
struct Original<'a> {
    problem: &'a Problem<'a>,
    transforms: &'a TransformOptions,
    merged: Option<Staged<'a>>,
}

impl<'a> Original<'a> {
    fn merged(&mut self) -> Result<&Staged<'a>, CodegenError> {
        let merged = match self.merged.take() {
            Some(merged) => merged,
            None => Staged::merged(
                self.problem,
                &original_order(self.problem)?,
                self.transforms,
            )?,
        };
        Ok(self.merged.insert(merged))
    }
}

/// The original loop order (the identity scheduler's schedule).
fn original_order(problem: &Problem) -> Result<Schedule, CodegenError> {
    scheduler::registry::scheduler_named("identity")
        .ok_or_else(|| CodegenError::Internal("no identity scheduler".into()))?
        .schedule(problem)
        .map_err(|e| CodegenError::Schedule(e.to_string()))
}

/// Why `tree` is worse than the original order for vectorisation and cache lines, if it is:
/// the statements with the most loops have, together, more strided accesses in their
/// innermost loops than in the original ([`strided_accesses`]); tiles and parallel loops do
/// not make up for it (bicg's fused, transposed `q[i] += A[i, j] * p[j]` ran 3x slower than
/// the original). A trade between statements (mvt's two products, each transposed) is kept.
fn ruined_strides(problem: &Problem, tree: &Tree) -> IslResult<Option<String>> {
    let program = problem.program;
    let now = strided_accesses(tree, program)?;
    let before = strided_accesses(&Tree::from_schedule(&program.schedule)?, program)?;
    let (n, b): (usize, usize) = (now.values().sum(), before.values().sum());
    Ok((n > b).then(|| {
        format!("{n} strided access(es) in the innermost loops of the heaviest statements, not {b}")
    }))
}

/// Why `tree` cannot beat the original order, if it cannot: it has neither a parallel loop
/// nor a tiled band, so a reordering (a shift, a skew, a fusion) only costs the original's
/// simple loop bounds and access patterns (durbin ran 1.5x slower under Pluto's shifts).
fn gains_nothing(tree: &Tree) -> Option<String> {
    (!has_parallel(&tree.root) && !has_tiles(&tree.root))
        .then(|| "no parallel loop and no tiled band to gain".to_string())
}

/// Fewer statement instances than this per step of a sequential loop around parallel loops
/// do not pay for the barrier that ends each step: the wavefront of trisolv's 128 x 128
/// tiles at N = 2000 has 31 steps of about 129,000 instances by the estimate below (half
/// that in fact) and ran up to 2.5x slower than the original order on 2 threads. Of the 30
/// PolyBench kernels only trisolv's, atax's and jacobi-1d's schedules fall under it (their
/// notes say so: `polyc compile K.pk --tile= --parallel`); the stencils' time steps and the
/// pivots of lu and cholesky keep theirs.
const MIN_INSTANCES_PER_STEP: i64 = 1 << 18;

/// Why the parallel loops of `tree` cannot pay for their barriers, if they cannot: the
/// outermost band of some path is sequential and encloses parallel loops, and its first
/// member has so many steps that each runs fewer than [`MIN_INSTANCES_PER_STEP`] statement
/// instances. Both are counted at the parameter values the tile-size model assumes (`-D`,
/// else the declared defaults); the instances of a statement are estimated by the volume of
/// the box around its domain. Loops whose parameters have no value are not judged.
fn steps_too_small(program: &Program, tree: &Tree) -> IslResult<Option<String>> {
    let params = param_point(program)?;
    for b in outermost_bands(&tree.root) {
        if b.coincident[0] || !(b.coincident.contains(&true) || has_parallel(&b.child)) {
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
                Ok::<i64, poly::isl::IslError>(sum.saturating_add(volume))
            }),
        ) else {
            continue;
        };
        let per_step = instances / steps.max(1);
        if per_step < MIN_INSTANCES_PER_STEP {
            return Ok(Some(format!(
                "a sequential loop of {steps} steps around parallel loops runs about \
                 {per_step} instances a step, too few to pay for a barrier"
            )));
        }
    }
    Ok(None)
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
fn needs_skew(node: &Node) -> bool {
    match node {
        Node::Band(b) if b.permutable && b.members.len() >= 2 => !b.coincident.contains(&true),
        n => n.children().iter().any(|(_, c)| needs_skew(c)),
    }
}

/// Whether some band member is parallel.
fn has_parallel(node: &Node) -> bool {
    matches!(node, Node::Band(b) if b.coincident.contains(&true))
        || node.children().iter().any(|(_, c)| has_parallel(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use poly::isl::Ctx;
    use std::collections::BTreeMap;

    /// The notes of the default pipeline (Pluto, tiles, parallel) on `examples/NAME.pk`.
    fn notes(name: &str) -> Vec<String> {
        let path = format!("{}/../examples/{name}.pk", env!("CARGO_MANIFEST_DIR"));
        let kernels = frontend::compile(&frontend::read_source(&path).unwrap()).unwrap();
        let program = Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap();
        let deps = Dependences::compute(&program).unwrap();
        let pluto = scheduler::registry::scheduler_named("pluto").unwrap();
        let transforms = TransformOptions {
            tile: Some(Vec::new()),
            parallel: true,
            ..TransformOptions::default()
        };
        let options = Options::default();
        schedule(&program, &deps, pluto.as_ref(), options, &transforms)
            .unwrap()
            .notes
    }

    #[test]
    fn a_schedule_that_walks_columns_the_original_walks_in_rows_is_refused() {
        let kept = |n: &Vec<String>| n.iter().any(|n| n.contains("original order kept"));
        // bicg: Pluto fuses `q[i] += A[i, j] * p[j]` transposed, down the columns of `A`.
        assert!(kept(&notes("bicg")), "{:?}", notes("bicg"));
        // gemm: Pluto's order makes `B[k, j]` contiguous where the original strides it.
        assert!(!kept(&notes("gemm")), "{:?}", notes("gemm"));
    }

    #[test]
    fn a_schedule_with_nothing_to_gain_is_refused() {
        // durbin: Pluto shifts and skews, with neither a parallel loop nor a tile.
        let notes = notes("polybench/durbin");
        assert!(
            notes
                .iter()
                .any(|n| n.contains("no parallel loop and no tiled band")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_wavefront_of_steps_too_small_for_a_barrier_is_refused() {
        let too_small = |n: &Vec<String>| n.iter().any(|n| n.contains("to pay for a barrier"));
        // trisolv at N = 2000: 31 wavefront steps of about 129,000 instances (box estimate).
        assert!(
            too_small(&notes("polybench/trisolv")),
            "{:?}",
            notes("polybench/trisolv")
        );
        // jacobi-2d's time steps (1,300 x 1,300 points each) pay for theirs.
        assert!(
            !too_small(&notes("polybench/jacobi-2d")),
            "{:?}",
            notes("polybench/jacobi-2d")
        );
    }
}
