//! The affine form of Farkas' lemma, computed by isl.
//!
//! An affine form `c0 + cN . N + a . s + b . t` is non-negative on every pair `(s, t)` of a
//! dependence polyhedron `D` (for all parameter values `N` it allows) iff its coefficient
//! vector `(c0, cN, a, b)` lies in the Farkas dual of `D`, which `isl_set_coefficients`
//! computes with the multipliers already eliminated. A scheduler equates those coefficients
//! with affine expressions of its unknowns ([`FarkasDual::constraints`]) to get linear
//! constraints on schedule coefficients.

use crate::ilp::{Constraint, LinExpr};
use poly::isl::{End, IslError, IslResult, Map, Set};

/// The constraints on the coefficients `(c0, cN, a, b)` of the affine forms non-negative on a
/// dependence polyhedron.
#[derive(Clone, Debug)]
pub struct FarkasDual {
    n_params: usize,
    n_src: usize,
    n_dst: usize,
    /// `(k, row, equality)`: `k + row . (c0, cN, a, b) >= 0` (or `= 0`).
    rows: Vec<(i64, Vec<i64>, bool)>,
}

/// An affine form's coefficients, each an expression of a scheduler's unknowns.
#[derive(Clone, Debug, Default)]
pub struct Form {
    /// The constant term `c0`.
    pub constant: LinExpr,
    /// One coefficient per parameter (in the order of the `params` set given to
    /// [`FarkasDual::of`]); missing ones are zero.
    pub params: Vec<LinExpr>,
    /// One coefficient per source iterator.
    pub src: Vec<LinExpr>,
    /// One coefficient per sink iterator.
    pub dst: Vec<LinExpr>,
}

impl FarkasDual {
    /// The dual of the dependence `dep` (`{ S[s] -> T[t] }`), with the parameters ordered
    /// as in `params` (a parameter set, e.g. the kernel's context). For a non-convex `dep`
    /// this is the dual of its convex hull, which has exactly the same non-negative affine
    /// forms.
    ///
    /// A dependence with existentially quantified variables (a stepped loop `i = 2a`, a
    /// guard `i mod 3 = 0`) has no dual in isl: its local variables are projected out first,
    /// as isl's own scheduler does. The result is a superset of the dependence, so the forms
    /// non-negative on it are non-negative on the dependence too: schedules stay legal, and
    /// may only lose the benefit of the stride.
    pub fn of(dep: &Map, params: &Set) -> IslResult<FarkasDual> {
        let aligned = dep.remove_divs()?.align_params(params)?;
        let n_params = aligned.n_params()?;
        let n_src = aligned.n_dims(End::Source)?;
        let n_dst = aligned.n_dims(End::Sink)?;
        let dual = aligned.wrap()?.coefficients()?;
        let width = 1 + n_params + n_src + n_dst;
        let mut rows = Vec::new();
        for (row, equality) in dual.constraint_rows()? {
            if row.len() != 1 + width {
                return Err(IslError::Isl(format!(
                    "unexpected Farkas dual of {dep}: {} columns, expected {}",
                    row.len(),
                    1 + width
                )));
            }
            rows.push((row[0], row[1..].to_vec(), equality));
        }
        Ok(FarkasDual {
            n_params,
            n_src,
            n_dst,
            rows,
        })
    }

    /// The dual of `dep` as the intersection of the duals of its basic pieces: the same
    /// non-negative forms as [`FarkasDual::of`], without the convex hull isl computes for a
    /// non-convex relation (seconds on a time-stepped stencil's dependences).
    pub fn of_pieces(dep: &Map, params: &Set) -> IslResult<FarkasDual> {
        let mut pieces = dep.basic_maps()?.into_iter();
        let first = pieces
            .next()
            .ok_or_else(|| IslError::Isl(format!("the dependence {dep} is empty")))?;
        let mut dual = FarkasDual::of(&first, params)?;
        for piece in pieces {
            dual.rows.extend(FarkasDual::of(&piece, params)?.rows);
        }
        Ok(dual)
    }

    /// The constraints on the unknowns saying that `form` is non-negative on the
    /// dependence.
    pub fn constraints(&self, form: &Form) -> IslResult<Vec<Constraint>> {
        if form.params.len() > self.n_params
            || form.src.len() != self.n_src
            || form.dst.len() != self.n_dst
        {
            return Err(IslError::Isl(
                "affine form does not match the dependence's dimensions".into(),
            ));
        }
        let zero = LinExpr::default();
        let columns: Vec<&LinExpr> = std::iter::once(&form.constant)
            .chain((0..self.n_params).map(|p| form.params.get(p).unwrap_or(&zero)))
            .chain(&form.src)
            .chain(&form.dst)
            .collect();
        Ok(self
            .rows
            .iter()
            .map(|(k, row, equality)| {
                let expr = row
                    .iter()
                    .zip(&columns)
                    .fold(LinExpr::constant(i128::from(*k)), |acc, (&a, col)| {
                        acc.plus_scaled(col, i128::from(a))
                    });
                Constraint {
                    expr,
                    equality: *equality,
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ilp::Ilp;
    use poly::isl::Ctx;

    /// For `{ S[i] -> S[i + 1] : 0 <= i < N - 1 }`, the form `a*t - a*s + c*N + k` (unknowns
    /// `a, c, k`) is non-negative iff `a + c*N + k >= 0` for all `N >= 2`: the smallest
    /// `(c, a, k)` with `a >= 1` are `(0, 1, 0)`... and with `a` forced to `-1`, `k >= 1`.
    #[test]
    fn dual_gives_exact_validity_constraints() {
        let ctx = Ctx::default();
        let params = ctx.set("[N] -> { : N >= 2 }").unwrap();
        let dep = ctx
            .map("[N] -> { S[i] -> S[i + 1] : 0 <= i < N - 1 }")
            .unwrap();
        let dual = FarkasDual::of(&dep, &params).unwrap();
        let (a, c, k) = (LinExpr::var(1), LinExpr::var(0), LinExpr::var(2));
        let form = Form {
            constant: k.clone(),
            params: vec![c.clone()],
            src: vec![LinExpr::default().minus(&a)],
            dst: vec![a.clone()],
        };
        let solve = |fix_a: i128| {
            let mut ilp = Ilp::new(3);
            ilp.constraints = dual.constraints(&form).unwrap();
            ilp.push(a.clone().plus(&LinExpr::constant(-fix_a)).eq0());
            ilp.push(c.clone().ge0());
            ilp.push(k.clone().plus(&LinExpr::constant(5)).ge0());
            ilp.lexmin(&ctx).unwrap()
        };
        assert_eq!(solve(1), Some(vec![0, 1, -1]));
        assert_eq!(solve(-1), Some(vec![0, -1, 1]));
    }
}
