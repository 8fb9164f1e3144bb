//! Per-row outputs kept in UB for all of a core's rows
//! ([`RowStores::OncePerCore`](super::program::RowStores::OncePerCore)), for
//! whole rows and column chunks alike.
//!
//! A per-row output stored group by group makes groups start on its 32-byte blocks (8 rows
//! of f32), so that no two groups' stores share a block. Kept in a home of the core's rows
//! instead, a slot per group on UB's alignment (group `t` computes its values in slot `t`),
//! and stored once after the core's last group, it leaves the groups' sizes to the arrays
//! moved group by group. The store is one `dma`, MTE3 waiting for V once: a single burst
//! when the slots follow each other without a gap, else a burst per group, which needs
//! every core's rows to be whole groups (a last, shorter group would be a second `dma`
//! starting off GM's alignment, which the simulator refuses).

use super::emit::Place;
use super::program::{times, Context, CoreRows, Holds};
use crate::npu::NpuError;
use frontend::ir::ArrayId;
use npu_sim::builder::Builder;
use npu_sim::program::{BufferId, CmpOp, Dma, Expr, TensorId};
use std::collections::BTreeMap;

/// The outputs kept for the core's rows (none unless the context keeps them).
pub fn outputs(ctx: &Context) -> Vec<ArrayId> {
    (ctx.outputs().into_iter())
        .filter(|&a| ctx.per_core_home(a))
        .collect()
}

/// Elements of a group's slot of kept output `a` in groups of `rows` rows: the rows on UB's
/// alignment (the slots follow each other without a gap when that is `rows`).
fn slot(ctx: &Context, a: ArrayId, rows: i64) -> i64 {
    ctx.group.frame.aligned(ctx.dtype(a), rows)
}

/// Whether the kept outputs of groups of `rows` rows are stored in one `dma` each: their
/// slots have no gap, or every core's rows are whole groups.
pub fn one_store(ctx: &Context, rows: i64) -> bool {
    let gapless = (outputs(ctx).into_iter()).all(|a| slot(ctx, a, rows) == rows);
    gapless || (CoreRows::of(ctx, rows).counts(ctx.machine.cores as i64)).all(|n| n % rows == 0)
}

/// The model's cycles of the busiest core's stores of its kept outputs after its last group
/// of `rows` rows: the GM latency, then each burst charged its segments at the core's share
/// of GM bandwidth (0 without kept outputs).
pub fn store_cycles(ctx: &Context, rows: i64) -> f64 {
    let kept = outputs(ctx);
    if kept.is_empty() {
        return 0.0;
    }
    let m = ctx.machine;
    let gm = &m.gm;
    let (rate, lat) = super::tiles::gm_share(m);
    let mine = super::tiles::busiest(ctx.vk.row_count(), ctx.granule(), m.cores as i64);
    let mut cycles = lat;
    for a in kept {
        let e = ctx.dtype(a).size();
        let (bursts, charged) = if slot(ctx, a, rows) == rows {
            (1, gm.charged(0, mine as u64 * e))
        } else {
            let groups = (mine + rows - 1) / rows;
            let charged = (0..groups)
                .map(|t| {
                    let len = rows.min(mine - t * rows) as u64 * e;
                    gm.charged((t * rows) as u64 * e, len)
                })
                .sum();
            (groups as u64, charged)
        };
        cycles += charged as f64 / rate + bursts as f64 * gm.burst_cycles;
    }
    cycles
}

/// The homes of the kept outputs in a program for groups of `rows` rows.
pub struct CoreHomes {
    /// (output, its home, elements of a group's slot)
    homes: Vec<(ArrayId, BufferId, i64)>,
    rows: i64,
}

impl CoreHomes {
    /// The kept outputs' homes among the declared buffers `bufs`.
    pub fn new(
        ctx: &Context,
        bufs: &BTreeMap<Holds, (BufferId, i64)>,
        rows: i64,
    ) -> Result<CoreHomes, NpuError> {
        let homes: Vec<_> = (outputs(ctx).into_iter())
            .map(|a| {
                let (id, _) = (bufs.get(&Holds::Home(a)).copied())
                    .ok_or_else(|| NpuError::Internal(format!("no home holds {a:?}")))?;
                Ok((a, id, slot(ctx, a, rows)))
            })
            .collect::<Result<_, NpuError>>()?;
        if !homes.is_empty() && !one_store(ctx, rows) {
            return Err(NpuError::Internal(format!(
                "per-row outputs kept for the core's rows in groups of {rows} need more than one store"
            )));
        }
        Ok(CoreHomes { homes, rows })
    }

    /// `p` for group `t`: in a kept output's home, its slot.
    pub fn place(&self, p: Place, t: &Expr) -> Place {
        match self.homes.iter().find(|(_, id, _)| *id == p.buf) {
            Some(&(_, _, slot)) => Place {
                offset: p.offset + times(t.clone(), slot),
                ..p
            },
            None => p,
        }
    }

    /// MTE3, after the core's last group: each kept output's rows of the core (`core`)
    /// from its home (the flag that makes it wait for V is placed by `sync`).
    pub fn store(
        &self,
        ctx: &Context,
        b: &mut Builder,
        tensors: &BTreeMap<ArrayId, TensorId>,
        core: &CoreRows,
    ) -> Result<(), NpuError> {
        if self.homes.is_empty() {
            return Ok(());
        }
        for &(a, id, slot) in &self.homes {
            let tensor = (tensors.get(&a).copied())
                .ok_or_else(|| NpuError::Internal(format!("no tensor for array {a:?}")))?;
            self.store_one(ctx, b, (a, tensor), (id, slot), core);
        }
        Ok(())
    }

    /// The core's rows of output `a` from its home `id` (a slot of `slot` elements per
    /// group) in one `dma`: one burst when the slots follow each other without a gap, else
    /// a burst per group; on a core with no rows, none.
    fn store_one(
        &self,
        ctx: &Context,
        b: &mut Builder,
        (a, tensor): (ArrayId, TensorId),
        (id, slot): (BufferId, i64),
        core: &CoreRows,
    ) {
        let rows = self.rows;
        let rank = ctx.kernel.array(a).dims.len().max(1);
        let mut gm_index = vec![Expr::Const(0); rank];
        gm_index[rank - 1] = core.first.clone();
        let (gm, ub) = (b.at(tensor, gm_index), b.at(id, [Expr::Const(0)]));
        // the core's rows, or its groups (none on a core past the last row)
        let n = match core.uniform {
            Some(mine) => Expr::Const(if slot == rows { mine } else { mine / rows }),
            None => {
                let n = (core.last.clone() - core.first.clone()).max(0);
                if slot == rows {
                    n
                } else {
                    n / rows
                }
            }
        };
        let dma = if slot == rows {
            Dma::new(gm, ub, 1, n.clone())
        } else {
            Dma::new(gm, ub, n.clone(), rows).strides(slot, rows)
        };
        b.origin(Some(&format!("store {} rows", ctx.kernel.array(a).name)));
        match core.uniform {
            Some(_) => b.push(dma),
            None => b.when("s", n.cmp(CmpOp::Gt, 0), |b| b.push(dma)),
        }
        b.origin(None);
    }
}
