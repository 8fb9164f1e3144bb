//! One hyperplane for one group of statements: an integer program over the schedule
//! coefficients built from the Farkas duals of the group's dependences.

use super::heuristic::Heuristic;
use super::independence::orthogonal_complement;
use super::layout::{Layout, StmtVars};
use super::row::{BandDep, RowIlp, View};
use crate::affine::StmtRow;
use crate::farkas::Form;
use crate::ilp::{LinExpr, Memo};
use crate::problem::ScheduleError;
use poly::isl::Ctx;

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
    /// The heuristic.
    pub heuristic: &'a dyn Heuristic,
    /// Bound on the magnitude of iterator coefficients.
    pub max_coefficient: i64,
    /// Number of kernel parameters.
    pub n_params: usize,
    /// The integer programs solved so far in this scheduling.
    pub memo: &'a Memo,
}

/// The best hyperplane for `members` under the heuristic, respecting the first of `deps`
/// (all between members) weakly and independent of each member's earlier hyperplanes where
/// it needs more, the second (those whose distances an objective bounds,
/// [`RowIlp::reuse_dependences`]) given to the heuristic;
/// `orientation` (1 or -1) picks the orthant of the independence constraints. With `carry`,
/// that dependence (between members; one of `deps` or a piece of one) must be satisfied
/// strongly: a distance of at least 1 on every instance. `None` if there is none.
pub fn find(
    settings: &Settings<'_>,
    view: View<'_>,
    members: &[Member<'_>],
    (deps, reuse): (&[&BandDep], &[&BandDep]),
    orientation: i64,
    carry: Option<&BandDep>,
) -> Result<Option<Vec<(usize, StmtRow)>>, ScheduleError> {
    let shapes: Vec<(usize, usize)> = members.iter().map(|m| (m.stmt, m.n_iters)).collect();
    let layout = Layout::new(settings.n_params, &shapes);
    let mut row = RowIlp::new(view, &layout, deps, reuse);
    let bound = LinExpr::constant(i128::from(settings.max_coefficient));
    for s in &layout.stmts {
        for v in s.parts() {
            row.constrain(LinExpr::var(v).ge0());
            row.constrain(bound.clone().minus(&LinExpr::var(v)).ge0());
        }
        row.constrain(LinExpr::var(s.shift()).ge0());
    }
    for &dep in deps {
        let distance = row.distance(dep);
        row.require(dep, &distance)?;
    }
    if let Some(carried) = carry {
        let distance = row.distance(carried);
        let strong = Form {
            constant: distance.constant.clone().minus(&LinExpr::constant(1)),
            ..distance
        };
        row.require(carried, &strong)?;
    }
    for (m, s) in members.iter().zip(&layout.stmts) {
        if m.needs_more {
            add_independence(&mut row, s, m.found, orientation);
        }
    }
    let terms = settings.heuristic.hyperplane(&mut row)?;
    let Some(x) = settings.memo.lexmin(&row.into_ilp(&terms), settings.ctx)? else {
        return Ok(None);
    };
    let x = &x[terms.len()..];
    let value = |e: &LinExpr| e.eval(x) as i64;
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

/// The new hyperplane of `s` must not be a combination of `found`: it must lie in one
/// orthant of their orthogonal complement (with no earlier hyperplane, of the whole space),
/// not on its origin.
fn add_independence(ilp: &mut RowIlp<'_>, s: &StmtVars, found: &[Vec<i64>], orientation: i64) {
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
        ilp.constrain(p.clone().ge0());
    }
    ilp.constrain(
        LinExpr::sum(&projections)
            .minus(&LinExpr::constant(1))
            .ge0(),
    );
}
