//! The attention block (`S = Q K^T`, a row softmax of `S`, `O = P V`) as one fused NPU
//! program whose scores and probabilities never leave the chip: the cube computes a block
//! of score rows into L0C, the vector unit drains them to UB and computes the softmax there
//! (the vector path's recognition, lowering and emission), the probabilities go back to the
//! cube through L1 and multiply the values.
//!
//! - `recognise`: the two products (proved by the mapping layer) and the statements between
//!   them (the vector path's kernel);
//! - `tiles`: query rows per block and keys per cube step, from an analytic model;
//! - `program`: the multi-core, double-buffered program with its flags.
//!
//! See `docs/npu-backend.md`, "Attention".

pub mod program;
pub mod recognise;
pub mod tiles;

use crate::npu::vector::{
    self, alloc, group,
    program::{Context, RowStores},
};
use crate::npu::NpuError;
use frontend::ir::Kernel;
use npu_sim::machine::Mem;
use npu_sim::program::Tier;
use npu_sim::Machine;
use scheduler::target::Target;
use std::collections::BTreeMap;

/// What the attention program is, with the decisions taken for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The sizes chosen.
    pub tiles: tiles::Tiles,
    /// Heads.
    pub heads: i64,
    /// Query rows, keys, depth of queries and keys, depth of values (per head).
    pub sizes: (i64, i64, i64, i64),
    /// The model's figures.
    pub choice: tiles::Choice,
    /// UB capacity.
    pub ub_capacity: u64,
    /// The proved mappings of the two products, in the mapping text format.
    pub mappings: [String; 2],
}

impl Plan {
    /// The program's header lines.
    pub fn describe(&self) -> Vec<String> {
        let (m, n, d, dv) = self.sizes;
        let ch = &self.choice;
        let (v, cube, mte1) = ch.per_block;
        let mut lines = vec![
            format!(
                "Attention: {} head(s) of {m} queries by {n} keys (depth {d}, values {dv}), in blocks of {} query rows dealt to the cores ({} on the busiest core), {} keys per cube step, {} block(s) of scores in L0C.",
                self.heads, self.tiles.rows, ch.blocks, self.tiles.keys, self.tiles.scores
            ),
            "Per block: S = Q K^T on the cube into L0C, drained to UB; the softmax on the vector unit in UB; P to L1 (UB -> L1, ND -> NZ) and O = P V on the cube; O to GM. S and P never go to GM.".into(),
            format!(
                "Per head on a core: K GM -> L1 as it is; V GM -> UB -> L1 (ND -> NZ) in stages of {} rows.",
                self.tiles.stage
            ),
            format!(
                "UB: {} of {} bytes. Model per block: {v:.0} vector, {cube:.0} cube, {mte1:.0} MTE1 cycles; {:.0} cycles on the busiest core.",
                ch.ub_bytes, self.ub_capacity, ch.cycles
            ),
            "The cube and the vector unit sum in their own orders (allowed by --reorder-reductions). The products' mappings, proved:".into(),
        ];
        for m in &self.mappings {
            lines.extend(m.lines().map(|l| format!("  {l}")));
        }
        lines
    }
}

/// Compiles `kernel` as an attention block at the sizes `params` for `machine`; `Ok(None)`
/// when it does not have an attention block's shape.
pub fn compile(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    reorder: bool,
) -> Result<Option<(npu_sim::Program, Plan)>, NpuError> {
    let programs = compile_ranked(kernel, params, machine, reorder, (1, None))?;
    Ok(programs.map(|mut p| p.swap_remove(0)))
}

/// [`compile`] in the model's `limit` cheapest ways (at least one), cheapest first, or with
/// the sizes `force` (which must fit).
pub fn compile_ranked(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    reorder: bool,
    (limit, force): (usize, Option<tiles::Tiles>),
) -> Result<Option<Vec<(npu_sim::Program, Plan)>>, NpuError> {
    let target = Target::of_npu(machine);
    let Some(att) = recognise::attention(kernel, params, &target)? else {
        return Ok(None);
    };
    if !reorder {
        return Err(NpuError::ReorderNotAllowed);
    }
    let unsupported = |why: String| Err(NpuError::Unsupported(format!("attention block: {why}")));
    let (m, n, d, dv) = (att.m(), att.n(), att.d(), att.dv());
    if [d, dv].iter().any(|e| e % tiles::F != 0) {
        return unsupported(format!(
            "depths {d} and {dv}: the attention program needs multiples of 16 (the cube's fractals; the queries and keys may be any number)"
        ));
    }
    if machine.flag_ids < program::FLAG_IDS {
        return unsupported(format!(
            "it uses {} flag ids per pipe pair; `{}` has {}",
            program::FLAG_IDS,
            machine.name,
            machine.flag_ids
        ));
    }
    let paths = [
        (Mem::Gm, Mem::L1),
        (Mem::L1, Mem::L0a),
        (Mem::L1, Mem::L0b),
        (Mem::L0c, Mem::Ub),
        (Mem::Ub, Mem::L1),
        (Mem::Ub, Mem::Gm),
    ];
    if let Some((from, to)) = (paths.into_iter()).find(|&(f, t)| machine.path(f, t).is_none()) {
        return unsupported(format!(
            "`{}` has no data path {from} -> {to}",
            machine.name
        ));
    }
    let Some(ub) = machine.tier(Tier::Ub) else {
        return unsupported(format!("`{}` has no UB", machine.name));
    };
    // a block's rows of an input of the scores' shape start on GM's alignment: a head's
    // rows and 16 rows must be whole blocks
    for (a, bytes) in att.masks().into_iter().zip(att.mask_row_bytes()) {
        let array = att.softmax.array(a);
        let align = machine.gm.align as i64;
        // (a mask the heads share has the heads of the batch indices it keeps)
        let heads = match att.shared.get(&a) {
            Some(shared) => shared.shape[..shared.shape.len() - 2].iter().product(),
            None => att.heads,
        };
        if (tiles::F * bytes) % align != 0 || (heads > 1 && (m * bytes) % align != 0) {
            return unsupported(format!(
                "`{}`, an input of the scores' shape, is loaded a block of query rows at a time, and a head's {m} rows of {n} keys ({} bytes) are not whole {align}-byte blocks of GM",
                array.name,
                m * bytes
            ));
        }
    }
    let frame = vector::frame(&att.vk, &att.softmax, machine);
    if frame.width > att.np() {
        return unsupported(format!(
            "the softmax's rows in UB are {} values apart on `{}` (its UB alignment), more than the cube's {} columns of scores",
            frame.width,
            machine.name,
            att.np()
        ));
    }
    let group = group::build(&att.vk, &att.softmax, frame)?;
    // the scores, as drained and as scaled, are temporaries like the softmax's own (the
    // subtraction of the maxima can then write over them); the other homes stay, and the
    // inputs of the scores' shape stay where MTE2 loads them
    let s = att.scores.acc.tensor;
    let masks = att.masks();
    let temps = alloc::temps(&group.graph, &group.live, &|v| {
        group.graph.nodes[v].home.is_some_and(|h| h != s.0)
            || (group.loaded.iter()).any(|(w, a)| *w == v && masks.contains(a))
    });
    let ctx = Context {
        kernel: &att.softmax,
        params,
        vk: &att.vk,
        group: &group,
        temps: &temps,
        machine,
        slots: 1,
        row_stores: RowStores::EachGroup,
        spread: 1,
    };
    let model = tiles::Model {
        att: &att,
        machine,
        vector: &|r| ctx.vector_cycles(r),
        ub: &|r| ctx.ub_bytes(r),
    };
    let ranked = match force {
        Some(t) => {
            let fits = t.rows % tiles::F == 0
                && t.keys % tiles::F == 0
                && t.stage % tiles::F == 0
                && (1..=att.mp()).contains(&t.rows)
                && [(att.np(), t.keys), (att.np(), t.stage)]
                    .iter()
                    .all(|&(e, size)| size > 0 && e % size == 0)
                && (1..=2).contains(&t.scores);
            let choice = (fits.then(|| model.cost(t)).flatten()).ok_or_else(|| {
                NpuError::Unsupported(format!(
                    "attention block: the sizes {t:?} do not divide the block or do not fit `{}`",
                    machine.name
                ))
            })?;
            vec![choice]
        }
        None => model.ranked(),
    };
    if ranked.is_empty() {
        let least = tiles::Tiles {
            rows: tiles::F,
            keys: tiles::F,
            stage: tiles::F,
            scores: 1,
        };
        let b = least.bytes(&att);
        return unsupported(format!(
            "no block of query rows fits `{}`: 16 rows need {} bytes of L1, {} of L0C (a block of scores, two of outputs) and {} of UB (the scores, the softmax's temporaries, the probabilities, the output and the values' stages), against {}, {} and {}; the score rows of a block must stay on chip",
            machine.name,
            b.l1,
            b.l0c,
            ctx.ub_bytes(tiles::F) + b.ub,
            machine.tier(Tier::L1).map_or(0, |t| t.capacity),
            machine.tier(Tier::L0c).map_or(0, |t| t.capacity),
            ub.capacity
        ));
    }
    let programs = (ranked.into_iter().take(limit.max(1)))
        .map(|choice| {
            let program = program::program(&att, choice.tiles, &ctx, machine.cores as i64)?;
            let plan = Plan {
                tiles: choice.tiles,
                heads: att.heads,
                sizes: (m, n, d, dv),
                choice,
                ub_capacity: ub.capacity,
                mappings: [att.scores.mapping.clone(), att.output.mapping.clone()],
            };
            Ok((program, plan))
        })
        .collect::<Result<_, NpuError>>()?;
    Ok(Some(programs))
}
