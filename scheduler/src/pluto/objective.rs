//! What the hyperplane search minimises: a pluggable, lexicographically ordered list of
//! linear terms over the unknowns of one hyperplane.

use crate::ilp::LinExpr;

/// The unknowns of one hyperplane search, as seen by an [`Objective`].
///
/// For each statement `S` of the component being scheduled, the hyperplane is
/// `phi_S(i) = sum_j coefficient(S, j) * i_j + shift(S)`; over every dependence `e` the
/// bounding function `u . N + w` bounds the dependence distance (`u` one unknown per
/// parameter). All of them are integers; `u`, `w`, the shifts and the magnitudes are
/// non-negative.
pub struct Vars<'a> {
    pub(super) layout: &'a super::layout::Layout,
}

impl Vars<'_> {
    /// The statements (indices into `Program::statements`) of the component.
    pub fn statements(&self) -> impl Iterator<Item = usize> + '_ {
        self.layout.stmts.iter().map(|s| s.stmt)
    }
    /// The number of iterators of statement `stmt` (0 if it is not in the component).
    pub fn n_iterators(&self, stmt: usize) -> usize {
        self.layout.stmt(stmt).map_or(0, |s| s.n_iters)
    }
    /// The number of kernel parameters.
    pub fn n_params(&self) -> usize {
        self.layout.n_params
    }
    /// `u_p`, the bound's coefficient of parameter `p`.
    pub fn param_bound(&self, p: usize) -> LinExpr {
        LinExpr::var(self.layout.u(p))
    }
    /// `w`, the bound's constant.
    pub fn constant_bound(&self) -> LinExpr {
        LinExpr::var(self.layout.w())
    }
    /// The coefficient of iterator `j` of statement `stmt` (may be negative).
    pub fn coefficient(&self, stmt: usize, j: usize) -> LinExpr {
        self.layout
            .stmt(stmt)
            .map_or_else(LinExpr::default, |s| s.coefficient(j))
    }
    /// The absolute value of that coefficient.
    pub fn magnitude(&self, stmt: usize, j: usize) -> LinExpr {
        self.layout
            .stmt(stmt)
            .map_or_else(LinExpr::default, |s| s.magnitude(j))
    }
    /// The constant shift of statement `stmt`.
    pub fn shift(&self, stmt: usize) -> LinExpr {
        self.layout
            .stmt(stmt)
            .map_or_else(LinExpr::default, |s| LinExpr::var(s.shift()))
    }
    /// The sum of the magnitudes of every coefficient of every statement.
    pub fn total_magnitude(&self) -> LinExpr {
        let all: Vec<LinExpr> = self
            .layout
            .stmts
            .iter()
            .flat_map(|s| (0..s.n_iters).map(|j| s.magnitude(j)))
            .collect();
        LinExpr::sum(&all)
    }
}

/// A hyperplane objective: terms minimised lexicographically (the first as much as
/// possible, then the second, ...). Each term must be bounded below on the hyperplanes
/// (any combination of bounds, shifts and magnitudes with non-negative weights is).
///
/// After the terms, ties are broken by the unknowns themselves: for each statement in
/// order, its coefficients from the innermost iterator outwards (so that an outer original
/// loop is preferred), then its shift.
pub trait Objective {
    /// The terms, most important first.
    fn terms(&self, vars: &Vars<'_>) -> Vec<LinExpr>;
}

/// Pluto's objective: the bounding function `u . N + w` first (`u` in parameter order,
/// then `w`), which prefers hyperplanes with small dependence distances (`0`: a parallel
/// loop; bounded by a constant: tilable with good reuse), then the sum of the coefficients'
/// magnitudes (simple hyperplanes).
#[derive(Clone, Copy, Debug, Default)]
pub struct PlutoObjective;

impl Objective for PlutoObjective {
    fn terms(&self, vars: &Vars<'_>) -> Vec<LinExpr> {
        (0..vars.n_params())
            .map(|p| vars.param_bound(p))
            .chain([vars.constant_bound(), vars.total_magnitude()])
            .collect()
    }
}

/// Any closure from the unknowns to the terms is an objective.
impl<F: Fn(&Vars<'_>) -> Vec<LinExpr>> Objective for F {
    fn terms(&self, vars: &Vars<'_>) -> Vec<LinExpr> {
        self(vars)
    }
}
