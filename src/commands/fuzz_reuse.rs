//! What `polyc fuzz-schedules` computes once per program and reuses across its settings:
//! a scheduler's schedule per distinct scheduling options ([`Reused`]), and the verdict on
//! each distinct generated C text ([`CVerdicts`]). Neither weakens a check: a scheduler is
//! a function of the problem, and a C text compiled and run on the same inputs gives the
//! same outputs; every setting's tree still goes through the optimizer, its legality check
//! and the interpreter.

use poly::isl::Schedule;
use scheduler::{IslDecline, Problem, ScheduleError, Scheduler, SchedulerNote};
use std::cell::RefCell;
use std::collections::HashMap;

/// What a scheduler answered for one set of options, kept.
#[derive(Clone)]
enum Kept {
    /// The schedule and the scheduler's notes.
    Schedule(Schedule, Vec<SchedulerNote>),
    /// isl's scheduler declined.
    Declined(IslDecline),
}

/// A scheduler whose answer for a problem is computed once per distinct scheduling options
/// (the settings that only tile, mark parallel loops or register-tile differently share
/// it); other failures are not kept, so each setting reports its own. For one program
/// only: the cache does not look at the program.
pub struct Reused<'a> {
    inner: &'a dyn Scheduler,
    kept: RefCell<HashMap<String, Kept>>,
}

impl<'a> Reused<'a> {
    /// `inner`, with nothing kept yet.
    pub fn new(inner: &'a dyn Scheduler) -> Reused<'a> {
        Reused {
            inner,
            kept: RefCell::new(HashMap::new()),
        }
    }
}

impl Scheduler for Reused<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
        Ok(self.schedule_noted(problem)?.0)
    }

    fn is_chosen(&self) -> bool {
        self.inner.is_chosen()
    }

    fn schedule_noted(
        &self,
        problem: &Problem,
    ) -> Result<(Schedule, Vec<SchedulerNote>), ScheduleError> {
        // The options' every field, as text: two settings share a schedule only when all
        // agree.
        let key = format!("{:?}", problem.options);
        let known = self.kept.borrow().get(&key).cloned();
        let kept = match known {
            Some(kept) => kept,
            None => {
                let kept = match self.inner.schedule_noted(problem) {
                    Ok((schedule, notes)) => Kept::Schedule(schedule, notes),
                    Err(ScheduleError::IslDeclined(why)) => Kept::Declined(why),
                    Err(other) => return Err(other),
                };
                self.kept.borrow_mut().insert(key, kept.clone());
                kept
            }
        };
        match kept {
            Kept::Schedule(schedule, notes) => Ok((schedule, notes)),
            Kept::Declined(why) => Err(ScheduleError::IslDeclined(why)),
        }
    }
}

/// The verdict on each generated C text of one program (built, run on the program's inputs
/// and compared with the interpreter's outputs): schedules of several schedulers and
/// settings often print the same loops, which are then built and run once.
/// A verdict's error is an `E`.
pub struct CVerdicts<E>(HashMap<String, Result<(), E>>);

impl<E> Default for CVerdicts<E> {
    fn default() -> Self {
        CVerdicts(HashMap::new())
    }
}

impl<E: Clone> CVerdicts<E> {
    /// The verdict on `code`, from `check` the first time it is asked for.
    pub fn of(&mut self, code: String, check: impl FnOnce(&str) -> Result<(), E>) -> Result<(), E> {
        if let Some(known) = self.0.get(&code) {
            return known.clone();
        }
        let verdict = check(&code);
        self.0.insert(code, verdict.clone());
        verdict
    }

    /// How many distinct texts were built and run.
    pub fn built(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poly::deps::Dependences;
    use poly::isl::Ctx;
    use poly::model::Program;
    use scheduler::baseline::Identity;
    use scheduler::{FusePolicy, Options};
    use std::cell::Cell;
    use std::collections::BTreeMap;

    /// The original order, counting how often it is asked for.
    struct Counted<'a>(&'a Cell<usize>);

    impl Scheduler for Counted<'_> {
        fn name(&self) -> &'static str {
            "counted"
        }
        fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
            self.0.set(self.0.get() + 1);
            Identity.schedule(problem)
        }
    }

    #[test]
    fn a_scheduler_runs_once_per_distinct_options() {
        let file = frontend::SourceFile::new(
            "t.pk",
            "kernel t(A: inout f64[N]) params N = 8 { for i in 1..N { A[i] += A[i - 1]; } }",
        );
        let kernel = frontend::compile(&file).unwrap().remove(0);
        let program = Program::build(&Ctx::default(), &kernel, &BTreeMap::new()).unwrap();
        let deps = Dependences::compute(&program).unwrap();
        let problem = |fuse| Problem {
            program: &program,
            deps: &deps,
            options: Options {
                fuse,
                ..Options::default()
            },
        };
        let calls = Cell::new(0);
        let counted = Counted(&calls);
        let reused = Reused::new(&counted);
        for fuse in [
            FusePolicy::Smart,
            FusePolicy::Smart,
            FusePolicy::Max,
            FusePolicy::Smart,
        ] {
            reused.schedule_noted(&problem(fuse)).unwrap();
        }
        assert_eq!(calls.get(), 2);
        assert_eq!(reused.name(), "counted");
    }

    #[test]
    fn each_c_text_is_checked_once() {
        let mut verdicts = CVerdicts::<String>::default();
        let mut checks = 0;
        for code in ["a", "b", "a", "a"] {
            let verdict = verdicts.of(code.to_string(), |c| {
                checks += 1;
                if c == "b" {
                    Err("wrong".into())
                } else {
                    Ok(())
                }
            });
            assert_eq!(verdict.is_err(), code == "b");
        }
        assert_eq!((checks, verdicts.built()), (2, 2));
    }
}
