//! Feautrier's multi-dimensional scheduler (Feautrier 1992, part II).
//!
//! Dimension by dimension: every piece `e` of the dependences still live (not strictly
//! ordered by the rows so far) gets a variable `x_e` in `{0, 1}` and the Farkas-linearised
//! constraint `phi_T - phi_S >= x_e`; the row maximises the number of pieces strongly
//! satisfied, then minimises the sum of absolute coefficients (iterators, then parameters,
//! then constants). The ILP is solved exactly by isl's lexicographic minimum. The pairs a
//! row orders strictly are removed; when none is left, rows are added so that every
//! statement's schedule is one-to-one (those loops carry nothing). Each loop row is its own
//! band; [`crate::transform::merge_bands`] later groups permutable rows.

mod farkas;
mod rank;
mod unknowns;

use crate::affine::{AffineSchedule, Band, Row, RowKind, StmtRow};
use crate::transform::analysis::same_value;
use crate::{Problem, ScheduleError, Scheduler};
use farkas::Edge;
use poly::isl::{IslResult, Obj, Schedule, UnionMap};
use poly::model::Program;
use unknowns::Unknowns;

/// Feautrier's scheduler.
pub struct Feautrier;

const NAME: &str = "feautrier";

impl Scheduler for Feautrier {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self, problem: &Problem) -> Result<Schedule, ScheduleError> {
        let affine = affine_schedule(problem)?;
        Ok(affine.to_tree(problem.program)?)
    }
}

/// The most dependence pieces (each a 0/1 unknown of a row's integer program) a row may
/// weigh: isl's lexmin over more binaries can run for minutes without exhausting its
/// operation budget (PolyBench's adi, ludcmp and deriche have 120 to 244), while every other
/// example has at most 46.
const MAX_EDGES: usize = 64;

/// Feautrier's schedule of a problem as rows.
pub fn affine_schedule(problem: &Problem) -> Result<AffineSchedule, ScheduleError> {
    let program = problem.program;
    program.ctx.reset_budget();
    let mut live = problem.validity()?;
    let mut live_all = problem.deps.validity(false)?;
    let mut schedule = AffineSchedule::default();
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
        let edges = edges(program, &live)?;
        if edges.len() > MAX_EDGES {
            return Err(ScheduleError::TooLarge {
                scheduler: NAME,
                reason: format!(
                    "{} dependence pieces exceed the {MAX_EDGES} 0/1 unknowns one row's integer \
                     program can take in reasonable time (use pluto or isl)",
                    edges.len()
                ),
            });
        }
        let stmts = solve_row(program, &edges)?.ok_or_else(|| {
            no_schedule(format!(
                "no row satisfies any of the remaining dependences: {live}"
            ))
        })?;
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

/// The basic pieces of the live dependences.
fn edges(program: &Program, live: &UnionMap) -> IslResult<Vec<Edge>> {
    let space = program.context.query(|c| c.get_space())?;
    let mut out = Vec::new();
    for map in live.maps()? {
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
        let aligned = map.apply(|m| m.align_params(space.copy().expect("space copy")))?;
        let pieces = aligned.query(|m| m.get_basic_map_list())?;
        for k in 0..aligned.ctx().check(pieces.size())? {
            let piece = aligned.ctx().check(pieces.get_at(k))?;
            let relation = Obj::from_raw(
                aligned.ctx(),
                aligned.ctx().check(isl_rs::Map::from_basic_map(piece))?,
            );
            out.push(Edge {
                source,
                sink,
                relation,
            });
        }
    }
    Ok(out)
}

/// The best row for these edges, `None` if it satisfies none of them.
fn solve_row(program: &Program, edges: &[Edge]) -> IslResult<Option<Vec<StmtRow>>> {
    let iterators: Vec<usize> = program
        .statements
        .iter()
        .map(|s| s.iterators.len())
        .collect();
    let n_params = program.kernel.params.len();
    let unknowns = Unknowns::new(iterators.clone(), n_params, edges.len());
    let mut feasible = program.ctx.set(&unknowns.bounds())?;
    for (k, e) in edges.iter().enumerate() {
        feasible = feasible.intersect(&farkas::constraint(&unknowns, k, e)?)?;
    }
    let best = feasible.lexmin()?.points()?;
    let Some(point) = best.first() else {
        return Ok(None);
    };
    if point[unknowns.position("obj0")] == 0 {
        return Ok(None);
    }
    let value = |name: String| point[unknowns.position(&name)];
    Ok(Some(
        (0..iterators.len())
            .map(|s| StmtRow {
                iterators: (0..iterators[s])
                    .map(|k| value(unknowns.iterator(s, k)))
                    .collect(),
                params: (0..n_params).map(|p| value(unknowns.param(s, p))).collect(),
                constant: value(unknowns.constant(s)),
            })
            .collect(),
    ))
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
