//! How a schedule of a random program failed, as precisely as a shrunk program must keep
//! it: the shrinker accepts a smaller program only if it fails under the same scheduler and
//! setting with the same [`Fault`], down to the kind of the underlying error (a scheduler's
//! "no legal schedule" is not its isl error, a build failure is not a wrong output).

use poly::isl::IslError;
use scheduler::optimizer::OptimizeError;
use scheduler::ScheduleError;

/// How one schedule of a program failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The scheduler failed, in this way.
    Scheduling(SchedulingFault),
    /// isl failed, or ran out of its operation budget, after scheduling.
    Isl(IslFault),
    /// The optimized schedule was refused by the legality checker.
    Illegal,
    /// The legality check could not be carried out.
    Check,
    /// The interpreter could not run the schedule's order.
    Run,
    /// The schedule's order changed the results.
    Differs,
    /// The generated C failed, in this way.
    GeneratedC(CFault),
    /// The NPU back end failed on the program (an internal error, a program the simulator
    /// stops, or a wrong answer).
    Npu,
}

/// How a scheduler failed ([`ScheduleError`]'s kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulingFault {
    /// isl failed inside the scheduler.
    Isl(IslFault),
    /// The kernel could not be lifted with its parameters symbolic.
    Model,
    /// A plug-in scheduler failed.
    Plugin,
    /// isl's scheduler declined (counted apart, never a failure).
    Declined,
    /// The scheduler found no legal schedule.
    NoSchedule,
}

/// How isl failed ([`IslError`]'s kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IslFault {
    /// The operation budget ran out.
    Budget,
    /// isl reported an error.
    Error,
    /// A value beyond 64 bits.
    TooLarge,
}

/// How a schedule's generated C failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CFault {
    /// The C back end refused or failed.
    Generate,
    /// It did not build (or could not be started).
    Build,
    /// It ran and failed (a fault, a signal, a time-out).
    Run,
    /// Its outputs could not be read.
    Outputs,
    /// Its outputs differ from the interpreter's.
    Differs,
}

impl Fault {
    /// The fault of an optimizer's error.
    pub fn of(e: &OptimizeError) -> Fault {
        match e {
            OptimizeError::Schedule(e) => Fault::Scheduling(SchedulingFault::of(e)),
            OptimizeError::Isl(e) => Fault::Isl(IslFault::of(e)),
            OptimizeError::Illegal(_) => Fault::Illegal,
            OptimizeError::Check(_) => Fault::Check,
        }
    }
}

impl SchedulingFault {
    fn of(e: &ScheduleError) -> SchedulingFault {
        match e {
            ScheduleError::Isl(e) => SchedulingFault::Isl(IslFault::of(e)),
            ScheduleError::Model(_) => SchedulingFault::Model,
            ScheduleError::Plugin { .. } => SchedulingFault::Plugin,
            ScheduleError::IslDeclined(_) => SchedulingFault::Declined,
            ScheduleError::NoSchedule { .. } => SchedulingFault::NoSchedule,
        }
    }
}

impl IslFault {
    fn of(e: &IslError) -> IslFault {
        match e {
            IslError::OperationLimit(_) => IslFault::Budget,
            IslError::Isl(_) => IslFault::Error,
            IslError::TooLarge(_) => IslFault::TooLarge,
        }
    }
}

/// One failing schedule.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The scheduler's name.
    pub scheduler: String,
    /// The setting's label.
    pub setup: &'static str,
    /// How it failed.
    pub fault: Fault,
    /// The error's text.
    pub detail: String,
}

impl Failure {
    /// Whether `other` is the same failure, up to its text: what a shrunk program keeps.
    pub fn same(&self, other: &Failure) -> bool {
        (self.scheduler == other.scheduler)
            && self.setup == other.setup
            && self.fault == other.fault
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {}: {}", self.scheduler, self.setup, self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_differ_by_the_kind_of_their_error() {
        let failure = |fault| Failure {
            scheduler: "pluto".into(),
            setup: "tiled",
            fault,
            detail: String::new(),
        };
        let budget = failure(Fault::Scheduling(SchedulingFault::Isl(IslFault::Budget)));
        let none = failure(Fault::Scheduling(SchedulingFault::NoSchedule));
        assert!(budget.same(&budget.clone()));
        assert!(!budget.same(&none));
        let build = failure(Fault::GeneratedC(CFault::Build));
        assert!(!build.same(&failure(Fault::GeneratedC(CFault::Differs))));
        assert_eq!(
            Fault::of(&OptimizeError::Isl(IslError::OperationLimit(1))),
            Fault::Isl(IslFault::Budget)
        );
    }
}
