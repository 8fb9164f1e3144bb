//! From a lifted program to the schedule the back end prints: a scheduler, then the
//! transformations of `scheduler::transform` (which also mark the coincident loops, every
//! dependence included, so that only loops free of reductions become OpenMP loops).

use crate::CodegenError;
use poly::deps::Dependences;
use poly::isl::Schedule;
use poly::model::Program;
use scheduler::transform::{optimize, TransformOptions};
use scheduler::{Options, Problem, Scheduler};

/// A schedule ready for code generation, with what the transformations did.
pub struct Scheduled {
    /// The schedule tree.
    pub schedule: Schedule,
    /// One line per transformation applied or refused.
    pub notes: Vec<String>,
}

/// Schedules `program` with `scheduler` and applies `transforms`.
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
    let optimized = optimize(&problem, &schedule, transforms)?;
    Ok(Scheduled {
        schedule: optimized.tree.to_schedule()?,
        notes: optimized.notes,
    })
}
