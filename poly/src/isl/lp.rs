//! Integer and linear programs on basic sets: built from constraint rows (no text: isl's
//! parser intersects constraint by constraint, which costs more than the solve), solved
//! exactly, and read back as constraint rows (the Farkas duals of the schedulers).

use super::{ffi, sampled, BasicSet, Ctx, IslError, IslResult, Obj, Set};
use isl_rs::{Aff, DimType, LibISLError, Mat, PwMultiAff, Space};
use num_rational::Rational64;
use std::cell::RefCell;
use std::collections::HashMap;

/// One affine constraint or objective over unknowns `x0, x1, ...`:
/// `constant + sum of k * x_var` for each `(var, k)` of `terms`.
pub type Row<'a> = (i128, &'a [(usize, i128)]);

/// The share of the budget that isl's integer programming gets for one
/// [`BasicSet::partial_lexmin`]: a thirtieth, 100,000 operations of the default budget,
/// about 0.3 s of a tableau growing with cuts on this project's machine. The largest
/// minima of PolyBench's kernels take 57,601 operations (Feautrier's schedule of deriche),
/// of the random programs of `polyc fuzz-schedules --count 100` 4,836.
pub(super) const PIP_SHARE: u64 = 30;

/// The maximum of a linear program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LpMax {
    /// No rational point satisfies the constraints.
    Infeasible,
    /// The objective grows without bound.
    Unbounded,
    /// The maximum.
    Max(Rational64),
}

impl BasicSet {
    /// The set of rational points `x` of `n_vars` unknowns with every row of `equalities`
    /// `= 0` and every row of `inequalities` `>= 0` (no parameters).
    pub fn from_rows(
        ctx: &Ctx,
        n_vars: usize,
        equalities: &[Row<'_>],
        inequalities: &[Row<'_>],
    ) -> IslResult<BasicSet> {
        let raw = ctx.raw();
        let matrix = |rows: &[Row<'_>]| -> IslResult<Mat> {
            let mut mat = ctx.check(Mat::alloc(raw, 0, 1 + n_vars as u32))?;
            mat = ctx.check(mat.add_zero_rows(rows.len() as u32))?;
            for (r, &(constant, terms)) in rows.iter().enumerate() {
                let entries =
                    std::iter::once((0, constant)).chain(terms.iter().map(|&(v, k)| (1 + v, k)));
                for (col, k) in entries.filter(|&(_, k)| k != 0) {
                    mat = set_entry(ctx, mat, r, col, k)?;
                }
            }
            Ok(mat)
        };
        let space = ctx.check(Space::set_alloc(raw, 0, n_vars as u32))?;
        let (eq, ineq) = (matrix(equalities)?, matrix(inequalities)?);
        let set = ctx.check(isl_rs::BasicSet::from_constraint_matrices(
            space,
            eq,
            ineq,
            DimType::Cst,
            DimType::Set,
            DimType::Param,
            DimType::Div,
        ))?;
        Ok(Obj::from_raw(ctx, set))
    }

    /// The maximum of `objective` over the set's rational points (exact arithmetic).
    pub fn max_lp(&self, objective: Row<'_>) -> IslResult<LpMax> {
        let ctx = self.ctx();
        let raw = ctx.raw();
        let int = |k: i128| -> IslResult<isl_rs::Val> {
            let k = i64::try_from(k)
                .map_err(|_| IslError::Isl(format!("objective coefficient {k} overflows")))?;
            ctx.check(isl_rs::Val::int_from_si(raw, k))
        };
        let n = self.query(|b| b.dim(DimType::Set))?.max(0) as u32;
        let space = ctx.check(Space::set_alloc(raw, 0, n))?;
        let mut aff = ctx.check(Aff::zero_on_domain_space(space))?;
        aff = ctx.check(aff.set_constant_val(int(objective.0)?))?;
        for &(var, k) in objective.1 {
            aff = ctx.check(aff.set_coefficient_val(DimType::In, var as i32, int(k)?))?;
        }
        let max = self.query(|b| b.max_lp_val(&aff))?;
        if ctx.check(max.is_nan())? {
            return Ok(LpMax::Infeasible);
        }
        if !ctx.check(max.is_rat())? {
            return Ok(LpMax::Unbounded);
        }
        Ok(LpMax::Max(Rational64::new(
            ctx.check(max.get_num_si())?,
            ctx.check(max.get_den_si())?,
        )))
    }

    /// The lexicographic minimum of the set's integer points (the set has no parameters),
    /// `None` if it has none. Every unknown must be bounded below.
    ///
    /// `isl_basic_set_lexmin` would first compute the set's parameter domain by eliminating
    /// every unknown (Fourier-Motzkin), which explodes on the hundreds of constraints of a
    /// fused hyperplane search; given that domain (the universe), isl goes straight to its
    /// parametric integer programming. The minimum is read from isl's piecewise affine
    /// answer (constants), not by scanning a set for its points.
    ///
    /// That integer programming gets a share of the budget (a thirtieth, `PIP_SHARE`); beyond it,
    /// where its cuts grow the tableau without end (fuzz seed 7022), the minimum is found
    /// coordinate by coordinate by isl's sampling instead (see `sampled.rs`), in what is
    /// left of the budget.
    ///
    /// An empty answer is confirmed by isl's emptiness test, which samples the set by other
    /// means: isl 0.27's integer programming once called a non-empty set empty
    /// (`the_minimum_ignores_the_order_of_the_constraints` below, and `vendor/README.md`).
    /// If the two disagree, the answer is an error, never a wrong "empty".
    pub fn partial_lexmin(&self) -> IslResult<Option<Vec<Rational64>>> {
        let ctx = self.ctx();
        let pip = {
            let _capped = ctx.capped((ctx.budget() / PIP_SHARE).max(1));
            self.pip_lexmin()
        };
        match pip {
            Ok(Some(min)) => Ok(Some(min)),
            Ok(None) => match self.query(|b| b.is_empty())? {
                true => Ok(None),
                false => Err(IslError::Isl(format!(
                    "isl's integer programming finds no point in a set that has one: {self}"
                ))),
            },
            Err(IslError::OperationLimit(_)) => {
                Ok(self.sampled_lexmin()?.map(sampled::as_rationals))
            }
            Err(e) => Err(e),
        }
    }

    /// isl's answer to [`BasicSet::partial_lexmin`], unchecked.
    pub(super) fn pip_lexmin(&self) -> IslResult<Option<Vec<Rational64>>> {
        let ctx = self.ctx();
        let raw = ctx.raw();
        let params = ctx.check(Space::params_alloc(raw, 0))?;
        let universe = ctx.check(isl_rs::BasicSet::universe(params))?;
        // SAFETY: both arguments are new owned references (`__isl_take`); a null `empty`
        // asks for no empty set; the result is owned by the wrapper, which frees it.
        let min = unsafe {
            ffi::isl_basic_set_partial_lexmin_pw_multi_aff(
                self.to_ptr(),
                super::RawIsl::into_ptr(universe),
                std::ptr::null_mut(),
            )
        };
        if min == 0 {
            let err = LibISLError::new(raw.last_error(), raw.last_error_msg());
            raw.reset_error();
            return ctx.check(Err(err));
        }
        let min = PwMultiAff {
            ptr: min,
            should_free_on_drop: true,
        };
        match ctx.check(min.n_piece())? {
            0 => return Ok(None),
            1 => {}
            _ => {
                return Err(IslError::Isl(
                    "the lexicographic minimum of a parameterless set has several pieces".into(),
                ))
            }
        }
        let values = ctx.check(ctx.check(min.as_multi_aff())?.get_constant_multi_val())?;
        (0..ctx.check(values.size())?)
            .map(|k| {
                let v = ctx.check(values.get_at(k))?;
                if !ctx.check(v.is_rat())? {
                    return Err(IslError::Isl(
                        "the lexicographic minimum is unbounded (an unknown has no lower bound)"
                            .into(),
                    ));
                }
                Ok(Rational64::new(
                    ctx.check(v.get_num_si())?,
                    ctx.check(v.get_den_si())?,
                ))
            })
            .collect::<IslResult<Vec<Rational64>>>()
            .map(Some)
    }

    /// The constraints as rows `[constant, coefficient of each set dimension, of each
    /// parameter]`, each with whether it is an equality (`= 0`) or an inequality (`>= 0`).
    /// An error if the set has local (existential) variables.
    pub fn constraint_rows(&self) -> IslResult<Vec<(Vec<i64>, bool)>> {
        let width = {
            let d = |t| self.query(|b| b.dim(t)).map(|n| n.max(0) as usize);
            if d(DimType::Div)? > 0 {
                return Err(IslError::Isl(format!(
                    "{self} has local variables: no constraint rows"
                )));
            }
            1 + d(DimType::Set)? + d(DimType::Param)?
        };
        let mut rows = Vec::new();
        for equality in [true, false] {
            let mat = self.query(|b| {
                let order = (DimType::Cst, DimType::Set, DimType::Param, DimType::Div);
                if equality {
                    b.equalities_matrix(order.0, order.1, order.2, order.3)
                } else {
                    b.inequalities_matrix(order.0, order.1, order.2, order.3)
                }
            })?;
            let (n_rows, n_cols) = self.query(|_| Ok((mat.rows()?, mat.cols()?)))?;
            if n_cols as usize != width {
                return Err(IslError::Isl(format!(
                    "constraint matrix of {self}: {n_cols} columns, expected {width}"
                )));
            }
            for r in 0..n_rows {
                let row = (0..n_cols)
                    .map(|c| self.query(|_| mat.get_element_val(r, c)?.get_num_si()))
                    .collect::<IslResult<Vec<i64>>>()?;
                rows.push((row, equality));
            }
        }
        Ok(rows)
    }
}

impl Set {
    /// The Farkas dual: the set of coefficient vectors `(c0, c)` of affine forms
    /// `c0 + c.x` non-negative on every point of the set (`isl_set_coefficients`).
    ///
    /// Answers are kept by the context (`DualMemo`): asked again about the same set, it
    /// gives the same answer without computing it.
    pub fn coefficients(&self) -> IslResult<BasicSet> {
        let ctx = self.ctx();
        let key = self.to_string();
        if let Some(known) = ctx.inner.duals.0.borrow().get(&key) {
            return Ok(Obj::from_raw(ctx, ctx.check(known.copy())?));
        }
        let dual = self.apply(|s| s.coefficients())?;
        (ctx.inner.duals.0.borrow_mut()).insert(key, dual.to_raw());
        Ok(dual)
    }
}

/// The Farkas duals computed in one context, by the isl text of the set (the same text is
/// the same set). The schedulers dualise each piece of each dependence again for every row,
/// band and scheduler (Pluto and Feautrier the same pieces): four in five of the duals
/// `polyc fuzz-schedules` asked for had been computed before, a fifth of its time.
#[derive(Default)]
pub(crate) struct DualMemo(RefCell<HashMap<String, isl_rs::BasicSet>>);

/// `mat[row][col] = k`, or an error if `k` does not fit isl's machine-integer setters.
fn set_entry(ctx: &Ctx, mat: Mat, row: usize, col: usize, k: i128) -> IslResult<Mat> {
    let (row, col) = (row as i32, col as i32);
    if let Ok(small) = i32::try_from(k) {
        return ctx.check(mat.set_element_si(row, col, small));
    }
    let big = i64::try_from(k)
        .map_err(|_| IslError::Isl(format!("integer program coefficient {k} overflows")))?;
    let val = ctx.check(isl_rs::Val::int_from_si(ctx.raw(), big))?;
    ctx.check(mat.set_element_val(row, col, val))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_program_is_solved_exactly() {
        let ctx = Ctx::default();
        // x0 + x1 >= 3, x0 >= 0, x1 >= 1, 2 x0 - x1 = 0 (so x1 = 2 x0).
        let set = BasicSet::from_rows(
            &ctx,
            2,
            &[(0, &[(0, 2), (1, -1)])],
            &[(-3, &[(0, 1), (1, 1)]), (0, &[(0, 1)]), (-1, &[(1, 1)])],
        )
        .unwrap();
        // The rational minimum: x0 = 1, x1 = 2.
        let min = set.partial_lexmin().unwrap().unwrap();
        assert_eq!(min, vec![Rational64::from(1), Rational64::from(2)]);
        // max -x0 (x0 >= 1): -1; max x0: unbounded.
        assert_eq!(
            set.max_lp((0, &[(0, -1)])).unwrap(),
            LpMax::Max((-1).into())
        );
        assert_eq!(set.max_lp((0, &[(0, 1)])).unwrap(), LpMax::Unbounded);
        let empty = BasicSet::from_rows(&ctx, 1, &[], &[(-1, &[(0, -1)]), (0, &[(0, 1)])]).unwrap();
        assert_eq!(empty.partial_lexmin().unwrap(), None);
        assert_eq!(empty.max_lp((0, &[])).unwrap(), LpMax::Infeasible);
    }

    /// Unpatched, isl 0.27's integer programming called this set empty with its constraints in
    /// this order (isl 0.25 finds the minimum, and so does 0.27 with them reversed): it
    /// assumed them sorted (`vendor/README.md`). Shrunk from the row of Feautrier's scheduler
    /// on `tests/fuzz/regressions/seed-1646.pk`.
    #[test]
    fn the_minimum_ignores_the_order_of_the_constraints() {
        let ctx = Ctx::default();
        let mut inequalities: Vec<(i128, Vec<(usize, i128)>)> = vec![
            (-1, vec![(1, -1), (3, -4), (4, 4), (5, -1), (7, 1)]),
            (0, vec![(1, 1)]),
            (-1, vec![(1, 3), (5, 1), (6, -1)]),
            (-1, vec![(5, -1), (6, 1)]),
        ];
        for v in 0..8 {
            inequalities.extend([(2, vec![(v, 1)]), (2, vec![(v, -1)])]);
        }
        let rows: Vec<Row<'_>> = inequalities
            .iter()
            .map(|(c, t)| (*c, t.as_slice()))
            .collect();
        // 2 x0 + x1 - 2 x2 = 0
        let set = BasicSet::from_rows(&ctx, 8, &[(0, &[(0, 2), (1, 1), (2, -2)])], &rows).unwrap();
        let expected: Vec<Rational64> = [-2, 2, -1, -2, -2, -2, -1, 1].map(Rational64::from).into();
        // isl's own answer (the patched isl), and the checked one
        assert_eq!(set.pip_lexmin().unwrap(), Some(expected.clone()));
        assert_eq!(set.partial_lexmin().unwrap(), Some(expected));
    }

    #[test]
    fn constraint_rows_read_back_what_was_built() {
        let ctx = Ctx::default();
        let set = ctx.set("[n] -> { [x] : 0 <= x <= n }").unwrap();
        let dual = set.coefficients().unwrap();
        let rows = dual.constraint_rows().unwrap();
        // Columns: constant, then the dual's set dimensions (c0, c_n, c_x), no parameters.
        assert!(rows.iter().all(|(r, _)| r.len() == 4), "{rows:?}");
        assert!(!rows.is_empty());
    }
}
