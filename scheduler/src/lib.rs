//! polyc's schedulers and what is done to and with schedules.
//!
//! A [`Scheduler`] turns a [`Problem`] (a program, its dependences, the user's options) into
//! an isl schedule tree. Every scheduler here produces an [`AffineSchedule`] (one affine
//! function per statement and schedule dimension, grouped into bands) and lets
//! [`AffineSchedule::to_tree`] build the tree, so that a new heuristic is only its search.
//! Transformations (tiling, wavefront, parallel marking) work on trees; [`legality`] checks
//! any tree against the dependences and explains a violation.

#![warn(missing_docs)]

pub mod affine;
pub mod baseline;
pub mod compare;
pub mod ddg;
pub mod expand;
pub mod farkas;
pub mod feautrier;
pub mod ilp;
pub mod legality;
pub mod mapping;
pub mod optimizer;
pub mod original;
pub mod plugin;
pub mod pluto;
pub mod problem;
pub mod registry;
pub mod scheduler_note;
pub mod target;
#[cfg(test)]
mod test_support;
pub mod transform;

pub use affine::{AffineSchedule, Band, Row, RowKind};
pub use problem::{FusePolicy, IslDecline, Options, Problem, ScheduleError, Symbolic};
pub use scheduler_note::SchedulerNote;

use poly::isl::Schedule;

/// A scheduling algorithm.
pub trait Scheduler {
    /// The name users select it by (`--scheduler NAME`).
    fn name(&self) -> &'static str;
    /// Computes a schedule tree for the problem. It must respect every dependence in
    /// `problem.validity()`; the caller checks it with [`legality`].
    fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError>;
    /// Whether its schedule was chosen by the user: the optimizer then never trades it for
    /// the original order on cost grounds (it still tiles, fuses and marks parallel loops
    /// only as asked).
    fn is_chosen(&self) -> bool {
        false
    }
    /// [`Scheduler::schedule`] with what the search reports (by default nothing).
    fn schedule_noted(
        &self,
        problem: &Problem,
    ) -> Result<(Schedule, Vec<SchedulerNote>), ScheduleError> {
        Ok((self.schedule(problem)?, Vec::new()))
    }
}
