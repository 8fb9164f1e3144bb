//! Dimension-level operations: tuple names, fixing and bounding dimensions, conversions
//! between single-space and union objects, and the other small operations the scheduler
//! needs by name.

use super::{IslResult, Map, Set, UnionMap, UnionSet, Val};
use isl_rs::DimType;

/// One end of a relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The domain (isl's `in` dimensions): a dependence's source.
    Source,
    /// The range (`out` dimensions): a dependence's sink.
    Sink,
}

impl End {
    fn dim_type(self) -> DimType {
        match self {
            End::Source => DimType::In,
            End::Sink => DimType::Out,
        }
    }
}

impl Set {
    /// The set as a union set.
    pub fn to_union(&self) -> IslResult<UnionSet> {
        self.apply(isl_rs::UnionSet::from_set)
    }
    /// The set with dimension `dim` fixed to `value`.
    pub fn fix_dim(&self, dim: usize, value: i64) -> IslResult<Set> {
        let v = self
            .ctx()
            .check(isl_rs::Val::int_from_si(self.ctx().raw(), value))?;
        self.apply(|s| s.fix_val(DimType::Set, dim as u32, v))
    }
    /// The set with dimension `dim` at least `value`.
    pub fn lower_bound_dim(&self, dim: usize, value: i32) -> IslResult<Set> {
        self.apply(|s| s.lower_bound_si(DimType::Set, dim as u32, value))
    }
    /// The lowest and highest value of dimension `dim` (infinite when unbounded).
    pub fn dim_range(&self, dim: usize) -> IslResult<(Val, Val)> {
        let lo = self.apply(|s| s.dim_min_val(dim as i32))?;
        let hi = self.apply(|s| s.dim_max_val(dim as i32))?;
        Ok((lo, hi))
    }
    /// Whether the set is a box (a product of intervals).
    pub fn is_box(&self) -> IslResult<bool> {
        self.query(|s| s.is_box())
    }
    /// The names of the parameters, in order.
    pub fn param_names(&self) -> IslResult<Vec<String>> {
        let n = self.query(|s| s.dim(DimType::Param))?.max(0) as u32;
        (0..n)
            .map(|k| self.query(|s| s.get_dim_name(DimType::Param, k).map(str::to_owned)))
            .collect()
    }
    /// The parameter values for which the set is non-empty, as a set of `n` variables
    /// (the first `n` parameters).
    pub fn params_as_set(&self, n: usize) -> IslResult<Set> {
        self.apply(|s| {
            s.params()?
                .from_params()?
                .move_dims(DimType::Set, 0, DimType::Param, 0, n as u32)
        })
    }
    /// The set with every parameter projected out (exact where the parameters are fixed).
    pub fn project_out_all_params(&self) -> IslResult<Set> {
        self.apply(|s| s.project_out_all_params())
    }
    /// One point of the set, as a set (empty if the set is).
    pub fn sample(&self) -> IslResult<Set> {
        self.apply(|s| s.sample().and_then(isl_rs::Set::from_basic_set))
    }
}

impl Map {
    /// The relation as a union map.
    pub fn to_union(&self) -> IslResult<UnionMap> {
        self.apply(isl_rs::UnionMap::from_map)
    }
    /// The name of one end's tuple (empty for an anonymous tuple).
    pub fn tuple_name_of(&self, end: End) -> String {
        let dim = end.dim_type();
        // isl-rs reads a NULL name (an anonymous tuple) as a C string: ask first.
        if !self.query(|m| m.has_tuple_name(dim)).unwrap_or(false) {
            return String::new();
        }
        self.query(|m| m.get_tuple_name(dim).map(str::to_owned))
            .unwrap_or_default()
    }
    /// The number of dimensions of one end.
    pub fn n_dims(&self, end: End) -> IslResult<usize> {
        self.query(|m| m.dim(end.dim_type()))
            .map(|d| d.max(0) as usize)
    }
    /// The number of parameters.
    pub fn n_params(&self) -> IslResult<usize> {
        self.query(|m| m.dim(DimType::Param))
            .map(|d| d.max(0) as usize)
    }
    /// The relation with the parameters ordered (and completed) as in `params`'s space.
    pub fn align_params(&self, params: &Set) -> IslResult<Map> {
        let space = params.query(|p| p.get_space())?;
        self.apply(|m| m.align_params(space))
    }
    /// The relation with its existentially quantified (local) variables projected out: a
    /// superset of it, the same on the rationals, without strides or modulo constraints.
    pub fn remove_divs(&self) -> IslResult<Map> {
        self.apply(|m| m.remove_divs())
    }
    /// The relation with source dimension `dim` restricted to `lo..=hi`.
    pub fn bound_source(&self, dim: usize, lo: i64, hi: i64) -> IslResult<Map> {
        let ctx = self.ctx();
        let val = |v: i64| ctx.check(isl_rs::Val::int_from_si(ctx.raw(), v));
        let (lo, hi) = (val(lo)?, val(hi)?);
        self.apply(|m| {
            m.lower_bound_val(DimType::In, dim as u32, lo)?
                .upper_bound_val(DimType::In, dim as u32, hi)
        })
    }
}

impl UnionMap {
    /// The union map as a map (it must live in one pair of spaces).
    pub fn to_map(&self) -> IslResult<Map> {
        self.apply(isl_rs::Map::from_union_map)
    }
    /// `x -> [self(x), other(x)]`: the ranges concatenated.
    pub fn flat_range_product(&self, other: &UnionMap) -> IslResult<UnionMap> {
        self.apply2(other, |a, b| a.flat_range_product(b))
    }
    /// Each value dimension of `self` (a single-valued union map to values of one space,
    /// as a schedule's time relation) as its own union map, in order; none for an empty
    /// `self`.
    pub fn range_dims(&self) -> IslResult<Vec<UnionMap>> {
        if self.is_empty()? {
            return Ok(Vec::new());
        }
        let ctx = self.ctx();
        let mupa = ctx.check(isl_rs::MultiUnionPwAff::from_union_map(self.to_raw()))?;
        let n = ctx.check(mupa.size())?;
        (0..n)
            .map(|k| {
                let upa = ctx.check(mupa.get_at(k))?;
                let map = ctx.check(isl_rs::UnionMap::from_union_pw_aff(upa))?;
                Ok(UnionMap::from_raw(ctx, map))
            })
            .collect()
    }
    /// The relation with every parameter projected out.
    pub fn project_out_all_params(&self) -> IslResult<UnionMap> {
        self.apply(|m| m.project_out_all_params())
    }
    /// The relation simplified on the assumption that its domain lies in `domain`.
    pub fn gist_domain(&self, domain: &UnionSet) -> IslResult<UnionMap> {
        self.apply2(domain, |m, d| m.gist_domain(d))
    }
}

impl Val {
    /// The value as an integer (`None` for a rational, an infinity or NaN).
    pub fn as_i64(&self) -> IslResult<Option<i64>> {
        if self.query(|v| v.is_int())? {
            self.query(|v| v.get_num_si()).map(Some)
        } else {
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::isl::Ctx;

    #[test]
    fn range_dims_splits_a_function_into_its_dimensions() {
        let ctx = Ctx::default();
        let time = ctx
            .union_map("[n] -> { S[i] -> [0, i, 1] : 0 <= i < n; T[i, j] -> [1, j, i] }")
            .unwrap();
        let dims = time.range_dims().unwrap();
        let expected = [
            "[n] -> { S[i] -> [0] : 0 <= i < n; T[i, j] -> [1] }",
            "[n] -> { S[i] -> [i] : 0 <= i < n; T[i, j] -> [j] }",
            "[n] -> { S[i] -> [1] : 0 <= i < n; T[i, j] -> [i] }",
        ];
        assert_eq!(dims.len(), expected.len());
        for (dim, text) in dims.iter().zip(expected) {
            assert!(
                dim.is_equal(&ctx.union_map(text).unwrap()).unwrap(),
                "{dim}"
            );
        }
        let empty = time.subtract(&time).unwrap();
        assert!(empty.range_dims().unwrap().is_empty());
        // a function to zero dimensions (the prefix of an outermost band) has none
        let none = ctx
            .union_map("{ S[i] -> [] : 0 <= i < 4; T[i, j] -> [] }")
            .unwrap();
        assert!(none.range_dims().unwrap().is_empty());
    }
}
