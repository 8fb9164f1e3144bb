//! Chunks of a row spread over cores: when a kernel in column chunks has fewer groups of
//! rows than the machine has cores (a few very long rows), `S` cores, a *team*, share each
//! group, each *member* computing a contiguous range of every pass's chunks (core `c` is
//! member `c % S` of team `c / S`; member `j` takes chunks `j*q..` of a pass's `n`, with
//! `q = ceil(n / S)`, and every member has at least one).
//!
//! A member loads and stores its own chunks as a core does without spreading. In rows of
//! whole 32-byte blocks chunk boundaries are block boundaries; in rows off them a member's
//! first chunk of a row shares a block with its neighbour's last (member 0's with the
//! previous row's last), so in a pass that stores tiles each member computes its first
//! chunk after all cores have met at a `sync_all` that follows every other chunk (`chunks`
//! emits it; every member then has two chunks at least, and no tile is read and written).
//! A pass's reductions meet through GM:
//! - before the pass, members other than the first set the pass's reduction targets to the
//!   reduction's identity (0, -inf, +inf); the first member's start from the target's value
//!   (its initial value), which so counts once;
//! - after the pass, V hands the partial results (each target's values for the group's
//!   rows) to MTE3, which stores them into a `scratch` workspace, a row per core on GM's
//!   alignment (whole 32-byte blocks at least); all cores meet at a `sync_all`; MTE2 loads the team's `S` rows (one
//!   `dma` of `S` bursts) and V combines them in member order into the target's home.
//!   Every member computes the same values in the same order, so all go on with identical
//!   per-row values; per-row outputs are stored by the first member only.
//!
//! Every core runs the same number of groups (the choice requires it), so every core meets
//! at every `sync_all`. A workspace has two halves, by the group's parity, and a row per
//! meeting of a group: a meeting's rows are written again two groups later, after the next
//! group's first `sync_all`, which every member reaches only after loading them.
//!
//! Deliberately absent: per-row outputs kept for the team's rows (they are stored group by
//! group), teams with different numbers of groups, and a combination other than in member
//! order (each sum over the columns is a sum of the members' partial sums: allowed only
//! with `--reorder-reductions`, as every reduction of the vector path).

use super::emit::{Emitter, Place, Rows};
use super::graph::{Graph, Imm, Layout, Op};
use super::lower::combining;
use super::program::{self, times, Context, Holds};
use super::recognise::{Kind, VectorKernel};
use crate::npu::NpuError;
use frontend::ir::{ArrayId, Role};
use npu_sim::builder::Builder;
use npu_sim::program::{BufferId, CmpOp, Direction, Dma, Expr, Pipe, ReduceOp, TensorId};
use std::collections::{BTreeMap, BTreeSet};

/// How a group's chunks are shared by a team's members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spread {
    /// Cores per team (1: a group is one core's).
    pub members: i64,
    /// Chunks of a pass.
    pub chunks: i64,
}

impl Spread {
    /// Chunks of a pass per member (the last may have fewer).
    pub fn share(self) -> i64 {
        (self.chunks + self.members - 1) / self.members
    }

    /// Whether every member has at least one chunk of a pass.
    pub fn fits(self) -> bool {
        (self.members - 1) * self.share() < self.chunks
    }

    /// Whether every member has at least two chunks of a pass: a member's first chunk can
    /// then wait for its neighbours' last ones (rows off 32-byte blocks) while its own last
    /// does not.
    pub fn fits_apart(self) -> bool {
        self.share() >= 2 && self.chunks - (self.members - 1) * self.share() >= 2
    }

    /// The running core's index in its team.
    pub fn member(self) -> Expr {
        Expr::Core % self.members
    }

    /// Of a pass's chunks `first..first + count`, the running member's: its first and how
    /// many (none, for a member whose range misses them).
    pub fn part(self, first: i64, count: i64) -> (Expr, Expr) {
        if self.members == 1 {
            return (Expr::Const(first), Expr::Const(count));
        }
        let (q, end) = (self.share(), first + count);
        let lo = times(self.member(), q);
        let hi = lo.clone() + q;
        let lo = lo.max(first).min(end);
        (lo.clone(), hi.max(first).min(end) - lo)
    }

    /// The running member's columns of rows of `cols` columns in chunks of `w`: its first
    /// column and how many.
    pub fn columns(self, cols: i64, w: i64) -> (Expr, Expr) {
        let (first, count) = self.part(0, self.chunks);
        let c0 = times(first.clone(), w);
        let end = times(first + count, w).min(cols);
        (c0.clone(), end - c0)
    }

    /// 1 on the team's first member, else 0.
    pub fn lead(self) -> Expr {
        self.member().cmp(CmpOp::Eq, 0)
    }
}

/// A reduction's target and its operation.
pub type Target = (ArrayId, ReduceOp);

/// The reductions of a kernel's statements `stmts` (a pass), each target once; `None` when
/// the pass cannot be spread (a target reduced by two operations).
pub fn targets(vk: &VectorKernel, stmts: &[usize]) -> Option<Vec<Target>> {
    let mut out: BTreeMap<ArrayId, ReduceOp> = BTreeMap::new();
    for &i in stmts {
        let s = &vk.stmts[i];
        let Some(op) = s.reduce else { continue };
        if out.insert(s.target, op).is_some_and(|o| o != op) {
            return None;
        }
    }
    Some(out.into_iter().collect())
}

/// The GM workspaces of a spread program's meetings, by reduced array: a `scratch` tensor
/// of `2 * meetings * cores` rows (half by the group's parity, then meeting, then core) of
/// `stride` elements, a group's rows rounded up to GM's alignment.
pub struct Workspaces {
    tensors: BTreeMap<ArrayId, (TensorId, i64)>,
    meetings: i64,
    cores: i64,
}

impl Workspaces {
    /// The workspaces for `meetings` meetings per group of `rows` rows, named apart from
    /// `names` (and added to them).
    pub fn declare(
        ctx: &Context,
        b: &mut Builder,
        names: &mut BTreeSet<String>,
        rows: i64,
        meetings: i64,
    ) -> Workspaces {
        let cores = ctx.machine.cores as i64;
        // a core's rows start on GM's alignment
        let block = ctx.gm_block();
        let mut tensors = BTreeMap::new();
        if ctx.spread > 1 && meetings > 0 {
            for a in ctx.reduced() {
                let d = ctx.dtype(a);
                let per_block = (block / d.size() as i64).max(1);
                let stride = (rows + per_block - 1) / per_block * per_block;
                let base = format!("{}_partials", ctx.kernel.array(a).name);
                let name = crate::npu::name_apart(base, |n| names.contains(n));
                names.insert(name.clone());
                let shape = [(2 * meetings * cores) as u64, stride as u64];
                let id = b.tensor(&name, d, &shape, Direction::Scratch);
                tensors.insert(a, (id, stride));
            }
        }
        Workspaces {
            tensors,
            meetings,
            cores,
        }
    }

    /// The workspace row of core `core`'s partial results in meeting `k` of group `t`.
    fn row(&self, t: &Expr, k: i64, core: Expr) -> Expr {
        times(t.clone() % 2, self.meetings * self.cores) + k * self.cores + core
    }
}

/// What a team's meetings use: how the team shares a group, the workspaces, the UB
/// buffers and where each reduction target's values are for the group.
pub struct Team<'a> {
    /// How the group's chunks are shared.
    pub spread: Spread,
    /// The GM workspaces.
    pub workspaces: &'a Workspaces,
    /// The UB buffers, by what they hold.
    pub bufs: &'a BTreeMap<Holds, (BufferId, i64)>,
    /// Where a reduction target's values are.
    pub home: &'a dyn Fn(ArrayId) -> Place,
}

/// V, before a pass on every member but the first: the pass's reduction targets set to
/// their reductions' identities.
pub fn identities(ctx: &Context, b: &mut Builder, team: &Team, targets: &[Target], rows: &Rows) {
    let (spread, home) = (team.spread, team.home);
    if spread.members == 1 || targets.is_empty() {
        return;
    }
    b.when("member", spread.member().cmp(CmpOp::Ne, 0), |b| {
        let mut e = Emitter::new(b, program::unit(ctx.machine, ctx.group));
        e.barrier();
        e.b.origin(Some(
            "the other members' reductions start from their identities",
        ));
        for &(a, op) in targets {
            let identity = match op {
                ReduceOp::Sum => 0.0,
                ReduceOp::Max => f64::NEG_INFINITY,
                ReduceOp::Min => f64::INFINITY,
            };
            let mut g = Graph::new();
            let v = g.add(Op::Dup(Imm::new(identity)), ctx.dtype(a), Layout::Row);
            e.node(&g, v, &|_| home(a), rows);
        }
        e.b.origin(None);
    });
}

/// Meeting `k` of group `t` after a pass: the members' partial results of `targets` (the
/// group's `rows`) stored into the workspace, all cores meet, and each member loads its
/// team's and combines them in member order into the targets' homes.
pub fn meet(
    ctx: &Context,
    b: &mut Builder,
    team: &Team,
    (k, t): (i64, &Expr),
    targets: &[Target],
    rows: &Rows,
) -> Result<(), NpuError> {
    let (spread, ws, bufs, home) = (team.spread, team.workspaces, team.bufs, team.home);
    if spread.members == 1 || targets.is_empty() {
        return Ok(());
    }
    let name = |a: ArrayId| ctx.kernel.array(a).name.clone();
    let found = |a: ArrayId| {
        let (tensor, stride) = (ws.tensors.get(&a).copied())
            .ok_or_else(|| NpuError::Internal(format!("no workspace for {a:?}")))?;
        let (buf, _) = (bufs.get(&Holds::Partials(a)).copied())
            .ok_or_else(|| NpuError::Internal(format!("no buffer of partials for {a:?}")))?;
        Ok::<_, NpuError>((tensor, stride, buf))
    };
    b.set_flag(Pipe::V, Pipe::Mte3, 2);
    b.wait_flag(Pipe::V, Pipe::Mte3, 2);
    for &(a, _) in targets {
        let (tensor, _, _) = found(a)?;
        let h = home(a);
        let dst = b.at(tensor, [ws.row(t, k, Expr::Core), Expr::Const(0)]);
        let src = b.at(h.buf, [h.offset]);
        b.origin(Some(&format!(
            "store the member's partial results of {}",
            name(a)
        )));
        b.push(Dma::new(dst, src, 1, rows.count.clone()));
    }
    b.origin(None);
    b.sync_all();
    let f = &ctx.group.frame;
    for &(a, _) in targets {
        let (tensor, stride, buf) = found(a)?;
        let first = Expr::Core - spread.member();
        let src = b.at(tensor, [ws.row(t, k, first), Expr::Const(0)]);
        let dst = b.at(buf, [Expr::Const(0)]);
        let ub_stride = f.aligned(ctx.dtype(a), rows.max);
        b.origin(Some(&format!(
            "load the team's partial results of {}",
            name(a)
        )));
        b.push(Dma::new(dst, src, spread.members, rows.count.clone()).strides(stride, ub_stride));
    }
    b.origin(None);
    b.set_flag(Pipe::Mte2, Pipe::V, 2);
    b.wait_flag(Pipe::Mte2, Pipe::V, 2);
    let mut e = Emitter::new(b, program::unit(ctx.machine, ctx.group));
    e.barrier();
    for &(a, op) in targets {
        let (_, _, buf) = found(a)?;
        let d = ctx.dtype(a);
        let ub_stride = f.aligned(d, rows.max);
        e.b.origin(Some(&format!(
            "the team's partial results of {} combined in member order",
            name(a)
        )));
        let mut g = Graph::new();
        let parts: Vec<_> = (0..spread.members)
            .map(|_| g.given(d, Layout::Row))
            .collect();
        let place = |v: usize| match parts.iter().position(|&p| p == v) {
            Some(j) => Place {
                buf,
                offset: Expr::Const(j as i64 * ub_stride),
            },
            None => home(a),
        };
        let mut acc = parts[0];
        for &p in &parts[1..] {
            acc = g.fresh(Op::Binary(combining(op), acc, p), d, Layout::Row);
            e.node(&g, acc, &place, rows);
        }
    }
    e.b.origin(None);
    Ok(())
}

/// Cycles of a meeting of `targets` for groups of `r` rows on `spread`'s members: the
/// partial results' store, the `sync_all` (a GM round trip), the team's rows' load and
/// V's combination, one after the other. Returns the whole and its GM cycles.
pub fn meet_cycles(ctx: &Context, spread: Spread, targets: &[Target], r: i64) -> (f64, f64) {
    if spread.members == 1 || targets.is_empty() {
        return (0.0, 0.0);
    }
    let m = ctx.machine;
    let (rate, lat) = super::tiles::gm_share(m);
    let unit = program::unit(m, ctx.group);
    let (mut gm, mut vector) = (0.0, 0.0);
    for &(a, _) in targets {
        let bytes = (r as u64) * ctx.dtype(a).size();
        let burst = m.gm.charged(0, bytes) as f64 / rate + m.gm.burst_cycles;
        gm += burst * (1 + spread.members) as f64;
        let lanes = unit.frame.lanes(ctx.dtype(a));
        let repeats = ((r + lanes - 1) / lanes) as f64;
        vector += (spread.members - 1) as f64 * (unit.startup + repeats);
    }
    let flags = 2.0 * m.scalar.flag_cycles;
    (3.0 * lat + gm + vector + flags, gm)
}

/// Whether every tile array in GM has rows of whole 32-byte blocks, so that chunks spread
/// over cores never share a block.
pub fn whole_blocks(ctx: &Context) -> bool {
    let block = npu_sim::hazards::BLOCK as i64;
    (ctx.vk.arrays.iter())
        .filter(|(&a, &k)| k == Kind::Tile && ctx.kernel.array(a).role != Role::Temp)
        .all(|(&a, _)| ctx.row_bytes(a) % block == 0)
}

/// V, once per core, on the member computing every pass's last chunk only: the padding of
/// each row of the input rings (past the columns, to the rows' pitch in UB: with inputs
/// whole per group, past the row; streamed, past the last chunk's columns), which that
/// chunk's sweeps read and nothing loads. The other members read only what they load.
pub fn zero_padding(
    ctx: &Context,
    b: &mut Builder,
    spread: Spread,
    bufs: &BTreeMap<Holds, (BufferId, i64)>,
    (rows, w): (i64, i64),
) {
    let cols = ctx.vk.cols.unwrap_or(1);
    let resident = ctx.resident();
    let tail = cols - (spread.chunks - 1) * w;
    // (buffer, its type, elements per slot, rows, pitch, first padded column)
    let padded: Vec<_> = (bufs.iter())
        .filter_map(|(&h, &(id, elems))| {
            let Holds::In(a) = h else { return None };
            let (rows, pitch, start) = match (ctx.vk.arrays[&a], resident) {
                (Kind::Tile, true) => (rows, ctx.loaded_width(), cols),
                (Kind::Tile, false) => (rows, w, tail),
                (Kind::Col, false) => (1, w, tail),
                _ => return None,
            };
            // from the block the padding starts in (before any load)
            let per_block = ctx.group.frame.aligned(ctx.dtype(a), 1);
            let start = start / per_block * per_block;
            (start < pitch).then_some((id, ctx.dtype(a), elems, rows, pitch, start))
        })
        .collect();
    if padded.is_empty() {
        return;
    }
    let last = (spread.chunks - 1) / spread.share();
    b.when("last", spread.member().cmp(CmpOp::Eq, last), |b| {
        b.origin(Some("zero the padding the last chunk's sweeps read"));
        for (buf, d, elems, rows, pitch, start) in padded {
            // both slots' rows
            b.repeat("i", 2 * rows, |b, i| {
                let slot = i.clone() / rows;
                let offset = times(slot, elems) + times(i % rows, pitch) + start;
                let mut e = Emitter::new(b, program::unit(ctx.machine, ctx.group));
                e.fill(&Place { buf, offset }, d, pitch - start);
            });
        }
        b.origin(None);
    });
}
