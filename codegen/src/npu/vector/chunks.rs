//! Rows too long for UB, in column chunks: when no group of whole rows fits, each group of
//! `R` rows goes through UB in chunks of `w` columns, pass after pass (`passes`).
//!
//! The statements' graph is built step by step (`group::build_steps`) over a frame `w`
//! columns wide: a pass's statements once for the full chunks (reductions over `w`
//! columns) and once for the last chunk when `w` does not divide the columns (reductions
//! over what is left; the rest of the chunk's width is computed and neither stored nor
//! reduced), per-row statements between passes on their own. A pass's reductions combine
//! each chunk's result into the target's home, which stays in UB for the whole group with
//! every per-row value; a chunk's tiles (loaded, computed, stored) live in it alone.
//!
//! Inputs come one of two ways ([`Columns`]), both costed:
//! - *resident*: a group's input rows are loaded whole (two slots, MTE2 loading the next
//!   group while V computes this one) and per-column inputs once per core, as with whole
//!   rows; only the temporaries and the stored tiles are a chunk wide. Every input element
//!   is read from GM once;
//! - *streamed*: every input is loaded per chunk, for rows whose inputs do not fit UB whole
//!   even one row at a time. Every pass reads its inputs again: a softmax reads its input
//!   three times.
//!
//! Per core, for each group of rows and each chunk of each pass (an *iteration*, its ring
//! slot the iteration's number modulo 2): streamed, MTE2 loads the chunk's inputs (tiles: a
//! burst per row; per-column values; per-row inputs) into the input ring; V computes the
//! pass's statements over it; MTE3 stores its tile outputs from the output ring. Per-row
//! statements run on V between passes; per-row outputs are stored from their homes once the
//! group is done (flag id 2 of V -> MTE3 and back: the next group waits for the homes).
//! Where a row's bytes are not whole 32-byte blocks, a row's last chunk and the next row's
//! first share one, and chunk stores are ordered by `barrier MTE3`.
//!
//! With fewer groups than cores, a team of cores may share each group, each member a range
//! of every pass's chunks (`spread`).
//!
//! `(R, w)`, the way inputs come and the cores per team are chosen by the vector path's
//! analytic model (GM cycles of the bursts, vector cycles of the statements, pipelined as
//! whole-row groups are), not by the simulator.

use super::alloc::{self, Temps};
use super::core_homes::{self, CoreHomes};
use super::emit::Place;
use super::graph::{Columns, Layout, Op, Val};
use super::group::{build_steps, Group, StepSpec};
use super::lower::Frame;
use super::passes::{self, Step};
use super::program::{self, Context, CoreRows, Places, RowStores};
use super::recognise::{Kind, VectorKernel};
use super::spread::{self, Spread, Target, Workspaces};
use super::Plan;
use crate::npu::matmul::dtype;
use crate::npu::NpuError;
use frontend::ir::{ArrayId, Kernel, Role};
use npu_sim::builder::Builder;
use npu_sim::program::{BarrierScope, CmpOp, Dma, Expr, Pipe, TensorId, Tier};
use npu_sim::Machine;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// How a chunked program goes through its rows' columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunks {
    /// Columns per chunk.
    pub width: i64,
    /// Chunks per row (the last may be narrower).
    pub count: i64,
    /// Passes over the chunks.
    pub passes: usize,
    /// Whether inputs are loaded whole per group (else per chunk).
    pub resident: bool,
    /// Cores sharing each group's chunks (`spread`; 1: a group is one core's).
    pub spread: i64,
    /// Whether, spread over rows off 32-byte blocks, each member's first chunk of a pass
    /// that stores tiles waits for the others' stores (a `sync_all`).
    pub deferred: bool,
}

/// One way of going through the columns: inputs whole or streamed, the chunk width, where
/// per-row outputs wait, and the cores sharing each group's chunks.
type Way = (Columns, i64, RowStores, i64);

/// A range of the graph's nodes and how it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Part {
    nodes: Range<Val>,
    run: Run,
}

/// How a part runs per group of rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    /// Once (per-row statements between passes).
    Rows,
    /// Chunks `first..first + count` of pass `pass` (its step's index), each `cols`
    /// columns.
    Chunks {
        first: i64,
        count: i64,
        cols: i64,
        pass: usize,
    },
}

/// The graph of a chunk width, with its temporaries and parts.
struct Built {
    group: Group,
    temps: Temps,
    parts: Vec<Part>,
    /// Each pass's reduction targets (by its step's index); `None` when the passes cannot
    /// be spread over cores (a target reduced two ways in one pass).
    targets: Option<BTreeMap<usize, Vec<Target>>>,
}

impl Built {
    fn new(
        vk: &VectorKernel,
        kernel: &Kernel,
        machine: &Machine,
        steps: &[Step],
        (columns, w): (Columns, i64),
    ) -> Result<Built, NpuError> {
        let cols = vk.cols.unwrap_or(1);
        let (full, tail) = (cols / w, cols % w);
        let last_pass = steps.iter().rposition(|s| matches!(s, Step::Columns(_)));
        // tile outputs no statement writes are stored by the last pass
        let written: BTreeSet<ArrayId> = vk.stmts.iter().map(|s| s.target).collect();
        let unwritten: Vec<ArrayId> = (vk.arrays.iter())
            .filter(|(a, &k)| {
                k == Kind::Tile && kernel.array(**a).role.is_output() && !written.contains(a)
            })
            .map(|(a, _)| *a)
            .collect();
        let mut specs = Vec::new();
        let mut runs = Vec::new();
        let mut targets = Some(BTreeMap::new());
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Rows(stmts) => {
                    specs.push(StepSpec {
                        stmts: stmts.clone(),
                        cols: 1,
                        unwritten: vec![],
                    });
                    runs.push(Run::Rows);
                }
                Step::Columns(stmts) => {
                    let outs = if Some(i) == last_pass {
                        unwritten.clone()
                    } else {
                        vec![]
                    };
                    if let Some(t) = &mut targets {
                        match spread::targets(vk, stmts) {
                            Some(found) => {
                                t.insert(i, found);
                            }
                            None => targets = None,
                        }
                    }
                    let chunks = [(0, full, w), (full, (tail > 0) as i64, tail)];
                    for (first, count, c) in chunks.into_iter().filter(|x| x.1 > 0) {
                        specs.push(StepSpec {
                            stmts: stmts.clone(),
                            cols: c,
                            unwritten: outs.clone(),
                        });
                        runs.push(Run::Chunks {
                            first,
                            count,
                            cols: c,
                            pass: i,
                        });
                    }
                }
            }
        }
        let frame = Frame::of(machine, w);
        let (group, ranges) = build_steps(vk, kernel, frame, columns, &specs)?;
        let temps = alloc::temps(&group.graph, &group.live, &|v| {
            let n = &group.graph.nodes[v];
            n.home.is_some() || n.op == Op::Given
        });
        let parts = (ranges.into_iter().zip(runs))
            .map(|(nodes, run)| Part { nodes, run })
            .collect();
        Ok(Built {
            group,
            temps,
            parts,
            targets,
        })
    }

    /// The reduction targets of pass `pass` (none when the passes cannot be spread).
    fn targets_of(&self, pass: usize) -> &[Target] {
        (self.targets.as_ref())
            .and_then(|t| t.get(&pass))
            .map_or(&[], |t| &t[..])
    }

    /// The pass part `i` belongs to, if it is that pass's last part.
    fn ends_pass(&self, i: usize) -> Option<usize> {
        let pass = |p: Option<&Part>| match p.map(|p| p.run) {
            Some(Run::Chunks { pass, .. }) => Some(pass),
            _ => None,
        };
        let this = pass(self.parts.get(i))?;
        (pass(self.parts.get(i + 1)) != Some(this)).then_some(this)
    }

    fn context<'a>(
        &'a self,
        (vk, kernel, params, machine): Parts<'a>,
        (row_stores, spread): (RowStores, i64),
    ) -> Context<'a> {
        Context {
            kernel,
            params,
            vk,
            group: &self.group,
            temps: &self.temps,
            machine,
            slots: 2,
            row_stores,
            spread,
        }
    }
}

/// The kernel, its vector form, its sizes and the machine.
type Parts<'a> = (
    &'a VectorKernel,
    &'a Kernel,
    &'a BTreeMap<String, i64>,
    &'a Machine,
);

/// The per-row outputs, stored from their homes rather than from a ring per chunk.
fn row_outputs(ctx: &Context) -> Vec<ArrayId> {
    (ctx.outputs().into_iter())
        .filter(|&a| !ctx.ringed(a))
        .collect()
}

/// How `ctx`'s groups in chunks of `w` columns are shared by a team's members.
fn spread_of(ctx: &Context, w: i64) -> Spread {
    Spread {
        members: ctx.spread,
        chunks: (ctx.vk.cols.unwrap_or(1) + w - 1) / w,
    }
}

/// Whether groups of `rows` rows can be spread over teams of `ctx.spread` cores: every
/// member has chunks, every core as many groups, per-row outputs stored group by group, no
/// target reduced two ways in a pass, and rows of whole 32-byte blocks, or else no in-out
/// tile (a member would load a block its neighbour stores into) and at least two chunks a
/// member (`deferring`).
fn spreadable(ctx: &Context, built: &Built, rows: i64, w: i64) -> bool {
    let cores = ctx.machine.cores as i64;
    ctx.spread == 1
        || (built.targets.is_some()
            && ctx.row_stores == RowStores::EachGroup
            && spread_of(ctx, w).fits()
            && (spread::whole_blocks(ctx) || (!inout_tiles(ctx) && spread_of(ctx, w).fits_apart()))
            && CoreRows::of(ctx, rows).same_groups(cores, rows))
}

/// The passes (by their steps' indices) of `parts` that store tiles, from each part's
/// traffic.
fn storing(parts: &[Part], traffic: &[(BTreeSet<ArrayId>, BTreeSet<ArrayId>)]) -> BTreeSet<usize> {
    (parts.iter().zip(traffic))
        .filter_map(|(p, (_, stores))| match p.run {
            Run::Chunks { pass, .. } if !stores.is_empty() => Some(pass),
            _ => None,
        })
        .collect()
}

/// Whether a member's first chunk of each pass that stores tiles waits for the others'
/// stores (a `sync_all`): spread over rows off 32-byte blocks, a member's first chunk
/// stores into blocks its neighbour's last chunk (or the previous row's) stores into too.
fn deferring(ctx: &Context, spread: Spread) -> bool {
    spread.members > 1 && !spread::whole_blocks(ctx)
}

/// Whether a tile is read and written.
fn inout_tiles(ctx: &Context) -> bool {
    (ctx.vk.arrays.iter())
        .any(|(&a, &k)| k == Kind::Tile && ctx.kernel.array(a).role == Role::InOut)
}

/// What an iteration of a part moves: the arrays it loads (none when inputs are loaded per
/// group) and the tile outputs it stores.
fn traffic(ctx: &Context, nodes: &Range<Val>) -> (BTreeSet<ArrayId>, BTreeSet<ArrayId>) {
    let g = &ctx.group.graph;
    let per_chunk = if ctx.resident() {
        BTreeSet::new()
    } else {
        ctx.per_group()
    };
    let loads = (ctx.group.loaded.iter())
        .filter(|(v, a)| nodes.contains(v) && ctx.group.live[*v] && per_chunk.contains(a))
        .map(|(_, a)| *a)
        .collect();
    let stores = (ctx.ringed_outputs().into_iter())
        .filter(|a| {
            nodes
                .clone()
                .any(|v| ctx.group.live[v] && g.nodes[v].home == Some(a.0))
        })
        .collect();
    (loads, stores)
}

/// The model's figures for groups of `rows` rows in chunks of `w` columns: (cycles of the
/// busiest core, its GM cycles, its vector cycles). With chunks spread over a team, the
/// busiest core is a team's first member (the first chunks of every pass, and the per-row
/// outputs' stores).
fn cost(ctx: &Context, built: &Built, rows: i64, w: i64) -> (f64, f64, f64) {
    let m = ctx.machine;
    let gm = &m.gm;
    let cols = ctx.vk.cols.unwrap_or(1);
    let (rate, lat) = super::tiles::gm_share(m);
    let parts = &built.parts;
    let spread = spread_of(ctx, w);
    // the first member's chunks of `first..first + count`
    let mine_of = |first: i64, count: i64| spread.part(first, count).1.eval(&[], 0, m.cores as i64);
    // the meetings after part `i` of a group of `r` rows: (cycles, GM cycles)
    let meeting = |i: usize, r: i64| match built.ends_pass(i) {
        Some(pass) => spread::meet_cycles(ctx, spread, built.targets_of(pass), r),
        None => (0.0, 0.0),
    };
    // after part `i`, a member's first chunk of the pass (GM cycles `g`, vector cycles `v`)
    // deferred past a `sync_all`, alone
    let defer = deferring(ctx, spread);
    let traffics: Vec<_> = parts.iter().map(|p| traffic(ctx, &p.nodes)).collect();
    let storing_passes = storing(parts, &traffics);
    let deferral = |i: usize, g: f64, v: f64| match built.ends_pass(i) {
        Some(pass) if defer && storing_passes.contains(&pass) => 2.0 * lat + g + v,
        _ => 0.0,
    };
    // GM cycles of one iteration of chunk `first` (`len` columns) for `r` rows
    let gm_cycles = |arrays: &BTreeSet<ArrayId>, r: i64, first: i64, len: i64| {
        let (mut charged, mut bursts) = (0u64, 0u64);
        for &a in arrays {
            let e = ctx.dtype(a).size();
            let at = (first * w) as u64 * e;
            match ctx.vk.arrays[&a] {
                Kind::Tile => {
                    for i in 0..r as u64 {
                        charged += gm.charged(i * cols as u64 * e + at, len as u64 * e);
                    }
                    bursts += r as u64;
                }
                Kind::Col => {
                    charged += gm.charged(at, len as u64 * e);
                    bursts += 1;
                }
                _ => {
                    charged += gm.charged(0, r as u64 * e);
                    bursts += 1;
                }
            }
        }
        charged as f64 / rate + bursts as f64 * gm.burst_cycles
    };
    // inputs whole per group, a group of `r` rows: the GM cycles of its loads (the
    // member's columns) and of its chunks' stores, its vector cycles, and its meetings'
    // cycles and GM cycles
    let whole_rows = |r: i64| {
        let loaded = mine_of(0, spread.chunks) * w;
        let load = gm_cycles(&ctx.per_group(), r, 0, loaded.min(cols));
        let (mut store, mut v, mut meet, mut meet_gm) = (0.0, 0.0, 0.0, 0.0);
        for (i, p) in parts.iter().enumerate() {
            let each = ctx.vector_cycles_in(r, p.nodes.clone());
            match p.run {
                Run::Rows => v += each,
                Run::Chunks {
                    first, count, cols, ..
                } => {
                    let count = mine_of(first, count);
                    v += count as f64 * each;
                    let g = gm_cycles(&traffics[i].1, r, first, cols);
                    store += count as f64 * g;
                    let (c, mg) = meeting(i, r);
                    meet += c + deferral(i, g, each);
                    meet_gm += mg;
                }
            }
        }
        (load, store, v, meet, meet_gm)
    };
    // pipelined group by group, a group's cycles in the steady state (of its GM and vector
    // cycles)
    let steady = |g: f64, v: f64| g.max(v).max((lat + g + v) / 2.0);
    // (cycles, GM cycles, vector cycles) of a group of `r` rows, its per-row outputs aside
    let group_alone = |r: i64| {
        let (mut cycles, mut g_all, mut v_all, mut pending) = (0.0, 0.0, 0.0, 0.0);
        if ctx.resident() {
            // the group's rows whole, then its chunks' stores, the meetings apart
            let (load, store, v, meet, meet_gm) = whole_rows(r);
            let g = load + store;
            return (steady(g, v) + meet, g + meet_gm, v);
        }
        for (i, p) in parts.iter().enumerate() {
            let v = ctx.vector_cycles_in(r, p.nodes.clone());
            match p.run {
                Run::Rows => pending += v,
                Run::Chunks {
                    first, count, cols, ..
                } => {
                    let count = mine_of(first, count);
                    let (loads, stores) = &traffics[i];
                    let both = loads.union(stores).copied().collect();
                    let g = gm_cycles(&both, r, first, cols);
                    let (c, mg) = meeting(i, r);
                    cycles += c + deferral(i, g, v);
                    g_all += mg;
                    if count == 0 {
                        continue;
                    }
                    let v = v + std::mem::take(&mut pending) / count as f64;
                    cycles += count as f64 * steady(g, v);
                    g_all += count as f64 * g;
                    v_all += count as f64 * v;
                }
            }
        }
        (cycles + pending, g_all, v_all + pending)
    };
    // per-row outputs: stored group by group (the next group waits for the store), or
    // kept for the core's rows and stored once after its last group
    let row_outs: BTreeSet<ArrayId> = row_outputs(ctx).into_iter().collect();
    let mine = ctx.team_rows();
    let each_group = ctx.row_stores == RowStores::EachGroup;
    let once = core_homes::store_cycles(ctx, rows);
    // (cycles, GM cycles, vector cycles) of a group of `r` rows
    let group = |r: i64| {
        let (c, g, v) = group_alone(r);
        if !each_group || row_outs.is_empty() {
            return (c, g, v);
        }
        let stores = gm_cycles(&row_outs, r, 0, 1);
        (c + lat + stores, g + stores, v)
    };
    let groups = (mine + rows - 1) / rows;
    let (whole, last) = (group(rows), group(mine - (groups - 1) * rows));
    let k = (groups - 1) as f64;
    // inputs whole per group, nothing hides the first group's loads, and its computation
    // overlaps only its own stores
    let exposed = if ctx.resident() {
        let (load, store, v, _, _) = whole_rows(rows.min(mine));
        (load + v.max(store) - steady(load + store, v)).max(0.0)
    } else {
        0.0
    };
    (
        k * whole.0 + last.0 + 2.0 * lat + once + exposed,
        k * whole.1 + last.1 + once,
        k * whole.2 + last.2,
    )
}

/// Compiles `vk` (of `kernel` at `params`) with its rows in column chunks on `machine`.
pub fn compile(
    vk: &VectorKernel,
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
) -> Result<(npu_sim::Program, Plan), NpuError> {
    let mut ranked = ranked(vk, kernel, params, machine, 1)?;
    Ok(ranked.swap_remove(0))
}

/// [`compile`] in the model's `limit` cheapest ways (at least one: groups of rows, chunk
/// widths, inputs whole or streamed), cheapest first.
pub fn ranked(
    vk: &VectorKernel,
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    limit: usize,
) -> Result<Vec<(npu_sim::Program, Plan)>, NpuError> {
    let steps = passes::split(vk, kernel).map_err(NpuError::Unsupported)?;
    let cols = vk.cols.unwrap_or(1);
    let frame = Frame::of(machine, 0);
    // chunks are whole repeats of the narrowest type (and so whole 32-byte blocks), and a
    // row of f32 values sweeps in one instruction
    let step = frame.bytes_per_repeat / super::narrowest(vk, kernel);
    let widest = frame.max_repeat * frame.lanes(npu_sim::program::DType::F32) / step * step;
    let mut widths: Vec<i64> = (2..=(cols + step - 1) / step)
        .map(|n| ((cols + n - 1) / n + step - 1) / step * step)
        .filter(|&w| w <= widest && w < cols)
        .collect();
    widths.dedup();
    let capacity = machine.tier(Tier::Ub).map_or(0, |t| t.capacity);
    // loaded whole, a row holds every chunk's columns (the last chunk's sweeps read its
    // width)
    let whole = |w: i64| Columns::Resident {
        width: (cols + w - 1) / w * w,
    };
    let mut costed: Vec<(f64, i64, Way)> = Vec::new();
    let mut why = None;
    // (UB bytes, rows, columns) of the smallest group and chunk
    let mut smallest: Option<(u64, i64, i64)> = None;
    let ways = (widths.iter()).flat_map(|&w| [(whole(w), w), (Columns::Streamed, w)]);
    // an in-out tile streamed in chunks whose rows share 32-byte blocks: a chunk's load
    // would read a block the previous chunk's store writes
    let block = npu_sim::hazards::BLOCK as i64;
    let shares = (vk.arrays.iter()).find(|(a, &k)| {
        let array = kernel.array(**a);
        let bytes = dtype(array.elem).map_or(4, |d| d.size() as i64);
        k == Kind::Tile && array.role == Role::InOut && (cols * bytes) % block != 0
    });
    for way in ways {
        if way.0 == Columns::Streamed && shares.is_some() {
            continue;
        }
        let w = way.1;
        let built = match Built::new(vk, kernel, machine, &steps, way) {
            Ok(b) => b,
            Err(e) => {
                why.get_or_insert(e);
                continue;
            }
        };
        let cores = machine.cores as i64;
        let spreads = (1..=cores).filter(|s| cores % s == 0);
        let options = [RowStores::OncePerCore, RowStores::EachGroup].into_iter();
        for (stores, spread) in options.flat_map(|o| spreads.clone().map(move |s| (o, s))) {
            let ctx = built.context((vk, kernel, params, machine), (stores, spread));
            if stores == RowStores::OncePerCore && core_homes::outputs(&ctx).is_empty() {
                continue;
            }
            let g = ctx.group_granule();
            let mine = ctx.team_rows();
            let least = ctx.ub_bytes(g);
            if smallest.is_none_or(|(b, _, _)| least < b) {
                smallest = Some((least, g, w));
            }
            for r in (1..=frame.max_repeat / g)
                .map(|k| k * g)
                .filter(|&r| r <= mine.max(g))
            {
                // a home of the core's rows shrinks as groups grow: larger groups may fit
                if ctx.ub_bytes(r) > capacity {
                    continue;
                }
                if stores == RowStores::OncePerCore && !core_homes::one_store(&ctx, r) {
                    continue;
                }
                if !spreadable(&ctx, &built, r, w) {
                    continue;
                }
                let (cycles, _, _) = cost(&ctx, &built, r, w);
                costed.push((cycles, r, (way.0, w, stores, spread)));
            }
        }
    }
    // cheapest first, the first costed (the wider chunks, inputs whole) among equals
    costed.sort_by(|a, b| a.0.total_cmp(&b.0));
    if costed.is_empty() {
        return Err(why.unwrap_or_else(|| {
            let need = smallest.map_or(String::new(), |(b, r, w)| {
                format!(" (a group of {r} rows in chunks of {w} columns needs {b} bytes)")
            });
            let streamed = shares.map_or(String::new(), |(a, _)| {
                format!(
                    "; inputs cannot come chunk by chunk: `{}` is read and written in rows that share 32-byte blocks (a chunk's load would read the block the previous chunk's store writes)",
                    kernel.array(*a).name
                )
            });
            NpuError::Unsupported(format!(
                "no group of rows and chunk of columns fits `{}`'s UB{need}{streamed}",
                machine.name
            ))
        }));
    }
    let passes = (steps.iter())
        .filter(|s| matches!(s, Step::Columns(_)))
        .count();
    (costed.into_iter().take(limit.max(1)))
        .map(|(_, rows, way)| {
            let built = Built::new(vk, kernel, machine, &steps, (way.0, way.1))?;
            chosen(&built, (vk, kernel, params, machine), (rows, way), passes)
        })
        .collect()
}

/// The program and plan of groups of `rows` rows the way `way`.
fn chosen(
    built: &Built,
    (vk, kernel, params, machine): Parts,
    (rows, way): (i64, Way),
    passes: usize,
) -> Result<(npu_sim::Program, Plan), NpuError> {
    let cols = vk.cols.unwrap_or(1);
    let capacity = machine.tier(Tier::Ub).map_or(0, |t| t.capacity);
    let ctx = built.context((vk, kernel, params, machine), (way.2, way.3));
    let w = way.1;
    let program = emit(&ctx, built, rows, w)?;
    let (predicted, gm_cycles, vector_cycles) = cost(&ctx, built, rows, w);
    let g = ctx.granule();
    Ok((
        program,
        Plan {
            rows: vk.row_count(),
            cols: vk.cols,
            width: w,
            group_rows: rows,
            granule: g,
            cores: machine.cores as i64,
            groups: ctx.core_groups(rows),
            predicted: predicted.round() as u64,
            gm_cycles: gm_cycles.round() as u64,
            vector_cycles: vector_cycles.round() as u64,
            ub_bytes: ctx.ub_bytes(rows),
            ub_capacity: capacity,
            reduces: vk.reduces(),
            row_stores: (!row_outputs(&ctx).is_empty()).then_some(way.2),
            chunks: Some(Chunks {
                width: w,
                count: (cols + w - 1) / w,
                passes,
                resident: way.0 != Columns::Streamed,
                spread: way.3,
                deferred: deferring(&ctx, spread_of(&ctx, w)),
            }),
        },
    ))
}

/// The program for groups of `rows` rows in chunks of `w` columns.
fn emit(ctx: &Context, built: &Built, rows: i64, w: i64) -> Result<npu_sim::Program, NpuError> {
    let k = ctx.kernel;
    let parts = &built.parts;
    let cols = ctx.vk.cols.unwrap_or(1);
    let spread = spread_of(ctx, w);
    let mut b = Builder::new();
    let mut names = BTreeSet::new();
    let tensors = program::tensors(ctx, &mut b, &mut names)?;
    let bufs = program::declare(ctx, &mut b, rows, &mut names);
    let meetings = (0..parts.len())
        .filter_map(|i| built.ends_pass(i))
        .filter(|&pass| !built.targets_of(pass).is_empty())
        .count() as i64;
    let workspaces = Workspaces::declare(ctx, &mut b, &mut names, rows, meetings);
    let core_rows = CoreRows::of(ctx, rows);
    // spread, the member computing the last chunks zeroes what they read unloaded
    program::per_core_inputs(ctx, &mut b, &bufs, &tensors, spread.members == 1)?;
    if spread.members > 1 {
        spread::zero_padding(ctx, &mut b, spread, &bufs, (rows, w));
    }
    let places = Places::new(ctx, &bufs)?;
    program::invariants(ctx, &mut b, &places);
    let buf = |h: program::Holds| {
        (bufs.get(&h).copied()).ok_or_else(|| NpuError::Internal(format!("no buffer holds {h:?}")))
    };
    let tensor = |a: ArrayId| -> Result<TensorId, NpuError> {
        (tensors.get(&a).copied())
            .ok_or_else(|| NpuError::Internal(format!("no tensor for array {a:?}")))
    };
    let traffic: Vec<_> = parts.iter().map(|p| traffic(ctx, &p.nodes)).collect();
    // inputs loaded whole per group, into slot `t % 2`
    let group_loads = if ctx.resident() {
        ctx.per_group()
    } else {
        BTreeSet::new()
    };
    let loads_any = !group_loads.is_empty() || traffic.iter().any(|(l, _)| !l.is_empty());
    let stores_any = traffic.iter().any(|(_, s)| !s.is_empty());
    let row_outputs = row_outputs(ctx);
    let each_group = !row_outputs.is_empty() && ctx.row_stores == RowStores::EachGroup;
    let homes = CoreHomes::new(ctx, &bufs, rows)?;
    // a row's last chunk and the next row's first share a 32-byte block
    let shared_blocks = (traffic.iter().flat_map(|(_, s)| s))
        .any(|&a| ctx.row_bytes(a) % npu_sim::hazards::BLOCK as i64 != 0);
    // each part's first chunk iteration in a group's, and a group's
    let bases: Vec<i64> = (parts.iter())
        .scan(0, |at, p| {
            let base = *at;
            if let Run::Chunks { count, .. } = p.run {
                *at += count;
            }
            Some(base)
        })
        .collect();
    let per_group: i64 = (parts.iter())
        .map(|p| match p.run {
            Run::Chunks { count, .. } => count,
            Run::Rows => 0,
        })
        .sum();
    let stores_of = storing(parts, &traffic);
    let defer = deferring(ctx, spread);
    // the "free" flags: set before the loop, waited for after it
    let free = [
        (loads_any, Pipe::V, Pipe::Mte2, &[0, 1][..]),
        (stores_any, Pipe::Mte3, Pipe::V, &[0, 1]),
        (each_group, Pipe::Mte3, Pipe::V, &[2]),
    ];
    let used = || {
        free.iter()
            .filter(|f| f.0)
            .flat_map(|f| f.3.iter().map(|&id| (f.1, f.2, id)))
    };
    for (src, dst, id) in used() {
        b.set_flag(src, dst, id);
    }
    // the homes of the reductions' targets, which a team's members combine
    let target_homes = (ctx.reduced().into_iter())
        .filter(|_| spread.members > 1)
        .map(|a| {
            let (buf, _) = buf(program::Holds::Home(a))?;
            let offset = Expr::Const(0);
            Ok((a, Place { buf, offset }))
        })
        .collect::<Result<BTreeMap<_, _>, NpuError>>()?;
    let mut err = None;
    b.repeat("t", core_rows.groups(rows), |b, t| {
        let (row0, r) = core_rows.group(&t, rows);
        let group_rows = super::emit::Rows {
            count: r.clone(),
            max: rows,
        };
        // the GM index of column `col` of the group's first row of array `a`
        let gm_index = |a: ArrayId, col: Expr| -> Vec<Expr> {
            let rank = k.array(a).dims.len().max(1);
            let flat = match ctx.vk.arrays[&a] {
                Kind::Tile => row0.clone() * cols + col,
                Kind::Col => col,
                _ => row0.clone(),
            };
            let mut idx = vec![Expr::Const(0); rank];
            idx[rank - 1] = flat;
            idx
        };
        if each_group {
            b.wait_flag(Pipe::Mte3, Pipe::V, 2);
        }
        let group_slot = t.clone() % 2;
        if !group_loads.is_empty() {
            b.wait_flag(Pipe::V, Pipe::Mte2, group_slot.clone());
            for &a in &group_loads {
                let loaded = buf(program::Holds::In(a)).and_then(|(id, elems)| {
                    let tile = ctx.vk.arrays[&a] == Kind::Tile;
                    // a member loads its chunks' columns of a tile, where the whole rows
                    // would be
                    let (c0, len, at) = match spread.members {
                        s if s > 1 && tile => {
                            let (c0, len) = spread.columns(cols, w);
                            (c0.clone(), len, group_slot.clone() * elems + c0)
                        }
                        _ => (
                            Expr::Const(0),
                            Expr::Const(cols),
                            group_slot.clone() * elems,
                        ),
                    };
                    let gm = b.at(tensor(a)?, gm_index(a, c0));
                    let ub = b.at(id, [at]);
                    let dma = match tile {
                        true => Dma::new(ub, gm, r.clone(), len).strides(cols, ctx.loaded_width()),
                        false => Dma::new(ub, gm, 1, r.clone()),
                    };
                    b.origin(Some(&format!("load {} rows", k.array(a).name)));
                    b.push(dma);
                    b.origin(None);
                    Ok(())
                });
                if let Err(e) = loaded {
                    err.get_or_insert(e);
                }
            }
            b.set_flag(Pipe::Mte2, Pipe::V, group_slot.clone());
            b.wait_flag(Pipe::Mte2, Pipe::V, group_slot.clone());
        }
        // where value `v` is for chunk iteration `slot`, of columns from `col0` (a loaded
        // input's place moves with the chunk when it is loaded whole, a per-row output kept
        // for the core's rows with the group)
        let place = |v: Val, slot: &Expr, col0: &Expr| -> Place {
            let n = &ctx.group.graph.nodes[v];
            let input = n.op == Op::Given && n.home.is_none();
            if !(input && ctx.resident()) {
                return homes.place(places.at(v, slot), &t);
            }
            let p = places.at(v, &group_slot);
            match n.layout {
                Layout::Tile { .. } | Layout::Col => Place {
                    offset: p.offset + col0.clone(),
                    ..p
                },
                _ => p,
            }
        };
        let mut meeting = 0;
        // where a reduction's target is for the whole group (every target has a home)
        let home = |a: ArrayId| target_homes[&a].clone();
        let team = spread::Team {
            spread,
            workspaces: &workspaces,
            bufs: &bufs,
            home: &home,
        };
        // part `pi`'s chunk `c` (alone, `c` counts from the part's first chunk; spread, it
        // is the chunk's number in the pass)
        let iteration = |b: &mut Builder, pi: usize, c: Expr| -> Result<(), NpuError> {
            let (p, (loads, stores), base) = (&parts[pi], &traffic[pi], bases[pi]);
            let Run::Chunks {
                first, cols: len, ..
            } = p.run
            else {
                return Ok(());
            };
            let (slot, col0) = match spread.members {
                1 => (
                    (t.clone() * per_group + c.clone() + base) % 2,
                    (c + first) * w,
                ),
                _ => (
                    (t.clone() * per_group + (c.clone() - first) + base) % 2,
                    c * w,
                ),
            };
            // the chunk of array `a` between GM and its ring slot
            let chunk = |b: &mut Builder, a: ArrayId, ring: program::Holds, load: bool| {
                let (id, elems) = buf(ring)?;
                let gm = b.at(tensor(a)?, gm_index(a, col0.clone()));
                let ub = b.at(id, [slot.clone() * elems]);
                let (dst, src) = if load { (ub, gm) } else { (gm, ub) };
                let dma = match ctx.vk.arrays[&a] {
                    Kind::Tile => {
                        let (gs, us) = (cols, w);
                        Dma::new(dst, src, r.clone(), len)
                            .strides(if load { gs } else { us }, if load { us } else { gs })
                    }
                    Kind::Col => Dma::new(dst, src, 1, len),
                    _ => Dma::new(dst, src, 1, r.clone()),
                };
                let verb = if load { "load" } else { "store" };
                b.origin(Some(&format!("{verb} a chunk of {}", k.array(a).name)));
                b.push(dma);
                b.origin(None);
                Ok::<(), NpuError>(())
            };
            if !loads.is_empty() {
                b.wait_flag(Pipe::V, Pipe::Mte2, slot.clone());
                for &a in loads {
                    chunk(b, a, program::Holds::In(a), true)?;
                }
                b.set_flag(Pipe::Mte2, Pipe::V, slot.clone());
                b.wait_flag(Pipe::Mte2, Pipe::V, slot.clone());
            }
            if !stores.is_empty() {
                b.wait_flag(Pipe::Mte3, Pipe::V, slot.clone());
            }
            let at = |v: Val| place(v, &slot, &col0);
            program::nodes(ctx, b, &at, &group_rows, p.nodes.clone());
            if !loads.is_empty() {
                b.set_flag(Pipe::V, Pipe::Mte2, slot.clone());
            }
            if !stores.is_empty() {
                b.set_flag(Pipe::V, Pipe::Mte3, slot.clone());
                b.wait_flag(Pipe::V, Pipe::Mte3, slot.clone());
                if shared_blocks {
                    b.barrier(BarrierScope::Pipe(Pipe::Mte3));
                }
                for &a in stores {
                    chunk(b, a, program::Holds::Out(a), false)?;
                }
                b.set_flag(Pipe::Mte3, Pipe::V, slot);
            }
            Ok(())
        };
        // the member's first chunk of every pass
        let (lead_chunk, _) = spread.part(0, spread.chunks);
        for (i, p) in parts.iter().enumerate() {
            let Run::Chunks {
                first, count, pass, ..
            } = p.run
            else {
                let zero = Expr::Const(0);
                let at = |v: Val| place(v, &zero, &zero);
                program::nodes(ctx, b, &at, &group_rows, p.nodes.clone());
                continue;
            };
            let targets = built.targets_of(pass);
            if first == 0 {
                spread::identities(ctx, b, &team, targets, &group_rows);
            }
            // the member's chunks of the part: the first (past the part's) and how many
            let (mine, mine_count) = spread.part(first, count);
            // a member's first chunk of a pass that stores into blocks another member's
            // chunks share comes after the others' stores (`defer`)
            let deferred = defer && stores_of.contains(&pass);
            let done = if spread.members == 1 {
                if count == 1 {
                    iteration(b, i, Expr::Const(0))
                } else {
                    let mut res = Ok(());
                    b.repeat("c", count, |b, c| res = iteration(b, i, c));
                    res
                }
            } else {
                // (deferred, the member's first chunk is skipped if it is in this part)
                let (first_c, n) = match deferred {
                    true => {
                        let skip = mine.clone().cmp(CmpOp::Eq, lead_chunk.clone());
                        (mine.clone() + skip.clone(), mine_count - skip)
                    }
                    false => (mine.clone(), mine_count),
                };
                let mut res = Ok(());
                b.repeat("c", n, |b, c| res = iteration(b, i, c + first_c));
                res
            };
            if let Err(e) = done {
                err.get_or_insert(e);
            }
            if deferred && built.ends_pass(i).is_some() {
                b.sync_all();
                for (j, q) in parts.iter().enumerate() {
                    let Run::Chunks {
                        first,
                        count,
                        pass: other,
                        ..
                    } = q.run
                    else {
                        continue;
                    };
                    if other != pass {
                        continue;
                    }
                    let inside = (lead_chunk.clone().cmp(CmpOp::Ge, first))
                        .min(lead_chunk.clone().cmp(CmpOp::Lt, first + count));
                    let mut res = Ok(());
                    b.when("first", inside, |b| {
                        res = iteration(b, j, lead_chunk.clone())
                    });
                    if let Err(e) = res {
                        err.get_or_insert(e);
                    }
                }
            }
            if built.ends_pass(i).is_some() && !targets.is_empty() {
                let met = spread::meet(ctx, b, &team, (meeting, &t), targets, &group_rows);
                if let Err(e) = met {
                    err.get_or_insert(e);
                }
                meeting += 1;
            }
        }
        if !group_loads.is_empty() {
            b.set_flag(Pipe::V, Pipe::Mte2, group_slot);
        }
        if each_group {
            b.set_flag(Pipe::V, Pipe::Mte3, 2);
            b.wait_flag(Pipe::V, Pipe::Mte3, 2);
            // (by a team's first member only: every member has the same values)
            let mut store_rows = |b: &mut Builder| {
                for &a in &row_outputs {
                    let stored = buf(program::Holds::Home(a)).and_then(|(id, _)| {
                        let gm = b.at(tensor(a)?, gm_index(a, Expr::Const(0)));
                        let ub = b.at(id, [Expr::Const(0)]);
                        b.origin(Some(&format!("store {} rows", k.array(a).name)));
                        b.push(Dma::new(gm, ub, 1, r.clone()));
                        b.origin(None);
                        Ok(())
                    });
                    if let Err(e) = stored {
                        err.get_or_insert(e);
                    }
                }
            };
            match spread.members {
                1 => store_rows(b),
                _ => b.when("lead", spread.lead(), store_rows),
            }
            b.set_flag(Pipe::Mte3, Pipe::V, 2);
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    homes.store(ctx, &mut b, &tensors, &core_rows)?;
    for (src, dst, id) in used() {
        b.wait_flag(src, dst, id);
    }
    // the rings' flags are the ones above; those of the per-core loads and of the kept
    // outputs' store are placed from the dependences
    crate::npu::sync::place(crate::npu::finish(b)?, ctx.machine)
}
