//! The two baselines every heuristic is compared with: the program's own order, and isl's
//! scheduler.

use crate::{Problem, ScheduleError, Scheduler};
use poly::isl::{Constraints, Schedule};

/// The original (textual) execution order, unchanged.
pub struct Identity;

impl Scheduler for Identity {
    fn name(&self) -> &'static str {
        "identity"
    }
    fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
        Ok(problem.program.schedule.clone())
    }
}

/// isl's own scheduler (`isl_schedule_constraints_compute_schedule`), with every validity
/// dependence also used as proximity and coincidence constraint.
pub struct Isl;

impl Scheduler for Isl {
    fn name(&self) -> &'static str {
        "isl"
    }
    fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
        let program = problem.program;
        let _analysis = program.ctx.analysis();
        // The same pairs, split by the access pair through which they conflict: isl's
        // scheduler takes the Farkas dual of every basic relation, and the coalesced
        // octahedra of a 7-point stencil made that take 15 s on heat-3d.
        let validity = problem.validity()?.intersect(&problem.conflicts()?)?;
        let domains = program.domains()?;
        let constraints = Constraints {
            domain: &domains,
            context: &program.context,
            validity: &validity,
            proximity: &validity,
            coincidence: &validity,
        };
        Ok(constraints.compute_schedule()?)
    }
}
