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
}

impl fmt::Display for SchedulerNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedulerNote::CoefficientBoundRaised { from, to } => write!(
                f,
                "coefficient bound {from} was hit (a band ended early): raised to {to} \
                 (--max-coefficient)"
            ),
        }
    }
}
