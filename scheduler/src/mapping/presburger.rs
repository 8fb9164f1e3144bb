//! The second opinion: isl decides the same [`Query`] as Presburger arithmetic.
//!
//! The query becomes one isl set over all its variables (quotients included); the set is
//! empty exactly when the query has no solution. A sample point of a non-empty set is a
//! witness, checked against the query's facts like Z3's.

use super::formula::{Answer, Atom, Formula, Lin, Query};
use poly::isl::Ctx;

/// isl's operation budget for one query.
const BUDGET: u64 = 20_000_000;

/// Decides `query` with isl.
pub fn decide(query: &Query) -> Answer {
    let ctx = Ctx::new(BUDGET);
    let text = set_text(query);
    let set = match ctx.set(&text) {
        Ok(s) => s,
        Err(e) => return Answer::Unknown(format!("isl: {e}")),
    };
    match set.is_empty() {
        Ok(true) => Answer::Empty,
        Ok(false) => match set.sample().and_then(|s| s.points()) {
            Ok(points) => match points.into_iter().next() {
                Some(p) if query.satisfied_by(&p) => Answer::Witness(p),
                _ => Answer::Unknown("isl's sample does not satisfy the query".into()),
            },
            Err(e) => Answer::Unknown(format!("isl: {e}")),
        },
        Err(e) => Answer::Unknown(format!("isl: {e}")),
    }
}

/// The query as isl set syntax, `{ [v0, v1, ...] : facts }`.
fn set_text(query: &Query) -> String {
    let dims: Vec<String> = (0..query.vars.len()).map(|k| format!("v{k}")).collect();
    let facts: Vec<String> = query.facts.iter().map(formula).collect();
    let body = if facts.is_empty() {
        String::new()
    } else {
        format!(" : {}", facts.join(" and "))
    };
    format!("{{ [{}]{} }}", dims.join(", "), body)
}

fn term(t: &Lin) -> String {
    let mut s = String::new();
    for (&v, &c) in &t.coeffs {
        s.push_str(&format!(
            "{}{}*v{v}",
            if c < 0 { " - " } else { " + " },
            c.abs()
        ));
    }
    s.push_str(&format!(
        "{}{}",
        if t.constant < 0 { " - " } else { " + " },
        t.constant.abs()
    ));
    format!("(0{s})")
}

fn formula(f: &Formula) -> String {
    match f {
        Formula::Atom(Atom::Ge0(t)) => format!("{} >= 0", term(t)),
        Formula::Atom(Atom::Eq0(t)) => format!("{} = 0", term(t)),
        Formula::And(fs) if fs.is_empty() => "0 = 0".into(),
        Formula::Or(fs) if fs.is_empty() => "1 = 0".into(),
        Formula::And(fs) => format!(
            "({})",
            fs.iter().map(formula).collect::<Vec<_>>().join(" and ")
        ),
        Formula::Or(fs) => format!(
            "({})",
            fs.iter().map(formula).collect::<Vec<_>>().join(" or ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_arithmetic() {
        let mut q = Query::default();
        let x = q.fresh("x");
        let m = q.modulo(&x, 16);
        q.assert(x.gt(&Lin::constant(40)));
        q.assert(m.eq(&Lin::constant(5)));
        let Answer::Witness(v) = decide(&q) else {
            panic!("expected a witness")
        };
        assert_eq!(v[0].rem_euclid(16), 5);
        q.assert(Formula::Or(vec![
            m.eq(&Lin::constant(17)),
            x.lt(&Lin::constant(0)),
        ]));
        q.assert(x.ge(&Lin::constant(0)));
        assert_eq!(decide(&q), Answer::Empty);
    }
}
