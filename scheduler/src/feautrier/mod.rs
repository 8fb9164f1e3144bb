//! Feautrier's multi-dimensional scheduler (Feautrier 1992, part II).
//!
//! Dimension by dimension: every basic piece of the dependences still live (not strictly
//! ordered by the rows so far) must be weakly satisfied by the row (`phi_T - phi_S >= 0`,
//! Farkas-linearised), and the row strongly satisfies (`>= 1`) as many pieces as possible,
//! then minimises the sum of absolute coefficients (iterators, then parameters, then
//! constants). `row` finds the maximum exactly with integer programs solved by isl's
//! lexicographic minimum, without 0/1 unknowns. The pairs a row orders strictly are
//! removed; when none is left, rows are added so that every statement's schedule is
//! one-to-one (those loops carry nothing). When no row strongly satisfies any piece (the
//! rational points of a piece may hide every row: [`crate::original`]), the row is the
//! original order's first one that orders some live pair. Each loop row is its own band;
//! [`crate::transform::merge_bands`] later groups permutable rows.

mod rank;
mod row;
mod unknowns;

use crate::affine::{AffineSchedule, Band, Row, RowKind, StmtRow};
use crate::farkas::FarkasDual;
use crate::problem::Symbolic;
use crate::transform::analysis::same_value;
use crate::{original, Problem, ScheduleError, Scheduler};
use poly::isl::{IslResult, Schedule, UnionMap};
use poly::model::Program;
use row::{solve_row, Edge, Shape};

/// Feautrier's scheduler.
pub struct Feautrier;

const NAME: &str = "feautrier";

impl Scheduler for Feautrier {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
        // Solved with the parameters symbolic, applied to the program as fixed.
        let affine = Symbolic::solve(problem, affine_schedule)?;
        Ok(affine.to_tree(problem.program)?)
    }
}

/// Feautrier's schedule of a problem as rows.
pub fn affine_schedule(problem: &Problem) -> Result<AffineSchedule, ScheduleError> {
    let program = problem.program;
    let _analysis = program.ctx.analysis();
    let mut live = problem.validity()?;
    let conflicts = problem.conflicts()?;
    let mut live_all = problem.deps.validity(false)?;
    let mut schedule = AffineSchedule::default();
    let shape = Shape {
        iterators: program
            .statements
            .iter()
            .map(|s| s.iterators.len())
            .collect(),
        n_params: program.kernel.params.len(),
    };
    // Every row strictly orders at least one more pair of some dependence piece; a bound on
    // rows guards against a bug looping forever.
    let max_rows = 4
        * (1 + program
            .statements
            .iter()
            .map(|s| s.iterators.len())
            .max()
            .unwrap_or(0));
    while !live.is_empty()? {
        if schedule.rows.len() >= max_rows {
            return Err(no_schedule(format!("no progress after {max_rows} rows")));
        }
        // each row is a step of its own with a fresh budget, as each of Pluto's is: the
        // budget bounds one computation, and a schedule of many rows over parametric
        // dependences may spend more than one budget in all (fuzz seed 3421, since isl's
        // pivots are charged)
        let _row = program.ctx.analysis();
        let stmts = match best_row(program, &shape, &live, &conflicts)? {
            Some(stmts) => stmts,
            // Farkas' lemma may hide every row (see `crate::original`)
            None => original::first_ordering_row(program, &live)?
                .ok_or_else(|| {
                    no_schedule(format!(
                        "no row satisfies any of the remaining dependences, not even one of the original order's: {live}"
                    ))
                })?
                .stmts,
        };
        let row_map = single_row(program, &stmts)?;
        let same = same_value(&row_map)?;
        let coincident = live_all.is_subset(&same)?;
        let next = live.intersect(&same)?;
        if next.is_equal(&live)? {
            return Err(no_schedule(format!("a row made no progress on {live}")));
        }
        live = next;
        live_all = live_all.intersect(&same)?;
        push_row(&mut schedule, stmts, coincident);
    }
    complete(program, &mut schedule);
    Ok(schedule)
}

/// The best row for the live dependences: over whole statement pairs if that orders some
/// pair strictly, else over basic pieces.
fn best_row(
    program: &Program,
    shape: &Shape,
    live: &UnionMap,
    conflicts: &UnionMap,
) -> IslResult<Option<Vec<StmtRow>>> {
    for granularity in [Granularity::Pairs, Granularity::BasicPieces] {
        let edges = edges(program, live, conflicts, granularity)?;
        if let Some(row) = solve_row(&program.ctx, shape, &edges)? {
            return Ok(Some(row));
        }
    }
    Ok(None)
}

fn no_schedule(reason: String) -> ScheduleError {
    ScheduleError::NoSchedule {
        scheduler: NAME,
        reason,
    }
}

fn push_row(schedule: &mut AffineSchedule, stmts: Vec<StmtRow>, coincident: bool) {
    let kind = if stmts.iter().all(StmtRow::is_constant) {
        RowKind::Scalar
    } else {
        schedule.bands.push(Band {
            start: schedule.rows.len(),
            len: 1,
        });
        RowKind::Loop { coincident }
    };
    schedule.rows.push(Row { kind, stmts });
}

/// How finely a row's integer program splits the live dependences into pieces that it
/// satisfies strongly or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Granularity {
    /// One piece per pair of statements (Feautrier's dependence edges): few unknowns and
    /// constraints.
    Pairs,
    /// One piece per basic relation: a row may order some pieces of a pair strictly and
    /// not others, which is needed when no row orders any whole pair.
    BasicPieces,
}

/// The live dependences as pieces of the given granularity.
fn edges(
    program: &Program,
    live: &UnionMap,
    conflicts: &UnionMap,
    granularity: Granularity,
) -> IslResult<Vec<Edge>> {
    let mut out = Vec::new();
    for map in live.intersect(conflicts)?.maps()? {
        let index = |name: Option<String>| {
            name.and_then(|n| program.statements.iter().position(|s| s.tuple == n))
        };
        let (Some(source), Some(sink)) = (
            index(map.domain()?.tuple_name()),
            index(map.range()?.tuple_name()),
        ) else {
            return Err(poly::isl::IslError::Isl(format!(
                "a dependence between unknown statements: {map}"
            )));
        };
        if granularity == Granularity::Pairs {
            out.push(Edge {
                source,
                sink,
                dual: FarkasDual::of_pieces(&map, &program.context)?,
            });
            continue;
        }
        for relation in map.basic_maps()? {
            out.push(Edge {
                source,
                sink,
                dual: FarkasDual::of(&relation, &program.context)?,
            });
        }
    }
    Ok(out)
}

/// One row as a union map `S[i] -> [phi_S(i)]`.
fn single_row(program: &Program, stmts: &[StmtRow]) -> IslResult<UnionMap> {
    AffineSchedule {
        rows: vec![Row {
            kind: RowKind::Scalar,
            stmts: stmts.to_vec(),
        }],
        bands: Vec::new(),
    }
    .to_union_map(program)
}

/// Adds parallel loop rows until every statement's iterator rows have full rank (so the
/// schedule orders every instance, as code generation needs).
fn complete(program: &Program, schedule: &mut AffineSchedule) {
    let n_params = program.kernel.params.len();
    let mut spans: Vec<rank::Span> = program
        .statements
        .iter()
        .enumerate()
        .map(|(s, st)| {
            let mut span = rank::Span::new(st.iterators.len());
            for row in &schedule.rows {
                span.insert(&row.stmts[s].iterators);
            }
            span
        })
        .collect();
    while spans.iter().any(|s| !s.is_full()) {
        let stmts = spans
            .iter_mut()
            .map(|span| {
                let unit = span.next_unit();
                let n = span.dim();
                match unit {
                    Some(v) => {
                        let mut iterators = vec![0; n];
                        iterators[v] = 1;
                        span.insert(&iterators);
                        StmtRow {
                            iterators,
                            params: vec![0; n_params],
                            constant: 0,
                        }
                    }
                    None => StmtRow::zero(n, n_params),
                }
            })
            .collect();
        push_row(schedule, stmts, true);
    }
}
