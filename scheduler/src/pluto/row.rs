//! What a [`super::Heuristic`] sees of the search and of the integer program of the next
//! hyperplane: the rows so far, the dependences and their satisfaction (read-only, [`View`]),
//! and the program's unknowns, to which it adds its own unknowns and constraints
//! ([`RowIlp`]).

use super::layout::{Layout, StmtVars};
use crate::affine::{Row, RowKind};
use crate::farkas::{FarkasDual, Form};
use crate::ilp::{Constraint, Ilp, LinExpr};
use crate::problem::FusePolicy;
use poly::isl::{IslResult, Map, UnionMap};
use poly::model::Program;

/// The search so far, read-only.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub(super) program: &'a Program,
    pub(super) rows: &'a [Row],
    pub(super) band_start: usize,
    pub(super) live: &'a UnionMap,
    pub(super) fuse: FusePolicy,
}

impl<'a> View<'a> {
    /// The program being scheduled (statements with domains, accesses, iterators).
    pub fn program(&self) -> &'a Program {
        self.program
    }
    /// The number of rows found so far, loop and scalar: the depth of the next row.
    pub fn depth(&self) -> usize {
        self.rows.len()
    }
    /// The rows found so far, outermost first, each with every statement's function.
    pub fn rows(&self) -> &'a [Row] {
        self.rows
    }
    /// The rows of the band being built (loop rows, permutable together).
    pub fn band_rows(&self) -> &'a [Row] {
        &self.rows[self.band_start.min(self.rows.len())..]
    }
    /// Whether each row of the band being built is parallel: no dependence live at that
    /// row has a non-zero distance on it (the coincidence of [`RowKind::Loop`]).
    pub fn parallel_members(&self) -> Vec<bool> {
        (self.band_rows().iter())
            .map(|r| matches!(r.kind, RowKind::Loop { coincident: true }))
            .collect()
    }
    /// The iterator coefficients of the loop rows of statement `stmt` so far (its earlier
    /// hyperplanes; a row on which it is constant gives zeros).
    pub fn hyperplanes(&self, stmt: usize) -> Vec<Vec<i64>> {
        (self.rows.iter())
            .filter(|r| matches!(r.kind, RowKind::Loop { .. }))
            .map(|r| r.stmts[stmt].iterators.clone())
            .collect()
    }
    /// The dependence instances no row so far orders (the source and the sink have equal
    /// values on every row): what the rest of the schedule must still order.
    pub fn live(&self) -> &'a UnionMap {
        self.live
    }
    /// The fusion policy of this run (`smart` runs the search twice: fused, then with
    /// [`FusePolicy::None`], and keeps the one with more parallel loops).
    pub fn fuse(&self) -> FusePolicy {
        self.fuse
    }
}

/// A dependence the next hyperplane must respect: the instances of one pair of accesses
/// not ordered by an earlier band (the band's hyperplanes keep a non-negative distance on
/// all of them, which makes the band permutable).
pub struct BandDep {
    /// Source statement (index into `Program::statements`).
    pub src: usize,
    /// Sink statement.
    pub dst: usize,
    /// Its instances, `S[s] -> T[t]`.
    pub relation: Map,
    /// The Farkas dual of its polyhedron.
    pub dual: FarkasDual,
}

/// How much of a [`BandDep`] the rows of the band so far order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Satisfaction {
    /// Every instance (strongly satisfied: carried by an earlier row of the band).
    Satisfied,
    /// Some instances.
    Partly,
    /// None.
    Unsatisfied,
}

/// The integer program of the next hyperplane of a group of statements, as a heuristic
/// extends it.
///
/// The search has already constrained the hyperplane `phi_S(i) = sum_j c_Sj i_j + k_S` of
/// each statement `S` of the group: iterator coefficients in `-B..=B` (the coefficient
/// bound), shifts `k_S >= 0`, validity (a non-negative distance on every [`BandDep`]) and
/// linear independence from the statement's earlier hyperplanes where it needs more. A
/// heuristic adds its unknowns and constraints and returns the terms to minimise; the
/// minimum is exact (isl's integer lexicographic minimum). Every unknown is an integer.
pub struct RowIlp<'a> {
    view: View<'a>,
    layout: &'a Layout,
    deps: &'a [&'a BandDep],
    reuse: &'a [&'a BandDep],
    ilp: Ilp,
}

impl<'a> RowIlp<'a> {
    /// The program over `layout`'s unknowns for the group's dependences `deps` and those
    /// whose distances an objective bounds, `reuse`, unconstrained.
    pub(super) fn new(
        view: View<'a>,
        layout: &'a Layout,
        deps: &'a [&'a BandDep],
        reuse: &'a [&'a BandDep],
    ) -> Self {
        RowIlp {
            view,
            layout,
            deps,
            reuse,
            ilp: Ilp::new(layout.n_vars()),
        }
    }
    /// The search so far.
    pub fn view(&self) -> View<'a> {
        self.view
    }
    /// The statements of the group (indices into `Program::statements`).
    pub fn statements(&self) -> impl Iterator<Item = usize> + 'a {
        self.layout.stmts.iter().map(|s| s.stmt)
    }
    /// The number of iterators of statement `stmt` (0 if it is not in the group).
    pub fn n_iterators(&self, stmt: usize) -> usize {
        self.layout.stmt(stmt).map_or(0, |s| s.n_iters)
    }
    /// The number of kernel parameters.
    pub fn n_params(&self) -> usize {
        self.layout.n_params
    }
    /// The coefficient `c_Sj` of iterator `j` of statement `stmt` (may be negative; 0 for
    /// a statement not in the group).
    pub fn coefficient(&self, stmt: usize, j: usize) -> LinExpr {
        self.stmt_expr(stmt, |s| s.coefficient(j))
    }
    /// `|c_Sj|` (exact at the minimum when minimised, as Pluto's objective does).
    pub fn magnitude(&self, stmt: usize, j: usize) -> LinExpr {
        self.stmt_expr(stmt, |s| s.magnitude(j))
    }
    /// The shift `k_S` of statement `stmt`.
    pub fn shift(&self, stmt: usize) -> LinExpr {
        self.stmt_expr(stmt, |s| LinExpr::var(s.shift()))
    }
    /// The sum of the magnitudes of every coefficient of every statement of the group.
    pub fn total_magnitude(&self) -> LinExpr {
        let all: Vec<LinExpr> = (self.layout.stmts.iter())
            .flat_map(|s| (0..s.n_iters).map(|j| s.magnitude(j)))
            .collect();
        LinExpr::sum(&all)
    }
    fn stmt_expr(&self, stmt: usize, f: impl Fn(&StmtVars) -> LinExpr) -> LinExpr {
        self.layout.stmt(stmt).map_or_else(LinExpr::default, f)
    }
    /// The dependences within the group the hyperplane respects.
    pub fn dependences(&self) -> &'a [&'a BandDep] {
        self.deps
    }
    /// The dependences within the group whose distances an objective bounds (Pluto's
    /// [`super::bounding_function`]): [`RowIlp::dependences`] by default; under `--rar`
    /// ([`crate::Options::rar`]) the input (read-after-read) dependences and the
    /// non-transitive part of the others ([`crate::Problem::reuse`]) instead, each not yet
    /// ordered by an earlier band. The hyperplane need not respect the input ones.
    pub fn reuse_dependences(&self) -> &'a [&'a BandDep] {
        self.reuse
    }
    /// How much of `dep` the rows of the band so far order (one isl query).
    pub fn satisfaction(&self, dep: &BandDep) -> IslResult<Satisfaction> {
        let all = dep.relation.to_union()?;
        let live = self.view.live.intersect(&all)?;
        Ok(if live.is_empty()? {
            Satisfaction::Satisfied
        } else if live.is_equal(&all)? {
            Satisfaction::Unsatisfied
        } else {
            Satisfaction::Partly
        })
    }
    /// A new integer unknown in `lower..=upper` (no upper bound with `None`); it comes
    /// after the hyperplane's unknowns in the order in which ties are broken.
    pub fn new_var(&mut self, lower: i64, upper: Option<i64>) -> LinExpr {
        let v = LinExpr::var(self.ilp.n_vars);
        self.ilp.n_vars += 1;
        let at_least = v.clone().minus(&LinExpr::constant(lower.into()));
        self.ilp.push(at_least.ge0());
        if let Some(upper) = upper {
            self.ilp
                .push(LinExpr::constant(upper.into()).minus(&v).ge0());
        }
        v
    }
    /// A new 0/1 unknown (an integer in `0..=1`).
    pub fn new_binary(&mut self) -> LinExpr {
        self.new_var(0, Some(1))
    }
    /// Adds a linear constraint over the unknowns (`expr.ge0()`, `expr.eq0()`).
    pub fn constrain(&mut self, constraint: Constraint) {
        self.ilp.push(constraint);
    }
    /// The distance `phi_T(t) - phi_S(s)` of `dep` (from `S` to `T`) as an affine form of
    /// the instances `(s, t)` whose coefficients are expressions of the unknowns; add to its
    /// `constant` or its coefficients to build other forms for [`RowIlp::require`].
    pub fn distance(&self, dep: &BandDep) -> Form {
        Form {
            constant: self.shift(dep.dst).minus(&self.shift(dep.src)),
            params: Vec::new(),
            src: (0..self.n_iterators(dep.src))
                .map(|j| LinExpr::default().minus(&self.coefficient(dep.src, j)))
                .collect(),
            dst: (0..self.n_iterators(dep.dst))
                .map(|j| self.coefficient(dep.dst, j))
                .collect(),
        }
    }
    /// Requires `form` to be non-negative on every instance of `dep` (for every parameter
    /// value), linearised exactly with Farkas' lemma (its dual's constraints on the form's
    /// coefficients).
    pub fn require(&mut self, dep: &BandDep, form: &Form) -> IslResult<()> {
        self.ilp.constraints.extend(dep.dual.constraints(form)?);
        Ok(())
    }
    /// The program with the terms to minimise first.
    pub(super) fn into_ilp(self, terms: &[LinExpr]) -> Ilp {
        self.ilp.with_terms_first(terms)
    }
}
