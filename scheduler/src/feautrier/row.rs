//! One Feautrier row: the most dependence pieces strongly satisfied, then the smallest
//! coefficients.
//!
//! Every piece `e` must satisfy `phi_T - phi_S >= x_e` (Farkas-linearised) with `x_e`
//! between 0 and 1, and the row maximises the sum of the `x_e`. The affine forms
//! non-negative on a polyhedron make a convex cone, so the problem needs no 0/1 unknowns: a
//! rational solution with `x_e > 0` scales to an integer one with `phi_T - phi_S >= 1` on
//! piece `e`, and the sum of such solutions satisfies each of their pieces at once. The
//! rational maximum therefore has `x_e = 1` exactly on the largest set of pieces any row can
//! strongly satisfy, and `0` elsewhere. Linear programs (exact, over the rationals) find that
//! set, then one integer program, with the `x_e` fixed, the smallest coefficients.

use super::unknowns::Unknowns;
use crate::affine::StmtRow;
use crate::ddg::Ddg;
use crate::farkas::FarkasDual;
use crate::ilp::{Ilp, LinExpr};
use poly::isl::{Ctx, IslError, IslResult};

/// One basic piece of a live dependence, between statements `source` and `sink` (indices
/// into the program's statements).
pub struct Edge {
    /// The source statement.
    pub source: usize,
    /// The sink statement.
    pub sink: usize,
    /// The Farkas dual of the piece.
    pub dual: FarkasDual,
}

/// The statements' shapes, as a row's integer program needs them.
pub struct Shape {
    /// The iterator count of each statement.
    pub iterators: Vec<usize>,
    /// The number of kernel parameters.
    pub n_params: usize,
}

/// The best row for these edges: it strongly satisfies as many pieces as any valid row can,
/// with the smallest coefficients; `None` if no row strongly satisfies any piece.
pub fn solve_row(ctx: &Ctx, shape: &Shape, edges: &[Edge]) -> IslResult<Option<Vec<StmtRow>>> {
    let unknowns = Unknowns::new(shape.iterators.clone(), shape.n_params, edges.len());
    let mut ilp = Ilp::new(unknowns.n_vars());
    ilp.constraints = unknowns.satisfaction_bounds();
    for (k, e) in edges.iter().enumerate() {
        ilp.constraints
            .extend(e.dual.constraints(&unknowns.delay(k, e.source, e.sink))?);
    }
    let satisfied = strongly_satisfiable(ctx, &ilp, &unknowns, shape, edges)?;
    if !satisfied.contains(&true) {
        return Ok(None);
    }
    ilp.constraints.extend(unknowns.coefficient_bounds());
    for (e, &x) in satisfied.iter().enumerate() {
        let value = LinExpr::constant(-i128::from(x));
        ilp.push(LinExpr::var(unknowns.satisfied(e)).plus(&value).eq0());
    }
    let point = ilp
        .lexmin(ctx)?
        .ok_or_else(|| IslError::Isl("a rational Feautrier row has no integer multiple".into()))?;
    Ok(Some(rows(&unknowns, shape, &point)))
}

/// The pieces a row can strongly satisfy.
///
/// A piece between two strongly connected components of the live dependence graph always
/// can: the row giving each statement the constant rank of its component in topological
/// order satisfies it strongly and every other piece weakly. The others are read off linear
/// programs, with those known pieces' `x_e` fixed to 1: with weights `2^k` on the `x_e` of a
/// block of pieces, the rational maximum is the sum of the weights of exactly the
/// satisfiable pieces (each has `x_e = 1` at the maximum, the others `0`), so its binary
/// digits name them.
fn strongly_satisfiable(
    ctx: &Ctx,
    ilp: &Ilp,
    unknowns: &Unknowns,
    shape: &Shape,
    edges: &[Edge],
) -> IslResult<Vec<bool>> {
    let graph = Ddg::new(
        shape.iterators.len(),
        edges.iter().map(|e| (e.source, e.sink)),
    );
    let mut component = vec![0; shape.iterators.len()];
    for (k, scc) in graph.sccs().iter().enumerate() {
        for &s in scc {
            component[s] = k;
        }
    }
    let mut out: Vec<bool> = edges
        .iter()
        .map(|e| component[e.source] != component[e.sink])
        .collect();
    let open: Vec<usize> = (0..edges.len()).filter(|&e| !out[e]).collect();
    if open.is_empty() {
        return Ok(out);
    }
    let mut ilp = ilp.clone();
    for e in (0..edges.len()).filter(|&e| out[e]) {
        let x = LinExpr::var(unknowns.satisfied(e));
        ilp.push(x.plus(&LinExpr::constant(-1)).eq0());
    }
    // Weights up to 2^61 keep every block's maximum within an i64.
    let blocks: Vec<&[usize]> = open.chunks(62).collect();
    let objectives: Vec<LinExpr> = blocks
        .iter()
        .map(|block| {
            block
                .iter()
                .enumerate()
                .fold(LinExpr::default(), |sum, (k, &e)| {
                    sum.plus_scaled(&LinExpr::var(unknowns.satisfied(e)), 1 << k)
                })
        })
        .collect();
    let maxima = ilp.rational_maxima(ctx, &objectives)?.ok_or_else(|| {
        IslError::Isl("no row respects the live dependences (the zero row always does)".into())
    })?;
    for (block, max) in blocks.into_iter().zip(maxima) {
        if !max.is_integer() {
            return Err(IslError::Isl(format!(
                "the satisfaction maximum {max} is not a sum of whole weights"
            )));
        }
        let bits = *max.numer();
        for (k, &e) in block.iter().enumerate() {
            out[e] = bits >> k & 1 == 1;
        }
    }
    Ok(out)
}

fn rows(unknowns: &Unknowns, shape: &Shape, point: &[i64]) -> Vec<StmtRow> {
    shape
        .iterators
        .iter()
        .enumerate()
        .map(|(s, &n)| StmtRow {
            iterators: (0..n).map(|k| point[unknowns.iterator(s, k)]).collect(),
            params: (0..shape.n_params)
                .map(|p| point[unknowns.param(s, p)])
                .collect(),
            constant: point[unknowns.constant(s)],
        })
        .collect()
}
