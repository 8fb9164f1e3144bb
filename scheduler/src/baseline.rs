//! The two baselines every heuristic is compared with: the program's own order, and isl's
//! scheduler.

use crate::problem::IslDecline;
use crate::{Problem, ScheduleError, Scheduler};
use poly::isl::{Constraints, IslError, IslResult, Schedule, ISL_ALGORITHM_FACTOR};
use poly::model::Program;
use poly::order::AnySchedule;

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
/// dependence also used as proximity and coincidence constraint, under isl's scheduler
/// options as [`crate::Options::isl`] sets them.
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
        let options = &problem.options.isl;
        let schedule = {
            let _scheduler = program.ctx.analysis_scaled(ISL_ALGORITHM_FACTOR);
            (program.ctx).with_scheduler_options(options, || constraints.compute_schedule())
        };
        schedule.map_err(|e| match e {
            IslError::Isl(message) if message.contains(CANNOT_CARRY) => {
                ScheduleError::IslDeclined(IslDecline::CannotCarry)
            }
            IslError::OperationLimit(n) => ScheduleError::IslDeclined(IslDecline::OutOfBudget(n)),
            other => other.into(),
        })
    }
}

/// The message with which isl's scheduler gives up ([`IslDecline::CannotCarry`]; isl
/// reports its errors as text only).
const CANNOT_CARRY: &str = "unable to carry dependences";

/// A schedule the user wrote, as a scheduler: the optimizer transforms and checks it like any
/// other scheduler's (the caller checks it against the dependences first, to explain a
/// violation with the checker's report).
pub struct Given {
    schedule: Schedule,
}

impl Given {
    /// `schedule` for `program`: a tree as it is, a flat relation as a one-band tree over the
    /// program's instances (its time vectors padded to one length).
    pub fn new(program: &Program, schedule: &AnySchedule) -> Result<Given, ScheduleError> {
        let tree = match schedule {
            AnySchedule::Tree(t) => t.clone(),
            AnySchedule::Relation(_) => {
                let time = schedule
                    .time_relation(program)
                    .map_err(|e| ScheduleError::Isl(poly::isl::IslError::Isl(e.to_string())))?;
                band_tree(program, &time)?
            }
        };
        Ok(Given { schedule: tree })
    }
}

/// The tree with one band, `time`, over the program's instances.
fn band_tree(program: &Program, time: &poly::isl::UnionMap) -> IslResult<Schedule> {
    Schedule::from_domain(&program.domains()?)?
        .root()?
        .child(0)?
        .insert_band(time)?
        .schedule()
}

impl Scheduler for Given {
    fn name(&self) -> &'static str {
        "given"
    }
    fn schedule(&self, _problem: &Problem) -> Result<Schedule, ScheduleError> {
        Ok(self.schedule.clone())
    }
    fn is_chosen(&self) -> bool {
        true
    }
}
