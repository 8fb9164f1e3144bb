//! What a scheduler reports about its own search, typed so that callers match on it.

use std::fmt;

/// Something a scheduler did that the user should know about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedulerNote {
    /// The bound on the magnitude of schedule coefficients cut a band short (a statement
    /// still needed a hyperplane and one existed only with larger coefficients): the search
    /// was run again with the bound raised.
    CoefficientBoundRaised {
        /// The bound that was hit.
        from: i64,
        /// The bound the schedule was found with.
        to: i64,
    },
    /// The `smart` fusion policy distributed the strongly connected components at the
    /// outermost level: fusing them would have cost parallel loops.
    DistributedForParallelism {
        /// Parallel loops of the fused schedule.
        fused: usize,
        /// Parallel loops of the distributed one.
        distributed: usize,
    },
    /// The `smart` fusion policy split inner bands into one copy per strongly connected
    /// component of their statements: the copies have more parallel loops.
    InnerBandsDistributed {
        /// How many bands were split.
        bands: usize,
    },
}

impl fmt::Display for SchedulerNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedulerNote::CoefficientBoundRaised { from, to } => write!(
                f,
                "coefficient bound {from} was hit (a band ended early): raised to {to} \
                 (--max-coefficient)"
            ),
            SchedulerNote::DistributedForParallelism { fused, distributed } => write!(
                f,
                "fusion skipped (smart): {distributed} parallel loop(s) distributed, \
                 {fused} fused"
            ),
            SchedulerNote::InnerBandsDistributed { bands } => write!(
                f,
                "distribution (smart): {bands} inner band(s) split for parallel loops"
            ),
        }
    }
}
