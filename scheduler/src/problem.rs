//! What a scheduler is given.

use poly::deps::Dependences;
use poly::isl::{IslError, IslResult, UnionMap};
use poly::model::Program;

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
}

/// Why scheduling failed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// isl failed (including running out of its operation budget).
    #[error(transparent)]
    Isl(#[from] IslError),
    /// The algorithm found no legal schedule (a bug: the original order always is one).
    #[error("{scheduler} found no legal schedule: {reason}")]
    NoSchedule {
        /// The scheduler.
        scheduler: &'static str,
        /// What went wrong.
        reason: String,
    },
}
