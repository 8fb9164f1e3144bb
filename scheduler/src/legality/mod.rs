//! The legality checker: does a schedule respect the program's dependences, and if not,
//! which pair of instances shows it?
//!
//! [`check`] verifies, for a schedule tree or a flat union map ([`AnySchedule`]):
//! 1. the schedule gives every instance of the program exactly one time
//!    ([`Violation::Unscheduled`], [`Violation::SeveralTimes`]; when either is found the
//!    dependence rules are not checked, since times are then not meaningful);
//! 2. every dependence of validity goes forward: with the flat time relation `T`,
//!    `{ s -> t in deps : T(t) <=lex T(s) }` is empty ([`Rule::Order`], telling the first
//!    dimension where the time vectors differ or that they are equal);
//! 3. for trees, every band member marked coincident (a parallel loop) carries no
//!    dependence: distance 0 for every dependence whose instances have equal outer times
//!    (outer bands and the outer members of the same band) ([`Rule::Parallel`]). All
//!    dependences count here, reduction ones too even when reductions may be reordered:
//!    reordering a reduction is not running its updates at once;
//! 4. for trees, every permutable band of several members is permutable: every member has
//!    a non-negative distance for every dependence whose instances have equal times at the
//!    outer bands ([`Rule::Permutable`]).
//!
//! Each violation is reported once per rule (and band member), dependence kind and pair of
//! statements, with a concrete witness: the smallest parameter values (non-negative when
//! possible) for which one exists, the lexicographically smallest violating pair of
//! instances for them, the array element both access, and their time vectors.

mod bands;
mod injective;
pub mod input;
mod report;
pub mod syntax;
pub mod tree_order;
mod witness;

pub use injective::{collision, Collision};
pub use report::{
    BandMember, DepViolation, Element, Flip, Instance, ParamValues, Report, Rule, Violation,
};

use crate::Options;
use poly::deps::{DepKind, Dependences};
use poly::isl::{End, IslError, IslResult, Map, PairOrder, Point, Set, UnionMap};
use poly::model::Program;
use poly::order::{AnySchedule, OrderError};
use witness::{image, smallest, split_instance};

/// Why the check could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The schedule does not fit the program (foreign statements, wrong arity, unknown
    /// parameters).
    #[error(transparent)]
    Schedule(#[from] OrderError),
    /// isl failed (including running out of its operation budget).
    #[error(transparent)]
    Isl(#[from] IslError),
}

/// Checks `schedule` against the dependences of `program` (all of them, or all but the
/// reduction ones with `options.reorder_reductions`).
pub fn check(
    program: &Program,
    deps: &Dependences,
    schedule: &AnySchedule,
    options: &Options,
) -> Result<Report, CheckError> {
    let _analysis = program.ctx.analysis();
    let facts = Facts {
        program,
        time: schedule.time_relation(program)?,
        reads: program.reads()?,
        writes: program.writes()?,
    };
    let mut violations = facts.structural_violations()?;
    if violations.is_empty() {
        let validity = deps.validity(options.reorder_reductions)?;
        let by_kind = DepKind::ALL
            .iter()
            .map(|&k| Ok((k, deps.constraining(k)?.intersect(&validity)?)))
            .collect::<IslResult<Vec<_>>>()?;
        let all_by_kind: Vec<_> = DepKind::ALL
            .iter()
            .map(|&k| (k, deps.of_kind(k).clone()))
            .collect();
        // Each rule is decided once on the union of the kinds; only violated rules are
        // sorted by kind (a pair's verdict does not depend on its kind).
        let backwards = {
            let _analysis = program.ctx.analysis();
            facts.not_after(&validity)?
        };
        if !backwards.is_empty()? {
            for (kind, deps) in &by_kind {
                let found =
                    facts.dependence_violations(*kind, &backwards.intersect(deps)?, &|pair| {
                        Ok(Rule::Order(flip(&pair.source_time, &pair.sink_time)))
                    })?;
                violations.extend(found.into_iter().map(Violation::Dependence));
            }
        }
        if let AnySchedule::Tree(tree) = schedule {
            let rules = bands::Rules {
                validity: (&validity, &by_kind),
                all: (&deps.validity(false)?, &all_by_kind),
            };
            let found = bands::check(&facts, tree, &rules)?;
            violations.extend(found.into_iter().map(Violation::Dependence));
        }
    }
    Ok(Report { violations })
}

/// What checking a hand-written schedule concludes (`polyc verify`, `--schedule FILE`).
#[derive(Debug)]
pub enum Verdict {
    /// Every dependence goes forward and no two instances share a time.
    Legal,
    /// Every dependence goes forward, but two instances run at the same time: their order
    /// is left to code generation.
    NotInjective(Collision),
    /// Some rule is violated; the report explains each violation.
    Illegal(Report),
}

/// Checks `schedule` ([`check`]) and, when it is legal, whether it is injective
/// ([`collision`]).
pub fn verdict(
    program: &Program,
    deps: &Dependences,
    schedule: &AnySchedule,
    options: &Options,
) -> Result<Verdict, CheckError> {
    let report = check(program, deps, schedule, options)?;
    if !report.is_legal() {
        return Ok(Verdict::Illegal(report));
    }
    Ok(match collision(program, schedule)? {
        Some(c) => Verdict::NotInjective(c),
        None => Verdict::Legal,
    })
}

/// Where two time vectors of a dependence's source and sink first differ.
fn flip(source: &[i64], sink: &[i64]) -> Flip {
    match source.iter().zip(sink).position(|(a, b)| a != b) {
        Some(d) => Flip::Dimension(d),
        None => Flip::EqualTimes,
    }
}

/// What every rule's check needs.
pub(crate) struct Facts<'a> {
    program: &'a Program,
    /// The flat time relation, padded, on the program's instances.
    time: UnionMap,
    reads: UnionMap,
    writes: UnionMap,
}

/// A concrete violating pair of instances, before the rule is named.
pub(crate) struct Pair {
    /// The parameter values as a parameter set.
    pub fixed: Set,
    /// The source instance.
    pub source: Instance,
    /// The sink instance.
    pub sink: Instance,
    /// The source's time.
    pub source_time: Point,
    /// The sink's time.
    pub sink_time: Point,
}

impl Facts<'_> {
    /// The pairs of `deps` whose sink's time is not after its source's.
    ///
    /// The time vectors are compared one dimension at a time, statement pair by statement
    /// pair of `deps` (see [`UnionMap::pairs_where`]: the order between every two instances
    /// ran out of isl's operation budget on Feautrier's schedule of PolyBench's deriche).
    /// The pairs still equal on the outer dimensions are split into those the next one runs
    /// backwards (kept) and those it leaves equal (compared further); the others are
    /// ordered. Each dimension is simplified on the instances first
    /// ([`UnionMap::gist_function`]), so that the comparison does not repeat the domains'
    /// constraints, which the pairs already have: comparing whole vectors with the domains
    /// in them (isl's `lex_ge_at`) took a fifth of adi's compile time.
    fn not_after(&self, deps: &UnionMap) -> IslResult<UnionMap> {
        let domain = self.time.domain()?;
        let mut live = deps.intersect_domain(&domain)?.intersect_range(&domain)?;
        let mut backwards = live.subtract(&live)?;
        for dim in self.time.range_dims()? {
            if live.is_empty()? {
                break;
            }
            let dim = dim.gist_function(&domain)?;
            backwards = backwards.union(&live.pairs_where(&dim, PairOrder::After)?)?;
            live = live.pairs_where(&dim, PairOrder::Equal)?;
        }
        backwards.union(&live)
    }

    /// Instances with no time or several.
    fn structural_violations(&self) -> Result<Vec<Violation>, CheckError> {
        let program = self.program;
        let domains = program.domains()?;
        let mut out = Vec::new();
        for set in sorted_sets(program, &domains.subtract(&self.time.domain()?)?)? {
            if let Some(w) = smallest(program, &set)? {
                let instance = instance_of(&set, w.point);
                out.push(Violation::Unscheduled {
                    params: w.params,
                    instance,
                });
            }
        }
        // Cheap first: a single-valued time relation gives no instance several times.
        let several = if self.time.is_single_valued()? {
            domains.subtract(&domains)?
        } else {
            (self.time.lex_lt_union_map(&self.time)?)
                .intersect(&domains.identity()?)?
                .domain()?
        };
        for set in sorted_sets(program, &several)? {
            if let Some(w) = smallest(program, &set)? {
                let instance = instance_of(&set, w.point);
                let times = image(program, &self.time, &instance, &w.fixed)?
                    .into_iter()
                    .flat_map(|(_, points)| points)
                    .collect();
                out.push(Violation::SeveralTimes {
                    params: w.params,
                    instance,
                    times,
                });
            }
        }
        Ok(out)
    }

    /// One violation per pair of statements in `violating` (dependences of `kind`), with the
    /// rule `rule` names for its witness.
    pub(crate) fn dependence_violations(
        &self,
        kind: DepKind,
        violating: &UnionMap,
        rule: &dyn Fn(&Pair) -> IslResult<Rule>,
    ) -> Result<Vec<DepViolation>, CheckError> {
        let program = self.program;
        let mut maps = violating
            .maps()?
            .into_iter()
            .map(|m| Ok((statement_pair(program, &m), m)))
            .collect::<IslResult<Vec<_>>>()?;
        maps.sort_by_key(|(pair, _)| *pair);
        let mut out = Vec::new();
        for (_, map) in maps {
            let Some(w) = smallest(program, &map.wrap()?)? else {
                continue;
            };
            let (source, rest) = split_instance(program, &map.tuple_name_of(End::Source), &w.point);
            let sink = Instance {
                tuple: map.tuple_name_of(End::Sink),
                point: rest,
            };
            let pair = Pair {
                source_time: self.time_of(&source, &w.fixed)?,
                sink_time: self.time_of(&sink, &w.fixed)?,
                fixed: w.fixed,
                source,
                sink,
            };
            out.push(DepViolation {
                rule: rule(&pair)?,
                kind,
                element: self.common_element(kind, &pair)?,
                params: w.params,
                source: pair.source,
                sink: pair.sink,
                source_time: pair.source_time,
                sink_time: pair.sink_time,
            });
        }
        Ok(out)
    }

    /// The time of an instance (which has exactly one).
    fn time_of(&self, instance: &Instance, fixed: &Set) -> IslResult<Point> {
        image(self.program, &self.time, instance, fixed)?
            .into_iter()
            .flat_map(|(_, points)| points)
            .next()
            .ok_or_else(|| IslError::Isl(format!("{instance} has no time")))
    }

    /// The element that the source and the sink of a dependence of `kind` both access.
    fn common_element(&self, kind: DepKind, pair: &Pair) -> IslResult<Element> {
        let (source_access, sink_access) = match kind {
            DepKind::Flow => (&self.writes, &self.reads),
            DepKind::Anti => (&self.reads, &self.writes),
            DepKind::Output => (&self.writes, &self.writes),
        };
        let sink_elements = image(self.program, sink_access, &pair.sink, &pair.fixed)?;
        image(self.program, source_access, &pair.source, &pair.fixed)?
            .into_iter()
            .flat_map(|(array, points)| points.into_iter().map(move |p| (array.clone(), p)))
            .find(|(array, p)| {
                sink_elements
                    .iter()
                    .any(|(a, points)| a == array && points.contains(p))
            })
            .map(|(array, index)| Element { array, index })
            .ok_or_else(|| {
                IslError::Isl(format!(
                    "{} and {} depend on each other but access no common element",
                    pair.source, pair.sink
                ))
            })
    }
}

/// The statement indices of a relation's domain and range (unknown tuples last).
fn statement_pair(program: &Program, map: &Map) -> (usize, usize) {
    let index = |end| {
        let tuple = map.tuple_name_of(end);
        program
            .statements
            .iter()
            .position(|s| s.tuple == tuple)
            .unwrap_or(usize::MAX)
    };
    (index(End::Source), index(End::Sink))
}

/// The sets of a union of statement instances, in statement order.
fn sorted_sets(program: &Program, union: &poly::isl::UnionSet) -> IslResult<Vec<Set>> {
    let mut sets = union.sets()?;
    sets.sort_by_key(|s| {
        let tuple = s.tuple_name().unwrap_or_default();
        program.statements.iter().position(|st| st.tuple == tuple)
    });
    Ok(sets)
}

fn instance_of(set: &Set, point: Point) -> Instance {
    Instance {
        tuple: set.tuple_name().unwrap_or_default(),
        point,
    }
}
