//! Linear integer formulas: the one language every mapping condition is written in.
//!
//! A [`Query`] is an existential question, "is there an integer assignment of these
//! variables satisfying these facts?", asked so that a solution is a counterexample. Terms
//! are affine ([`Lin`]); `floor(e / c)` and `e mod c` by positive constants introduce a
//! fresh variable and two inequalities, so the facts stay linear and mean the same thing to
//! Z3 ([`super::smt`]) and to isl ([`super::presburger`]), which decide them independently.

use std::collections::BTreeMap;

/// An affine integer term: `sum(coeff * var) + constant` over a query's variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lin {
    /// Nonzero coefficients by variable index.
    pub coeffs: BTreeMap<usize, i64>,
    /// The constant.
    pub constant: i64,
}

impl Lin {
    /// The constant `c`.
    pub fn constant(c: i64) -> Lin {
        Lin {
            coeffs: BTreeMap::new(),
            constant: c,
        }
    }
    /// The variable with index `v`.
    pub fn var(v: usize) -> Lin {
        Lin {
            coeffs: BTreeMap::from([(v, 1)]),
            constant: 0,
        }
    }
    /// `self + other`.
    pub fn add(&self, other: &Lin) -> Lin {
        let mut out = self.clone();
        for (&v, &c) in &other.coeffs {
            let e = out.coeffs.entry(v).or_insert(0);
            *e += c;
            if *e == 0 {
                out.coeffs.remove(&v);
            }
        }
        out.constant += other.constant;
        out
    }
    /// `self - other`.
    pub fn sub(&self, other: &Lin) -> Lin {
        self.add(&other.scale(-1))
    }
    /// `k * self`.
    pub fn scale(&self, k: i64) -> Lin {
        if k == 0 {
            return Lin::constant(0);
        }
        Lin {
            coeffs: self.coeffs.iter().map(|(&v, &c)| (v, c * k)).collect(),
            constant: self.constant * k,
        }
    }
    /// `self + k`.
    pub fn plus(&self, k: i64) -> Lin {
        let mut out = self.clone();
        out.constant += k;
        out
    }
    /// The value if the term has no variables.
    pub fn as_constant(&self) -> Option<i64> {
        self.coeffs.is_empty().then_some(self.constant)
    }
    /// The term's value under an assignment of every variable, in `i128` so that checking
    /// a solver's model cannot overflow.
    pub fn eval(&self, values: &[i64]) -> i128 {
        (self.coeffs.iter())
            .map(|(&v, &c)| c as i128 * values[v] as i128)
            .sum::<i128>()
            + self.constant as i128
    }
    /// `self == other`.
    pub fn eq(&self, other: &Lin) -> Formula {
        Formula::Atom(Atom::Eq0(self.sub(other)))
    }
    /// `self >= other`.
    pub fn ge(&self, other: &Lin) -> Formula {
        Formula::Atom(Atom::Ge0(self.sub(other)))
    }
    /// `self <= other`.
    pub fn le(&self, other: &Lin) -> Formula {
        other.ge(self)
    }
    /// `self < other`.
    pub fn lt(&self, other: &Lin) -> Formula {
        other.ge(&self.plus(1))
    }
    /// `self > other`.
    pub fn gt(&self, other: &Lin) -> Formula {
        self.ge(&other.plus(1))
    }
    /// `self != other`, as `self < other or self > other`.
    pub fn ne(&self, other: &Lin) -> Formula {
        Formula::Or(vec![self.lt(other), self.gt(other)])
    }
}

/// An atomic constraint on one term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Atom {
    /// The term is at least zero.
    Ge0(Lin),
    /// The term is zero.
    Eq0(Lin),
}

/// A quantifier-free formula over linear atoms (negation has been pushed into the atoms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Formula {
    /// An atom.
    Atom(Atom),
    /// All of them hold (true when empty).
    And(Vec<Formula>),
    /// One of them holds (false when empty).
    Or(Vec<Formula>),
}

impl Formula {
    /// The formula that always holds.
    pub fn truth() -> Formula {
        Formula::And(Vec::new())
    }
    /// The formula that never holds.
    pub fn falsity() -> Formula {
        Formula::Or(Vec::new())
    }
    /// Whether it holds under an assignment of every variable.
    pub fn holds(&self, values: &[i64]) -> bool {
        match self {
            Formula::Atom(Atom::Ge0(t)) => t.eval(values) >= 0,
            Formula::Atom(Atom::Eq0(t)) => t.eval(values) == 0,
            Formula::And(fs) => fs.iter().all(|f| f.holds(values)),
            Formula::Or(fs) => fs.iter().any(|f| f.holds(values)),
        }
    }
}

/// What a query variable stands for (how a counterexample names it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarInfo {
    /// A readable name, unique in the query (`n`, `n'`, `t_i1`, ...).
    pub name: String,
    /// Whether the variable was introduced to express a division (not shown to users).
    pub auxiliary: bool,
}

/// An existential question over integers: is there an assignment satisfying every fact?
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// The variables, indexed by position.
    pub vars: Vec<VarInfo>,
    /// The facts, all of which must hold.
    pub facts: Vec<Formula>,
}

impl Query {
    /// A new named variable.
    pub fn fresh(&mut self, name: impl Into<String>) -> Lin {
        self.vars.push(VarInfo {
            name: name.into(),
            auxiliary: false,
        });
        Lin::var(self.vars.len() - 1)
    }
    /// A new auxiliary variable (a quotient or a chosen minimum).
    fn aux(&mut self) -> Lin {
        let k = self.vars.len();
        self.vars.push(VarInfo {
            name: format!("_q{k}"),
            auxiliary: true,
        });
        Lin::var(k)
    }
    /// Adds a fact.
    pub fn assert(&mut self, f: Formula) {
        self.facts.push(f);
    }
    /// `floor(e / c)` for `c > 0` (a constant term stays constant).
    pub fn floor_div(&mut self, e: &Lin, c: i64) -> Lin {
        assert!(c > 0, "division by a non-positive constant");
        if c == 1 {
            return e.clone();
        }
        if let Some(k) = e.as_constant() {
            return Lin::constant(k.div_euclid(c));
        }
        let q = self.aux();
        let cq = q.scale(c);
        self.assert(cq.le(e));
        self.assert(e.le(&cq.plus(c - 1)));
        q
    }
    /// `e mod c` in `[0, c)` for `c > 0`.
    pub fn modulo(&mut self, e: &Lin, c: i64) -> Lin {
        let q = self.floor_div(e, c);
        e.sub(&q.scale(c))
    }
    /// `ceil(e / c)` for `c > 0`.
    pub fn ceil_div(&mut self, e: &Lin, c: i64) -> Lin {
        self.floor_div(&e.plus(c - 1), c)
    }
    /// `min(a, b)`.
    pub fn min(&mut self, a: &Lin, b: &Lin) -> Lin {
        let m = self.aux();
        self.assert(m.le(a));
        self.assert(m.le(b));
        self.assert(Formula::Or(vec![m.eq(a), m.eq(b)]));
        m
    }
    /// `max(a, b)`.
    pub fn max(&mut self, a: &Lin, b: &Lin) -> Lin {
        let m = self.aux();
        self.assert(m.ge(a));
        self.assert(m.ge(b));
        self.assert(Formula::Or(vec![m.eq(a), m.eq(b)]));
        m
    }
    /// Whether an assignment satisfies every fact (used to check solvers' models).
    pub fn satisfied_by(&self, values: &[i64]) -> bool {
        values.len() == self.vars.len() && self.facts.iter().all(|f| f.holds(values))
    }
}

/// A solver's answer to a [`Query`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// No assignment exists: the property the query negates is proved.
    Empty,
    /// This assignment (one value per variable) satisfies the facts.
    Witness(Vec<i64>),
    /// The solver gave up (time limit, budget); never read as a proof.
    Unknown(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_and_modulo_are_floor_semantics() {
        for (e, c) in [(7, 3), (-7, 3), (0, 5), (15, 16), (-1, 16)] {
            let mut q = Query::default();
            let x = q.fresh("x");
            let d = q.floor_div(&x, c);
            let m = q.modulo(&x, c);
            q.assert(x.eq(&Lin::constant(e)));
            // brute-force the auxiliary variables: exactly one assignment satisfies the facts
            let sols: Vec<(i64, i64)> = (-20..20)
                .flat_map(|a| (-20..20).map(move |b| (a, b)))
                .filter(|&(a, b)| q.satisfied_by(&[e, a, b]))
                .collect();
            assert_eq!(sols.len(), 1, "{e} / {c}");
            let vals = [e, sols[0].0, sols[0].1];
            assert_eq!(d.eval(&vals), e.div_euclid(c) as i128);
            assert_eq!(m.eval(&vals), e.rem_euclid(c) as i128);
        }
    }
}
