//! The optimizer: one entry point from a kernel's scheduling problem to the final schedule
//! tree, with every decision on it, for any back end.
//!
//! [`optimize`] runs a [`Scheduler`], then the transformations of [`crate::transform`]
//! (fusion policy, band merging, tiling sized for the target, wavefront, intra-tile
//! reordering; each step checked and refused when illegal), the cost decisions of [`cost`]
//! (keep the original order when the new one must skew for parallelism, gains nothing,
//! makes inner loops strided, or has steps too small to pay for their barriers), and
//! register tiling of innermost reduction bands. A schedule the user chose
//! ([`Scheduler::is_chosen`]) is never traded for the original order by the cost decisions. The parallel marks on the result count
//! every dependence, reductions included, so that only loops free of reductions become
//! parallel loops.
//!
//! Invariant: the tree it returns has passed [`legality::check`], the checker with
//! witnesses, against the problem's dependences. A step that should have been refused but
//! was not (a bug, or a [`Pass`] a caller added) makes [`optimize`] fail with
//! [`OptimizeError::Illegal`] and the checker's counterexample: back ends never see an
//! unchecked tree, and they only read the tree, deciding nothing about the schedule.

pub mod cost;
pub mod pass;

pub use pass::Pass;

use crate::legality::tree_order::unordered;
use crate::legality::{self, CheckError, Report};
use crate::transform::analysis::annotate;
use crate::transform::interleave::interleave;
use crate::transform::register_tile::register_tile;
use crate::transform::{Note, Refusal, Staged, Step, TransformOptions, Tree, TreeDeps};
use crate::{Problem, ScheduleError, Scheduler};
use poly::isl::{IslError, IslResult, Schedule};
use poly::order::AnySchedule;

/// A schedule ready for a back end, with what the optimizer did.
pub struct Optimized {
    /// The final schedule tree (legal: see the module invariant).
    pub schedule: Schedule,
    /// The same tree as the transformations see it, with its marks.
    pub tree: Tree,
    /// What each step did or why it was refused.
    pub notes: Vec<Note>,
}

/// Why no schedule could be produced.
#[derive(Debug, thiserror::Error)]
pub enum OptimizeError {
    /// The scheduler failed.
    #[error("scheduling failed: {0}")]
    Schedule(#[from] ScheduleError),
    /// isl failed (including running out of its operation budget).
    #[error(transparent)]
    Isl(#[from] IslError),
    /// The final tree does not respect the dependences: the legality checker's report, with
    /// a counterexample for each violation.
    #[error("the optimized schedule is illegal, refused:\n{0}")]
    Illegal(Report),
    /// The legality check of the final tree could not be carried out.
    #[error("checking the optimized schedule failed: {0}")]
    Check(#[from] CheckError),
}

/// Schedules `problem` with `scheduler`, applies `transforms` and the cost decisions, then
/// the `passes` (in order, unchecked until the final check), and checks the result (see the
/// module documentation).
pub fn optimize(
    problem: &Problem,
    scheduler: &dyn Scheduler,
    transforms: &TransformOptions,
    passes: &[&dyn Pass],
) -> Result<Optimized, OptimizeError> {
    let program = problem.program;
    let (schedule, scheduler_notes) = scheduler.schedule_noted(problem)?;
    let mut original = Original {
        problem,
        transforms,
        merged: None,
    };
    let chosen = scheduler.is_chosen();
    let mut optimized = if chosen {
        let mut staged = Staged::merged(problem, &schedule, transforms)?;
        staged.tile()?;
        staged.finish()?
    } else {
        match avoid_skewing(problem, &schedule, transforms, &mut original)? {
            (staged, Choice::Schedule) => staged.finish()?,
            (original, Choice::Original) => original.finish_unskewed()?,
        }
    };
    if transforms.parallel && !chosen {
        // A profitability check: if isl fails on it, the schedule stays. The original order
        // is kept as written, with its parallel loops (and no tiles, which it did not need).
        match cost::worse_than_original(problem, &optimized.tree) {
            Ok(Some(reason)) => match (original.merged()).and_then(|o| o.clone().finish_unskewed())
            {
                Ok(mut original) => {
                    original.notes.push(Note::OriginalKept(reason));
                    optimized = original;
                }
                Err(error) => (optimized.notes).push(Note::OriginalRefused { reason, error }),
            },
            Ok(None) => {}
            Err(e) => optimized.notes.push(Note::ProfitabilityUnknown(e)),
        }
    }
    let mut tree = optimized.tree;
    let mut notes: Vec<Note> = (scheduler_notes.into_iter().map(Note::Scheduler))
        .chain(optimized.notes)
        .collect();
    let deps = optimized.deps;
    if let Some(block) = transforms.register {
        // Register tiling is an optimisation: if isl fails on it, the kernel goes without.
        tree = optional_step(tree, &deps, Step::RegisterTiling, &mut notes, |t| {
            register_tile(t, program, block)
        });
    }
    if transforms.parallel {
        tree = optional_step(tree, &deps, Step::Interleaving, &mut notes, |t| {
            interleave(t, program, &deps.all)
        });
    }
    for pass in passes {
        tree = pass.apply(&tree, program)?;
        annotate(&mut tree, &deps)?;
    }
    let schedule = tree.to_schedule()?;
    let report = legality::check(
        program,
        problem.deps,
        &AnySchedule::Tree(schedule.clone()),
        &problem.options,
    )?;
    if !report.is_legal() {
        return Err(OptimizeError::Illegal(report));
    }
    Ok(Optimized {
        schedule,
        tree,
        notes,
    })
}

/// `schedule` fused, merged and tiled, or the original loop order instead when the
/// wavefront would have to skew `schedule` to find parallelism (a permutable band has no
/// parallel member) while the original order runs its heaviest statements in parallel
/// loops ([`cost::parallel_covers_heaviest`]): a skewed wavefront forks and joins threads
/// at every step of a sequential outer loop and loses the original's contiguous inner
/// loops (jacobi-2d ran 3x slower than the original that way), whereas the original's
/// parallel loops need neither. An original whose parallel loops leave heavy statements
/// sequential (lu) loses to the wavefront of tiles.
fn avoid_skewing<'a>(
    problem: &'a Problem<'a>,
    schedule: &Schedule,
    transforms: &'a TransformOptions,
    original: &mut Original<'a>,
) -> IslResult<(Staged<'a>, Choice)> {
    let mut staged = Staged::merged(problem, schedule, transforms)?;
    staged.tile()?;
    if !transforms.parallel || !cost::needs_skew(&staged.tree().root) {
        return Ok((staged, Choice::Schedule));
    }
    let mut identity = original.merged()?.clone();
    identity.tile()?;
    Ok(
        if cost::parallel_covers_heaviest(problem.program, identity.tree())? {
            (identity, Choice::Original)
        } else {
            (staged, Choice::Schedule)
        },
    )
}

/// Which order [`avoid_skewing`] took: the original one is then finished without the
/// wavefront ([`Staged::finish_unskewed`]), since avoiding the skew is why it was taken.
enum Choice {
    /// The scheduler's schedule.
    Schedule,
    /// The original loop order.
    Original,
}

/// The original loop order (the identity scheduler's), fused and merged as the schedule
/// is, analysed at most once
/// (both the skewing and the profitability checks may fall back on it).
struct Original<'a> {
    problem: &'a Problem<'a>,
    transforms: &'a TransformOptions,
    merged: Option<Staged<'a>>,
}

impl<'a> Original<'a> {
    fn merged(&mut self) -> IslResult<&Staged<'a>> {
        let merged = match self.merged.take() {
            Some(merged) => merged,
            None => Staged::merged(
                self.problem,
                &self.problem.program.schedule,
                self.transforms,
            )?,
        };
        Ok(self.merged.insert(merged))
    }
}

#[cfg(test)]
mod tests;

/// `step(tree)` in place of `tree` when it is legal, with a note saying whether it was
/// applied; an optimisation, so an isl failure or an illegal result leaves `tree` as it is.
fn optional_step(
    tree: Tree,
    deps: &TreeDeps,
    name: Step,
    notes: &mut Vec<Note>,
    step: impl Fn(&Tree) -> IslResult<Tree>,
) -> Tree {
    let checked = (|| -> IslResult<(Tree, Option<_>)> {
        let mut next = step(&tree)?;
        annotate(&mut next, deps)?;
        let wrong = unordered(&next, &deps.validity)?;
        Ok((next, wrong))
    })();
    match checked {
        Ok((next, _)) if next.root.is_same(&tree.root) => tree,
        Ok((next, None)) => {
            notes.push(Note::Applied(name));
            next
        }
        Ok((_, Some(pairs))) => {
            notes.push(Note::Refused(name, Refusal::Illegal(pairs)));
            tree
        }
        Err(e) => {
            notes.push(Note::Refused(name, Refusal::Isl(e)));
            tree
        }
    }
}
