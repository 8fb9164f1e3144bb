//! Small integer linear programs over named-less unknowns `x0, x1, ...`, solved exactly by
//! isl's lexicographic minimum (parametric integer programming, no floating point).

mod eliminate;

use eliminate::Eliminated;
use num_rational::Rational64;
use poly::isl::{BasicSet, Ctx, IslError, IslResult, LpMax};
use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;

/// A linear expression `sum(coeff * x_var) + constant` (sparse; coefficients in `i128` so
/// that combining the small coefficients of schedules and Farkas duals cannot overflow).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LinExpr {
    terms: Vec<(usize, i128)>,
    constant: i128,
}

impl LinExpr {
    /// The expression `x_var`.
    pub fn var(var: usize) -> LinExpr {
        LinExpr {
            terms: vec![(var, 1)],
            constant: 0,
        }
    }

    /// The constant expression `c`.
    pub fn constant(c: i128) -> LinExpr {
        LinExpr {
            terms: Vec::new(),
            constant: c,
        }
    }

    /// `self + k * other`.
    pub fn plus_scaled(mut self, other: &LinExpr, k: i128) -> LinExpr {
        if k == 0 {
            return self;
        }
        for &(v, c) in &other.terms {
            match self.terms.iter_mut().find(|(w, _)| *w == v) {
                Some((_, d)) => *d += k * c,
                None => self.terms.push((v, k * c)),
            }
        }
        self.terms.retain(|&(_, c)| c != 0);
        self.constant += k * other.constant;
        self
    }

    /// `self + other`.
    pub fn plus(self, other: &LinExpr) -> LinExpr {
        self.plus_scaled(other, 1)
    }

    /// `self - other`.
    pub fn minus(self, other: &LinExpr) -> LinExpr {
        self.plus_scaled(other, -1)
    }

    /// The sum of expressions.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a LinExpr>) -> LinExpr {
        parts
            .into_iter()
            .fold(LinExpr::default(), |acc, p| acc.plus(p))
    }

    /// `self >= 0`.
    pub fn ge0(self) -> Constraint {
        Constraint {
            expr: self,
            equality: false,
        }
    }

    /// `self = 0`.
    pub fn eq0(self) -> Constraint {
        Constraint {
            expr: self,
            equality: true,
        }
    }

    /// The coefficient of `x_var` (0 if absent).
    fn coefficient(&self, var: usize) -> i128 {
        self.terms
            .iter()
            .find(|&&(v, _)| v == var)
            .map_or(0, |&(_, k)| k)
    }

    /// The expression with every unknown `x_v` renamed `x_(v + by)`.
    fn shifted(&self, by: usize) -> LinExpr {
        LinExpr {
            terms: self.terms.iter().map(|&(v, k)| (v + by, k)).collect(),
            constant: self.constant,
        }
    }

    /// The value at a point.
    pub fn eval(&self, x: &[i64]) -> i128 {
        self.terms
            .iter()
            .map(|&(v, c)| c * i128::from(x[v]))
            .sum::<i128>()
            + self.constant
    }

    /// [`LinExpr::eval`], or `None` where the arithmetic would overflow `i128`.
    pub fn checked_eval(&self, x: &[i64]) -> Option<i128> {
        (self.terms.iter()).try_fold(self.constant, |acc, &(v, c)| {
            acc.checked_add(c.checked_mul(i128::from(x[v]))?)
        })
    }
}

/// `expr >= 0` or `expr = 0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Constraint {
    /// The expression.
    pub expr: LinExpr,
    /// Whether it must be zero (else non-negative).
    pub equality: bool,
}

impl Constraint {
    /// Whether the constraint holds at a point (`false` where its value overflows).
    pub fn holds(&self, x: &[i64]) -> bool {
        match self.expr.checked_eval(x) {
            Some(v) if self.equality => v == 0,
            Some(v) => v >= 0,
            None => false,
        }
    }
}

/// A system of linear constraints over `n_vars` integer unknowns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ilp {
    /// Number of unknowns.
    pub n_vars: usize,
    /// The constraints.
    pub constraints: Vec<Constraint>,
}

impl Ilp {
    /// An unconstrained system of `n_vars` unknowns.
    pub fn new(n_vars: usize) -> Ilp {
        Ilp {
            n_vars,
            constraints: Vec::new(),
        }
    }

    /// Adds a constraint.
    pub fn push(&mut self, c: Constraint) {
        self.constraints.push(c);
    }

    /// The system with one new unknown per term put first, each equal to its term, and the
    /// original unknowns after them (`x_v` becomes `x_(v + terms.len())`): its lexicographic
    /// minimum minimises the terms in order, then the original unknowns in order.
    pub fn with_terms_first(&self, terms: &[LinExpr]) -> Ilp {
        let k = terms.len();
        let definitions = terms
            .iter()
            .enumerate()
            .map(|(t, term)| LinExpr::var(t).minus(&term.shifted(k)).eq0());
        let shifted = self.constraints.iter().map(|c| Constraint {
            expr: c.expr.shifted(k),
            equality: c.equality,
        });
        Ilp {
            n_vars: self.n_vars + k,
            constraints: definitions.chain(shifted).collect(),
        }
    }

    /// The lexicographically smallest integer solution `(x0, x1, ...)`, or `None` if there is
    /// none. Every unknown must be bounded below on the solutions (else isl reports an
    /// error). The solution is checked against every constraint (isl's integer programming
    /// is not taken on trust: see [`BasicSet::partial_lexmin`]).
    pub fn lexmin(&self, ctx: &Ctx) -> IslResult<Option<Vec<i64>>> {
        let Some((reduced, eliminated)) = self.presolved(Numbers::Integer) else {
            return Ok(None);
        };
        let Some(values) = reduced.to_basic_set(ctx)?.partial_lexmin()? else {
            return Ok(None);
        };
        values
            .into_iter()
            .map(|v| {
                if v.is_integer() {
                    Ok(*v.numer())
                } else {
                    Err(IslError::Isl(format!(
                        "the integer lexicographic minimum has a fractional value {v}"
                    )))
                }
            })
            .collect::<IslResult<Vec<i64>>>()
            .and_then(|kept| {
                eliminated.expand(&kept).ok_or_else(|| {
                    IslError::Isl("the integer program's solution has values beyond 64 bits".into())
                })
            })
            .and_then(
                |values| match self.constraints.iter().all(|c| c.holds(&values)) {
                    true => Ok(Some(values)),
                    false => Err(IslError::Isl(
                        "isl's integer programming returned a point that violates the program"
                            .into(),
                    )),
                },
            )
    }

    /// The maxima of `objectives` over the rational solutions (linear programming, exact
    /// arithmetic), `None` if there is no solution; an error if one is unbounded.
    pub fn rational_maxima(
        &self,
        ctx: &Ctx,
        objectives: &[LinExpr],
    ) -> IslResult<Option<Vec<Rational64>>> {
        let Some((reduced, eliminated)) = self.presolved(Numbers::Rational) else {
            return Ok(None);
        };
        let set = reduced.to_basic_set(ctx)?;
        let mut out = Vec::with_capacity(objectives.len());
        for objective in objectives {
            let objective = eliminated.substitute(objective);
            match set.max_lp((objective.constant, &objective.terms))? {
                LpMax::Infeasible => return Ok(None),
                LpMax::Unbounded => {
                    return Err(IslError::Isl("the linear program is unbounded".into()))
                }
                LpMax::Max(max) => out.push(max),
            }
        }
        Ok(Some(out))
    }

    /// The system with its constraints presolved (see [`presolve`]) and its unit equalities
    /// solved (see [`eliminate`]), with what it takes to map solutions back; `None` if it
    /// plainly has no solution.
    fn presolved(&self, numbers: Numbers) -> Option<(Ilp, Eliminated)> {
        let canonical = Ilp {
            n_vars: self.n_vars,
            constraints: presolve(&self.constraints, numbers)?,
        };
        let eliminated = Eliminated::of(&canonical);
        let reduced = Ilp {
            n_vars: eliminated.system.n_vars,
            constraints: presolve(&eliminated.system.constraints, numbers)?,
        };
        Some((reduced, eliminated))
    }

    /// The system as an isl basic set, built from its constraint matrices (no text: isl's
    /// parser intersects constraint by constraint, which costs more than the solve).
    pub fn to_basic_set(&self, ctx: &Ctx) -> IslResult<BasicSet> {
        let rows = |equality: bool| -> Vec<(i128, &[(usize, i128)])> {
            (self.constraints.iter())
                .filter(|c| c.equality == equality)
                .map(|c| (c.expr.constant, c.expr.terms.as_slice()))
                .collect()
        };
        BasicSet::from_rows(ctx, self.n_vars, &rows(true), &rows(false))
    }
}

/// Over which numbers the unknowns range.
/// The lexicographic minima of the integer programs solved so far, by program: a search
/// that asks again for one it solved (Pluto's fused and distributed searches, a search
/// restarted with a larger coefficient bound) gets the same answer without solving it
/// again. Failures are not kept.
#[derive(Default)]
pub struct Memo {
    solved: RefCell<HashMap<Ilp, Option<Vec<i64>>>>,
}

impl Memo {
    /// [`Ilp::lexmin`] of `ilp`, solved at most once.
    pub fn lexmin(&self, ilp: &Ilp, ctx: &Ctx) -> IslResult<Option<Vec<i64>>> {
        if let Some(known) = self.solved.borrow().get(ilp) {
            return Ok(known.clone());
        }
        let solution = ilp.lexmin(ctx)?;
        (self.solved.borrow_mut()).insert(ilp.clone(), solution.clone());
        Ok(solution)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Numbers {
    Integer,
    Rational,
}

/// The constraints in canonical form (terms sorted, coefficients coprime; over the integers,
/// inequalities tightened to integer solutions), without duplicates and without
/// inequalities that the unknowns' constant bounds (the one-unknown constraints) already
/// imply; the solutions are the same. `None` if some constraint has no solution on its own.
///
/// isl simplifies a basic set as it builds it, at a cost that grows with the number of
/// constraints; the Farkas rows of a fused search repeat a lot (about half are duplicates
/// on deriche) and many only restate `x >= 0`.
fn presolve(constraints: &[Constraint], numbers: Numbers) -> Option<Vec<Constraint>> {
    let mut canonical = Vec::with_capacity(constraints.len());
    for c in constraints {
        if let Some(c) = canonical_form(c, numbers)? {
            canonical.push(c);
        }
    }
    let sort_dedup = |mut cs: Vec<Constraint>| {
        cs.sort_by(|a, b| {
            (&a.expr.terms, a.expr.constant, a.equality).cmp(&(
                &b.expr.terms,
                b.expr.constant,
                b.equality,
            ))
        });
        cs.dedup();
        cs
    };
    let mut canonical = sort_dedup(merge_opposite(sort_dedup(canonical))?);
    let mut lower: HashMap<usize, i128> = HashMap::default();
    let mut upper: HashMap<usize, i128> = HashMap::default();
    for c in &canonical {
        // Over the integers k is +1 or -1 after normalisation: x >= -c, or x <= c; over the
        // rationals a bound `k x + c >= 0` with another k is not a whole number, and unused.
        if let [(v, k @ (1 | -1))] = c.expr.terms[..] {
            let bound = -k * c.expr.constant;
            if k > 0 || c.equality {
                let lb = lower.entry(v).or_insert(bound);
                *lb = (*lb).max(bound);
            }
            if k < 0 || c.equality {
                let ub = upper.entry(v).or_insert(bound);
                *ub = (*ub).min(bound);
            }
        }
    }
    let implied = |c: &Constraint| {
        if c.equality || c.expr.terms.len() < 2 {
            return false;
        }
        let least = c
            .expr
            .terms
            .iter()
            .try_fold(c.expr.constant, |acc, &(v, k)| {
                let bound = if k > 0 { lower.get(&v) } else { upper.get(&v) };
                bound.map(|b| acc + k * b)
            });
        least.is_some_and(|m| m >= 0)
    };
    canonical.retain(|c| !implied(c));
    Some(canonical)
}

/// The inequalities `f >= 0` and `-f >= 0` as one equality `f = 0` (isl finds one such pair
/// per round of simplification as it builds a set, and each round costs as much as all of
/// them here); `None` if a pair `f + a >= 0`, `-f + b >= 0` with `a + b < 0` has no solution.
fn merge_opposite(constraints: Vec<Constraint>) -> Option<Vec<Constraint>> {
    let mut constants: HashMap<Vec<(usize, i128)>, i128> = HashMap::default();
    for c in constraints.iter().filter(|c| !c.equality) {
        let k = constants
            .entry(c.expr.terms.clone())
            .or_insert(c.expr.constant);
        *k = (*k).min(c.expr.constant);
    }
    let mut out = Vec::with_capacity(constraints.len());
    for c in constraints {
        if c.equality {
            out.push(c);
            continue;
        }
        let negated: Vec<(usize, i128)> = c.expr.terms.iter().map(|&(v, k)| (v, -k)).collect();
        match constants.get(&negated).map(|&b| c.expr.constant + b) {
            Some(sum) if sum < 0 => return None,
            // Keep one equality per pair: the one whose first coefficient is positive.
            Some(0) if c.expr.terms.first().is_some_and(|&(_, k)| k > 0) => out.push(Constraint {
                expr: c.expr,
                equality: true,
            }),
            Some(0) => {}
            _ => out.push(c),
        }
    }
    Some(out)
}

/// `c` with sorted terms and coprime coefficients (over the rationals, coprime with the
/// constant too); `Ok(None)` if it always holds, `None` if it never does.
fn canonical_form(c: &Constraint, numbers: Numbers) -> Option<Option<Constraint>> {
    let mut terms = c.expr.terms.clone();
    terms.sort_unstable();
    let mut g = terms.iter().fold(0i128, |g, &(_, k)| gcd(g, k.abs()));
    let constant = c.expr.constant;
    if numbers == Numbers::Rational && g != 0 {
        g = gcd(g, constant.abs());
    }
    if g == 0 {
        let holds = if c.equality {
            constant == 0
        } else {
            constant >= 0
        };
        return holds.then_some(None);
    }
    let constant = if c.equality {
        if constant % g != 0 {
            return None;
        }
        constant / g
    } else {
        constant.div_euclid(g)
    };
    // An equality and its negation are the same constraint: make the first term positive.
    let sign = if c.equality && terms[0].1 < 0 { -1 } else { 1 };
    terms.iter_mut().for_each(|(_, k)| *k = sign * *k / g);
    Some(Some(Constraint {
        expr: LinExpr {
            terms,
            constant: sign * constant,
        },
        equality: c.equality,
    }))
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexmin_is_exact_and_integer() {
        // 2 x0 >= 3, x1 >= x0 - 5, x1 >= 0: the rational minimum x0 = 1.5 is not integer.
        let ctx = Ctx::default();
        let x = |v| LinExpr::var(v);
        let mut ilp = Ilp::new(2);
        ilp.push(
            x(0).plus_scaled(&x(0), 1)
                .plus(&LinExpr::constant(-3))
                .ge0(),
        );
        ilp.push(x(1).minus(&x(0)).plus(&LinExpr::constant(5)).ge0());
        ilp.push(x(1).ge0());
        assert_eq!(ilp.lexmin(&ctx).unwrap(), Some(vec![2, 0]));
        assert_eq!(x(0).plus_scaled(&x(1), 3).eval(&[2, 1]), 5);
    }

    #[test]
    fn the_memo_answers_as_the_program_does_and_solves_each_once() {
        let ctx = Ctx::default();
        let mut feasible = Ilp::new(1);
        feasible.push(LinExpr::var(0).plus(&LinExpr::constant(-2)).ge0());
        let mut infeasible = feasible.clone();
        infeasible.push(LinExpr::constant(1).minus(&LinExpr::var(0)).ge0());
        let memo = Memo::default();
        for ilp in [&feasible, &infeasible, &feasible, &infeasible] {
            assert_eq!(memo.lexmin(ilp, &ctx).unwrap(), ilp.lexmin(&ctx).unwrap());
        }
        assert_eq!(memo.solved.borrow().len(), 2);
    }

    #[test]
    fn infeasible_and_unbounded_systems() {
        let ctx = Ctx::default();
        let mut ilp = Ilp::new(1);
        ilp.push(LinExpr::var(0).plus(&LinExpr::constant(-1)).eq0());
        ilp.push(LinExpr::constant(0).minus(&LinExpr::var(0)).ge0());
        assert_eq!(ilp.lexmin(&ctx).unwrap(), None);
        assert!(Ilp::new(1).lexmin(&ctx).is_err());
    }

    #[test]
    fn presolve_tightens_deduplicates_and_drops_implied_constraints() {
        let x = |v| LinExpr::var(v);
        let c = LinExpr::constant;
        // 2 x0 - 3 >= 0 is x0 - 2 >= 0 over the integers; x1 in 0..=4.
        let tightened = x(0).plus(&x(0)).plus(&c(-3)).ge0();
        let x1_lower = x(1).ge0();
        let x1_upper = c(4).minus(&x(1)).ge0();
        let implied = x(0).plus(&x(1)).plus(&c(-1)).ge0();
        let kept = x(0).minus(&x(1)).ge0();
        let system = [
            tightened.clone(),
            x1_lower.clone(),
            x1_upper.clone(),
            implied,
            kept.clone(),
            kept.clone(),
        ];
        let out = presolve(&system, Numbers::Integer).unwrap();
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(out.contains(&x(0).plus(&c(-2)).ge0()));
        assert!(out.contains(&kept));
        // An equality with no integer solution, and a false constant.
        assert!(presolve(&[x(0).plus(&x(0)).plus(&c(-1)).eq0()], Numbers::Integer).is_none());
        assert!(presolve(&[c(-1).ge0()], Numbers::Integer).is_none());
        // Over the rationals `2x - 1 = 0` has a solution and `2x - 1 >= 0` stays as it is.
        let half = [x(0).plus(&x(0)).plus(&c(-1)).ge0()];
        assert_eq!(presolve(&half, Numbers::Rational).unwrap(), half.to_vec());
    }

    #[test]
    fn large_systems_are_solved_without_text() {
        // x_k >= x_{k-1} + 1 for 200 unknowns: the minimum is 0, 1, 2, ...
        let ctx = Ctx::default();
        let n = 200;
        let mut ilp = Ilp::new(n);
        ilp.push(LinExpr::var(0).ge0());
        for k in 1..n {
            ilp.push(
                LinExpr::var(k)
                    .minus(&LinExpr::var(k - 1))
                    .plus(&LinExpr::constant(-1))
                    .ge0(),
            );
        }
        let expected: Vec<i64> = (0..n as i64).collect();
        assert_eq!(ilp.lexmin(&ctx).unwrap(), Some(expected));
    }
}
