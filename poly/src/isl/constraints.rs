//! isl's own scheduler (`isl_schedule_constraints_compute_schedule`).

use super::{IslResult, Obj, Schedule, Set, UnionMap, UnionSet};
use isl_rs::ScheduleConstraints;

/// What isl's scheduler is asked to respect and to optimise.
pub struct Constraints<'a> {
    /// The instances to schedule.
    pub domain: &'a UnionSet,
    /// The parameter values to schedule for.
    pub context: &'a Set,
    /// Pairs that must run source first.
    pub validity: &'a UnionMap,
    /// Pairs whose distance isl minimises.
    pub proximity: &'a UnionMap,
    /// Pairs that parallel (coincident) band members must not separate.
    pub coincidence: &'a UnionMap,
}

impl Constraints<'_> {
    /// isl's schedule for these constraints.
    pub fn compute_schedule(&self) -> IslResult<Schedule> {
        let ctx = self.domain.ctx();
        let sc = ctx.check(ScheduleConstraints::on_domain(self.domain.to_raw()))?;
        let sc = ctx.check(sc.set_context(self.context.to_raw()))?;
        let sc = ctx.check(sc.set_validity(self.validity.to_raw()))?;
        let sc = ctx.check(sc.set_proximity(self.proximity.to_raw()))?;
        let sc = ctx.check(sc.set_coincidence(self.coincidence.to_raw()))?;
        Ok(Obj::from_raw(ctx, ctx.check(sc.compute_schedule())?))
    }
}
