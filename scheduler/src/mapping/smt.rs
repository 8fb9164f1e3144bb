//! Z3 decides a [`Query`]: linear integer arithmetic only, under a time limit.
//!
//! A model is checked against the query's own facts before it is returned, so a witness is
//! a witness whatever the solver did; "unknown" (a timeout, an incomplete tactic) is
//! returned as such and never read as a proof.

use super::formula::{Answer, Atom, Formula, Lin, Query};
use std::time::Duration;
use z3::ast::{Bool, Int};
use z3::{Params, SatResult, Solver};

/// Decides `query` with Z3, giving up after `limit`.
pub fn decide(query: &Query, limit: Duration) -> Answer {
    if query.facts.iter().any(|f| *f == Formula::falsity()) {
        return Answer::Empty;
    }
    let vars: Vec<Int> = (0..query.vars.len())
        .map(|k| Int::new_const(format!("v{k}")))
        .collect();
    let solver = Solver::new_for_logic("QF_LIA").unwrap_or_default();
    let mut params = Params::new();
    params.set_u32(
        "timeout",
        limit.as_millis().clamp(1, u32::MAX as u128) as u32,
    );
    solver.set_params(&params);
    for fact in &query.facts {
        solver.assert(formula(fact, &vars));
    }
    match solver.check() {
        SatResult::Unsat => Answer::Empty,
        SatResult::Unknown => Answer::Unknown(
            solver
                .get_reason_unknown()
                .unwrap_or_else(|| "no reason given".into()),
        ),
        SatResult::Sat => {
            let Some(model) = solver.get_model() else {
                return Answer::Unknown("Z3 said sat but gave no model".into());
            };
            let values: Option<Vec<i64>> = vars
                .iter()
                .map(|v| model.eval(v, true).and_then(|x| x.as_i64()))
                .collect();
            match values {
                Some(values) if query.satisfied_by(&values) => Answer::Witness(values),
                Some(_) => Answer::Unknown("Z3's model does not satisfy the query".into()),
                None => Answer::Unknown("Z3's model has a value outside i64".into()),
            }
        }
    }
}

fn term(t: &Lin, vars: &[Int]) -> Int {
    let mut parts: Vec<Int> = t
        .coeffs
        .iter()
        .map(|(&v, &c)| {
            if c == 1 {
                vars[v].clone()
            } else {
                &vars[v] * c
            }
        })
        .collect();
    parts.push(Int::from_i64(t.constant));
    Int::add(&parts)
}

fn formula(f: &Formula, vars: &[Int]) -> Bool {
    match f {
        Formula::Atom(Atom::Ge0(t)) => term(t, vars).ge(0),
        Formula::Atom(Atom::Eq0(t)) => term(t, vars).eq(0),
        Formula::And(fs) => Bool::and(&fs.iter().map(|g| formula(g, vars)).collect::<Vec<_>>()),
        Formula::Or(fs) => Bool::or(&fs.iter().map(|g| formula(g, vars)).collect::<Vec<_>>()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_checked_witness_and_proves_emptiness() {
        let mut q = Query::default();
        let x = q.fresh("x");
        let m = q.modulo(&x, 16);
        q.assert(x.gt(&Lin::constant(40)));
        q.assert(m.eq(&Lin::constant(5)));
        let Answer::Witness(v) = decide(&q, Duration::from_secs(5)) else {
            panic!("expected a witness")
        };
        assert_eq!(v[0].rem_euclid(16), 5);
        assert!(v[0] > 40);
        q.assert(m.eq(&Lin::constant(17)));
        assert_eq!(decide(&q, Duration::from_secs(5)), Answer::Empty);
    }
}
