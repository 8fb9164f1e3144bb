//! What a scheduler is given.

use poly::deps::{Dependences, Reuse};
use poly::isl::{IslError, IslResult, UnionMap};
use poly::model::{ModelError, Program};
use std::collections::BTreeMap;

/// How eagerly statements are fused into common loops (Pluto's `--nofuse`, `--smartfuse`,
/// `--maxfuse`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FusePolicy {
    /// Distribute: separate strongly connected components of the dependence graph at the
    /// outermost level.
    None,
    /// Fuse where it does not cost parallelism or band depth (the default).
    #[default]
    Smart,
    /// Fuse as much as legality allows.
    Max,
}

/// The user's scheduling options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The fusion policy.
    pub fuse: FusePolicy,
    /// Whether reduction updates may be reordered among themselves (dropping the
    /// dependences in [`Dependences::reduction`] from validity).
    pub reorder_reductions: bool,
    /// The starting bound on the magnitude of schedule coefficients for the schedulers that
    /// search for them (Pluto's `max_coefficient`); `None`: the scheduler's default.
    pub max_coefficient: Option<i64>,
    /// Whether the objective also bounds input (read-after-read) dependences
    /// ([`Reuse::input`]), to bring reuse of read data closer (Pluto's `--rar`, with
    /// its `--lastwriter` dependences: see [`Problem::reuse`]). They never constrain a
    /// schedule.
    pub rar: bool,
    /// isl's scheduler options for the `isl` baseline (`--isl-option`; the others keep
    /// isl's defaults).
    pub isl: poly::isl::SchedulerOptions,
}

/// A scheduling problem: a program, its dependences in the original order, and options.
pub struct Problem<'a> {
    /// The program.
    pub program: &'a Program,
    /// Its dependences.
    pub deps: &'a Dependences,
    /// The options.
    pub options: Options,
}

impl Problem<'_> {
    /// The dependences every schedule must respect.
    pub fn validity(&self) -> IslResult<UnionMap> {
        self.deps.validity(self.options.reorder_reductions)
    }

    /// Under [`Options::rar`], the dependences whose distances an objective bounds for
    /// reuse, as Pluto's `--rar --lastwriter` does: the input dependences (each read to the
    /// next read of its element) and the non-transitive part of validity (value-based flow,
    /// each access to the next write only: [`Reuse::next_write`]). The memory-based
    /// pairs those chain are left out: an accumulator's anti dependences from every earlier
    /// read would make any loop over the reduction look as costly as a distance of `N`
    /// (mvt's second product could not be interchanged for free). `None` without `rar`.
    pub fn reuse(&self) -> IslResult<Option<UnionMap>> {
        if !self.options.rar {
            return Ok(None);
        }
        let (deps, reuse) = (self.deps, Reuse::compute(self.program)?);
        let direct = deps
            .flow
            .union(&deps.reduction_flow)?
            .union(&reuse.next_write)?;
        let bounded = self.validity()?.intersect(&direct)?;
        Ok(Some(bounded.union(&reuse.input)?))
    }

    /// Pairs of instances that access a common element (through any two accesses, of the
    /// same array): intersecting a dependence with it splits the dependence by the pair of
    /// accesses through which its instances conflict. Such pieces have the equalities of
    /// their access pair and few constraints, whereas a coalesced dependence (heat-3d's
    /// 7-point stencil: an octahedron of about 30 constraints) makes isl's elimination of
    /// the Farkas multipliers explode.
    pub fn conflicts(&self) -> IslResult<UnionMap> {
        let program = self.program;
        let accesses = program.reads()?.union(&program.writes()?)?;
        accesses.apply_range(&accesses.reverse()?)
    }
}

/// A problem's kernel lifted again with no parameter fixed, with its dependences: what the
/// ILP-based schedulers (Pluto, Feautrier) solve when the user fixed parameters
/// (`-D N=5000`). With fixed values the dependence polyhedra carry constants in the
/// thousands into the Farkas duals, and isl's integer lexmin branches on them: Pluto took
/// 17 s on trisolv at N = 5000 and over 100 s at N = 20000, against 0.02 s with `N`
/// symbolic. A schedule legal for every parameter value is legal for the fixed ones, so
/// the coefficients found are applied to the fixed program as they are.
pub struct Symbolic {
    program: Program,
    deps: Dependences,
}

impl Symbolic {
    /// The symbolic form of `problem`, or `None` when it fixes no parameter.
    fn of(problem: &Problem) -> Result<Option<Symbolic>, ScheduleError> {
        let fixed = problem.program;
        if fixed.fixed.is_empty() {
            return Ok(None);
        }
        let program = Program::build(&fixed.ctx, &fixed.kernel, &BTreeMap::new())?;
        let deps = Dependences::compute(&program)?;
        Ok(Some(Symbolic { program, deps }))
    }

    /// `solve` applied to the symbolic form of `problem` when it fixes parameters, else to
    /// `problem` itself.
    pub fn solve<T>(
        problem: &Problem,
        solve: impl FnOnce(&Problem) -> Result<T, ScheduleError>,
    ) -> Result<T, ScheduleError> {
        match Symbolic::of(problem)? {
            Some(symbolic) => solve(&Problem {
                program: &symbolic.program,
                deps: &symbolic.deps,
                options: problem.options.clone(),
            }),
            None => solve(problem),
        }
    }
}

/// Why isl's own scheduler gave up ([`ScheduleError::IslDeclined`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IslDecline {
    /// It stopped with "unable to carry dependences": its greedy search (no backtracking,
    /// each row independent of the earlier ones) reached rows after which no valid
    /// independent row carries any of the dependences left.
    #[error("isl: \"unable to carry dependences\"")]
    CannotCarry,
    /// It ran out of the operations polyc allows it (the number; a budget of its own, a
    /// multiple of an analysis's: [`poly::isl::ISL_ALGORITHM_FACTOR`]).
    #[error("it ran out of its budget of {0} isl operations")]
    OutOfBudget(u64),
}

/// Why scheduling failed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// isl failed (including running out of its operation budget).
    #[error(transparent)]
    Isl(#[from] IslError),
    /// The kernel could not be lifted again with its parameters symbolic ([`Symbolic`]).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A plug-in scheduler (one registered from another crate) panicked, failed or
    /// returned an illegal schedule; the fault is `scheduler::plugin::Fault`.
    #[error("plug-in scheduler `{scheduler}` {fault}")]
    Plugin {
        /// The plug-in.
        scheduler: &'static str,
        /// What went wrong.
        fault: Box<dyn std::error::Error + Send + Sync>,
    },
    /// isl's own scheduler gave up on a kernel that has legal schedules (the original
    /// order): a limitation of isl's, not a fault of the kernel's nor of polyc's. The
    /// pipeline falls back to the next scheduler, and `polyc fuzz-schedules` counts it as
    /// declined.
    #[error("isl's scheduler declined the kernel ({0})")]
    IslDeclined(IslDecline),
    /// The algorithm found no legal schedule (a bug: the original order always is one).
    #[error("{scheduler} found no legal schedule: {reason}")]
    NoSchedule {
        /// The scheduler.
        scheduler: &'static str,
        /// What went wrong.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    #[test]
    fn fixed_parameters_are_solved_symbolic() {
        let symbolic = program("polybench/gemm.pk");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/polybench/gemm.pk");
        let kernel = frontend::compile(&frontend::read_source(path).unwrap())
            .unwrap()
            .remove(0);
        let fixed = BTreeMap::from([("NI".to_string(), 5000)]);
        let fixed = Program::build(&symbolic.ctx, &kernel, &fixed).unwrap();
        // Which program each problem is solved on: the symbolic one both times.
        for program in [&symbolic, &fixed] {
            let deps = Dependences::compute(program).unwrap();
            let problem = Problem {
                program,
                deps: &deps,
                options: Options::default(),
            };
            let solved_on = Symbolic::solve(&problem, |p| Ok(p.program.fixed.clone()));
            assert!(solved_on.unwrap().is_empty());
        }
    }
}
