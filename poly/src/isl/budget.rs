//! [`Analysis`]: the scope of one isl operation budget.

use super::Ctx;

/// One analysis: created, it gives the context a fresh operation budget; dropped, it gives
/// a fresh one again to whatever runs after it.
///
/// Every independent computation (an analysis, a transformation step, a model) starts one
/// with `let _analysis = ctx.analysis();`. Starting a fresh budget on both ends means that
/// no computation inherits what an earlier one left, whichever order callers run them in:
/// the bug class of a forgotten reset (a step that ran out of the budget the scheduler had
/// used up, and reported it as an isl syntax error) cannot come back by omission at the
/// call site after it. Nested analyses each get a whole budget of their own, so the bound
/// on any one isl computation stays the context's budget.
#[must_use = "the budget is scoped to the guard's lifetime"]
pub struct Analysis<'c> {
    ctx: &'c Ctx,
}

impl<'c> Analysis<'c> {
    pub(super) fn start(ctx: &'c Ctx) -> Analysis<'c> {
        ctx.reset_budget();
        Analysis { ctx }
    }
}

impl Drop for Analysis<'_> {
    fn drop(&mut self) {
        self.ctx.reset_budget();
    }
}

/// An analysis with a larger budget: `factor` times the context's, which comes back (with a
/// fresh budget) when the guard is dropped. For a computation that is not polyc's own and
/// that polyc should not cut short where its author's tool would finish: isl's scheduler.
#[must_use = "the budget is scoped to the guard's lifetime"]
pub struct ScaledAnalysis<'c> {
    ctx: &'c Ctx,
    budget: u64,
}

/// How many times an analysis's budget one of isl's own whole algorithms gets: its
/// scheduler and its AST generator are each one computation of isl's, where polyc's
/// analyses are many small ones, and with one budget each stopped short of what isl's own
/// tools finish (fuzz seed 325: isl's scheduler out of 3,000,000 operations after 1.1 s,
/// declining in 1.2 s with a hundred times more; seeds 1406 and 1639: the AST of a
/// Feautrier schedule of eighteen statements in one loop, which ten times the budget
/// generates).
pub const ISL_ALGORITHM_FACTOR: u64 = 10;

impl Ctx {
    /// Starts an analysis whose budget is `factor` times the context's (see
    /// [`ScaledAnalysis`]).
    pub fn analysis_scaled(&self, factor: u64) -> ScaledAnalysis<'_> {
        let budget = self.budget();
        self.set_budget(budget.saturating_mul(factor));
        self.reset_budget();
        ScaledAnalysis { ctx: self, budget }
    }
}

impl Drop for ScaledAnalysis<'_> {
    fn drop(&mut self) {
        self.ctx.set_budget(self.budget);
        self.ctx.reset_budget();
    }
}

/// A share of the current budget set apart for one computation: it may spend at most
/// `cap` more operations (and never more than the budget has left); what it spends counts
/// in the budget like any other operation. Dropped, the budget's own limit comes back.
///
/// For a computation that has a cheaper way out when it runs long, such as an integer
/// program that [`BasicSet::partial_lexmin`](super::BasicSet::partial_lexmin) solves
/// another way, so that the way out still has budget to run in.
#[must_use = "the cap is scoped to the guard's lifetime"]
pub(crate) struct Capped<'c> {
    ctx: &'c Ctx,
    limit: u64,
}

impl Ctx {
    /// Caps the computations until the guard is dropped at `cap` more operations (see
    /// [`Capped`]).
    pub(crate) fn capped(&self, cap: u64) -> Capped<'_> {
        let limit = self.raw().get_max_operations();
        let until = self.operations().saturating_add(cap);
        // A limit of 0 is no limit.
        let capped = match limit {
            0 => until,
            limit => limit.min(until),
        };
        self.raw().set_max_operations(capped);
        Capped { ctx: self, limit }
    }
}

impl Drop for Capped<'_> {
    fn drop(&mut self) {
        self.ctx.raw().set_max_operations(self.limit);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::isl::{Ctx, IslError};

    /// Runs a computation whose operations exceed a budget of 100,000 (the complement of a
    /// union of shifted lattices explodes), and returns how isl stopped it.
    pub(in crate::isl) fn exhaust(ctx: &Ctx) -> Option<IslError> {
        let pieces: Vec<String> = (0..12)
            .map(|k| {
                format!(
                    "[i, j] : exists (a, b : i = {} a + {k} and j = {} b + {} and 0 <= i <= n and 0 <= j <= n - {k})",
                    k + 3,
                    k + 5,
                    2 * k
                )
            })
            .collect();
        let hard = ctx
            .set(&format!("[n] -> {{ {} }}", pieces.join("; ")))
            .ok()?;
        hard.apply(|s| s.complement())
            .and_then(|c| c.coalesce())
            .err()
    }

    #[test]
    fn an_analysis_leaves_a_fresh_budget_behind() {
        let ctx = Ctx::new(100_000);
        {
            let _analysis = ctx.analysis();
            assert_eq!(exhaust(&ctx), Some(IslError::OperationLimit(100_000)));
            // Within the analysis the budget stays spent.
            assert!(ctx
                .set("{ [a] : 0 <= a < 4 }")
                .and_then(|s| s.lexmin())
                .is_err());
        }
        // After it, the caller goes on with a whole budget.
        assert!(ctx
            .set("{ [a] : 0 <= a < 4 }")
            .and_then(|s| s.lexmin())
            .is_ok());
    }

    #[test]
    fn a_scaled_analysis_has_a_larger_budget_and_gives_the_old_one_back() {
        let ctx = Ctx::new(100_000);
        {
            let _scaled = ctx.analysis_scaled(3);
            assert_eq!(ctx.raw().get_max_operations(), 300_000);
            assert_eq!(exhaust(&ctx), Some(IslError::OperationLimit(300_000)));
        }
        assert_eq!(ctx.raw().get_max_operations(), 100_000);
        assert_eq!(exhaust(&ctx), Some(IslError::OperationLimit(100_000)));
    }

    #[test]
    fn a_capped_computation_stops_at_its_cap_and_counts_in_the_budget() {
        let ctx = Ctx::new(100_000);
        let _analysis = ctx.analysis();
        {
            let _capped = ctx.capped(50_000);
            assert!(matches!(exhaust(&ctx), Some(IslError::OperationLimit(_))));
            assert!((50_000..100_000).contains(&ctx.operations()));
        }
        assert_eq!(ctx.raw().get_max_operations(), 100_000);
        // The budget's own limit is back, and what the capped computation spent is spent.
        assert_eq!(exhaust(&ctx), Some(IslError::OperationLimit(100_000)));
        assert!(ctx.operations() >= 100_000);
        // A cap beyond what the budget has left changes nothing.
        let _capped = ctx.capped(1_000_000);
        assert_eq!(ctx.raw().get_max_operations(), 100_000);
    }

    #[test]
    fn a_nested_analysis_starts_with_a_whole_budget() {
        let ctx = Ctx::new(100_000);
        let _outer = ctx.analysis();
        assert!(exhaust(&ctx).is_some());
        let _inner = ctx.analysis();
        assert!(ctx
            .set("{ [a] : 0 <= a < 4 }")
            .and_then(|s| s.lexmin())
            .is_ok());
    }
}
