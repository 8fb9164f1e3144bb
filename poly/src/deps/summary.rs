//! Distance and direction summaries of dependences, per loop level.
//!
//! For a dependence from `S` to `T`, the levels summarised are the loops enclosing both
//! (their common prefix in the loop tree). At each level the distance is `t - s` in the loop's
//! own traversal order (negated for a reversed loop), bounded over all instances and all
//! parameter values.

use super::{DepKind, Dependences, Reuse};
use crate::isl::UnionMap;
use crate::isl::{IslResult, Map};
use crate::model::{tuple_text, Program};
use frontend::ir::Loop;
use std::fmt;

/// Bounds of a dependence distance at one loop level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelDistance {
    /// Smallest distance, `None` if unbounded below.
    pub min: Option<i64>,
    /// Largest distance, `None` if unbounded above.
    pub max: Option<i64>,
}

impl LevelDistance {
    /// The classical direction: `<` (carried forward), `=` (not carried), `>` (backward),
    /// `<=`, `>=`, or `*` (any).
    pub fn direction(&self) -> &'static str {
        match (self.min, self.max) {
            (Some(0), Some(0)) => "=",
            (Some(lo), _) if lo > 0 => "<",
            (_, Some(hi)) if hi < 0 => ">",
            (Some(0), _) => "<=",
            (_, Some(0)) => ">=",
            _ => "*",
        }
    }
}

impl fmt::Display for LevelDistance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.min, self.max) {
            (Some(a), Some(b)) if a == b => write!(f, "{a}"),
            (a, b) => {
                let show = |v: Option<i64>, inf: &str| v.map_or(inf.to_string(), |v| v.to_string());
                write!(f, "[{}, {}]", show(a, "-inf"), show(b, "+inf"))
            }
        }
    }
}

/// What a summary relates: a dependence every schedule must respect, or reuse of read data
/// that constrains nothing ([`Reuse::input`], what Pluto's `--rar` bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Related {
    /// A dependence of this kind.
    Dep(DepKind),
    /// Read after read (input dependences).
    ReadAfterRead,
}

impl Related {
    /// The conventional short name (RAW, WAR, WAW, RAR).
    pub fn short(self) -> &'static str {
        match self {
            Related::Dep(kind) => kind.short(),
            Related::ReadAfterRead => "RAR",
        }
    }
}

/// The summary of the dependences of one kind from one statement to another.
#[derive(Clone, Debug)]
pub struct DepSummary {
    /// The kind.
    pub kind: Related,
    /// Source statement name.
    pub source: String,
    /// Sink statement name.
    pub sink: String,
    /// The loops enclosing both, outermost first, with the distance at each.
    pub levels: Vec<(String, LevelDistance)>,
    /// Whether all these dependences are among instances of a reduction update.
    pub reduction_only: bool,
    /// The relation itself.
    pub relation: Map,
}

impl DepSummary {
    /// The outermost level that carries the dependence (first direction not `=`), if any.
    pub fn carried_at(&self) -> Option<usize> {
        self.levels.iter().position(|(_, d)| d.direction() != "=")
    }
}

impl fmt::Display for DepSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} -> {}", self.kind.short(), self.source, self.sink)?;
        if self.levels.is_empty() {
            write!(f, "  (no common loop)")?;
        } else {
            let dirs: Vec<_> = self.levels.iter().map(|(_, d)| d.direction()).collect();
            let dists: Vec<_> = self.levels.iter().map(|(_, d)| d.to_string()).collect();
            let loops: Vec<_> = self.levels.iter().map(|(l, _)| l.as_str()).collect();
            write!(
                f,
                "  loops ({})  direction ({})  distance ({})",
                loops.join(", "),
                dirs.join(", "),
                dists.join(", ")
            )?;
        }
        if self.reduction_only {
            write!(f, "  [reduction]")?;
        }
        Ok(())
    }
}

impl Dependences {
    /// One summary per kind and pair of statements, in kind then textual order.
    pub fn summaries(&self, program: &Program) -> IslResult<Vec<DepSummary>> {
        let kinds = DepKind::ALL.map(|k| (Related::Dep(k), self.of_kind(k)));
        summarise(program, &kinds, Some(&self.reduction))
    }
}

impl Reuse {
    /// One summary of the read-after-read relations per pair of statements, in textual
    /// order.
    pub fn summaries(&self, program: &Program) -> IslResult<Vec<DepSummary>> {
        summarise(program, &[(Related::ReadAfterRead, &self.input)], None)
    }
}

/// One summary per kind of `kinds` and pair of statements, in kind then textual order; a
/// summary whose relation lies in `reduction` (if there are reductions to speak of) is
/// marked as such.
fn summarise(
    program: &Program,
    kinds: &[(Related, &UnionMap)],
    reduction: Option<&UnionMap>,
) -> IslResult<Vec<DepSummary>> {
    let contexts = program.kernel.statements();
    let index_of = |tuple: &str| program.statements.iter().position(|s| s.tuple == tuple);
    let mut out = Vec::new();
    for &(kind, relation) in kinds {
        for map in relation.maps()? {
            let (Some(src), Some(dst)) = (
                map.domain()?.tuple_name().as_deref().and_then(index_of),
                map.range()?.tuple_name().as_deref().and_then(index_of),
            ) else {
                continue;
            };
            let common: Vec<&Loop> = contexts[src]
                .loops()
                .zip(contexts[dst].loops())
                .take_while(|(a, b)| std::ptr::eq(*a, *b))
                .map(|(a, _)| a)
                .collect();
            let levels = level_distances(program, &map, src, dst, &common)?;
            let reduction_only = match reduction {
                Some(r) => map.apply(isl_rs::UnionMap::from_map)?.is_subset(r)?,
                None => false,
            };
            out.push(DepSummary {
                kind,
                source: program.statements[src].name.clone(),
                sink: program.statements[dst].name.clone(),
                levels,
                reduction_only,
                relation: map,
            });
        }
    }
    out.sort_by_key(|d| (d.kind, index_of(&d.source), index_of(&d.sink)));
    Ok(out)
}

/// The distance at each common loop of a dependence relation between statements `src` and
/// `dst`.
fn level_distances(
    program: &Program,
    map: &Map,
    src: usize,
    dst: usize,
    common: &[&Loop],
) -> IslResult<Vec<(String, LevelDistance)>> {
    if common.is_empty() {
        return Ok(Vec::new());
    }
    let (s, t) = (&program.statements[src], &program.statements[dst]);
    let prefix = crate::model::param_prefix(&program.kernel);
    let projection = |stmt: &crate::model::Statement| -> IslResult<Map> {
        let head = tuple_text(&stmt.tuple, &stmt.iterators);
        let kept: Vec<_> = stmt.iterators[..common.len()]
            .iter()
            .map(|i| crate::model::isl_text::isl_name(i))
            .collect();
        program
            .ctx
            .map(&format!("{prefix}{{ {head} -> [{}] }}", kept.join(", ")))
    };
    let deltas = map
        .apply_domain(&projection(s)?)?
        .apply_range(&projection(t)?)?
        .deltas()?;
    common
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let bound = |max: bool| -> IslResult<Option<i64>> {
                let v = deltas.apply(|d| {
                    if max {
                        d.dim_max_val(k as i32)
                    } else {
                        d.dim_min_val(k as i32)
                    }
                })?;
                let finite = v.query(|v| v.is_int())?;
                Ok(if finite {
                    Some(v.query(|v| v.get_num_si())?)
                } else {
                    None
                })
            };
            let (lo, hi) = (bound(false)?, bound(true)?);
            let d = if l.reverse {
                LevelDistance {
                    min: hi.map(|h| -h),
                    max: lo.map(|l| -l),
                }
            } else {
                LevelDistance { min: lo, max: hi }
            };
            Ok((l.var.clone(), d))
        })
        .collect()
}
