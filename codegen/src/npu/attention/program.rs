//! The attention program: per head and block of query rows, the scores on the cube into
//! L0C, the softmax on the vector unit in UB, the probabilities back to the cube through L1,
//! their product with the values, the output to GM. The scores and probabilities never go to
//! GM.
//!
//! Blocks (a head's `R` query rows; its last block may be shorter) are dealt to the cores in
//! balanced contiguous ranges. Queries and keys off multiples of 16 are computed rounded up
//! to fractals, the padding zero (the keys' rows past the last key zeroed once in L1), and
//! only the real queries are stored. The softmax's per-key vectors and scalars are loaded
//! once per core, before the loop.
//! Per core, iteration `t` of one loop does block `t`'s first half and block `t - 1`'s
//! second, so that the cube computes the next block's scores while the vector unit works:
//!
//! - MTE2: with a block that starts a head on the core, the head's keys (GM -> L1 as they
//!   are, one burst) into the slot of the head's parity; the block's queries (ND -> NZ) into
//!   a ring of two; the block's rows of the inputs of the scores' shape (masks) into UB,
//!   once the vector unit is done with the last block's (one buffer, zeroed once so that
//!   the rows and keys past the real ones read as written); then the head's values in stages GM -> UB (a ring of two), which MTE3
//!   moves UB -> L1 (ND -> NZ) into the head's slot (short GM bursts would be charged whole
//!   segments);
//! - MTE1 and M, block `t`: per step of `T` keys, the queries (NZ -> zZ) and the keys'
//!   columns (ND -> nZ: key `j`'s 16 values of a fractal column are one row of the
//!   transposed operand's fractal) into an L0 slot, one `mmad` into the block's scores in
//!   L0C (one block's slot or two);
//! - V, block `t`: the scores L0C (NZ) -> UB (ND, f32), every statement of the softmax
//!   (`vector::program::group`), the probabilities in UB; MTE3 moves them UB -> L1 (ND ->
//!   NZ) into a ring of two;
//! - MTE1 and M, block `t - 1`: per step, the probabilities' columns (NZ -> zZ) and the
//!   values' rows (NZ -> nZ, transposing) into an L0 slot, one `mmad` accumulating the
//!   block's output in L0C (two slots);
//! - V drains the output L0C -> UB, MTE3 stores it to GM.
//!
//! Strict flags, one event per flag: every ring has a "full" and a "free" flag per slot,
//! the free ones set before the loop and waited for after it. Ids per pipe pair: MTE2 ->
//! MTE1 and back 0-1 (queries), 2-3 (keys and values); MTE1 <-> M 0-1 (L0 slots); M <-> V
//! 0-1 (scores), 2-3 (outputs); V <-> MTE3 0 (probabilities), 1 (output); MTE3 <-> MTE1
//! 0-1 (probabilities in L1), MTE3 -> MTE1 2-3 (values in L1); MTE2 <-> MTE3 0-1 (the
//! values' stages); MTE2 <-> V 0 (the masks).

use super::recognise::Attention;
use super::tiles::{self, Tiles, F};
use crate::npu::matmul::{dtype, index};
use crate::npu::recognise::{extents, Operand};
use crate::npu::vector::emit::{Emitter, Place, Rows, Unit};
use crate::npu::vector::program::{self as vprog, Context, Holds, Places};
use crate::npu::vector::recognise::Kind;
use crate::npu::NpuError;
use npu_sim::builder::Builder;
use npu_sim::program::{
    BarrierScope, BufferId, CmpOp, DType, Direction, Dma, DmaMode, Expr, Pipe, TensorId, Tier,
    VecOp, Vector,
};
use std::collections::{BTreeMap, BTreeSet};

/// Flag ids per pipe pair the program needs.
pub const FLAG_IDS: u32 = 4;

/// Elements of a 16-bit fractal.
const FRACTAL: i64 = F * F;

/// The program's GM tensors and on-chip buffers.
struct Names {
    q: TensorId,
    k: TensorId,
    v: TensorId,
    o: TensorId,
    /// Keys of two heads, ND.
    k_l1: BufferId,
    /// Values of two heads, NZ.
    v_l1: BufferId,
    /// Two blocks of queries, NZ.
    q_l1: BufferId,
    /// Two blocks of probabilities, NZ.
    p_l1: BufferId,
    a_l0: BufferId,
    b_l0: BufferId,
    /// One or two blocks of scores, NZ.
    s_l0: BufferId,
    /// Two blocks of outputs, NZ.
    o_l0: BufferId,
    /// One block of outputs, ND.
    o_ub: BufferId,
    /// Two stages of values, ND.
    v_ub: BufferId,
    /// Where the softmax finds the scores and leaves the probabilities.
    s_ub: BufferId,
    p_ub: BufferId,
    /// The inputs of the scores' shape: GM tensor, UB buffer (a block's rows, `width`
    /// apart) and, for one the heads share, the batch indices it keeps.
    masks: Vec<(TensorId, BufferId, Option<Vec<usize>>)>,
}

/// What every part of the program needs.
struct Gen<'a> {
    att: &'a Attention,
    t: Tiles,
    n: Names,
    ctx: &'a Context<'a>,
    places: Places,
}

fn c(v: i64) -> Expr {
    Expr::Const(v)
}

/// One block on a core: its number, head, first row and ring slot.
struct Block {
    head: Expr,
    row0: Expr,
    /// Whether it is its head's last block, when that one is shorter (the blocks do not
    /// divide the queries), with the last block's queries: it computes them rounded up to
    /// a fractal (the rows past them are zero queries, never stored).
    short: Option<(Expr, i64)>,
    /// Rows of a full block.
    full: i64,
    /// Its ring slot (`t % 2`).
    slot: Expr,
    /// Its scores' slot in L0C.
    scores: Expr,
    /// The slot of its head's keys and values.
    kv: Expr,
}

impl Block {
    /// `e * k` times the rows it computes (which every layout of it on chip has per fractal
    /// column).
    fn times_rows(&self, e: Expr, k: i64) -> Expr {
        match &self.short {
            None => e * (k * self.full),
            Some((last, valid)) => last.clone().select(
                e.clone() * (k * crate::npu::up(*valid, F)),
                e * (k * self.full),
            ),
        }
    }

    /// The rows it computes.
    fn rows(&self) -> Expr {
        self.times_rows(c(1), 1)
    }

    /// Its rows that are queries.
    fn valid(&self) -> Expr {
        match &self.short {
            None => c(self.full),
            Some((last, valid)) => last.clone().select(*valid, self.full),
        }
    }
}

impl Gen<'_> {
    /// Blocks per head (the last one may be shorter).
    fn per_head(&self) -> i64 {
        (self.att.m() + self.t.rows - 1) / self.t.rows
    }

    /// The core's block `t`, its first block being `first`.
    fn block(&self, first: &Expr, t: Expr) -> Block {
        let idx = first.clone() + t.clone();
        let head = idx.clone() / self.per_head();
        let row0 = idx % self.per_head() * self.t.rows;
        let last = (self.per_head() - 1) * self.t.rows;
        let short = (self.att.m() % self.t.rows != 0)
            .then(|| (row0.clone().cmp(CmpOp::Eq, last), self.att.m() - last));
        Block {
            short,
            full: self.t.rows,
            row0,
            kv: head.clone() % 2,
            head,
            scores: match self.t.scores {
                1 => c(0),
                k => t.clone() % k,
            },
            slot: t % 2,
        }
    }

    /// The batch indices of head `h`.
    fn batch(&self, h: &Expr) -> Vec<Expr> {
        let mut rest = h.clone();
        let batch = &self.att.scores.batch;
        let mut out = vec![c(0); batch.len()];
        for (j, (_, e)) in batch.iter().enumerate().rev() {
            out[j] = rest.clone() % *e;
            rest = rest / *e;
        }
        out
    }

    /// GM element (row, col) of an operand in block `blk`'s head.
    fn gm(
        &self,
        b: &Builder,
        op: &Operand,
        t: TensorId,
        blk: &Block,
        rc: (Expr, Expr),
    ) -> npu_sim::program::MemRef {
        b.at(t, index(op, &self.batch(&blk.head), rc.0, rc.1))
    }

    /// MTE2: a new head's keys, the block's queries, the new head's values into the stages.
    fn load(&self, b: &mut Builder, blk: &Block, starts_head: &Expr) {
        let (n, np, d, dv, r) = (
            self.att.n(),
            self.att.np(),
            self.att.d(),
            self.att.dv(),
            self.t.rows,
        );
        let stage = self.t.stage;
        b.when("head", starts_head.clone(), |b| {
            let id = blk.kv.clone() + 2;
            b.wait_flag(Pipe::Mte1, Pipe::Mte2, id.clone());
            let src = self.gm(b, &self.att.scores.b, self.n.k, blk, (c(0), c(0)));
            let dst = b.at(self.n.k_l1, [blk.kv.clone() * (np * d)]);
            b.origin(Some("K of the head, GM -> L1 (ND)"));
            b.push(Dma::new(dst, src, 1, n * d));
            b.origin(None);
            b.set_flag(Pipe::Mte2, Pipe::Mte1, id);
        });
        b.wait_flag(Pipe::Mte1, Pipe::Mte2, blk.slot.clone());
        let src = self.gm(
            b,
            &self.att.scores.a,
            self.n.q,
            blk,
            (blk.row0.clone(), c(0)),
        );
        let dst = b.at(self.n.q_l1, [blk.slot.clone() * (r * d)]);
        b.origin(Some("Q rows of the block, GM -> L1 (ND -> NZ)"));
        // a head's last block may hold fewer queries: `nd2nz` zeroes its fractal's rest
        b.push(
            Dma::new(dst, src, blk.valid(), d)
                .strides(d, blk.rows())
                .mode(DmaMode::Nd2nz),
        );
        b.origin(None);
        b.set_flag(Pipe::Mte2, Pipe::Mte1, blk.slot.clone());
        if !self.n.masks.is_empty() {
            // the block's rows of the inputs of the scores' shape, once the vector unit
            // is done with the last block's
            let width = self.ctx.group.frame.width;
            b.wait_flag(Pipe::V, Pipe::Mte2, 0);
            for (t, buf, kept) in &self.n.masks {
                let (t, buf) = (*t, *buf);
                let batch = self.batch(&blk.head);
                let mut idx = match kept {
                    Some(kept) => kept.iter().map(|&p| batch[p].clone()).collect(),
                    None => batch,
                };
                idx.extend([blk.row0.clone(), c(0)]);
                let src = b.at(t, idx);
                let dst = b.at(buf, [c(0)]);
                b.origin(Some("mask rows of the block, GM -> UB"));
                b.push(Dma::new(dst, src, blk.valid(), n).strides(n, width));
                b.origin(None);
            }
            b.set_flag(Pipe::Mte2, Pipe::V, 0);
        }
        b.when("head", starts_head.clone(), |b| {
            b.repeat("vs", np / stage, |b, vs| {
                let slot = vs.clone() % 2;
                b.wait_flag(Pipe::Mte3, Pipe::Mte2, slot.clone());
                let rows = stage_rows(n, stage, &vs);
                let src = self.gm(b, &self.att.output.b, self.n.v, blk, (vs * stage, c(0)));
                let dst = b.at(self.n.v_ub, [slot.clone() * (stage * dv)]);
                b.origin(Some("V rows of the head, GM -> UB"));
                b.push(Dma::new(dst, src, 1, rows * dv));
                b.origin(None);
                b.set_flag(Pipe::Mte2, Pipe::Mte3, slot);
            });
        });
    }

    /// MTE3: a new head's values, stage by stage, UB -> L1 (ND -> NZ).
    fn values(&self, b: &mut Builder, blk: &Block, starts_head: &Expr) {
        let (n, np, dv, stage) = (self.att.n(), self.att.np(), self.att.dv(), self.t.stage);
        b.when("head", starts_head.clone(), |b| {
            b.repeat("vs", np / stage, |b, vs| {
                let slot = vs.clone() % 2;
                b.wait_flag(Pipe::Mte2, Pipe::Mte3, slot.clone());
                let rows = stage_rows(n, stage, &vs);
                let dst = b.at(self.n.v_l1, [blk.kv.clone() * (np * dv) + vs * (stage * F)]);
                let src = b.at(self.n.v_ub, [slot.clone() * (stage * dv)]);
                b.origin(Some("V rows of the head, UB ND -> L1 NZ"));
                // the last stage may hold fewer values: `nd2nz` zeroes its fractal's rest
                b.push(
                    Dma::new(dst, src, rows, dv)
                        .strides(dv, np)
                        .mode(DmaMode::Nd2nz),
                );
                b.origin(None);
                b.set_flag(Pipe::Mte3, Pipe::Mte2, slot);
            });
            b.set_flag(Pipe::Mte3, Pipe::Mte1, blk.kv.clone() + 2);
        });
    }

    /// MTE1 and M: the block's scores, a step of `T` keys at a time (step `s` of the core's
    /// L0 ring is `step`).
    fn scores(&self, b: &mut Builder, blk: &Block, starts_head: &Expr) {
        let (n, d, r, tk) = (self.att.np(), self.att.d(), self.t.rows, self.t.keys);
        let steps = n / tk;
        let a_slot = r * d.max(tk);
        let b_slot = tk * d.max(self.att.dv());
        b.when("head", starts_head.clone(), |b| {
            b.wait_flag(Pipe::Mte2, Pipe::Mte1, blk.kv.clone() + 2)
        });
        b.wait_flag(Pipe::Mte2, Pipe::Mte1, blk.slot.clone());
        b.repeat("kc", steps, |b, kc| {
            // steps alternate L0 slots: this block's scores, then the previous block's output
            let l0 = kc.clone() % 2;
            b.wait_flag(Pipe::M, Pipe::Mte1, l0.clone());
            b.repeat("bi", blk.rows() / F, |b, bi| {
                let dst = b.at(self.n.a_l0, [l0.clone() * a_slot + bi.clone() * (d * F)]);
                let src = b.at(self.n.q_l1, [blk.slot.clone() * (r * d) + bi * FRACTAL]);
                b.origin(Some("Q rows, NZ -> zZ"));
                b.push(
                    Dma::new(dst, src, d / F, FRACTAL).strides(blk.times_rows(c(1), F), FRACTAL),
                );
            });
            b.repeat("db", d / F, |b, db| {
                let dst = b.at(self.n.b_l0, [l0.clone() * b_slot + db.clone() * (tk * F)]);
                let src = b.at(
                    self.n.k_l1,
                    [blk.kv.clone() * (n * d) + kc.clone() * (tk * d) + db * F],
                );
                b.origin(Some("K^T columns, ND -> nZ"));
                b.push(Dma::new(dst, src, tk, F).strides(d, F));
            });
            b.origin(None);
            b.set_flag(Pipe::Mte1, Pipe::M, l0.clone());
            b.when("first", kc.clone().cmp(CmpOp::Eq, 0), |b| {
                b.wait_flag(Pipe::V, Pipe::M, blk.scores.clone())
            });
            b.wait_flag(Pipe::Mte1, Pipe::M, l0.clone());
            let cc = b.at(
                self.n.s_l0,
                [blk.scores.clone() * (r * n) + blk.times_rows(kc.clone(), tk)],
            );
            let a = b.at(self.n.a_l0, [l0.clone() * a_slot]);
            let bb = b.at(self.n.b_l0, [l0.clone() * b_slot]);
            b.origin(Some(&format!("{}: S = Q K^T", self.att.scores_stmt)));
            b.mmad(cc, a, bb, (blk.rows(), d, tk), 1);
            b.origin(None);
            b.set_flag(Pipe::M, Pipe::Mte1, l0);
        });
        b.set_flag(Pipe::Mte1, Pipe::Mte2, blk.slot.clone());
        b.set_flag(Pipe::M, Pipe::V, blk.scores.clone());
    }

    /// V and MTE3: the block's scores out of L0C, the softmax, the probabilities into L1.
    fn softmax(&self, b: &mut Builder, blk: &Block) {
        // the scores' rows are drained whole (`width` columns: those past the keys are zero
        // keys' scores, as the vector path's own padding is zero, and its reductions do not
        // read them); the probabilities' columns past the keys are zeroed by `nd2nz` into L1
        let (n, np, r) = (self.att.n(), self.att.np(), self.t.rows);
        let width = self.ctx.group.frame.width;
        b.wait_flag(Pipe::M, Pipe::V, blk.scores.clone());
        b.barrier(BarrierScope::Pipe(Pipe::V));
        let dst = b.at(self.n.s_ub, [c(0)]);
        let src = b.at(self.n.s_l0, [blk.scores.clone() * (r * np)]);
        b.origin(Some("S rows, L0C NZ -> UB ND"));
        b.push(
            Dma::new(dst, src, blk.rows(), width)
                .strides(blk.rows(), width)
                .mode(DmaMode::Nz2nd),
        );
        b.origin(None);
        b.set_flag(Pipe::V, Pipe::M, blk.scores.clone());
        b.wait_flag(Pipe::Mte3, Pipe::V, 0);
        let masks = !self.n.masks.is_empty();
        if masks {
            b.wait_flag(Pipe::Mte2, Pipe::V, 0);
        }
        let rows = Rows {
            count: blk.rows(),
            max: r,
        };
        vprog::group(self.ctx, b, &self.places, &c(0), &rows);
        if masks {
            b.set_flag(Pipe::V, Pipe::Mte2, 0);
        }
        b.set_flag(Pipe::V, Pipe::Mte3, 0);
        b.wait_flag(Pipe::V, Pipe::Mte3, 0);
        b.wait_flag(Pipe::Mte1, Pipe::Mte3, blk.slot.clone());
        let dst = b.at(self.n.p_l1, [blk.slot.clone() * (r * np)]);
        let src = b.at(self.n.p_ub, [c(0)]);
        b.origin(Some("P rows, UB ND -> L1 NZ"));
        b.push(
            Dma::new(dst, src, blk.rows(), n)
                .strides(width, blk.rows())
                .mode(DmaMode::Nd2nz),
        );
        b.origin(None);
        b.set_flag(Pipe::Mte3, Pipe::V, 0);
        b.set_flag(Pipe::Mte3, Pipe::Mte1, blk.slot.clone());
    }

    /// MTE1 and M: the block's output, a step of `T` keys at a time; `(starts_head,
    /// ends_head)` say whether the head's values must be waited for first and whether its
    /// keys and values are free afterwards.
    fn output(&self, b: &mut Builder, blk: &Block, (starts_head, ends_head): (Expr, Expr)) {
        let (n, d, dv, r, tk) = (
            self.att.np(),
            self.att.d(),
            self.att.dv(),
            self.t.rows,
            self.t.keys,
        );
        let steps = n / tk;
        let a_slot = r * d.max(tk);
        let b_slot = tk * d.max(dv);
        b.when("head", starts_head, |b| {
            b.wait_flag(Pipe::Mte3, Pipe::Mte1, blk.kv.clone() + 2)
        });
        b.wait_flag(Pipe::Mte3, Pipe::Mte1, blk.slot.clone());
        b.repeat("kc", steps, |b, kc| {
            // after the next block's `steps` steps of scores
            let l0 = (kc.clone() + steps) % 2;
            b.wait_flag(Pipe::M, Pipe::Mte1, l0.clone());
            b.repeat("bi", blk.rows() / F, |b, bi| {
                let dst = b.at(self.n.a_l0, [l0.clone() * a_slot + bi.clone() * (tk * F)]);
                let src = b.at(
                    self.n.p_l1,
                    [blk.slot.clone() * (r * n) + blk.times_rows(kc.clone(), tk) + bi * FRACTAL],
                );
                b.origin(Some("P columns, NZ -> zZ"));
                b.push(
                    Dma::new(dst, src, tk / F, FRACTAL).strides(blk.times_rows(c(1), F), FRACTAL),
                );
            });
            // a fractal column of V's rows at a time (fractals along the keys are
            // contiguous in NZ, `dv / 16` apart in nZ)
            b.repeat("db", dv / F, |b, db| {
                let dst = b.at(self.n.b_l0, [l0.clone() * b_slot + db.clone() * FRACTAL]);
                let src = b.at(
                    self.n.v_l1,
                    [blk.kv.clone() * (n * dv) + db * (n * F) + kc.clone() * (tk * F)],
                );
                b.origin(Some("V rows, NZ -> nZ (transposing)"));
                b.push(
                    Dma::new(dst, src, tk / F, FRACTAL)
                        .strides(FRACTAL, dv * F)
                        .mode(DmaMode::Transpose),
                );
            });
            b.origin(None);
            b.set_flag(Pipe::Mte1, Pipe::M, l0.clone());
            let first = kc.clone().cmp(CmpOp::Eq, 0);
            b.when("first", first.clone(), |b| {
                b.wait_flag(Pipe::V, Pipe::M, blk.slot.clone() + 2)
            });
            b.wait_flag(Pipe::Mte1, Pipe::M, l0.clone());
            let cc = b.at(self.n.o_l0, [blk.slot.clone() * (r * dv)]);
            let a = b.at(self.n.a_l0, [l0.clone() * a_slot]);
            let bb = b.at(self.n.b_l0, [l0.clone() * b_slot]);
            b.origin(Some(&format!("{}: O += P V", self.att.output_stmt)));
            b.mmad(cc, a, bb, (blk.rows(), tk, dv), first);
            b.origin(None);
            b.set_flag(Pipe::M, Pipe::Mte1, l0);
        });
        b.set_flag(Pipe::Mte1, Pipe::Mte3, blk.slot.clone());
        b.when("last", ends_head, |b| {
            b.set_flag(Pipe::Mte1, Pipe::Mte2, blk.kv.clone() + 2)
        });
        b.set_flag(Pipe::M, Pipe::V, blk.slot.clone() + 2);
    }

    /// V and MTE3: the block's output L0C -> UB -> GM.
    fn store(&self, b: &mut Builder, blk: &Block) {
        let (dv, r) = (self.att.dv(), self.t.rows);
        b.wait_flag(Pipe::M, Pipe::V, blk.slot.clone() + 2);
        b.wait_flag(Pipe::Mte3, Pipe::V, 1);
        let dst = b.at(self.n.o_ub, [c(0)]);
        let src = b.at(self.n.o_l0, [blk.slot.clone() * (r * dv)]);
        b.origin(Some("O rows, L0C NZ -> UB ND"));
        b.push(
            Dma::new(dst, src, blk.rows(), dv)
                .strides(blk.rows(), dv)
                .mode(DmaMode::Nz2nd),
        );
        b.set_flag(Pipe::V, Pipe::M, blk.slot.clone() + 2);
        b.set_flag(Pipe::V, Pipe::Mte3, 1);
        b.wait_flag(Pipe::V, Pipe::Mte3, 1);
        let dst = self.gm(
            b,
            &self.att.output.acc,
            self.n.o,
            blk,
            (blk.row0.clone(), c(0)),
        );
        let src = b.at(self.n.o_ub, [c(0)]);
        b.origin(Some("O rows, UB -> GM"));
        b.push(Dma::new(dst, src, 1, blk.valid() * dv));
        b.origin(None);
        b.set_flag(Pipe::Mte3, Pipe::V, 1);
    }
}

/// The values in stage `vs` of `stage` rows: all but in the last when the keys are off
/// multiples of 16.
fn stage_rows(n: i64, stage: i64, vs: &Expr) -> Expr {
    match n % stage {
        0 => c(stage),
        _ => (c(n) - vs.clone() * stage).min(stage),
    }
}

/// The "free" flags, each set before the loop (once per slot) and waited for after it, with
/// `scores` blocks of scores in L0C (and, with `masks`, the inputs of the scores' shape in
/// UB).
fn free(scores: i64, masks: bool) -> [(Pipe, Pipe, Vec<i64>); 7] {
    [
        (Pipe::Mte1, Pipe::Mte2, vec![0, 1, 2, 3]),
        (Pipe::M, Pipe::Mte1, vec![0, 1]),
        (Pipe::V, Pipe::M, (0..scores).chain([2, 3]).collect()),
        (Pipe::Mte3, Pipe::V, vec![0, 1]),
        (Pipe::Mte1, Pipe::Mte3, vec![0, 1]),
        (Pipe::Mte3, Pipe::Mte2, vec![0, 1]),
        (Pipe::V, Pipe::Mte2, if masks { vec![0] } else { vec![] }),
    ]
}

/// The attention program for `att` with sizes `t`, its softmax given by `ctx`.
pub fn program(
    att: &Attention,
    t: Tiles,
    ctx: &Context,
    cores: i64,
) -> Result<npu_sim::Program, NpuError> {
    let mut b = Builder::new();
    let mut names = BTreeSet::new();
    let mut tensor =
        |b: &mut Builder, op: &Operand, dir: Direction| -> Result<TensorId, NpuError> {
            names.insert(op.name.clone());
            let shape: Vec<u64> = op.shape.iter().map(|&e| e as u64).collect();
            Ok(b.tensor(&op.name, dtype(op.elem)?, &shape, dir))
        };
    let (q, k) = (
        tensor(&mut b, &att.scores.a, Direction::In)?,
        tensor(&mut b, &att.scores.b, Direction::In)?,
    );
    let (v, o) = (
        tensor(&mut b, &att.output.b, Direction::In)?,
        tensor(&mut b, &att.output.acc, Direction::Out)?,
    );
    let (n, d, dv, r, tk) = (att.np(), att.d(), att.dv(), t.rows, t.keys);
    let h = DType::F16;
    let pe = dtype(att.output.a.elem)?;
    let mut buf = |name: &str, tier: Tier, dt: DType, elems: i64| {
        names.insert(name.to_string());
        b.buffer(name, tier, dt, &[elems as u64])
    };
    let on_chip = [
        buf("k_l1", Tier::L1, h, 2 * n * d),
        buf("v_l1", Tier::L1, h, 2 * n * dv),
        buf("q_l1", Tier::L1, h, 2 * r * d),
        buf("p_l1", Tier::L1, pe, 2 * r * n),
        buf("a_l0", Tier::L0a, h, 2 * r * d.max(tk)),
        buf("b_l0", Tier::L0b, h, 2 * tk * d.max(dv)),
        buf("s_l0", Tier::L0c, DType::F32, t.scores * r * n),
        buf("o_l0", Tier::L0c, DType::F32, 2 * r * dv),
        buf("o_ub", Tier::Ub, DType::F32, r * dv),
        buf("v_ub", Tier::Ub, h, 2 * t.stage * dv),
    ];
    let [k_l1, v_l1, q_l1, p_l1, a_l0, b_l0, s_l0, o_l0, o_ub, v_ub] = on_chip;
    let zeros = tiles::zeros(att);
    let k_zero = (zeros > 0).then(|| buf("k_zero", Tier::Ub, h, zeros));
    // the softmax's buffers: the scores are drained into the first value's place, the
    // probabilities taken from their home
    // the softmax's other inputs (per-key vectors, scalars), loaded once per core
    let mut inputs = BTreeMap::new();
    let masks = att.masks();
    for (&a, &kind) in &att.vk.arrays {
        let array = att.softmax.array(a);
        if (matches!(kind, Kind::Col | Kind::Scalar) || masks.contains(&a)) && array.role.is_input()
        {
            let shape = match att.shared.get(&a) {
                Some(shared) => shared.shape.clone(),
                None => extents(&att.softmax, a, ctx.params)?,
            };
            let shape: Vec<u64> = shape.iter().map(|&e| e as u64).collect();
            let shape = if shape.is_empty() { vec![1] } else { shape };
            names.insert(array.name.clone());
            let t = b.tensor(&array.name, dtype(array.elem)?, &shape, Direction::In);
            inputs.insert(a, t);
        }
    }
    let bufs = vprog::declare(ctx, &mut b, r, &mut names);
    let places = Places::new(ctx, &bufs)?;
    let s = att.scores.acc.tensor;
    let drained = (ctx.group.loaded.iter().find(|(_, a)| *a == s))
        .ok_or_else(|| NpuError::Internal("the softmax does not read the scores".into()))?;
    let p_home = Holds::Out(att.output.a.tensor);
    let names = Names {
        q,
        k,
        v,
        o,
        k_l1,
        v_l1,
        q_l1,
        p_l1,
        a_l0,
        b_l0,
        s_l0,
        o_l0,
        o_ub,
        v_ub,
        s_ub: places.at(drained.0, &c(0)).buf,
        p_ub: (bufs.get(&p_home).map(|(id, _)| *id))
            .ok_or_else(|| NpuError::Internal(format!("no UB buffer holds {p_home:?}")))?,
        masks: (masks.iter())
            .map(|a| {
                let buf = (bufs.get(&Holds::In(*a)).map(|(id, _)| *id))
                    .ok_or_else(|| NpuError::Internal(format!("no UB buffer holds {a:?}")))?;
                Ok((inputs[a], buf, att.shared.get(a).map(|s| s.kept.clone())))
            })
            .collect::<Result<_, NpuError>>()?,
    };
    vprog::per_core_inputs(ctx, &mut b, &bufs, &inputs, false)?;
    // the inputs of the scores' shape load a block's valid rows and keys: the rest of their
    // buffers, which the softmax's sweeps read, is zeroed once (before the "free" flag that
    // lets MTE2 load the first block)
    let unit = Unit {
        frame: ctx.group.frame,
        startup: ctx.machine.vector.startup,
    };
    let mut e = Emitter::new(&mut b, unit);
    for a in &masks {
        if let Some(&(buf, elems)) = bufs.get(&Holds::In(*a)) {
            let place = Place { buf, offset: c(0) };
            e.fill(&place, ctx.dtype(*a), elems);
        }
    }
    vprog::invariants(ctx, &mut b, &places);
    if let Some(z) = k_zero {
        // MTE1 stages whole fractals of keys: the last one's rows past the last key are
        // zero in both heads' slots, written once (no load writes them)
        let dst = b.at(z, [c(0)]);
        b.origin(Some("zeros for the keys' last fractal"));
        b.push(Vector::new(VecOp::Dup { value: 0.0 }, dst, zeros / 128));
        b.barrier(BarrierScope::All);
        let dst = b.at(k_l1, [c(att.n() * d)]);
        let src = b.at(z, [c(0)]);
        b.push(Dma::new(dst, src, 2, (n - att.n()) * d).strides(0, n * d));
        b.origin(None);
        b.barrier(BarrierScope::All);
    }
    let g = Gen {
        att,
        t,
        n: names,
        ctx,
        places,
    };
    // core c's blocks: [c*q + min(c, rem), + q + (c < rem))
    let blocks = att.heads * g.per_head();
    let (qc, rem) = (blocks / cores, blocks % cores);
    let first = Expr::Core * qc + Expr::Core.min(rem);
    let count = c(qc) + Expr::Core.cmp(CmpOp::Lt, rem);
    for (src, dst, ids) in free(t.scores, !g.n.masks.is_empty()) {
        for id in ids {
            b.set_flag(src, dst, id);
        }
    }
    b.repeat("t", count.clone() + 1, |b, it| {
        let this = g.block(&first, it.clone());
        // whether a block starts its head on this core
        let starts = |t: &Expr, blk: &Block| {
            (t.clone().cmp(CmpOp::Eq, 0)).select(1, blk.row0.clone().cmp(CmpOp::Eq, 0))
        };
        let starts_head = starts(&it, &this);
        b.when("block", it.clone().cmp(CmpOp::Lt, count.clone()), |b| {
            g.load(b, &this, &starts_head);
            g.scores(b, &this, &starts_head);
            g.values(b, &this, &starts_head);
            g.softmax(b, &this);
        });
        let prev = g.block(&first, it.clone() - 1);
        let ends_head = (it.clone().cmp(CmpOp::Eq, count.clone()))
            .select(1, prev.row0.clone().cmp(CmpOp::Eq, (g.per_head() - 1) * r));
        let prev_starts = starts(&(it.clone() - 1), &prev);
        b.when("previous", it.cmp(CmpOp::Gt, 0), |b| {
            g.output(b, &prev, (prev_starts, ends_head));
            g.store(b, &prev);
        });
    });
    for (src, dst, ids) in free(t.scores, !g.n.masks.is_empty()) {
        for id in ids {
            b.wait_flag(src, dst, id);
        }
    }
    // the block loop's flags are the ones above; those of the per-core inputs' loads are
    // placed from the dependences
    crate::npu::sync::place(crate::npu::finish(b)?, ctx.machine)
}
