//! Farkas-linearised dependence constraints on the schedule coefficients.
//!
//! For a dependence piece `P` from `S[i]` to `T[j]` (parameters `N`), the affine form
//! `phi_T(j) - phi_S(i) - x` is non-negative on all of `P` exactly when its coefficients
//! lie in the Farkas dual of `P` (`isl_set_coefficients`). The dual is computed by isl over
//! `[c_cst, c_N..., c_i..., c_j...]`; this module writes the coefficients of the form in
//! terms of the unknowns and keeps the unknown vectors whose image lies in the dual.

use super::unknowns::Unknowns;
use poly::isl::{IslResult, Map, Set};

/// One basic piece of a live dependence, between statements `source` and `sink` (indices
/// into the program's statements).
pub struct Edge {
    /// The source statement.
    pub source: usize,
    /// The sink statement.
    pub sink: usize,
    /// The dependence piece, parameters in kernel order.
    pub relation: Map,
}

/// The unknown vectors for which `phi_sink - phi_source >= x_edge` on every pair of the
/// edge (`edge` indexes the edge's satisfaction variable).
pub fn constraint(unknowns: &Unknowns, edge: usize, e: &Edge) -> IslResult<Set> {
    let dual = e.relation.wrap()?.coefficients()?.apply(|b| b.flatten())?;
    // The dual is a rational set; the same inequalities over the integers are what we need.
    let text = dual.to_string().replacen("rat: ", "", 1);
    let dual = dual.ctx().set(&text)?;
    let (s, t) = (e.source, e.sink);
    let mut image = vec![format!(
        "{} - {} - {}",
        unknowns.constant(t),
        unknowns.constant(s),
        unknowns.satisfied(edge)
    )];
    for p in 0..unknowns.n_params() {
        image.push(format!(
            "{} - {}",
            unknowns.param(t, p),
            unknowns.param(s, p)
        ));
    }
    for k in 0..unknowns.n_iterators(s) {
        image.push(format!("-{}", unknowns.iterator(s, k)));
    }
    for k in 0..unknowns.n_iterators(t) {
        image.push(unknowns.iterator(t, k));
    }
    let map = dual.ctx().map(&format!(
        "{{ [{}] -> [{}] }}",
        unknowns.names().join(", "),
        image.join(", ")
    ))?;
    map.intersect_range(&dual)?.domain()
}
