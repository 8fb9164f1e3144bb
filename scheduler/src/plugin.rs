//! Schedulers from other crates (plug-ins, [`crate::registry::register`]) as the registry
//! hands them out: wrapped in [`Checked`], so that every schedule a plug-in returns passes
//! the legality checker before anyone sees it, and a failure or a panic inside the plug-in
//! becomes an error that names it ([`ScheduleError::Plugin`] with a [`Fault`]), never a
//! crash of polyc.

use crate::legality::{self, CheckError, Report};
use crate::{Problem, ScheduleError, Scheduler, SchedulerNote};
use poly::isl::Schedule;
use poly::order::AnySchedule;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What went wrong inside a plug-in scheduler.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    /// It panicked (the panic's message).
    #[error("panicked: {0}")]
    Panicked(String),
    /// It returned an error.
    #[error("failed: {0}")]
    Failed(ScheduleError),
    /// Its schedule does not respect the dependences: the checker's report, with a
    /// counterexample for each violation.
    #[error("returned an illegal schedule, refused:\n{0}")]
    Illegal(Report),
    /// Its schedule could not be checked (it does not fit the program).
    #[error("returned a schedule that cannot be checked: {0}")]
    Unchecked(CheckError),
}

/// A plug-in scheduler whose schedules are checked and whose panics are caught.
pub struct Checked(pub Box<dyn Scheduler>);

impl Checked {
    fn fault(&self, fault: Fault) -> ScheduleError {
        ScheduleError::Plugin {
            scheduler: self.0.name(),
            fault: Box::new(fault),
        }
    }
}

impl Scheduler for Checked {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
        Ok(self.schedule_noted(problem)?.0)
    }

    fn is_chosen(&self) -> bool {
        self.0.is_chosen()
    }

    fn schedule_noted(
        &self,
        problem: &Problem,
    ) -> Result<(Schedule, Vec<SchedulerNote>), ScheduleError> {
        let (schedule, notes) =
            match catch_unwind(AssertUnwindSafe(|| self.0.schedule_noted(problem))) {
                Ok(Ok(done)) => done,
                Ok(Err(e)) => return Err(self.fault(Fault::Failed(e))),
                Err(panic) => return Err(self.fault(Fault::Panicked(message(panic.as_ref())))),
            };
        let tree = AnySchedule::Tree(schedule.clone());
        let report = legality::check(problem.program, problem.deps, &tree, &problem.options)
            .map_err(|e| self.fault(Fault::Unchecked(e)))?;
        if !report.is_legal() {
            return Err(self.fault(Fault::Illegal(report)));
        }
        Ok((schedule, notes))
    }
}

/// The message a panic was raised with (`panic!("...")` gives a `&str` or a `String`).
fn message(panic: &(dyn Any + Send)) -> String {
    (panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affine::{AffineSchedule, Row, RowKind, StmtRow};
    use crate::ilp::LinExpr;
    use crate::pluto::{Heuristic, Pluto, RowIlp};
    use crate::registry::{register, scheduler_named, RegisterError};
    use crate::test_support::program;
    use crate::Options;
    use poly::deps::Dependences;

    /// A plug-in that runs every instance at the same time.
    struct AllAtOnce;

    impl Scheduler for AllAtOnce {
        fn name(&self) -> &'static str {
            "test-all-at-once"
        }
        fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
            let program = problem.program;
            let n_params = program.kernel.params.len();
            let stmts = (program.statements.iter())
                .map(|s| StmtRow::zero(s.iterators.len(), n_params))
                .collect();
            let rows = vec![Row {
                kind: RowKind::Scalar,
                stmts,
            }];
            let affine = AffineSchedule {
                rows,
                bands: Vec::new(),
            };
            Ok(affine.to_tree(program)?)
        }
    }

    /// A heuristic with a bug.
    struct Broken;

    impl Heuristic for Broken {
        fn name(&self) -> &'static str {
            "test-broken"
        }
        fn hyperplane(&self, _: &mut RowIlp<'_>) -> Result<Vec<LinExpr>, ScheduleError> {
            panic!("index out of bounds in the test heuristic")
        }
    }

    /// A heuristic whose integer programs have no solution.
    struct Infeasible;

    impl Heuristic for Infeasible {
        fn name(&self) -> &'static str {
            "test-infeasible"
        }
        fn hyperplane(&self, ilp: &mut RowIlp<'_>) -> Result<Vec<LinExpr>, ScheduleError> {
            ilp.constrain(LinExpr::constant(-1).ge0());
            Ok(Vec::new())
        }
    }

    /// The fault of the plug-in `factory` registers (the registry is the process's: each
    /// test registers its own names) on gemm.
    fn fault_of(factory: crate::registry::Factory) -> Fault {
        let name = factory().name();
        register(factory).unwrap();
        let plugin = scheduler_named(name).expect("registered plug-ins are listed");
        let gemm = program("polybench/gemm.pk");
        let deps = Dependences::compute(&gemm).unwrap();
        let problem = Problem {
            program: &gemm,
            deps: &deps,
            options: Options::default(),
        };
        match plugin.schedule(&problem) {
            Err(ScheduleError::Plugin { scheduler, fault }) => {
                assert_eq!(scheduler, name);
                *fault.downcast::<Fault>().expect("a plug-in's fault")
            }
            other => panic!("expected the plug-in's fault, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn an_illegal_schedule_is_refused_with_the_checkers_report() {
        let Fault::Illegal(report) = fault_of(|| Box::new(AllAtOnce)) else {
            panic!("not refused as illegal");
        };
        assert!(!report.is_legal());
    }

    #[test]
    fn a_panicking_heuristic_is_an_error_naming_it() {
        let fault = fault_of(|| Box::new(Pluto::with_heuristic(Broken)));
        let Fault::Panicked(message) = &fault else {
            panic!("not a caught panic: {fault}");
        };
        assert_eq!(message, "index out of bounds in the test heuristic");
    }

    #[test]
    fn a_heuristic_without_solutions_fails_with_an_error() {
        let fault = fault_of(|| Box::new(Pluto::with_heuristic(Infeasible)));
        let Fault::Failed(ScheduleError::NoSchedule { scheduler, .. }) = fault else {
            panic!("not a failure to schedule: {fault}");
        };
        assert_eq!(scheduler, "test-infeasible");
    }

    #[test]
    fn a_plugin_needs_a_new_name_usable_on_the_command_line() {
        assert_eq!(
            register(|| Box::new(Pluto::default())),
            Err(RegisterError::NameTaken("pluto"))
        );
        struct Spaced;
        impl Scheduler for Spaced {
            fn name(&self) -> &'static str {
                "a, b"
            }
            fn schedule(&self, _: &Problem) -> Result<Schedule, ScheduleError> {
                unreachable!("never registered")
            }
        }
        assert_eq!(
            register(|| Box::new(Spaced)),
            Err(RegisterError::BadName("a, b"))
        );
    }
}
