//! Concrete witnesses: the smallest parameter values for which a (parametric) set has a point,
//! its lexicographically smallest point for them, and relations evaluated at such a point.

use super::report::{Instance, ParamValues};
use poly::isl::{IslError, IslResult, Point, Set, UnionMap, UnionSet};
use poly::model::Program;

/// A point of a set for concrete parameter values.
pub(crate) struct Witness {
    /// The parameter values, by isl name, in the order of the program's context.
    pub params: ParamValues,
    /// The same values as a parameter set (to fix other relations' parameters).
    pub fixed: Set,
    /// The lexicographically smallest point of the set for those values.
    pub point: Point,
}

/// The smallest parameter values (lexicographically, non-negative when possible) for which
/// `set` has a point within the program's context, and its smallest point for them. `None`
/// if the set is empty.
pub(crate) fn smallest(program: &Program, set: &Set) -> IslResult<Option<Witness>> {
    let set = set.intersect_params(&program.context)?;
    if set.is_empty()? {
        return Ok(None);
    }
    let names = set.param_names()?;
    let values = smallest_params(&set, names.len())?;
    let mut fixed = set.params()?;
    let mut at = set;
    for (name, value) in names.iter().zip(&values) {
        fixed = fixed.fix_param(name, *value)?;
        at = at.fix_param(name, *value)?;
    }
    let point = at.lexmin()?.points()?.into_iter().next().ok_or_else(|| {
        IslError::Isl("a non-empty set has no smallest point for its smallest parameters".into())
    })?;
    Ok(Some(Witness {
        params: names.into_iter().zip(values).collect(),
        fixed,
        point,
    }))
}

/// The lexicographically smallest non-negative parameter values for which the (non-empty)
/// `set` has a point; any values if only negative ones do.
fn smallest_params(set: &Set, n: usize) -> IslResult<Vec<i64>> {
    let as_vars = set.params_as_set(n)?;
    let mut non_negative = as_vars.clone();
    for k in 0..n {
        non_negative = non_negative.lower_bound_dim(k, 0)?;
    }
    let chosen = if non_negative.is_empty()? {
        as_vars.sample()?
    } else {
        non_negative.lexmin()?
    };
    chosen.points()?.into_iter().next().ok_or_else(|| {
        IslError::Isl("the parameters of a non-empty set have no smallest value".into())
    })
}

/// The instance of the statement named by `tuple` at `point`, as a union set.
pub(crate) fn instance_set(program: &Program, instance: &Instance) -> IslResult<UnionSet> {
    program.ctx.union_set(&format!("{{ {instance} }}"))
}

/// At most this many points of an image are listed (a malformed schedule can give an
/// instance unboundedly many times).
pub(crate) const IMAGE_POINTS: usize = 16;

/// The image of `instance` by `relation` (with the parameters in `fixed`): each set of the
/// image's spaces, as (tuple name, its points; at most [`IMAGE_POINTS`] of them).
pub(crate) fn image(
    program: &Program,
    relation: &UnionMap,
    instance: &Instance,
    fixed: &Set,
) -> IslResult<Vec<(String, Vec<Point>)>> {
    let range = relation
        .intersect_params(fixed)?
        .intersect_domain(&instance_set(program, instance)?)?
        .range()?;
    let mut out = Vec::new();
    for set in range.sets()? {
        let mut points = set.points_up_to(IMAGE_POINTS)?;
        points.sort();
        out.push((set.tuple_name().unwrap_or_default(), points));
    }
    out.sort();
    Ok(out)
}

/// The instance at the start of `point` (the statement's iterators) and the rest.
pub(crate) fn split_instance(program: &Program, tuple: &str, point: &[i64]) -> (Instance, Point) {
    let n = program
        .statement_by_tuple(tuple)
        .map_or(point.len(), |s| s.iterators.len());
    let instance = Instance {
        tuple: tuple.to_owned(),
        point: point[..n].to_vec(),
    };
    (instance, point[n..].to_vec())
}
