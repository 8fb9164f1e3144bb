//! The two baselines every heuristic is compared with: the program's own order, and isl's
//! scheduler.

use crate::{Problem, ScheduleError, Scheduler};
use isl_rs::ScheduleConstraints;
use poly::isl::{Obj, Schedule};

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
        let ctx = &program.ctx;
        ctx.reset_budget();
        // The same pairs, split by the access pair through which they conflict: isl's
        // scheduler takes the Farkas dual of every basic relation, and the coalesced
        // octahedra of a 7-point stencil made that take 15 s on heat-3d.
        let validity = problem.validity()?.intersect(&problem.conflicts()?)?;
        let domains = program.domains()?;
        let sc = ctx.check(ScheduleConstraints::on_domain(domains.to_raw()))?;
        let sc = ctx.check(sc.set_context(program.context.to_raw()))?;
        let sc = ctx.check(sc.set_validity(validity.to_raw()))?;
        let sc = ctx.check(sc.set_proximity(validity.to_raw()))?;
        let sc = ctx.check(sc.set_coincidence(validity.to_raw()))?;
        let schedule = ctx.check(sc.compute_schedule())?;
        Ok(Obj::from_raw(ctx, schedule))
    }
}
