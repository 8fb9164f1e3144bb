//! A scheduling heuristic as a polyc plug-in: Pluto's search in which each hyperplane
//! first carries (strongly satisfies) as many of the dependences not yet carried as it can
//! (Feautrier's greedy criterion, one 0/1 unknown per dependence), then minimises what
//! Pluto minimises. Run: `cargo run --release -p example-heuristic -- compare FILE.pk`.

use scheduler::ilp::LinExpr;
use scheduler::pluto::{Heuristic, Pluto, PlutoHeuristic, RowIlp, Satisfaction};
use scheduler::{ScheduleError, Scheduler};

/// Carry as many dependences as possible on each row, then Pluto's terms.
pub struct CarryFirst;

impl Heuristic for CarryFirst {
    fn name(&self) -> &'static str {
        "carry-first"
    }

    fn hyperplane(&self, ilp: &mut RowIlp<'_>) -> Result<Vec<LinExpr>, ScheduleError> {
        let mut uncarried = LinExpr::default();
        for &dep in ilp.dependences() {
            if ilp.satisfaction(dep)? == Satisfaction::Satisfied {
                continue; // an earlier row of the band carries it already
            }
            // `carried` can be 1 only if the distance is at least 1 on every instance.
            let carried = ilp.new_binary();
            let mut distance = ilp.distance(dep);
            distance.constant = distance.constant.minus(&carried);
            ilp.require(dep, &distance)?;
            uncarried = uncarried.plus(&LinExpr::constant(1)).minus(&carried);
        }
        let mut terms = vec![uncarried];
        terms.extend(PlutoHeuristic.hyperplane(ilp)?);
        Ok(terms)
    }
}

/// The scheduler polyc lists as `carry-first`.
pub fn scheduler() -> Box<dyn Scheduler> {
    Box::new(Pluto::with_heuristic(CarryFirst))
}
