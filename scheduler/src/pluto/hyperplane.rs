//! One hyperplane for one group of statements: an integer program over the schedule
//! coefficients built from the Farkas duals of the group's dependences.

use super::independence::orthogonal_complement;
use super::layout::{Layout, StmtVars};
use super::objective::{Objective, Vars};
use crate::affine::StmtRow;
use crate::farkas::{FarkasDual, Form};
use crate::ilp::{Ilp, LinExpr, Memo};
use poly::isl::{Ctx, IslResult};

/// A dependence between two statements, as the band's hyperplanes must respect it.
pub struct BandDep {
    /// Source statement.
    pub src: usize,
    /// Sink statement.
    pub dst: usize,
    /// The Farkas dual of its polyhedron.
    pub dual: FarkasDual,
}

/// One statement of the group.
#[derive(Clone, Copy)]
pub struct Member<'a> {
    /// Index into `Program::statements`.
    pub stmt: usize,
    /// Its number of iterators.
    pub n_iters: usize,
    /// The iterator coefficients of its loop hyperplanes so far.
    pub found: &'a [Vec<i64>],
    /// Whether it still needs a linearly independent hyperplane.
    pub needs_more: bool,
}

/// The search's fixed settings.
pub struct Settings<'a> {
    /// The isl context.
    pub ctx: &'a Ctx,
    /// The objective.
    pub objective: &'a dyn Objective,
    /// Bound on the magnitude of iterator coefficients.
    pub max_coefficient: i64,
    /// Number of kernel parameters.
    pub n_params: usize,
    /// The integer programs solved so far in this scheduling.
    pub memo: &'a Memo,
}

/// The best hyperplane for `members` respecting `deps` (all between members) weakly, with
/// the bounding function over them, and independent of each member's earlier hyperplanes
/// where it needs more; `orientation` (1 or -1) picks the orthant of the independence
/// constraints. With `carry`, that dependence (one of `deps`) must be satisfied strongly: a
/// distance of at least 1 on every instance. `None` if there is none.
pub fn find(
    settings: &Settings<'_>,
    members: &[Member<'_>],
    deps: &[&BandDep],
    orientation: i64,
    carry: Option<&BandDep>,
) -> IslResult<Option<Vec<(usize, StmtRow)>>> {
    let shapes: Vec<(usize, usize)> = members.iter().map(|m| (m.stmt, m.n_iters)).collect();
    let provisional = Layout::new(0, settings.n_params, &shapes);
    let n_terms = settings
        .objective
        .terms(&Vars {
            layout: &provisional,
        })
        .len();
    let layout = Layout::new(n_terms, settings.n_params, &shapes);
    let terms = settings.objective.terms(&Vars { layout: &layout });
    let mut ilp = Ilp::new(layout.n_vars());
    for (k, term) in terms.iter().enumerate() {
        ilp.push(LinExpr::var(layout.term(k)).minus(term).eq0());
    }
    for p in 0..settings.n_params {
        ilp.push(LinExpr::var(layout.u(p)).ge0());
    }
    ilp.push(LinExpr::var(layout.w()).ge0());
    let bound = LinExpr::constant(i128::from(settings.max_coefficient));
    for s in &layout.stmts {
        for v in s.parts() {
            ilp.push(LinExpr::var(v).ge0());
            ilp.push(bound.clone().minus(&LinExpr::var(v)).ge0());
        }
        ilp.push(LinExpr::var(s.shift()).ge0());
    }
    for dep in deps {
        let (Some(src), Some(dst)) = (layout.stmt(dep.src), layout.stmt(dep.dst)) else {
            continue;
        };
        let distance = distance_form(src, dst);
        if carry.is_some_and(|c| std::ptr::eq(c, *dep)) {
            let strong = Form {
                constant: distance.constant.clone().minus(&LinExpr::constant(1)),
                ..distance.clone()
            };
            ilp.constraints.extend(dep.dual.constraints(&strong)?);
        }
        ilp.constraints.extend(dep.dual.constraints(&distance)?);
        let bounding = Form {
            constant: LinExpr::var(layout.w()).minus(&distance.constant),
            params: (0..settings.n_params)
                .map(|p| LinExpr::var(layout.u(p)))
                .collect(),
            src: negated(&distance.src),
            dst: negated(&distance.dst),
        };
        ilp.constraints.extend(dep.dual.constraints(&bounding)?);
    }
    for (m, s) in members.iter().zip(&layout.stmts) {
        if m.needs_more {
            add_independence(&mut ilp, s, m.found, orientation);
        }
    }
    let Some(x) = settings.memo.lexmin(&ilp, settings.ctx)? else {
        return Ok(None);
    };
    let value = |e: &LinExpr| e.eval(&x) as i64;
    Ok(Some(
        layout
            .stmts
            .iter()
            .map(|s| {
                let row = StmtRow {
                    iterators: (0..s.n_iters).map(|j| value(&s.coefficient(j))).collect(),
                    params: vec![0; settings.n_params],
                    constant: x[s.shift()],
                };
                (s.stmt, row)
            })
            .collect(),
    ))
}

/// `phi_T(t) - phi_S(s)` as an affine form of `(s, t)`.
fn distance_form(src: &StmtVars, dst: &StmtVars) -> Form {
    let shift = |s: &StmtVars| LinExpr::var(s.shift());
    Form {
        constant: shift(dst).minus(&shift(src)),
        params: Vec::new(),
        src: (0..src.n_iters)
            .map(|j| LinExpr::default().minus(&src.coefficient(j)))
            .collect(),
        dst: (0..dst.n_iters).map(|j| dst.coefficient(j)).collect(),
    }
}

fn negated(exprs: &[LinExpr]) -> Vec<LinExpr> {
    exprs.iter().map(|e| LinExpr::default().minus(e)).collect()
}

/// The new hyperplane of `s` must not be a combination of `found`: it must lie in one
/// orthant of their orthogonal complement (with no earlier hyperplane, of the whole space),
/// not on its origin.
fn add_independence(ilp: &mut Ilp, s: &StmtVars, found: &[Vec<i64>], orientation: i64) {
    let projections: Vec<LinExpr> = orthogonal_complement(found, s.n_iters)
        .iter()
        .map(|v| {
            v.iter()
                .enumerate()
                .fold(LinExpr::default(), |acc, (j, &vj)| {
                    acc.plus_scaled(&s.coefficient(j), i128::from(vj * orientation))
                })
        })
        .collect();
    for p in &projections {
        ilp.push(p.clone().ge0());
    }
    ilp.push(
        LinExpr::sum(&projections)
            .minus(&LinExpr::constant(1))
            .ge0(),
    );
}
