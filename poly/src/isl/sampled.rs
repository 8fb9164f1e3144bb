//! The lexicographic minimum of an integer set found coordinate by coordinate with isl's
//! sampling: the way out when isl's parametric integer programming runs long (see
//! [`BasicSet::partial_lexmin`]).
//!
//! isl's integer lexicographic minimum adds cuts to a simplex tableau until the rational
//! minimum is integer. On some sets it never gets there: on a hyperplane search of fuzz
//! seed 7022 (31 unknowns, 189 constraints) the tableau grew past 8,000 rows in 25 s and
//! kept growing. isl's sampling (generalised basis reduction) finds an integer point of the
//! same set in milliseconds, and a minimum is a sequence of such questions: for each
//! coordinate in turn, with the earlier ones fixed at their minima, the smallest value that
//! still has an integer point, found by bisection between the linear-programming bound
//! (below) and the best point found so far (above).

use super::lp::LpMax;
use super::{BasicSet, IslError, IslResult};
use isl_rs::{DimType, Val};
use num_rational::Rational64;

impl BasicSet {
    /// The lexicographic minimum of the set's integer points by sampling (see the module
    /// documentation), `None` if there are none. Every unknown must be bounded below.
    pub(super) fn sampled_lexmin(&self) -> IslResult<Option<Vec<i64>>> {
        let Some(mut best) = self.sample()? else {
            return Ok(None);
        };
        let mut set = self.clone();
        for k in 0..best.len() {
            let (mut low, mut high) = (set.lowest(k)?, best[k]);
            while low < high {
                let middle = low + (high - low) / 2;
                match set.with_bound(k, middle, Bound::Upper)?.sample()? {
                    Some(point) => {
                        high = point[k];
                        best = point;
                    }
                    None => low = middle + 1,
                }
            }
            set = set.with_bound(k, high, Bound::Fixed)?;
        }
        Ok(Some(best))
    }

    /// An integer point of the set, `None` if it has none.
    fn sample(&self) -> IslResult<Option<Vec<i64>>> {
        let ctx = self.ctx();
        let point = self.query(|b| b.copy())?;
        let point = ctx.check(point.sample_point())?;
        if ctx.check(point.is_void())? {
            return Ok(None);
        }
        let n = self.query(|b| b.dim(DimType::Set))?.max(0);
        (0..n)
            .map(|k| {
                let v = ctx.check(point.get_coordinate_val(DimType::Set, k))?;
                // isl reports a value beyond 64 bits as an error.
                ctx.check(v.get_num_si())
            })
            .collect::<IslResult<Vec<i64>>>()
            .map(Some)
    }

    /// The smallest integer value of unknown `k` that the set's rational points allow.
    fn lowest(&self, k: usize) -> IslResult<i64> {
        match self.max_lp((0, &[(k, -1)]))? {
            LpMax::Max(negated) => Ok((-negated).ceil().to_integer()),
            LpMax::Unbounded => Err(IslError::Isl(
                "the lexicographic minimum is unbounded (an unknown has no lower bound)".into(),
            )),
            LpMax::Infeasible => Err(IslError::Isl(
                "a set with an integer point has no rational point".into(),
            )),
        }
    }

    /// The set with unknown `k` bounded above by `value`, or fixed to it.
    fn with_bound(&self, k: usize, value: i64, bound: Bound) -> IslResult<BasicSet> {
        let ctx = self.ctx();
        let v = ctx.check(Val::int_from_si(ctx.raw(), value))?;
        let pos = k as u32;
        match bound {
            Bound::Upper => self.apply(|b| b.upper_bound_val(DimType::Set, pos, v)),
            Bound::Fixed => self.apply(|b| b.fix_val(DimType::Set, pos, v)),
        }
    }
}

/// How [`BasicSet::with_bound`] bounds an unknown.
#[derive(Clone, Copy)]
enum Bound {
    /// At most the value.
    Upper,
    /// Equal to it.
    Fixed,
}

/// The minimum as [`BasicSet::partial_lexmin`] gives it.
pub(super) fn as_rationals(point: Vec<i64>) -> Vec<Rational64> {
    point.into_iter().map(Rational64::from_integer).collect()
}

#[cfg(test)]
mod tests {
    use crate::isl::{BasicSet, Ctx, IslError};
    use num_rational::Rational64;
    use proptest::prelude::*;

    /// The integer program of one of Pluto's hyperplanes on fuzz seed 7022 under `--fuse
    /// max`, presolved as `scheduler::ilp` gives it to isl (31 unknowns, 189 constraints),
    /// whose minimum isl's cuts do not reach: a line `program N` (the number of unknowns),
    /// then one constraint per line, `>=` or `=` (`0` on the right), its constant and terms
    /// `kxv` (`k` times unknown `v`).
    const SEED_7022_ROW: &str = include_str!("testdata/seed-7022-row.txt");

    /// Constraint rows that own their terms.
    type OwnedRows = Vec<(i128, Vec<(usize, i128)>)>;

    fn read_program(ctx: &Ctx, text: &str) -> BasicSet {
        let mut lines = text.lines();
        let n: usize = lines.next().unwrap()["program ".len()..].parse().unwrap();
        let mut rows: [OwnedRows; 2] = Default::default();
        for line in lines {
            let mut words = line.split(' ');
            let equality = words.next() == Some("=");
            let constant = words.next().unwrap().parse().unwrap();
            let terms = words
                .map(|t| {
                    let (k, v) = t.split_once('x').unwrap();
                    (v.parse().unwrap(), k.parse().unwrap())
                })
                .collect();
            rows[usize::from(equality)].push((constant, terms));
        }
        let [inequalities, equalities] = rows.each_ref().map(|rows| {
            rows.iter()
                .map(|(c, t)| (*c, t.as_slice()))
                .collect::<Vec<_>>()
        });
        BasicSet::from_rows(ctx, n, &equalities, &inequalities).unwrap()
    }

    #[test]
    fn a_minimum_that_isl_s_cuts_do_not_reach_is_sampled() {
        let ctx = Ctx::default();
        let set = read_program(&ctx, SEED_7022_ROW);
        let pip = {
            let _capped = ctx.capped(ctx.budget() / super::super::lp::PIP_SHARE);
            set.pip_lexmin()
        };
        assert!(matches!(pip, Err(IslError::OperationLimit(_))), "{pip:?}");
        let min = set.partial_lexmin().unwrap().unwrap();
        let expected = [
            1, 0, 6, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0,
            1, 0,
        ];
        assert_eq!(min, expected.map(Rational64::from));
        // isl's integer programming reaches the same minimum on the set as isl prints it
        // (simplified: some constraints combined, unknowns with stride equalities).
        let printed: BasicSet = ctx.read(&set.to_string()).unwrap();
        assert_eq!(printed.pip_lexmin().unwrap(), Some(min));
    }

    /// A small integer program: every unknown within `[-4, 4]`, and `rows` (constant, then
    /// one coefficient per unknown) as inequalities `>= 0`, the first as an equality if
    /// `equality`.
    fn program(ctx: &Ctx, n: usize, rows: &[Vec<i128>], equality: bool) -> BasicSet {
        let terms: OwnedRows = rows
            .iter()
            .map(|r| (r[0], r[1..=n].iter().copied().enumerate().collect()))
            .chain((0..n).flat_map(|v| [(4, vec![(v, 1)]), (4, vec![(v, -1)])]))
            .collect();
        let rows: Vec<(i128, &[(usize, i128)])> =
            terms.iter().map(|(c, t)| (*c, t.as_slice())).collect();
        let split = usize::from(equality && !rows.is_empty() && !rows[0].1.is_empty());
        BasicSet::from_rows(ctx, n, &rows[..split], &rows[split..]).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Sampling finds the minimum that isl's integer programming finds, or that there
        /// is none.
        #[test]
        fn the_sampled_minimum_is_isl_s(
            n in 1usize..5,
            rows in prop::collection::vec(prop::collection::vec(-3i128..=3, 5), 0..6),
            equality in any::<bool>(),
        ) {
            let ctx = Ctx::default();
            let set = program(&ctx, n, &rows, equality);
            let isl = set.pip_lexmin().unwrap();
            let sampled = set.sampled_lexmin().unwrap();
            prop_assert_eq!(sampled.map(super::as_rationals), isl.clone());
            if let Some(min) = isl {
                prop_assert!(min.iter().all(Rational64::is_integer));
            }
        }
    }
}
