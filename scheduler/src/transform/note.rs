//! What the optimizer and its transformations did, and why they refused what they refused:
//! typed, so that callers match on them and the CLI alone renders them.

use super::tile_size::TileSizeNote;
use crate::legality::tree_order::Unordered;
use crate::{FusePolicy, SchedulerNote};
use poly::isl::IslError;
use std::fmt;

/// A step of the optimizer that may be applied or refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Fusing two loop nests (a fusion policy).
    Fusion,
    /// Distributing a loop nest into its strongly connected components (a fusion policy).
    Distribution,
    /// Merging nested bands into one permutable band.
    MergeBands,
    /// Splitting a band's instances into a sequence of two parts.
    IndexSetSplitting,
    /// Tiling permutable bands.
    Tiling,
    /// Diamond tiling: tiles that start concurrently along the time loop.
    DiamondTiling,
    /// Tiling the tile loops again.
    SecondLevelTiling,
    /// Skewing a band so that an outer loop becomes parallel.
    Wavefront,
    /// Moving a stride-1 parallel loop innermost within a tile.
    IntraTileReordering,
    /// Register tiling innermost reduction bands.
    RegisterTiling,
    /// Interleaving the independent recurrences of a parallel loop.
    Interleaving,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::Fusion => "fusion",
            Step::Distribution => "distribution",
            Step::MergeBands => "merge permutable bands",
            Step::IndexSetSplitting => "index-set splitting",
            Step::Tiling => "tiling",
            Step::DiamondTiling => "diamond tiling",
            Step::SecondLevelTiling => "second-level tiling",
            Step::Wavefront => "wavefront",
            Step::IntraTileReordering => "intra-tile reordering",
            Step::RegisterTiling => "register tiling",
            Step::Interleaving => "interleaving of recurrences",
        }
    }
}

/// Why a step was refused.
#[derive(Clone, Debug)]
pub enum Refusal {
    /// The result would not run these dependent pairs source first.
    Illegal(Unordered),
    /// Fusion under the `smart` policy would cost a parallel loop.
    CostsParallelism,
    /// Fusion under the `smart` policy would leave the deepest band (once bands are merged)
    /// shallower, so that fewer loops could be tiled together.
    ShallowerBands,
    /// isl failed on it (the step is an optimisation: the tree goes on without it).
    Isl(IslError),
}

/// Why the optimizer kept the original loop order instead of the scheduler's (a cost
/// decision, see [`crate::optimizer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeepOriginal {
    /// The schedule has neither a parallel loop nor a tiled band.
    NothingToGain,
    /// A sequential loop of `steps` steps around parallel loops runs about `per_step`
    /// instances a step, too few to pay for its barriers.
    StepsTooSmall {
        /// The sequential loop's trip count.
        steps: i64,
        /// Estimated statement instances per step.
        per_step: i64,
    },
    /// The heaviest statements have `now` strided accesses in their innermost loops,
    /// `before` in the original order.
    StridedAccesses {
        /// Strided accesses under the schedule.
        now: usize,
        /// Strided accesses in the original order.
        before: usize,
    },
}

/// One thing the optimizer did or refused.
#[derive(Clone, Debug)]
pub enum Note {
    /// What the scheduler reported about its search.
    Scheduler(SchedulerNote),
    /// A fusion policy re-decided fusion, with this many changes.
    FusionPolicy {
        /// The policy.
        policy: FusePolicy,
        /// Fusions and distributions applied.
        changes: usize,
    },
    /// A step was applied.
    Applied(Step),
    /// A step was refused; the tree goes on without it.
    Refused(Step, Refusal),
    /// The tile sizes chosen for one band.
    TileSizes(TileSizeNote),
    /// The original loop order was kept instead of the schedule.
    OriginalKept(KeepOriginal),
    /// The original order would have been kept for `reason`, but isl failed on it.
    OriginalRefused {
        /// Why the schedule looked worse than the original order.
        reason: KeepOriginal,
        /// What isl said about the original order.
        error: IslError,
    },
    /// Whether the original order would be better could not be decided (isl failed).
    ProfitabilityUnknown(IslError),
}

impl Note {
    /// Whether the note reports something refused (what `polyc compile` shows by default).
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            Note::Scheduler(_)
                | Note::FusionPolicy { .. }
                | Note::Applied(_)
                | Note::TileSizes(_)
                | Note::Refused(_, Refusal::CostsParallelism | Refusal::ShallowerBands)
        )
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Illegal(pairs) => pairs.fmt(f),
            Refusal::CostsParallelism => f.write_str("it would cost a parallel loop"),
            Refusal::ShallowerBands => f.write_str("it would leave the deepest band shallower"),
            Refusal::Isl(e) => e.fmt(f),
        }
    }
}

impl fmt::Display for KeepOriginal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepOriginal::NothingToGain => {
                f.write_str("no parallel loop and no tiled band to gain")
            }
            KeepOriginal::StepsTooSmall { steps, per_step } => write!(
                f,
                "a sequential loop of {steps} steps around parallel loops runs about \
                 {per_step} instances a step, too few to pay for a barrier"
            ),
            KeepOriginal::StridedAccesses { now, before } => write!(
                f,
                "{now} strided access(es) in the innermost loops of the heaviest statements, \
                 not {before}"
            ),
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Scheduler(note) => note.fmt(f),
            Note::FusionPolicy { policy, changes } => {
                write!(f, "fusion ({policy:?}): {changes} change(s)")
            }
            Note::Applied(step) => write!(f, "{}: applied", step.name()),
            Note::Refused(
                step @ Step::Fusion,
                why @ (Refusal::CostsParallelism | Refusal::ShallowerBands),
            ) => write!(f, "{} skipped (smart): {why}", step.name()),
            Note::Refused(step, why) => write!(f, "{} refused: {why}", step.name()),
            Note::TileSizes(sizes) => sizes.fmt(f),
            Note::OriginalKept(why) => write!(f, "schedule refused, original order kept: {why}"),
            Note::OriginalRefused { reason, error } => {
                write!(f, "original order refused ({error}), although {reason}")
            }
            Note::ProfitabilityUnknown(e) => write!(f, "stride check refused: {e}"),
        }
    }
}
