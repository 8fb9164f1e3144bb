//! The execution order of any schedule: every statement instance, sorted by its time vector.
//!
//! A schedule comes as an isl schedule tree or as a flat union map `{ S0[i, j] -> [t0, t1] }`
//! ([`AnySchedule`]). [`AnySchedule::time_relation`] turns either into one relation from
//! the program's instances to time vectors of a common length (shorter vectors are padded
//! with zeros at the end, as isl does for trees), after checking that it only speaks of the
//! program's statements and parameters. [`execution_order`] fixes the parameters, enumerates
//! every instance with its time, and sorts the instances lexicographically by time: the
//! result feeds [`crate::interp::Interpreter::run_instances`]. Instances with equal times
//! may run in any order (they are parallel); [`Ties`] chooses one, so that tests can
//! exercise that freedom with a seeded shuffle.

use crate::isl::{End, IslError, Map, Point, Schedule, Set, UnionMap};
use crate::model::isl_text::isl_name;
use crate::model::Program;
use isl_rs::DimType;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap};

/// A schedule in either of isl's forms.
#[derive(Clone, Debug)]
pub enum AnySchedule {
    /// A schedule tree (bands, sequences, filters, marks).
    Tree(Schedule),
    /// A flat relation from statement instances to time vectors.
    Relation(UnionMap),
}

/// How instances with equal time vectors are ordered among themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ties {
    /// By statement, then by iteration vector (deterministic, but arbitrary).
    ByInstance,
    /// In a random order drawn from this seed.
    Shuffled(u64),
}

/// One statement instance to execute: the statement's index in [`Program::statements`] and
/// its iteration vector (outermost loop first).
pub type Instance = (usize, Vec<i64>);

/// Why a schedule could not be turned into an execution order.
#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    /// A domain space of the schedule names no statement.
    #[error("the schedule maps `{0}`, which is not a statement of the kernel")]
    UnknownStatement(String),
    /// A statement appears with the wrong number of iterators.
    #[error("the schedule gives statement `{tuple}` {found} iterator(s), but it has {expected}")]
    WrongArity {
        /// The statement's tuple name.
        tuple: String,
        /// Its number of iterators.
        expected: usize,
        /// The number in the schedule.
        found: usize,
    },
    /// The schedule uses a parameter the kernel does not declare.
    #[error("the schedule uses the parameter `{0}`, which the kernel does not declare")]
    UnknownParam(String),
    /// A parameter has no value, so instances cannot be enumerated.
    #[error("the parameter `{0}` needs a value to enumerate instances")]
    UnfixedParam(String),
    /// The parameter values violate the kernel's constraints.
    #[error("the parameter values {0} violate the kernel's constraints")]
    InfeasibleParams(String),
    /// Some instance has no time.
    #[error("the schedule gives no time to the instance {0}")]
    Unscheduled(String),
    /// Some instance has several times.
    #[error("the schedule gives the instance {instance} several times: {times}")]
    SeveralTimes {
        /// The instance.
        instance: String,
        /// Its times.
        times: String,
    },
    /// isl failed.
    #[error(transparent)]
    Isl(#[from] IslError),
}

impl AnySchedule {
    /// The schedule as one relation from the program's instances to time vectors of equal
    /// length (shorter ones padded with zeros), restricted to the program's domains. Every
    /// domain space must be a statement of `program` with its number of iterators, and every
    /// parameter one of the kernel's. Whether the relation is a total function on the
    /// instances is not checked here.
    pub fn time_relation(&self, program: &Program) -> Result<UnionMap, OrderError> {
        let raw = match self {
            AnySchedule::Tree(tree) => tree.map()?,
            AnySchedule::Relation(rel) => rel.clone(),
        };
        let maps = raw.maps()?;
        for map in &maps {
            check_space(program, map)?;
        }
        let len = maps
            .iter()
            .map(|m| m.query(|m| m.dim(DimType::Out)))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .max()
            .unwrap_or(0)
            .max(0) as u32;
        let mut out = program.ctx.empty_union_map()?;
        for map in &maps {
            let padded = pad_range(map, len)?;
            out = out.union(&padded.apply(isl_rs::UnionMap::from_map)?)?;
        }
        Ok(out.intersect_domain(&program.domains()?)?.coalesce()?)
    }
}

/// Checks that `map` maps instances of a statement of `program` and uses only its
/// parameters.
fn check_space(program: &Program, map: &Map) -> Result<(), OrderError> {
    let tuple = map.tuple_name_of(End::Source);
    let stmt = program
        .statement_by_tuple(&tuple)
        .ok_or_else(|| OrderError::UnknownStatement(tuple.clone()))?;
    let found = map.query(|m| m.dim(DimType::In))?.max(0) as usize;
    if found != stmt.iterators.len() {
        return Err(OrderError::WrongArity {
            tuple,
            expected: stmt.iterators.len(),
            found,
        });
    }
    let n_params = map.query(|m| m.dim(DimType::Param))?.max(0) as u32;
    for k in 0..n_params {
        let name = map.query(|m| m.get_dim_name(DimType::Param, k).map(str::to_owned))?;
        if !program
            .kernel
            .params
            .iter()
            .any(|p| isl_name(&p.name) == name)
        {
            return Err(OrderError::UnknownParam(name));
        }
    }
    Ok(())
}

/// `map` with an anonymous range of `len` dimensions, the added ones fixed to 0.
fn pad_range(map: &Map, len: u32) -> Result<Map, IslError> {
    let n = map.query(|m| m.dim(DimType::Out))?.max(0) as u32;
    map.apply(|m| {
        let mut m = m
            .reset_tuple_id(DimType::Out)?
            .add_dims(DimType::Out, len - n)?;
        for pos in n..len {
            m = m.fix_si(DimType::Out, pos, 0)?;
        }
        Ok(m)
    })
}

/// The kernel's parameter values as a parameter set: the program's context with every
/// parameter fixed, to its value in `fixed` or else in [`Program::fixed`].
pub fn fixed_params(program: &Program, fixed: &BTreeMap<String, i64>) -> Result<Set, OrderError> {
    let mut params = program.context.clone();
    for p in &program.kernel.params {
        let value = fixed
            .get(&p.name)
            .or_else(|| program.fixed.get(&p.name))
            .ok_or_else(|| OrderError::UnfixedParam(p.name.clone()))?;
        params = params.fix_param(&isl_name(&p.name), *value)?;
    }
    if params.is_empty()? {
        let vals: Vec<_> = fixed.iter().map(|(n, v)| format!("{n}={v}")).collect();
        return Err(OrderError::InfeasibleParams(vals.join(", ")));
    }
    Ok(params)
}

/// Every instance of `program` for the parameter values `fixed` (those not given there are
/// taken from [`Program::fixed`]; all must have a value), in the order of `schedule`.
/// Errors if the schedule gives some instance no time or several.
pub fn execution_order(
    program: &Program,
    schedule: &AnySchedule,
    fixed: &BTreeMap<String, i64>,
    ties: Ties,
) -> Result<Vec<Instance>, OrderError> {
    // An analysis of its own: the full budget, not what the caller's analyses left.
    let _analysis = program.ctx.analysis();
    let params = fixed_params(program, fixed)?;
    let relation = schedule.time_relation(program)?.intersect_params(&params)?;
    let times = instance_times(program, &relation)?;
    let mut rng = match ties {
        Ties::ByInstance => None,
        Ties::Shuffled(seed) => Some(ChaCha8Rng::seed_from_u64(seed)),
    };
    let mut timed: Vec<(Point, u64, Instance)> = Vec::new();
    for (k, stmt) in program.statements.iter().enumerate() {
        let mut points = stmt.domain.intersect_params(&params)?.points()?;
        points.sort();
        for point in points {
            let instance_times = times
                .get(&(k, point.clone()))
                .map_or(&[][..], Vec::as_slice);
            let time = match instance_times {
                [time] => time.clone(),
                [] => {
                    return Err(OrderError::Unscheduled(instance_text(&stmt.tuple, &point)));
                }
                several => {
                    let texts: Vec<_> = several.iter().map(|t| format!("{t:?}")).collect();
                    return Err(OrderError::SeveralTimes {
                        instance: instance_text(&stmt.tuple, &point),
                        times: texts.join(", "),
                    });
                }
            };
            let tiebreak = match rng.as_mut() {
                Some(rng) => rng.random(),
                None => timed.len() as u64,
            };
            timed.push((time, tiebreak, (k, point)));
        }
    }
    timed.sort_unstable_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    Ok(timed.into_iter().map(|(_, _, inst)| inst).collect())
}

/// The times of every instance in `relation` (whose parameters are fixed).
fn instance_times(
    program: &Program,
    relation: &UnionMap,
) -> Result<HashMap<Instance, Vec<Point>>, OrderError> {
    let mut times: HashMap<Instance, Vec<Point>> = HashMap::new();
    for map in relation.maps()? {
        let tuple = map.tuple_name_of(End::Source);
        let (k, stmt) = program
            .statements
            .iter()
            .enumerate()
            .find(|(_, s)| s.tuple == tuple)
            .ok_or_else(|| OrderError::UnknownStatement(tuple.clone()))?;
        let n = stmt.iterators.len();
        for mut pair in map.wrap()?.points()? {
            let time = pair.split_off(n);
            times.entry((k, pair)).or_default().push(time);
        }
    }
    Ok(times)
}

/// An instance in isl's notation: `S0[1, 2]`.
pub fn instance_text(tuple: &str, point: &[i64]) -> String {
    let coords: Vec<String> = point.iter().map(i64::to_string).collect();
    format!("{tuple}[{}]", coords.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    const COPY: &str = "kernel copy(A: inout f64[N], B: out f64[N]) params N = 4 {
        for i in 0..N { B[i] = A[i]; }
        for i in 0..N { A[i] = 2.0; }
    }";

    fn relation(p: &Program, text: &str) -> AnySchedule {
        AnySchedule::Relation(p.ctx.union_map(text).unwrap())
    }

    #[test]
    fn original_tree_gives_the_textual_order() {
        let p = program(COPY, &[("N", 3)]);
        let order = execution_order(
            &p,
            &AnySchedule::Tree(p.schedule.clone()),
            &BTreeMap::new(),
            Ties::ByInstance,
        )
        .unwrap();
        let expected: Vec<Instance> = (0..2)
            .flat_map(|s| (0..3).map(move |i| (s, vec![i])))
            .collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn shorter_time_vectors_are_padded_with_zeros() {
        let p = program(COPY, &[]);
        let fixed = [("N".to_string(), 2)].into();
        let s = relation(&p, "[N] -> { S0[i] -> [1, i]; S1[i] -> [1 - i] }");
        let order = execution_order(&p, &s, &fixed, Ties::ByInstance).unwrap();
        // S1[1] -> [0, 0]; S0[i] -> [1, i]; S1[0] -> [1, 0] ties with S0[0].
        assert_eq!(
            order,
            vec![(1, vec![1]), (0, vec![0]), (1, vec![0]), (0, vec![1])]
        );
    }

    #[test]
    fn shuffles_only_equal_times() {
        let p = program(COPY, &[("N", 6)]);
        let s = relation(&p, "{ S0[i] -> [0]; S1[i] -> [1] }");
        let orders: Vec<Vec<Instance>> = (0..8)
            .map(|seed| execution_order(&p, &s, &BTreeMap::new(), Ties::Shuffled(seed)).unwrap())
            .collect();
        for order in &orders {
            assert!(order[..6].iter().all(|(k, _)| *k == 0));
            assert!(order[6..].iter().all(|(k, _)| *k == 1));
        }
        assert!(orders.iter().any(|o| o != &orders[0]), "no seed shuffled");
    }

    #[test]
    fn missing_and_multiple_times_are_errors() {
        let p = program(COPY, &[("N", 3)]);
        let none = BTreeMap::new();
        let partial = relation(&p, "{ S0[i] -> [i] : i < 2; S1[i] -> [3 + i] }");
        let err = execution_order(&p, &partial, &none, Ties::ByInstance).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the schedule gives no time to the instance S0[2]"
        );
        let multi = relation(&p, "{ S0[i] -> [i]; S0[1] -> [7]; S1[i] -> [3 + i] }");
        let err = execution_order(&p, &multi, &none, Ties::ByInstance).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the schedule gives the instance S0[1] several times: [1], [7]"
        );
    }

    #[test]
    fn foreign_statements_arities_and_params_are_errors() {
        let p = program(COPY, &[("N", 3)]);
        let none = BTreeMap::new();
        let cases = [
            (
                "{ S0[i] -> [i]; S9[i] -> [i] }",
                "`S9`, which is not a statement",
            ),
            (
                "{ S0[i, j] -> [i] }",
                "gives statement `S0` 2 iterator(s), but it has 1",
            ),
            (
                "[M] -> { S0[i] -> [M] }",
                "parameter `M`, which the kernel does not",
            ),
        ];
        for (text, expected) in cases {
            let err = execution_order(&p, &relation(&p, text), &none, Ties::ByInstance)
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn every_parameter_needs_a_value() {
        let p = program(COPY, &[]);
        let s = AnySchedule::Tree(p.schedule.clone());
        let err = execution_order(&p, &s, &BTreeMap::new(), Ties::ByInstance).unwrap_err();
        assert!(matches!(err, OrderError::UnfixedParam(n) if n == "N"));
    }
}
