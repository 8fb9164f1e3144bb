//! Small integer linear programs over named-less unknowns `x0, x1, ...`, solved exactly by
//! isl's lexicographic minimum (parametric integer programming, no floating point).

use isl_rs::{DimType, LibISLError, Mat, Space, Val};
use libc::uintptr_t;
use poly::isl::{BasicSet, Ctx, IslError, IslResult, RawIsl, Set};

/// A linear expression `sum(coeff * x_var) + constant` (sparse; coefficients in `i128` so
/// that combining the small coefficients of schedules and Farkas duals cannot overflow).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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

    /// The value at a point.
    pub fn eval(&self, x: &[i64]) -> i128 {
        self.terms
            .iter()
            .map(|&(v, c)| c * i128::from(x[v]))
            .sum::<i128>()
            + self.constant
    }
}

/// `expr >= 0` or `expr = 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    /// The expression.
    pub expr: LinExpr,
    /// Whether it must be zero (else non-negative).
    pub equality: bool,
}

/// A system of linear constraints over `n_vars` integer unknowns.
#[derive(Clone, Debug, Default)]
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

    /// The lexicographically smallest integer solution `(x0, x1, ...)`, or `None` if there is
    /// none. Every unknown must be bounded below on the solutions (else isl reports an
    /// error).
    pub fn lexmin(&self, ctx: &Ctx) -> IslResult<Option<Vec<i64>>> {
        let min = partial_lexmin(&self.to_basic_set(ctx)?)?;
        if min.is_empty()? {
            return Ok(None);
        }
        match min.points()?.as_slice() {
            [p] => Ok(Some(p.clone())),
            _ => Err(IslError::Isl(
                "the lexicographic minimum is unbounded (an unknown has no lower bound)".into(),
            )),
        }
    }

    /// The system as an isl basic set, built from its constraint matrices (no text: isl's
    /// parser intersects constraint by constraint, which costs more than the solve).
    pub fn to_basic_set(&self, ctx: &Ctx) -> IslResult<BasicSet> {
        let raw = ctx.raw();
        let matrix = |equality: bool| -> IslResult<Mat> {
            let rows: Vec<&Constraint> = self
                .constraints
                .iter()
                .filter(|c| c.equality == equality)
                .collect();
            let cols = 1 + self.n_vars;
            let mut mat = ctx.check(Mat::alloc(raw, 0, cols as u32))?;
            mat = ctx.check(mat.add_zero_rows(rows.len() as u32))?;
            for (r, c) in rows.iter().enumerate() {
                let entries = std::iter::once((0, c.expr.constant))
                    .chain(c.expr.terms.iter().map(|&(v, k)| (1 + v, k)));
                for (col, k) in entries.filter(|&(_, k)| k != 0) {
                    mat = set_entry(ctx, mat, r, col, k)?;
                }
            }
            Ok(mat)
        };
        let space = ctx.check(Space::set_alloc(raw, 0, self.n_vars as u32))?;
        let (eq, ineq) = (matrix(true)?, matrix(false)?);
        let set = ctx.check(isl_rs::BasicSet::from_constraint_matrices(
            space,
            eq,
            ineq,
            DimType::Cst,
            DimType::Set,
            DimType::Param,
            DimType::Div,
        ))?;
        Ok(BasicSet::from_raw(ctx, set))
    }
}

unsafe extern "C" {
    fn isl_basic_set_partial_lexmin(
        bset: uintptr_t,
        dom: uintptr_t,
        empty: *mut uintptr_t,
    ) -> uintptr_t;
}

/// The lexicographic minimum of `set` over the universe of its (zero) parameters.
///
/// `isl_basic_set_lexmin` would first compute the set's parameter domain by eliminating
/// every unknown (Fourier-Motzkin), which explodes on the hundreds of constraints of a
/// fused hyperplane search; given that domain (the universe), isl goes straight to its
/// parametric integer programming. isl-rs does not bind the function.
fn partial_lexmin(set: &BasicSet) -> IslResult<Set> {
    let ctx = set.ctx();
    let raw = ctx.raw();
    let params = ctx.check(Space::params_alloc(raw, 0))?;
    let universe = ctx.check(isl_rs::BasicSet::universe(params))?;
    // SAFETY: both arguments are new owned references (`__isl_take`); a null `empty` asks
    // for no empty set; the result is owned and handed to a wrapper, which frees it.
    let min = unsafe {
        isl_basic_set_partial_lexmin(set.to_ptr(), universe.into_ptr(), std::ptr::null_mut())
    };
    if min == 0 {
        let err = LibISLError::new(raw.last_error(), raw.last_error_msg());
        raw.reset_error();
        return ctx.check(Err(err));
    }
    Ok(Set::from_raw(ctx, isl_rs::Set::from_ptr(min)))
}

/// `mat[row][col] = k`, or an error if `k` does not fit isl's machine-integer setters.
fn set_entry(ctx: &Ctx, mat: Mat, row: usize, col: usize, k: i128) -> IslResult<Mat> {
    let (row, col) = (row as i32, col as i32);
    if let Ok(small) = i32::try_from(k) {
        return ctx.check(mat.set_element_si(row, col, small));
    }
    let big = i64::try_from(k)
        .map_err(|_| IslError::Isl(format!("integer program coefficient {k} overflows")))?;
    let val = ctx.check(Val::int_from_si(ctx.raw(), big))?;
    ctx.check(mat.set_element_val(row, col, val))
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
    fn infeasible_and_unbounded_systems() {
        let ctx = Ctx::default();
        let mut ilp = Ilp::new(1);
        ilp.push(LinExpr::var(0).plus(&LinExpr::constant(-1)).eq0());
        ilp.push(LinExpr::constant(0).minus(&LinExpr::var(0)).ge0());
        assert_eq!(ilp.lexmin(&ctx).unwrap(), None);
        assert!(Ilp::new(1).lexmin(&ctx).is_err());
    }
}
