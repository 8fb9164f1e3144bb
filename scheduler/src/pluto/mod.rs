//! A Pluto-style affine scheduler (Bondhugula et al., PLDI 2008).
//!
//! Hyperplanes are found one at a time, each the lexicographic minimum of an integer
//! program over the schedule coefficients of every statement:
//! - validity: for every dependence not yet ordered by an outer band, `phi_T(t) - phi_S(s)
//!   >= 0` on its polyhedron, linearised with Farkas' lemma ([`crate::farkas`]);
//! - independence: a statement that still needs dimensions gets a hyperplane linearly
//!   independent of its earlier ones ([`independence`]);
//! - what the [`Heuristic`] adds: its own unknowns and constraints, and the terms it
//!   minimises (default [`PlutoHeuristic`]: the bounding function's `u`, `w`, then the
//!   coefficients' sum).
//!
//! Iterator coefficients lie in `-bound..=bound` (each the difference of two non-negative
//! parts, so that negative coefficients, e.g. for reversed loops, are allowed while the
//! magnitude can be minimised), shifts are non-negative, parameter coefficients are zero.
//! The bound is [`Pluto::max_coefficient`] unless the user's options set it
//! ([`crate::Options::max_coefficient`]). When a band closes while a statement still needs
//! a hyperplane and one exists within [`Pluto::coefficient_cap`], the bound cut the band
//! short: the search starts again with the bound doubled (up to the cap) and says so with
//! [`SchedulerNote::CoefficientBoundRaised`].
//!
//! Consecutive hyperplanes found against the same dependences form a permutable band; when
//! no further one exists the band ends and the dependence instances its rows order are
//! dropped. When not even a first hyperplane exists, a scalar row separates the strongly
//! connected components of the remaining dependence graph in topological order. Where to
//! cut is the heuristic's choice too ([`Heuristic::fusion_cut`], [`Heuristic::forced_cut`]).
//! See `docs/scheduling.md` ("Pluto") for the fusion policies and "Writing a scheduling
//! heuristic" for the interface.

pub mod analyses;
mod heuristic;
mod hyperplane;
pub mod independence;
mod layout;
mod parallelism;
mod row;
mod search;

pub use heuristic::{bounding_function, Components, Heuristic, PlutoHeuristic};
pub use row::{BandDep, RowIlp, Satisfaction, View};

use crate::affine::AffineSchedule;
use crate::problem::{FusePolicy, Problem, ScheduleError, Symbolic};
use crate::transform::fusion::distribute_for_parallelism;
use crate::transform::merge_bands;
use crate::transform::{Tree, TreeDeps};
use crate::{Scheduler, SchedulerNote};
use poly::isl::Schedule;
use search::{Run, Search, Shared};

/// The Pluto-style scheduler, under a heuristic (Pluto's own by default); its name is the
/// heuristic's.
pub struct Pluto {
    /// What each hyperplane minimises, and where statements are fused and cut.
    pub heuristic: Box<dyn Heuristic>,
    /// Bound on the magnitude of each iterator coefficient, unless the problem's options
    /// set one.
    pub max_coefficient: i64,
    /// The largest bound a retry raises it to (a bound at or above it is never raised).
    pub coefficient_cap: i64,
    /// Bound on the number of statements fused at the outermost level: longer runs of
    /// strongly connected components are cut before the first hyperplane, whatever the
    /// fusion policy. The exact integer programs grow superlinearly with the statements
    /// they span (a fused chain of 50 one-dimensional stencils costs isl seconds, of 100
    /// tens of seconds); a single component larger than this is still solved whole, within
    /// isl's operation budget.
    pub max_fused_statements: usize,
}

impl Default for Pluto {
    fn default() -> Self {
        Pluto {
            heuristic: Box::new(PlutoHeuristic),
            max_coefficient: 4,
            coefficient_cap: 64,
            max_fused_statements: 24,
        }
    }
}

impl Pluto {
    /// Pluto's search under another heuristic.
    pub fn with_heuristic(heuristic: impl Heuristic + 'static) -> Pluto {
        Pluto {
            heuristic: Box::new(heuristic),
            ..Pluto::default()
        }
    }

    /// The affine schedule (rows and bands) for the problem.
    pub fn affine(&self, problem: &Problem<'_>) -> Result<AffineSchedule, ScheduleError> {
        Ok(self.affine_noted(problem)?.0)
    }

    /// The affine schedule for the problem, with what the search reports (the tree
    /// [`Scheduler::schedule_noted`] builds from it further distributes, under `smart`,
    /// inner bands whose statements' own loops have more parallel members:
    /// [`SchedulerNote::InnerBandsDistributed`]).
    ///
    /// Under the `smart` fusion policy the schedule that fuses statements of equal depth is
    /// weighed against the one that distributes every strongly connected component at the
    /// outermost level: the distributed one is taken when it has more parallel loops and
    /// bands at least as deep ([`SchedulerNote::DistributedForParallelism`]).
    pub fn affine_noted(
        &self,
        problem: &Problem<'_>,
    ) -> Result<(AffineSchedule, Vec<SchedulerNote>), ScheduleError> {
        let shared = Shared::new(problem)?;
        let fused = self.bounded(problem, problem.options.fuse, &shared)?;
        if problem.options.fuse != FusePolicy::Smart {
            return Ok(fused);
        }
        let distributed = self.bounded(problem, FusePolicy::None, &shared)?;
        if distributed.0 == fused.0 {
            return Ok(fused);
        }
        let (f, d) = (
            parallelism::Weight::of(problem, &fused.0)?,
            parallelism::Weight::of(problem, &distributed.0)?,
        );
        if d.parallel > f.parallel && d.deepest >= f.deepest {
            let (schedule, mut notes) = distributed;
            notes.push(SchedulerNote::DistributedForParallelism {
                fused: f.parallel,
                distributed: d.parallel,
            });
            return Ok((schedule, notes));
        }
        Ok(fused)
    }

    /// The affine schedule under the fusion policy `fuse`: the bound starts at the
    /// options' or [`Pluto::max_coefficient`] and doubles (up to [`Pluto::coefficient_cap`])
    /// while it cuts a band short.
    fn bounded(
        &self,
        problem: &Problem<'_>,
        fuse: FusePolicy,
        shared: &Shared,
    ) -> Result<(AffineSchedule, Vec<SchedulerNote>), ScheduleError> {
        let from = (problem.options.max_coefficient).unwrap_or(self.max_coefficient);
        let mut bound = from;
        loop {
            if let Run::Done(schedule) = Search::new(self, problem, fuse, bound, shared)?.run()? {
                let notes = if bound > from {
                    vec![SchedulerNote::CoefficientBoundRaised { from, to: bound }]
                } else {
                    Vec::new()
                };
                return Ok((schedule, notes));
            }
            bound = (bound * 2).min(self.coefficient_cap);
        }
    }
}

impl Scheduler for Pluto {
    fn name(&self) -> &'static str {
        self.heuristic.name()
    }

    fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
        Ok(self.schedule_noted(problem)?.0)
    }

    fn schedule_noted(
        &self,
        problem: &Problem,
    ) -> Result<(Schedule, Vec<SchedulerNote>), ScheduleError> {
        // A kernel without statements has nothing to order (and no space for a hyperplane).
        if problem.program.statements.is_empty() {
            return Ok((crate::baseline::Identity.schedule(problem)?, Vec::new()));
        }
        // Solved with the parameters symbolic, applied to the program as fixed.
        let (affine, mut notes) = Symbolic::solve(problem, |p| self.affine_noted(p))?;
        let schedule = affine.to_tree(problem.program)?;
        if problem.options.fuse != FusePolicy::Smart {
            return Ok((schedule, notes));
        }
        // Bands merged first, so that a cut sees the whole band it would shorten (ludcmp's
        // `(i)` over `(j, k)` is lu's `(i, j, k)`, which the depth rule keeps whole).
        let deps = TreeDeps::of(problem)?;
        let tree = merge_bands(&Tree::from_schedule(&schedule)?, &deps.validity)?;
        let (tree, bands) = distribute_for_parallelism(&tree, &deps)?;
        if bands == 0 {
            return Ok((schedule, notes));
        }
        notes.push(SchedulerNote::InnerBandsDistributed { bands });
        Ok((tree.to_schedule()?, notes))
    }
}
