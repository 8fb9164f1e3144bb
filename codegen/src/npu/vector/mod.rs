//! The NPU back end's vector path: kernels of element-wise, broadcast and row-reduction
//! statements (softmax, layernorm, scale-and-shift, activations) compiled for the vector
//! unit, with data moved GM -> UB -> GM, double-buffered, over every core.
//!
//! - `recognise`: which kernels qualify (a shared row space, an optional contiguous column,
//!   element-wise and broadcast accesses, reductions over the columns) and the kind of each
//!   array; `fold` folds kernel-level scalars and constants with the interpreter itself;
//! - `lower` turns expression trees into vector operations in the kernel's types, `graph`
//!   holds them (shared subexpressions computed once), `group` builds what a group of rows
//!   computes, statement after statement, intermediates in UB;
//! - `alloc` gives temporaries their buffers, `tiles` chooses the rows per group with an
//!   analytic model, `emit` writes the vector instructions, `program` the whole tiled,
//!   double-buffered, multi-core program with its flags.
//!
//! See `docs/npu-backend.md`, "Vector path".

pub mod alloc;
pub mod chunks;
pub mod core_homes;
pub mod emit;
pub mod fold;
pub mod graph;
pub mod group;
pub mod lower;
pub mod passes;
pub mod program;
pub mod recognise;
pub mod spread;
pub mod tiles;

use crate::npu::NpuError;
use frontend::ir::{Kernel, Type};
use lower::Frame;
use npu_sim::machine::Mem;
use npu_sim::program::Tier;
use npu_sim::Machine;
use program::RowStores;
use std::collections::BTreeMap;

/// What the vector path decided for a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Rows of the kernel.
    pub rows: i64,
    /// Columns per row, if the rows have columns.
    pub cols: Option<i64>,
    /// Elements per row in UB (the columns rounded up to whole 32-byte blocks).
    pub width: i64,
    /// Rows per group.
    pub group_rows: i64,
    /// Cores' row ranges start on multiples of this many rows.
    pub granule: i64,
    /// Cores.
    pub cores: i64,
    /// Groups on the busiest core.
    pub groups: i64,
    /// The model's cycles for the busiest core.
    pub predicted: u64,
    /// The model's GM cycles for the busiest core.
    pub gm_cycles: u64,
    /// The model's vector cycles for the busiest core.
    pub vector_cycles: u64,
    /// UB bytes used.
    pub ub_bytes: u64,
    /// UB capacity.
    pub ub_capacity: u64,
    /// Whether reductions are reordered.
    pub reduces: bool,
    /// Where per-row outputs wait to be stored, when the program keeps any in UB: for all
    /// the core's rows, or (column chunks) for the group's (`None`: stored from the rings
    /// group by group, or no per-row outputs).
    pub row_stores: Option<RowStores>,
    /// With rows too long for UB, how they go through it in column chunks.
    pub chunks: Option<chunks::Chunks>,
}

impl Plan {
    /// The program's header lines.
    pub fn describe(&self) -> Vec<String> {
        let columns = self.cols.map_or(String::new(), |c| match self.chunks {
            None => format!(" of {c} columns (UB rows of {})", self.width),
            Some(k) => format!(" of {c} columns (in UB in chunks of {})", k.width),
        });
        let kept = match self.row_stores {
            None => "",
            Some(RowStores::EachGroup) => {
                " Per-row outputs: stored once each group's passes are done."
            }
            Some(RowStores::OncePerCore) => {
                " Per-row outputs: kept in UB for all the core's rows, stored once after its last group."
            }
        };
        let each = match self.chunks {
            None => format!(
                "Each group: MTE2 loads it GM -> UB, V computes every statement, MTE3 stores it UB -> GM; two slots each way.{kept} UB: {} of {} bytes; intermediates never leave UB.",
                self.ub_bytes, self.ub_capacity
            ),
            Some(c) => format!(
                "Rows too long for UB: each group is computed in {} chunks of {} columns, {} {} over them (per-row statements between passes); {}, V computes a pass's statements chunk by chunk, MTE3 stores each chunk's tiles UB -> GM; two slots each way.{} UB: {} of {} bytes; per-row values never leave UB.",
                c.count,
                c.width,
                c.passes,
                if c.passes == 1 { "pass" } else { "passes" },
                if c.resident {
                    "MTE2 loads the group's input rows whole GM -> UB (per-column inputs once per core)"
                } else {
                    "MTE2 loads every chunk of every pass GM -> UB"
                },
                kept,
                self.ub_bytes,
                self.ub_capacity
            ),
        };
        let spread = match self.chunks {
            Some(c) if c.spread > 1 => format!(
                " Each group's chunks are spread over a team of {} cores (contiguous ranges of every pass's chunks); after a pass with reductions the members' partial results meet through a GM workspace and a sync_all, each member combining them in member order; per-row outputs are stored by the team's first member.{}",
                c.spread,
                if c.deferred {
                    " The rows are off 32-byte blocks: in a pass that stores tiles each member's first chunk, which shares a block with its neighbour's last, comes after a sync_all."
                } else {
                    ""
                }
            ),
            _ => String::new(),
        };
        let mut lines = vec![
            format!(
                "Vector path: {} rows{columns} dealt to {} in contiguous ranges (multiples of {} rows), in groups of {} rows ({} on the busiest core).",
                self.rows,
                match self.chunks.map_or(1, |c| c.spread) {
                    1 => format!("{} cores", self.cores),
                    s if self.cores == s => format!("1 team of {s} cores"),
                    s => format!("{} teams of {s} cores", self.cores / s),
                },
                self.granule,
                self.group_rows,
                self.groups
            ),
            each + &spread,
            format!(
                "Model of the busiest core: {} GM cycles, {} vector cycles.",
                self.gm_cycles, self.vector_cycles
            ),
        ];
        if self.reduces {
            lines.push(
                "Row reductions run in the vector unit's order (allowed by --reorder-reductions)."
                    .into(),
            );
        }
        lines
    }
}

/// Compiles `kernel` at the sizes `params` for the vector unit of `machine`. `reorder` says
/// whether the user allows reductions to be reordered (every reduction here is).
pub fn compile(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    reorder: bool,
) -> Result<(npu_sim::Program, Plan), NpuError> {
    compile_with(kernel, params, machine, reorder, None)
}

/// [`compile`] with the rows per group forced (`None`: the model's choice); a forced size
/// must be a multiple of the row granule and fit UB.
pub fn compile_with(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    reorder: bool,
    group_rows: Option<i64>,
) -> Result<(npu_sim::Program, Plan), NpuError> {
    let vk = recognise::recognise(kernel, params)?;
    if vk.reduces() && !reorder {
        return Err(NpuError::ReorderNotAllowed);
    }
    let ub = machine
        .tier(Tier::Ub)
        .ok_or_else(|| NpuError::Unsupported(format!("`{}` has no UB", machine.name)))?;
    let paths = [(Mem::Gm, Mem::Ub), (Mem::Ub, Mem::Gm)];
    if let Some((from, to)) = paths
        .into_iter()
        .find(|&(f, t)| machine.path(f, t).is_none())
    {
        return Err(NpuError::Unsupported(format!(
            "`{}` has no data path {from} -> {to}",
            machine.name
        )));
    }
    if machine.flag_ids < program::FLAG_IDS {
        return Err(NpuError::Unsupported(format!(
            "the vector path uses {} flag ids per pipe pair; `{}` has {}",
            program::FLAG_IDS,
            machine.name,
            machine.flag_ids
        )));
    }
    let frame = frame(&vk, kernel, machine);
    let group = group::build(&vk, kernel, frame)?;
    // loaded values stay in their rings, stored ones in their homes
    let temps = alloc::temps(&group.graph, &group.live, &|v| {
        let n = &group.graph.nodes[v];
        n.home.is_some() || n.op == graph::Op::Given
    });
    let context = |row_stores| program::Context {
        kernel,
        params,
        vk: &vk,
        group: &group,
        temps: &temps,
        machine,
        slots: 2,
        row_stores,
        spread: 1,
    };
    // per-row outputs stored group by group, or kept for the core's rows: the cheaper
    let mut best: Option<(RowStores, tiles::Tiling)> = None;
    for stores in [RowStores::EachGroup, RowStores::OncePerCore] {
        let ctx = context(stores);
        if stores == RowStores::OncePerCore && core_homes::outputs(&ctx).is_empty() {
            continue;
        }
        let vector = |r: i64| ctx.vector_cycles(r);
        let ub_bytes = |r: i64| ctx.ub_bytes(r);
        let after =
            |r: i64| core_homes::one_store(&ctx, r).then(|| core_homes::store_cycles(&ctx, r));
        let model = tiles::Model {
            machine,
            rows: vk.row_count(),
            granule: ctx.group_granule(),
            core_granule: ctx.granule(),
            max_rows: if vk.cols.is_some() {
                frame.max_repeat
            } else {
                vk.row_count()
            },
            transfers: ctx.transfers(),
            vector: &vector,
            ub: &ub_bytes,
            after: &after,
        };
        let tiling = match group_rows {
            Some(r) => model.cost(r),
            None => model.choose(),
        };
        if let Some(t) = tiling {
            if best.is_none_or(|(_, b)| t.cycles < b.cycles) {
                best = Some((stores, t));
            }
        }
    }
    let granule = context(RowStores::EachGroup).granule();
    let Some((stores, tiling)) = best else {
        if let Some(r) = group_rows {
            return Err(NpuError::Unsupported(format!(
                "groups of {r} rows do not fit UB, or do not start on multiples of {granule} rows"
            )));
        }
        let whole = format!(
            "no group of rows fits `{}`'s UB ({} bytes; a group of {} rows needs {} bytes with its temporaries)",
            machine.name,
            ub.capacity,
            granule,
            context(RowStores::EachGroup).ub_bytes(granule)
        );
        if vk.cols.is_none() {
            return Err(NpuError::Unsupported(whole));
        }
        // rows too long for UB go through it in column chunks
        return chunks::compile(&vk, kernel, params, machine).map_err(|e| match e {
            NpuError::Unsupported(why) => {
                NpuError::Unsupported(format!("{whole}; in column chunks: {why}"))
            }
            e => e,
        });
    };
    let ctx = context(stores);
    let kept = !core_homes::outputs(&ctx).is_empty();
    let program = program::program(&ctx, tiling.rows)?;
    Ok((
        program,
        Plan {
            rows: vk.row_count(),
            cols: vk.cols,
            width: frame.width,
            group_rows: tiling.rows,
            granule: ctx.granule(),
            cores: machine.cores as i64,
            groups: tiling.groups,
            predicted: tiling.cycles.round() as u64,
            gm_cycles: tiling.gm_cycles.round() as u64,
            vector_cycles: tiling.vector_cycles.round() as u64,
            ub_bytes: tiling.ub_bytes,
            ub_capacity: ub.capacity,
            reduces: vk.reduces(),
            row_stores: kept.then_some(stores),
            chunks: None,
        },
    ))
}

/// The model's `limit` cheapest programs for `kernel` with its rows in column chunks
/// (`chunks::ranked`), cheapest first.
pub fn chunked(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    limit: usize,
) -> Result<Vec<(npu_sim::Program, Plan)>, NpuError> {
    let vk = recognise::recognise(kernel, params)?;
    chunks::ranked(&vk, kernel, params, machine, limit)
}

/// The rows' frame of `vk` on `machine`: a row in UB is padded to whole aligned blocks of
/// the narrowest type the statements hold.
pub fn frame(vk: &recognise::VectorKernel, kernel: &Kernel, machine: &Machine) -> Frame {
    let unpadded = Frame::of(machine, 0);
    // Rows in UB start on aligned blocks for the narrowest type they hold.
    let per = unpadded.align / narrowest(vk, kernel);
    let cols = vk.cols.unwrap_or(1);
    Frame {
        width: (cols + per - 1) / per * per,
        ..unpadded
    }
}

/// Bytes of the narrowest type `vk`'s arrays and values hold.
pub fn narrowest(vk: &recognise::VectorKernel, kernel: &Kernel) -> i64 {
    let mut narrowest = 4;
    for a in vk.arrays.keys() {
        narrowest = narrowest.min(kernel.array(*a).elem.size_bytes() as i64);
    }
    for s in &vk.stmts {
        recognise::visit(&s.rhs, &mut |e| {
            if let Type::Elem(t) = e.ty {
                narrowest = narrowest.min(t.size_bytes() as i64);
            }
        });
    }
    narrowest
}
