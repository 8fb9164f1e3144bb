//! Equalities solved for one unknown each before isl sees a system.
//!
//! isl Gauss-eliminates the equalities of a basic set across all of its constraints as it
//! builds it, over dense rows of arbitrary-precision integers; the Farkas duals of uniform
//! dependences give many equalities (`a = b` between coefficients), and on PolyBench's adi
//! that elimination took most of a scheduling row's time. Solving them here on sparse rows
//! and dropping the solved unknowns is much cheaper.
//!
//! An equality is solved for its last unknown (in the lexicographic order) when that has a
//! unit coefficient, so integer solutions stay integer and the solved unknown depends only
//! on earlier ones: it has no freedom left when a lexicographic minimum reaches it, and
//! dropping it leaves the minimum of the others unchanged.

use super::{Constraint, Ilp, LinExpr};

/// A system with some unknowns solved for.
pub struct Eliminated {
    /// The remaining constraints, over the kept unknowns renumbered densely (in order).
    pub system: Ilp,
    /// The original index of each kept unknown.
    kept: Vec<usize>,
    /// The position of each original unknown among the kept ones, `None` if solved for.
    position: Vec<Option<usize>>,
    /// The solved unknowns and their values (expressions of the original unknowns), in the
    /// order they were solved.
    solved: Vec<(usize, LinExpr)>,
}

impl Eliminated {
    /// Solves the equalities of `ilp` with a unit coefficient on their last unknown.
    pub fn of(ilp: &Ilp) -> Eliminated {
        let mut constraints: Vec<Option<Constraint>> =
            ilp.constraints.iter().cloned().map(Some).collect();
        let mut uses: Vec<Vec<usize>> = vec![Vec::new(); ilp.n_vars];
        for (i, c) in ilp.constraints.iter().enumerate() {
            for &(v, _) in &c.expr.terms {
                uses[v].push(i);
            }
        }
        let mut solved = Vec::new();
        for i in 0..constraints.len() {
            let Some((v, value)) = constraints[i].as_ref().and_then(solution) else {
                continue;
            };
            constraints[i] = None;
            // `value - v`: adding it `a` times replaces `a * v` by `a * value`.
            let replacement = value.clone().minus(&LinExpr::var(v));
            for j in std::mem::take(&mut uses[v]) {
                let Some(c) = constraints[j].as_mut() else {
                    continue;
                };
                let a = c.expr.coefficient(v);
                if a != 0 {
                    c.expr = std::mem::take(&mut c.expr).plus_scaled(&replacement, a);
                    for &(w, _) in &value.terms {
                        uses[w].push(j);
                    }
                }
            }
            solved.push((v, value));
        }
        let mut is_solved = vec![false; ilp.n_vars];
        for (v, _) in &solved {
            is_solved[*v] = true;
        }
        let kept: Vec<usize> = (0..ilp.n_vars).filter(|&v| !is_solved[v]).collect();
        let mut position = vec![None; ilp.n_vars];
        for (k, &v) in kept.iter().enumerate() {
            position[v] = Some(k);
        }
        let mut eliminated = Eliminated {
            system: Ilp::new(kept.len()),
            kept,
            position,
            solved,
        };
        eliminated.system.constraints = constraints
            .into_iter()
            .flatten()
            .map(|c| Constraint {
                expr: eliminated.renumber(&c.expr),
                equality: c.equality,
            })
            .collect();
        eliminated
    }

    /// `expr` (over the original unknowns) over the kept unknowns.
    pub fn substitute(&self, expr: &LinExpr) -> LinExpr {
        let expr = self.solved.iter().fold(expr.clone(), |e, (v, value)| {
            let a = e.coefficient(*v);
            e.plus_scaled(&value.clone().minus(&LinExpr::var(*v)), a)
        });
        self.renumber(&expr)
    }

    fn renumber(&self, expr: &LinExpr) -> LinExpr {
        LinExpr {
            terms: expr
                .terms
                .iter()
                .map(|&(v, k)| {
                    (
                        self.position[v].expect("solved unknowns are substituted"),
                        k,
                    )
                })
                .collect(),
            constant: expr.constant,
        }
    }

    /// The values of all original unknowns from those of the kept ones; `None` if one of
    /// them does not fit 64 bits.
    pub fn expand(&self, kept_values: &[i64]) -> Option<Vec<i64>> {
        let mut values = vec![0; self.position.len()];
        for (&v, &x) in self.kept.iter().zip(kept_values) {
            values[v] = x;
        }
        // A value may use unknowns solved later (never earlier ones), so go backwards.
        for (v, value) in self.solved.iter().rev() {
            values[*v] = i64::try_from(value.checked_eval(&values)?).ok()?;
        }
        Some(values)
    }
}

/// `(v, value)` if `c` is an equality that can be solved for its last unknown `v`.
fn solution(c: &Constraint) -> Option<(usize, LinExpr)> {
    if !c.equality {
        return None;
    }
    let &(v, k) = c.expr.terms.iter().max_by_key(|(v, _)| *v)?;
    if k.abs() != 1 {
        return None;
    }
    // k v + rest = 0 with k = ±1: v = -k * rest.
    let rest = c.expr.clone().plus_scaled(&LinExpr::var(v), -k);
    Some((v, LinExpr::default().plus_scaled(&rest, -k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(v: usize) -> LinExpr {
        LinExpr::var(v)
    }

    /// `x0 >= 1, x1 = x0 + 2, x2 = x1 - x0, x2 + x3 >= 5`: x1 and x2 are solved for, and
    /// the kept system over (x0, x3) gives back every value.
    #[test]
    fn solves_last_unknowns_and_expands_back() {
        let mut ilp = Ilp::new(4);
        ilp.push(x(0).plus(&LinExpr::constant(-1)).ge0());
        ilp.push(x(1).minus(&x(0)).plus(&LinExpr::constant(-2)).eq0());
        ilp.push(x(2).minus(&x(1)).plus(&x(0)).eq0());
        ilp.push(x(2).plus(&x(3)).plus(&LinExpr::constant(-5)).ge0());
        let e = Eliminated::of(&ilp);
        assert_eq!(e.system.n_vars, 2);
        assert_eq!(e.system.constraints.len(), 2);
        // x2 = 2, so the last constraint reads x3 - 3 >= 0 (x3 is kept unknown 1).
        assert_eq!(
            e.system.constraints[1].expr,
            x(1).plus(&LinExpr::constant(-3))
        );
        assert_eq!(e.expand(&[1, 3]), Some(vec![1, 3, 2, 3]));
        assert_eq!(
            e.substitute(&x(2).plus(&x(3))),
            x(1).plus(&LinExpr::constant(2))
        );
    }

    /// A solved unknown whose value would not fit 64 bits is reported, not wrapped or
    /// panicked on.
    #[test]
    fn a_value_beyond_64_bits_expands_to_none() {
        let mut ilp = Ilp::new(2);
        // x1 = 4 * x0
        ilp.push(x(1).plus_scaled(&x(0), -4).eq0());
        let e = Eliminated::of(&ilp);
        assert_eq!(e.expand(&[1 << 40]), Some(vec![1 << 40, 1 << 42]));
        assert_eq!(e.expand(&[1 << 62]), None);
    }

    /// An equality whose last unknown has coefficient 2 stays as it is.
    #[test]
    fn keeps_equalities_without_unit_pivot() {
        let mut ilp = Ilp::new(2);
        ilp.push(x(0).plus_scaled(&x(1), 2).eq0());
        let e = Eliminated::of(&ilp);
        assert_eq!(e.system.n_vars, 2);
        assert_eq!(e.system.constraints, ilp.constraints);
    }
}
