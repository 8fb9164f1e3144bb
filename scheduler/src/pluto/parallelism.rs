//! How much a schedule offers, as the `smart` fusion policy weighs it: parallel loops and
//! band depth, counted on its tree with the parallel marks the optimizer computes.

use crate::affine::AffineSchedule;
use crate::problem::{Problem, ScheduleError};
use crate::transform::analysis::{annotate, parallel_loops, TreeDeps};
use crate::transform::{summary, Tree};

/// A schedule's parallel loops and deepest band.
pub struct Weight {
    /// Parallel loops ([`parallel_loops`]).
    pub parallel: usize,
    /// Members of the deepest band.
    pub deepest: usize,
}

impl Weight {
    /// The weight of `schedule` for `problem` (marks from every dependence, reductions
    /// included, as [`annotate`] computes them).
    pub fn of(problem: &Problem<'_>, schedule: &AffineSchedule) -> Result<Weight, ScheduleError> {
        let mut tree = Tree::from_schedule(&schedule.to_tree(problem.program)?)?;
        annotate(&mut tree, &TreeDeps::of(problem)?)?;
        let bands = summary::bands(&tree);
        Ok(Weight {
            parallel: parallel_loops(&tree, 0)?,
            deepest: bands.iter().map(|b| b.members).max().unwrap_or(0),
        })
    }
}
