//! The tiled vector program: rows dealt to the cores in balanced contiguous ranges, each
//! core's rows in groups of `R`, each group loaded GM -> UB by MTE2, computed by V and stored
//! UB -> GM by MTE3, double-buffered.
//!
//! Per core: per-column inputs and scalars are loaded once (MTE2), and the values that
//! depend only on them (constants, `gamma[d] * 2`) computed once (V). Then for each group
//! `t` (slot `t % 2` of the input and output rings): MTE2 loads the group's rows, V computes
//! the group's graph (`group`), MTE3 stores the group's outputs.
//!
//! Per-row outputs kept for the core's rows (`core_homes`) are computed into their slot of a
//! home in UB instead, and stored once after the last group; when every output is kept there
//! is no output ring.
//!
//! The program is emitted without flags between its pipes: `sync` places them from the
//! program's dependences (the rings' "full" and "free" flags by the slot's parity, the free
//! ones set twice before the loop and waited for twice after it, and those ordering the
//! per-core loads and the kept outputs' store), so that MTE2 loads group `t + 1` while V
//! computes `t` and MTE3 stores `t - 1`. When rows
//! are padded in UB (the columns are not whole 32-byte blocks) the input slots and column
//! buffers are zeroed first, so that element-wise sweeps over whole padded rows read only
//! written bytes.

use super::alloc::{Class, Temps};
use super::core_homes::CoreHomes;
use super::emit::{Emitter, Place, Rows, Unit};
use super::graph::{Columns, Graph, Layout, Op, Val};
use super::group::Group;
use super::recognise::{aff_value, Kind, VectorKernel};
use super::tiles::Transfer;
use crate::npu::matmul::dtype;
use crate::npu::NpuError;
use frontend::ir::{ArrayId, Kernel, Role};
use npu_sim::builder::Builder;
use npu_sim::program::{BufferId, CmpOp, DType, Direction, Dma, Expr, TensorId, Tier};
use npu_sim::Machine;
use std::collections::{BTreeMap, BTreeSet};

/// Flag ids per pipe pair the program uses: 0 and 1 for the rings' slots, 2 for the
/// per-core loads and for the store of per-row outputs kept for the core's rows.
pub const FLAG_IDS: u32 = 3;

/// What a UB buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Holds {
    /// An input's rows of a group (two slots).
    In(ArrayId),
    /// An output's rows of a group (two slots).
    Out(ArrayId),
    /// A temporary array's rows of a group.
    Home(ArrayId),
    /// An input loaded once per core (per-column values, scalars).
    PerCore(ArrayId),
    /// A value computed once per core.
    Invariant(Val),
    /// The partial results of a reduction's target from each member of a team sharing a
    /// group's chunks (`spread`), loaded from the GM workspace.
    Partials(ArrayId),
    /// A temporary value of a class.
    Temp(Class, usize),
}

/// One UB buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// What it holds.
    pub holds: Holds,
    /// Its element type.
    pub dtype: DType,
    /// Slots (2 for the rings).
    pub slots: i64,
    /// Elements per slot.
    pub elems: i64,
}

/// How a program stores its per-row outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowStores {
    /// Group by group: with whole rows from the output ring with the group's tiles; in
    /// column chunks from a home of the group's rows once its passes are done, the next
    /// group waiting for the store. Groups start on the outputs' 32-byte blocks.
    EachGroup,
    /// Kept in a home of all the core's rows, a slot per group on UB's alignment, stored
    /// once after the core's last group (`core_homes`): groups need not start on the
    /// outputs' blocks.
    OncePerCore,
}

impl RowStores {
    /// How `polyc bench` names it beside a candidate.
    pub fn label(self) -> &'static str {
        match self {
            RowStores::EachGroup => "per-row outputs stored per group",
            RowStores::OncePerCore => "per-row outputs stored once per core",
        }
    }
}

/// Everything the program is made from.
pub struct Context<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Its sizes.
    pub params: &'a BTreeMap<String, i64>,
    /// Its vector form.
    pub vk: &'a VectorKernel,
    /// A group's computation.
    pub group: &'a Group,
    /// Its temporaries.
    pub temps: &'a Temps,
    /// The machine.
    pub machine: &'a Machine,
    /// Slots of the per-group input and output rings (2: double-buffered; the attention
    /// program keeps one group in UB at a time and passes 1).
    pub slots: i64,
    /// How per-row outputs are stored.
    pub row_stores: RowStores,
    /// Cores that share each group of rows, each computing a contiguous range of its
    /// column chunks (`spread`); 1: a group is one core's.
    pub spread: i64,
}

pub(super) fn unit(m: &Machine, g: &Group) -> Unit {
    Unit {
        frame: g.frame,
        startup: m.vector.startup,
    }
}

impl Context<'_> {
    fn graph(&self) -> &Graph {
        &self.group.graph
    }

    fn kind(&self, a: ArrayId) -> Kind {
        self.vk.arrays[&a]
    }

    /// The arrays loaded per group (tiles and per-row values; with column chunks, per chunk
    /// and per-column values too).
    pub fn per_group(&self) -> BTreeSet<ArrayId> {
        let streamed = self.graph().columns == Columns::Streamed;
        self.loaded_where(|k| matches!(k, Kind::Tile | Kind::Row) || (streamed && k == Kind::Col))
    }

    /// The arrays loaded once per core (per-column values and scalars; with column chunks,
    /// scalars only).
    fn per_core(&self) -> BTreeSet<ArrayId> {
        let streamed = self.graph().columns == Columns::Streamed;
        self.loaded_where(|k| k == Kind::Scalar || (!streamed && k == Kind::Col))
    }

    fn loaded_where(&self, kind: impl Fn(Kind) -> bool) -> BTreeSet<ArrayId> {
        (self.group.loaded.iter())
            .filter(|(_, a)| kind(self.kind(*a)))
            .map(|(_, a)| *a)
            .collect()
    }

    /// The output arrays (stored per group).
    pub fn outputs(&self) -> BTreeSet<ArrayId> {
        (self.group.homes.iter())
            .filter(|a| self.kernel.array(**a).role.is_output())
            .copied()
            .collect()
    }

    /// Elements of one group's rows of an array (`loaded`: as loaded, for an input).
    fn group_elems(&self, a: ArrayId, rows: i64, loaded: bool) -> i64 {
        let d = self.dtype(a);
        let f = &self.group.frame;
        match self.kind(a) {
            Kind::Tile if loaded => rows * self.loaded_width(),
            Kind::Tile => rows * f.width,
            Kind::Col => f.width,
            _ => f.aligned(d, rows),
        }
    }

    /// Elements per row of a loaded tile or per-column input in UB: the frame's, but with
    /// column chunks over inputs loaded whole, the whole rows'.
    pub fn loaded_width(&self) -> i64 {
        match self.graph().columns {
            Columns::Resident { width } => width,
            _ => self.group.frame.width,
        }
    }

    /// The outputs stored from a ring slot per group.
    pub fn ringed_outputs(&self) -> BTreeSet<ArrayId> {
        (self.outputs().into_iter())
            .filter(|&a| self.ringed(a))
            .collect()
    }

    /// Whether output `a` is stored from a ring slot per group (else a per-row output
    /// stored from its home: of column chunks once the group's passes are done, or kept
    /// for the core's rows).
    pub fn ringed(&self, a: ArrayId) -> bool {
        match self.kind(a) {
            Kind::Tile => true,
            Kind::Row => !self.graph().columns.chunked() && self.row_stores == RowStores::EachGroup,
            _ => !self.graph().columns.chunked(),
        }
    }

    /// The element type of array `a` on the NPU.
    pub fn dtype(&self, a: ArrayId) -> DType {
        dtype(self.kernel.array(a).elem).unwrap_or(DType::F32)
    }

    /// The UB buffers for groups of `rows` rows.
    pub fn specs(&self, rows: i64) -> Vec<Spec> {
        let f = &self.group.frame;
        let g = self.graph();
        let mut out = Vec::new();
        for a in self.per_group() {
            if self.placed(|v| self.group.loaded.contains(&(v, a))) {
                continue;
            }
            out.push(Spec {
                holds: Holds::In(a),
                dtype: self.dtype(a),
                slots: self.slots,
                elems: self.group_elems(a, rows, true),
            });
        }
        for &a in &self.group.homes {
            if self.placed(|v| g.nodes[v].home == Some(a.0)) {
                continue;
            }
            let output = self.kernel.array(a).role.is_output() && self.ringed(a);
            let elems = if self.per_core_home(a) {
                self.core_groups(rows) * self.group_elems(a, rows, false)
            } else {
                self.group_elems(a, rows, false)
            };
            out.push(Spec {
                holds: if output {
                    Holds::Out(a)
                } else {
                    Holds::Home(a)
                },
                dtype: self.dtype(a),
                slots: if output { self.slots } else { 1 },
                elems,
            });
        }
        for a in self.per_core() {
            let d = self.dtype(a);
            let elems = match self.kind(a) {
                Kind::Col => self.loaded_width(),
                _ => f.aligned(d, 1),
            };
            out.push(Spec {
                holds: Holds::PerCore(a),
                dtype: d,
                slots: 1,
                elems,
            });
        }
        for (v, n) in g.nodes.iter().enumerate() {
            if g.invariant(v) && n.op != Op::Given && self.group.live[v] {
                let lanes = f.lanes(n.dtype);
                let elems = super::alloc::LayoutKey::of(n.layout).elements(1, f.width, lanes);
                out.push(Spec {
                    holds: Holds::Invariant(v),
                    dtype: n.dtype,
                    slots: 1,
                    elems: f.aligned(n.dtype, elems),
                });
            }
        }
        if self.spread > 1 {
            for a in self.reduced() {
                let d = self.dtype(a);
                out.push(Spec {
                    holds: Holds::Partials(a),
                    dtype: d,
                    slots: 1,
                    elems: self.spread * f.aligned(d, rows),
                });
            }
        }
        for (&class, &count) in &self.temps.count {
            let lanes = f.lanes(class.dtype);
            let elems = f.aligned(class.dtype, class.layout.elements(rows, f.width, lanes));
            for k in 0..count {
                out.push(Spec {
                    holds: Holds::Temp(class, k),
                    dtype: class.dtype,
                    slots: 1,
                    elems,
                });
            }
        }
        out
    }

    /// Whether the live values `of` selects exist and all have temporaries (a loaded or
    /// stored array whose values the allocator placed needs no ring or home of its own:
    /// the attention program's scores, drained from L0C straight into a temporary).
    fn placed(&self, of: impl Fn(Val) -> bool) -> bool {
        let mut values = (0..self.graph().nodes.len()).filter(|&v| self.group.live[v] && of(v));
        let first = values.next();
        first.is_some()
            && first
                .into_iter()
                .chain(values)
                .all(|v| self.temps.slot[v].is_some())
    }

    /// UB bytes of the buffers for groups of `rows` rows, each on the tier's alignment.
    pub fn ub_bytes(&self, rows: i64) -> u64 {
        let align = self.group.frame.align as u64;
        (self.specs(rows).iter())
            .map(|s| (s.slots * s.elems) as u64 * s.dtype.size())
            .fold(0, |at, size| at.next_multiple_of(align) + size)
    }

    /// GM bytes per row of an array moved per group.
    pub fn row_bytes(&self, a: ArrayId) -> i64 {
        let e = self.dtype(a).size() as i64;
        match self.kind(a) {
            Kind::Tile => self.vk.cols.unwrap_or(1) * e,
            _ => e,
        }
    }

    /// The GM transfers of a group: its loads and stores (of outputs stored per group).
    pub fn transfers(&self) -> Vec<Transfer> {
        let cols = self.vk.cols.unwrap_or(1);
        (self.per_group().into_iter())
            .chain(self.ringed_outputs())
            .map(|a| Transfer {
                row_bytes: self.row_bytes(a),
                one_burst: self.kind(a) != Kind::Tile || self.group.frame.width == cols,
            })
            .collect()
    }

    /// Cores' rows start on multiples of this many rows: every GM access of a core starts
    /// on the GM alignment, and no two cores store into one 32-byte block (the hardware
    /// writes whole blocks, so cores storing into one block race).
    pub fn granule(&self) -> i64 {
        self.granule_of(|_| true)
    }

    /// Groups start on multiples of this many rows: the [`Self::granule`] of the arrays
    /// moved group by group (per-row outputs kept for the whole core are stored once, and
    /// their groups' rows share blocks in UB's slots only).
    pub fn group_granule(&self) -> i64 {
        self.granule_of(|a| !self.per_core_home(a))
    }

    /// Bytes of GM's unit of alignment: its `align`, at least a 32-byte block (the hardware
    /// writes whole blocks, so cores storing into one block race).
    pub fn gm_block(&self) -> i64 {
        (self.machine.gm.align as i64).max(npu_sim::hazards::BLOCK as i64)
    }

    /// Whether rows in column chunks have their inputs loaded whole per group.
    pub fn resident(&self) -> bool {
        matches!(self.graph().columns, Columns::Resident { .. })
    }

    fn granule_of(&self, moved: impl Fn(ArrayId) -> bool) -> i64 {
        let block = self.gm_block();
        (self.per_group().into_iter().chain(self.outputs()))
            .filter(|&a| matches!(self.kind(a), Kind::Tile | Kind::Row) && moved(a))
            .map(|a| block / gcd(block, self.row_bytes(a)))
            .fold(1, |g, k| g / gcd(g, k) * k)
    }

    /// Whether output `a` waits in a home of all the core's rows ([`RowStores::OncePerCore`]).
    pub fn per_core_home(&self, a: ArrayId) -> bool {
        self.row_stores == RowStores::OncePerCore
            && self.kernel.array(a).role.is_output()
            && !self.ringed(a)
    }

    /// Teams of cores sharing groups of rows: the cores, or fewer when a group's chunks are
    /// spread over several cores.
    pub fn teams(&self) -> i64 {
        self.machine.cores as i64 / self.spread
    }

    /// The running core's team: its index among [`Self::teams`].
    pub fn team(&self) -> Expr {
        match self.spread {
            1 => Expr::Core,
            s => Expr::Core / s,
        }
    }

    /// The targets of the kernel's reductions.
    pub fn reduced(&self) -> BTreeSet<ArrayId> {
        (self.vk.stmts.iter())
            .filter(|s| s.reduce.is_some())
            .map(|s| s.target)
            .collect()
    }

    /// Rows of the busiest team (a core's rows when groups are not spread).
    pub fn team_rows(&self) -> i64 {
        super::tiles::busiest(self.vk.row_count(), self.granule(), self.teams())
    }

    /// Groups of `rows` rows on the busiest core.
    pub fn core_groups(&self, rows: i64) -> i64 {
        (self.team_rows() + rows - 1) / rows
    }

    /// The nodes computed per group, in order.
    pub fn group_nodes(&self) -> Vec<Val> {
        let g = self.graph();
        (0..g.nodes.len())
            .filter(|&v| {
                let n = &g.nodes[v];
                self.group.live[v] && n.op != Op::Given && !g.invariant(v)
            })
            .collect()
    }

    /// Vector cycles of a group of `rows` rows (a flag cycle per instruction's barrier,
    /// counted generously).
    pub fn vector_cycles(&self, rows: i64) -> f64 {
        self.vector_cycles_in(rows, 0..self.graph().nodes.len())
    }

    /// [`Self::vector_cycles`] of the nodes in `range` (a step of a chunked program).
    pub fn vector_cycles_in(&self, rows: i64, range: std::ops::Range<Val>) -> f64 {
        let u = unit(self.machine, self.group);
        let flag = self.machine.scalar.flag_cycles;
        (self.group_nodes().into_iter())
            .filter(|v| range.contains(v))
            .map(|v| u.cycles(self.graph(), v, rows) + flag)
            .sum()
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// `e * k`, folded when `k` is 0 or 1.
pub(super) fn times(e: Expr, k: i64) -> Expr {
    match k {
        0 => Expr::Const(0),
        1 => e,
        k => e * k,
    }
}

/// The buffers declared, by what they hold.
struct Declared {
    bufs: BTreeMap<Holds, (BufferId, i64)>,
    tensors: BTreeMap<ArrayId, TensorId>,
}

impl Declared {
    fn buf(&self, h: Holds) -> Result<(BufferId, i64), NpuError> {
        (self.bufs.get(&h).copied())
            .ok_or_else(|| NpuError::Internal(format!("no buffer holds {h:?}")))
    }
}

/// Declares the UB buffers for groups of `rows` rows (named after what they hold, unique
/// among `names`), by what they hold, with their elements per slot.
pub fn declare(
    ctx: &Context,
    b: &mut Builder,
    rows: i64,
    names: &mut BTreeSet<String>,
) -> BTreeMap<Holds, (BufferId, i64)> {
    let k = ctx.kernel;
    let mut bufs = BTreeMap::new();
    for s in ctx.specs(rows) {
        let base = match s.holds {
            Holds::In(a) => format!("in_{}", k.array(a).name),
            Holds::Out(a) => format!("out_{}", k.array(a).name),
            Holds::Home(a) => format!("ub_{}", k.array(a).name),
            Holds::PerCore(a) => format!("core_{}", k.array(a).name),
            Holds::Invariant(v) => format!("const{v}"),
            Holds::Partials(a) => format!("partials_{}", k.array(a).name),
            Holds::Temp(c, i) => format!("tmp_{}_{}", c.dtype, i) + &temp_suffix(c),
        };
        let mut name = base.clone();
        let mut n = 1;
        while !names.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        // one dimension: a slot is an offset
        let id = b.buffer(&name, Tier::Ub, s.dtype, &[(s.slots * s.elems) as u64]);
        bufs.insert(s.holds, (id, s.elems));
    }
    bufs
}

/// The GM tensors of the kernel's arrays (temporaries have none), their names added to
/// `names`.
pub fn tensors(
    ctx: &Context,
    b: &mut Builder,
    names: &mut BTreeSet<String>,
) -> Result<BTreeMap<ArrayId, TensorId>, NpuError> {
    let mut tensors = BTreeMap::new();
    for (i, a) in ctx.kernel.arrays.iter().enumerate() {
        let dir = match a.role {
            Role::Temp => continue,
            Role::In => Direction::In,
            Role::Out => Direction::Out,
            Role::InOut => Direction::InOut,
        };
        let shape = (a.dims.iter())
            .map(|d| aff_value(d, ctx.params).map(|v| v as u64))
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| NpuError::Internal(format!("an extent of `{}` has no value", a.name)))?;
        let shape = if shape.is_empty() { vec![1] } else { shape };
        names.insert(a.name.clone());
        tensors.insert(ArrayId(i), b.tensor(&a.name, dtype(a.elem)?, &shape, dir));
    }
    Ok(tensors)
}

/// A core's rows: the first, the end (expressions of the core) and, when every core has
/// the same rows, a whole number of groups of `rows`, their number.
pub struct CoreRows {
    /// The first row.
    pub first: Expr,
    /// One past the last row.
    pub last: Expr,
    /// Every core's rows, when they are the same whole number of groups.
    pub uniform: Option<i64>,
}

impl CoreRows {
    /// The rows of each core (of each team when groups are spread), in balanced contiguous
    /// ranges of whole granules, for groups of `rows` rows.
    pub fn of(ctx: &Context, rows: i64) -> CoreRows {
        let cores = ctx.teams();
        let team = ctx.team();
        let nr = ctx.vk.row_count();
        let gran = ctx.granule();
        let granules = (nr + gran - 1) / gran;
        let (q, rem) = (granules / cores, granules % cores);
        // team c's rows: granules [c*q + min(c, rem), + q + (c < rem)), clipped to the rows
        let (first, last) = if rem == 0 && q * gran * cores == nr {
            let first = times(team, q * gran);
            (first.clone(), first + q * gran)
        } else {
            let first_g = times(team.clone(), q) + team.clone().min(rem);
            let count_g = Expr::Const(q) + team.cmp(CmpOp::Lt, rem);
            (
                times(first_g.clone(), gran),
                times(first_g + count_g, gran).min(nr),
            )
        };
        // when every core has the same rows, a whole number of groups: sizes are constants
        let uniform =
            (rem == 0 && q * gran * cores == nr && (q * gran) % rows == 0).then_some(q * gran);
        CoreRows {
            first,
            last,
            uniform,
        }
    }

    /// Each core's number of rows.
    pub fn counts(&self, cores: i64) -> impl Iterator<Item = i64> + '_ {
        (0..cores).map(move |c| {
            let ev = |e: &Expr| e.eval(&[], c, cores);
            (ev(&self.last) - ev(&self.first)).max(0)
        })
    }

    /// Whether each of `cores` cores has the same number of groups of `rows` rows.
    pub fn same_groups(&self, cores: i64, rows: i64) -> bool {
        let mut groups = self.counts(cores).map(|n| (n + rows - 1) / rows);
        let first = groups.next();
        groups.all(|g| Some(g) == first)
    }

    /// The number of groups of `rows` rows.
    pub fn groups(&self, rows: i64) -> Expr {
        match self.uniform {
            Some(mine) => Expr::Const(mine / rows),
            None => (self.last.clone() - self.first.clone() + (rows - 1)) / rows,
        }
    }

    /// The first row of group `t` and its rows.
    pub fn group(&self, t: &Expr, rows: i64) -> (Expr, Expr) {
        let row0 = self.first.clone() + times(t.clone(), rows);
        let r = match self.uniform {
            Some(_) => Expr::Const(rows),
            None => (self.last.clone() - row0.clone()).min(rows),
        };
        (row0, r)
    }
}

/// The program for groups of `rows` rows.
pub fn program(ctx: &Context, rows: i64) -> Result<npu_sim::Program, NpuError> {
    let (k, f) = (ctx.kernel, ctx.group.frame);
    let mut b = Builder::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    let tensors = tensors(ctx, &mut b, &mut names)?;
    let bufs = declare(ctx, &mut b, rows, &mut names);
    let d = Declared { bufs, tensors };
    let core_rows = CoreRows::of(ctx, rows);
    let cols = ctx.vk.cols.unwrap_or(1);

    // Per core: zero what loads leave partly unwritten, load per-core inputs, compute
    // invariants.
    per_core_inputs(ctx, &mut b, &d.bufs, &d.tensors, true)?;
    let places = Places::new(ctx, &d.bufs)?;
    invariants(ctx, &mut b, &places);
    let groups = core_rows.groups(rows);
    // (array, tensor, ring buffer, elements per slot) of the group's loads and stores
    let transfers = |arrays: BTreeSet<ArrayId>, ring: fn(ArrayId) -> Holds| {
        (arrays.into_iter())
            .map(|a| {
                let (buf, elems) = d.buf(ring(a))?;
                let tensor = (d.tensors.get(&a).copied())
                    .ok_or_else(|| NpuError::Internal(format!("no tensor for array {a:?}")))?;
                Ok((a, tensor, buf, elems))
            })
            .collect::<Result<Vec<_>, NpuError>>()
    };
    let loads = transfers(ctx.per_group(), Holds::In)?;
    let stores = transfers(ctx.ringed_outputs(), Holds::Out)?;
    let homes = CoreHomes::new(ctx, &d.bufs, rows)?;
    b.repeat("t", groups, |b, t| {
        let (row0, r) = core_rows.group(&t, rows);
        let slot = t.clone() % 2;
        let gm_index = |a: ArrayId| -> Vec<Expr> {
            let rank = k.array(a).dims.len();
            let per_row = if ctx.kind(a) == Kind::Tile { cols } else { 1 };
            // the first element of the group's rows (a scalar is a one-element tensor)
            let mut idx = vec![Expr::Const(0); rank.max(1)];
            idx[rank.max(1) - 1] = times(row0.clone(), per_row);
            idx
        };
        // the rows of array `a` between GM (tensor `tensor`) and UB place `ub` (a load or a
        // store)
        let rows_dma =
            |b: &mut Builder, (a, tensor): (ArrayId, TensorId), ub: &Place, load: bool| {
                let gm = b.at(tensor, gm_index(a));
                let ub_ref = b.at(ub.buf, [ub.offset.clone()]);
                let (dst, src) = if load { (ub_ref, gm) } else { (gm, ub_ref) };
                let dma = match ctx.kind(a) {
                    Kind::Tile if f.width != cols => {
                        let (gs, us) = (cols, f.width);
                        Dma::new(dst, src, r.clone(), cols)
                            .strides(if load { gs } else { us }, if load { us } else { gs })
                    }
                    Kind::Tile => Dma::new(dst, src, 1, times(r.clone(), cols)),
                    _ => Dma::new(dst, src, 1, r.clone()),
                };
                let verb = if load { "load" } else { "store" };
                b.origin(Some(&format!("{verb} {} rows", k.array(a).name)));
                b.push(dma);
                b.origin(None);
            };
        // the group's rows of every array of `ring` between GM and slot `slot` of its ring
        let ring_dmas = |b: &mut Builder, ring: &[(ArrayId, TensorId, BufferId, i64)], load| {
            for &(a, tensor, buf, elems) in ring {
                let ub = Place {
                    buf,
                    offset: times(slot.clone(), elems),
                };
                rows_dma(b, (a, tensor), &ub, load);
            }
        };
        ring_dmas(b, &loads, true);
        let group_rows = Rows {
            count: r.clone(),
            max: rows,
        };
        let place = |w: Val| homes.place(places.at(w, &slot), &t);
        nodes(ctx, b, &place, &group_rows, 0..ctx.graph().nodes.len());
        ring_dmas(b, &stores, false);
    });
    homes.store(ctx, &mut b, &d.tensors, &core_rows)?;
    crate::npu::sync::place(crate::npu::finish(b)?, ctx.machine)
}

/// Where every value of a group lives: its buffer, elements per slot and whether the buffer
/// is a ring (a slot per group).
pub struct Places {
    at: Vec<(BufferId, i64, bool)>,
}

impl Places {
    /// The places of `ctx`'s values in the buffers `bufs` ([`declare`]).
    pub fn new(ctx: &Context, bufs: &BTreeMap<Holds, (BufferId, i64)>) -> Result<Places, NpuError> {
        let at = (0..ctx.graph().nodes.len())
            .map(|v| {
                if !ctx.group.live[v] {
                    // never placed: nothing computes or reads it
                    return Ok((BufferId(0), 0, false));
                }
                let (h, ring) = holds(ctx, v)?;
                let (buf, elems) = (bufs.get(&h)).ok_or_else(|| {
                    NpuError::Internal(format!("value {v} has no buffer ({h:?})"))
                })?;
                Ok((*buf, *elems, ring))
            })
            .collect::<Result<_, NpuError>>()?;
        Ok(Places { at })
    }

    /// Where value `v` is for the group in ring slot `slot`.
    pub fn at(&self, v: Val, slot: &Expr) -> Place {
        let (buf, elems, ring) = self.at[v];
        Place {
            buf,
            offset: if ring {
                times(slot.clone(), elems)
            } else {
                Expr::Const(0)
            },
        }
    }
}

/// V and MTE2, once per core: where the rows are padded (the frame is wider than the
/// columns), the per-column inputs' buffers zeroed (and, with `tiles`, the per-group
/// inputs' rings), then the per-core inputs (per-column vectors, scalars) loaded whole
/// (the flags between V and MTE2 are placed by `sync`).
pub fn per_core_inputs(
    ctx: &Context,
    b: &mut Builder,
    bufs: &BTreeMap<Holds, (BufferId, i64)>,
    tensors: &BTreeMap<ArrayId, TensorId>,
    tiles: bool,
) -> Result<(), NpuError> {
    let k = ctx.kernel;
    let cols = ctx.vk.cols.unwrap_or(1);
    let padded = ctx.group.frame.width != cols;
    if padded {
        let mut e = Emitter::new(b, unit(ctx.machine, ctx.group));
        for (&h, &(id, elems)) in bufs {
            let (a, slots) = match h {
                Holds::In(a) if tiles && matches!(ctx.kind(a), Kind::Tile | Kind::Col) => (a, 2),
                Holds::PerCore(a) if ctx.kind(a) == Kind::Col => (a, 1),
                _ => continue,
            };
            let place = Place {
                buf: id,
                offset: Expr::Const(0),
            };
            e.fill(&place, ctx.dtype(a), slots * elems);
        }
    }
    let per_core = ctx.per_core();
    if per_core.is_empty() {
        return Ok(());
    }
    for &a in &per_core {
        let (id, _) = (bufs.get(&Holds::PerCore(a)).copied())
            .ok_or_else(|| NpuError::Internal(format!("no buffer holds {a:?}")))?;
        let len = match ctx.kind(a) {
            Kind::Col => cols,
            _ => 1,
        };
        let rank = k.array(a).dims.len().max(1);
        let tensor = (tensors.get(&a).copied())
            .ok_or_else(|| NpuError::Internal(format!("no tensor for array {a:?}")))?;
        let src = b.at(tensor, vec![Expr::Const(0); rank]);
        let dst = b.at(id, [Expr::Const(0)]);
        b.origin(Some(&format!("load {}", k.array(a).name)));
        b.push(Dma::new(dst, src, 1, len));
    }
    b.origin(None);
    Ok(())
}

/// V: the values computed once per core (constants, what depends only on per-column inputs
/// and scalars).
pub fn invariants(ctx: &Context, b: &mut Builder, places: &Places) {
    let g = ctx.graph();
    let mut e = Emitter::new(b, unit(ctx.machine, ctx.group));
    let once = Rows {
        count: Expr::Const(1),
        max: 1,
    };
    for v in 0..g.nodes.len() {
        if g.invariant(v) && ctx.group.live[v] {
            e.node(g, v, &|w| places.at(w, &Expr::Const(0)), &once);
        }
    }
}

/// V: every statement of a group of `rows` rows in ring slot `slot`, each instruction noted
/// with the statement it comes from (a barrier first: the group's inputs were written by
/// other instructions of the pipe or by other pipes).
pub fn group(ctx: &Context, b: &mut Builder, places: &Places, slot: &Expr, rows: &Rows) {
    let range = 0..ctx.graph().nodes.len();
    nodes(ctx, b, &|w| places.at(w, slot), rows, range);
}

/// V: the values of [`group`] among nodes `range` (a step of a chunked program), each
/// value at `place(value)`.
pub fn nodes(
    ctx: &Context,
    b: &mut Builder,
    place: &dyn Fn(Val) -> Place,
    rows: &Rows,
    range: std::ops::Range<Val>,
) {
    let g = ctx.graph();
    let mut e = Emitter::new(b, unit(ctx.machine, ctx.group));
    e.barrier();
    for v in ctx.group_nodes().into_iter().filter(|v| range.contains(v)) {
        let origins = &ctx.group.origins;
        if let Some((_, name)) = origins.iter().rev().find(|(start, _)| *start <= v) {
            e.b.origin(Some(name));
        }
        e.node(g, v, place, rows);
    }
    e.b.origin(None);
}

/// Which buffer holds value `v`, and whether it is a ring (a slot per group).
fn holds(ctx: &Context, v: Val) -> Result<(Holds, bool), NpuError> {
    let n = &ctx.graph().nodes[v];
    if let Some((class, i)) = ctx.temps.slot[v] {
        return Ok((Holds::Temp(class, i), false));
    }
    if let Some(h) = n.home {
        let a = ArrayId(h);
        return Ok(if ctx.kernel.array(a).role.is_output() && ctx.ringed(a) {
            (Holds::Out(a), true)
        } else {
            (Holds::Home(a), false)
        });
    }
    if n.op == Op::Given {
        let (_, a) = (ctx.group.loaded.iter())
            .find(|(w, _)| *w == v)
            .ok_or_else(|| NpuError::Internal(format!("value {v} is given but not loaded")))?;
        return Ok(match n.layout {
            Layout::Tile { .. } | Layout::Row => (Holds::In(*a), true),
            Layout::Col if ctx.graph().columns == Columns::Streamed => (Holds::In(*a), true),
            _ => (Holds::PerCore(*a), false),
        });
    }
    if ctx.graph().invariant(v) {
        return Ok((Holds::Invariant(v), false));
    }
    Err(NpuError::Internal(format!("value {v} has no temporary")))
}

/// A readable suffix naming a temporary's layout.
fn temp_suffix(c: Class) -> String {
    use super::alloc::LayoutKey as L;
    match c.layout {
        L::Tile(_) => "_tile".into(),
        L::Row => "_row".into(),
        L::Spread => "_spread".into(),
        L::Col => "_col".into(),
        L::Splat => "_splat".into(),
        L::One => "_one".into(),
        L::Part(_) => "_part".into(),
    }
}
