//! Exact dependences between statement instances.
//!
//! - flow (read after write) is value-based: each read instance depends only on the write
//!   instance that last wrote the element before it (isl's dataflow analysis with the writes
//!   as must-sources);
//! - anti (write after read) and output (write after write) are memory-based: every earlier
//!   access to the same element (isl's dataflow analysis with may-sources, which never kill).
//!
//! Value-based flow plus memory-based anti and output dependences is the usual sufficient set
//! for validity (as in PPCG). Dependences among the instances of one reduction update on the
//! same element are also collected in [`Dependences::reduction`], so that a scheduler may
//! drop them when the user allows reductions to be reordered.
//!
//! Input dependences (read after read, [`Reuse::input`]) are kept apart, computed only on
//! demand ([`Reuse::compute`]): two reads of one element need no order, so no schedule has
//! to respect them, but a scheduler may bring them closer for reuse (Pluto's `--rar`); so
//! are the anti and output dependences to the next write only ([`Reuse::next_write`]), the
//! non-transitive subset an objective bounds under `--rar`.

use crate::isl::{IslError, IslResult, Obj, PairOrder, UnionMap};
use crate::model::Program;
use isl_rs::UnionAccessInfo;

mod summary;
pub use summary::{DepSummary, LevelDistance, Related};

/// The kinds of dependence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DepKind {
    /// Read after write (value-based).
    Flow,
    /// Write after read (memory-based).
    Anti,
    /// Write after write (memory-based).
    Output,
}

impl DepKind {
    /// All kinds, in a fixed order.
    pub const ALL: [DepKind; 3] = [DepKind::Flow, DepKind::Anti, DepKind::Output];
    /// The conventional short name (RAW, WAR, WAW).
    pub fn short(self) -> &'static str {
        match self {
            DepKind::Flow => "RAW",
            DepKind::Anti => "WAR",
            DepKind::Output => "WAW",
        }
    }
}

/// All dependences of a program, as relations from source instances to sink instances.
#[derive(Clone, Debug)]
pub struct Dependences {
    /// Read-after-write: value-based, or memory-based as [`Dependences::flow_precision`]
    /// says.
    pub flow: UnionMap,
    /// How [`Dependences::flow`] was computed.
    pub flow_precision: FlowPrecision,
    /// Write-after-read, memory-based.
    pub anti: UnionMap,
    /// Write-after-write, memory-based.
    pub output: UnionMap,
    /// The subset of the above between instances of one reduction update statement through
    /// the element it updates.
    pub reduction: UnionMap,
    /// Read-after-write, memory-based, from every instance of a reduction update to the
    /// later reads of its element by other statements. The value-based flow starts only at
    /// the last update in the original order; once the updates may be reordered any of them
    /// may come last, so every one must precede the reads (attention's softmax read a partial
    /// row sum without these).
    pub reduction_flow: UnionMap,
}

/// How the read-after-write dependences were computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowPrecision {
    /// Value-based: each read depends on the last write of its element before it.
    ValueBased,
    /// Memory-based: each read depends on every write of its element before it, a superset
    /// of the value-based pairs (so every schedule that respects it respects those, with
    /// fewer choices), because isl's value-based analysis ran out of its operation budget
    /// (fuzz seed 70: ten statements writing one array through different subscripts) or
    /// failed (seeds 214 and 5049).
    MemoryBased,
}

/// The dependences an objective may bound for data reuse, apart from [`Dependences`]: none
/// of them is a constraint on a schedule beyond those (the legality checker never sees
/// them). Two more dataflow analyses, so computed only when asked for (`--rar`).
#[derive(Clone, Debug)]
pub struct Reuse {
    /// Read-after-read (input dependences), from each read instance to the next read of
    /// the same element in the original order (the last reader: isl's dataflow analysis
    /// with the reads as must-sources, as Pluto computes them with `--rar --lastwriter`;
    /// writes do not kill them). Two reads need no order.
    pub input: UnionMap,
    /// Anti and output dependences to the next write only: from each write, and each read
    /// after it, to the next write of the element (isl's dataflow with the writes as
    /// must-sources and the reads as may-sources). Every instance is in
    /// [`Dependences::anti`] or [`Dependences::output`], which also hold the pairs these
    /// chain (memory-based); this is the subset Pluto's `--lastwriter` builds its integer
    /// programs from.
    pub next_write: UnionMap,
}

impl Reuse {
    /// Computes the reuse dependences of `program` in its original order.
    pub fn compute(program: &Program) -> IslResult<Reuse> {
        let _analysis = program.ctx.analysis();
        let reads = program.reads()?;
        let writes = program.writes()?;
        let empty = program.ctx.empty_union_map()?;
        Ok(Reuse {
            input: dataflow(program, &reads, &reads, &empty)?.coalesce()?,
            next_write: dataflow(program, &writes, &writes, &reads)?.coalesce()?,
        })
    }
}

impl Dependences {
    /// Computes the dependences of `program` in its original order.
    pub fn compute(program: &Program) -> IslResult<Dependences> {
        let ctx = &program.ctx;
        let _analysis = ctx.analysis();
        let reads = program.reads()?;
        let writes = program.writes()?;
        let (flow, flow_precision) = read_after_write(program, &reads, &writes)?;
        let anti = every_earlier(program, &reads, &writes)?;
        let output = every_earlier(program, &writes, &writes)?;
        let all = flow.union(&anti)?.union(&output)?;
        let mut reduction = ctx.empty_union_map()?;
        let mut reduction_flow = ctx.empty_union_map()?;
        for s in program.statements.iter().filter(|s| s.reduction.is_some()) {
            let target = s.write.relation.apply(isl_rs::UnionMap::from_map)?;
            let same_element = target.apply_range(&target.reverse()?)?;
            reduction = reduction.union(&all.intersect(&same_element)?)?;
            let every_update = every_earlier(program, &target, &reads)?;
            reduction_flow = reduction_flow.union(&every_update.subtract(&same_element)?)?;
        }
        Ok(Dependences {
            flow: flow.coalesce()?,
            flow_precision,
            anti: anti.coalesce()?,
            output: output.coalesce()?,
            reduction: reduction.coalesce()?,
            reduction_flow: reduction_flow.coalesce()?,
        })
    }

    /// The dependences of one kind.
    pub fn of_kind(&self, kind: DepKind) -> &UnionMap {
        match kind {
            DepKind::Flow => &self.flow,
            DepKind::Anti => &self.anti,
            DepKind::Output => &self.output,
        }
    }

    /// Every dependence a schedule must respect: all of them, or, when reductions may be
    /// reordered, all but the reduction ones and with every update before the reads of its
    /// result ([`Dependences::reduction_flow`]).
    pub fn validity(&self, reorder_reductions: bool) -> IslResult<UnionMap> {
        let all = self.flow.union(&self.anti)?.union(&self.output)?;
        if reorder_reductions {
            all.union(&self.reduction_flow)?.subtract(&self.reduction)
        } else {
            Ok(all)
        }
    }

    /// The dependences of one kind that constrain a schedule, the flow from every reduction
    /// update included (see [`Dependences::validity`]).
    pub fn constraining(&self, kind: DepKind) -> IslResult<UnionMap> {
        match kind {
            DepKind::Flow => self.flow.union(&self.reduction_flow),
            _ => Ok(self.of_kind(kind).clone()),
        }
    }
}

/// The read-after-write dependences from `writes` to `reads`: value-based, or memory-based
/// when isl's value-based analysis fails ([`or_memory_based`]).
fn read_after_write(
    program: &Program,
    reads: &UnionMap,
    writes: &UnionMap,
) -> IslResult<(UnionMap, FlowPrecision)> {
    let empty = program.ctx.empty_union_map()?;
    or_memory_based(program, writes, reads, FlowPrecision::ValueBased, || {
        dataflow(program, reads, writes, &empty)
    })
}

/// The memory-based dependences from `sources` to `sinks`: by isl's dataflow analysis, or
/// without it when that fails ([`or_memory_based`]).
fn every_earlier(program: &Program, sources: &UnionMap, sinks: &UnionMap) -> IslResult<UnionMap> {
    let empty = program.ctx.empty_union_map()?;
    let (deps, _) = or_memory_based(program, sources, sinks, FlowPrecision::MemoryBased, || {
        dataflow(program, sinks, &empty, sources)
    })?;
    Ok(deps)
}

/// `by_isl`'s dependences from `sources` to `sinks`, of the precision `precision`, or, when
/// isl runs out of its budget or fails (isl 0.27 stops
/// some dataflow analyses with "affine expression involves some of the domain dimensions":
/// fuzz seeds 214 and 5049), the [`memory_based`] ones. Each in an analysis of its own.
fn or_memory_based(
    program: &Program,
    sources: &UnionMap,
    sinks: &UnionMap,
    precision: FlowPrecision,
    by_isl: impl FnOnce() -> IslResult<UnionMap>,
) -> IslResult<(UnionMap, FlowPrecision)> {
    let ctx = &program.ctx;
    let answer = {
        let _analysis = ctx.analysis();
        by_isl()
    };
    match answer {
        Ok(deps) => Ok((deps, precision)),
        Err(IslError::OperationLimit(_) | IslError::Isl(_)) => {
            let _analysis = ctx.analysis();
            Ok((
                memory_based(program, sources, sinks)?,
                FlowPrecision::MemoryBased,
            ))
        }
        Err(e) => Err(e),
    }
}

/// Every pair of an instance of `sources` and a later instance of `sinks` (in the program's
/// original order) that access a common element: memory-based dependences, computed
/// without isl's dataflow analysis (which can cost as much when asked for these as for the
/// value-based ones: fuzz seed 70's reduction updates).
fn memory_based(program: &Program, sources: &UnionMap, sinks: &UnionMap) -> IslResult<UnionMap> {
    let pairs = sources.apply_range(&sinks.reverse()?)?;
    pairs.pairs_where(&program.schedule_map()?, PairOrder::Before)
}

/// Value-based read-after-write dependences from the writes `sources` to the reads `sinks`
/// in the program's original order (each sink instance depends on the last source instance
/// before it that wrote its element), and the reads no source reaches (`{ S[i] -> A[e] }`:
/// they see the value from before the program).
pub fn value_flow(
    program: &Program,
    sinks: &UnionMap,
    sources: &UnionMap,
) -> IslResult<(UnionMap, UnionMap)> {
    let ctx = &program.ctx;
    let flow = flow_info(program, sinks, sources, &ctx.empty_union_map()?)?;
    let deps = ctx.check(flow.get_may_dependence())?;
    let exposed = ctx.check(flow.get_may_no_source())?;
    Ok((Obj::from_raw(ctx, deps), Obj::from_raw(ctx, exposed)))
}

/// Dependences from the sources to `sinks` in the program's original order: the last
/// `must` source before each sink (it kills earlier sources: value-based) and every `may`
/// source after it (memory-based).
fn dataflow(
    program: &Program,
    sinks: &UnionMap,
    must: &UnionMap,
    may: &UnionMap,
) -> IslResult<UnionMap> {
    let ctx = &program.ctx;
    let flow = flow_info(program, sinks, must, may)?;
    let deps = ctx.check(flow.get_may_dependence())?;
    Ok(Obj::from_raw(ctx, deps))
}

/// isl's dataflow analysis from the `must` and `may` sources to `sinks` in the program's
/// original order.
fn flow_info(
    program: &Program,
    sinks: &UnionMap,
    must: &UnionMap,
    may: &UnionMap,
) -> IslResult<isl_rs::UnionFlow> {
    let ctx = &program.ctx;
    let info = ctx.check(UnionAccessInfo::from_sink(sinks.to_raw()))?;
    let info = ctx.check(info.set_must_source(must.to_raw()))?;
    let info = ctx.check(info.set_may_source(may.to_raw()))?;
    let info = ctx.check(info.set_schedule(program.schedule.to_raw()))?;
    ctx.check(info.compute_flow())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    /// The fallback computes what isl's memory-based analysis does: every pair of accesses
    /// to a common element in the original order, for each kind of pair.
    #[test]
    fn memory_based_pairs_are_isl_s() {
        let p = program(
            "kernel k(A: inout f64[N], B: inout f64[N, N]) params N = 5 {
                for i in 0..N {
                    for j in 0..i + 1 { B[i, j] += A[j] * B[j, i]; }
                    A[i] = B[i, i];
                }
                for i in (1..N).rev() { A[i - 1] = A[i] + B[0, i]; }
            }",
            &[],
        );
        let (reads, writes) = (p.reads().unwrap(), p.writes().unwrap());
        let empty = p.ctx.empty_union_map().unwrap();
        for (sources, sinks) in [(&writes, &reads), (&reads, &writes), (&writes, &writes)] {
            let ours = memory_based(&p, sources, sinks).unwrap();
            let isl = dataflow(&p, sinks, &empty, sources).unwrap();
            assert!(!isl.is_empty().unwrap());
            assert!(ours.is_equal(&isl).unwrap(), "{ours}\nisl: {isl}");
        }
    }
}
