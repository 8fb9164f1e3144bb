//! One output row of a tile as V computes it in the kernel's order ([`Tile`]): the
//! accumulators set to the initial value, then every window position inside the image.

use super::{combining, times, Buffers, Initial};
use crate::npu::window::tiles::{Model, Size};
use crate::npu::window::{Term, Window};
use npu_sim::builder::Builder;
use npu_sim::program::{
    BarrierScope, BinaryOp, BufferId, CmpOp, Expr, MemRef, Pipe, ScalarOp, VecOp, Vector,
};

/// One output row of a tile, as V computes it.
pub(super) struct Tile<'a> {
    pub(super) w: &'a Window,
    pub(super) model: &'a Model<'a>,
    pub(super) bufs: &'a Buffers,
    /// Where the taps read the tile's input: a buffer and its first element.
    pub(super) source: (BufferId, Expr),
    /// The output slot's first element.
    pub(super) o_slot: Expr,
    /// The row in the tile.
    pub(super) i: Expr,
    /// The row in the output.
    pub(super) p: Expr,
    /// The tile's first output column.
    pub(super) q0: Expr,
    /// The tile's first channel.
    pub(super) c0: Expr,
    /// The tile's columns.
    pub(super) cols: Expr,
    /// A whole tile's size (its columns: the output slot's row pitch; its channels: a
    /// pixel's, in UB).
    pub(super) size: Size,
    /// Global pooling in parts: the image rows the input slot holds, `(first, rows)`.
    pub(super) part: Option<(Expr, i64)>,
    /// When the row's outputs are set to the initial value.
    pub(super) initial: Initial,
}

/// Which lanes an instruction of a row works on.
struct Lanes {
    /// The first channel of the chunk (0 when the repeats walk the chunks).
    lane0: Expr,
    /// Active lanes of each repeat.
    mask: Expr,
}

impl Tile<'_> {
    /// The row's accumulators set to the initial value, then every window position inside
    /// the image combined into them, chunk of lanes by chunk.
    pub(super) fn row(&self, b: &mut Builder) {
        let (w, m) = (self.w, self.model);
        let (lanes, chans) = (m.lanes, self.size.chans);
        let chunks = m.chunks(chans);
        let chunk = |b: &mut Builder, k: Expr| {
            let mask = if m.by_chunks(self.size) || chans % lanes == 0 || chunks == 1 {
                Expr::Const(chans.min(lanes))
            } else {
                (Expr::Const(chans) - times(k.clone(), lanes)).min(lanes)
            };
            let l = Lanes {
                lane0: times(k, lanes),
                mask,
            };
            let acc0 = self.o_slot.clone() + times(self.i.clone(), self.size.cols * chans);
            let init = b.at(self.bufs.output.0, [acc0 + l.lane0.clone()]);
            let (repeat, rs) = self.repeats(self.cols.clone(), 1);
            self.initial.write(b, |b| {
                b.push(
                    Vector::new(VecOp::Dup { value: w.init }, init, repeat)
                        .mask(l.mask.clone())
                        .dst_stride(rs),
                )
            });
            let (r_lo, r_hi) = self.rows_inside();
            let by_rows = |b: &mut Builder, s: Expr| {
                b.for_loop("r", r_lo.clone(), r_hi.clone(), 1, |b, r| {
                    self.position(b, r, s, &l);
                });
            };
            if w.r_outer {
                b.for_loop("r", r_lo.clone(), r_hi.clone(), 1, |b, r| {
                    b.repeat("s", w.s, |b, s| {
                        self.position(b, r.clone(), s, &l);
                    });
                });
            } else {
                b.repeat("s", w.s, by_rows);
            }
        };
        if chunks == 1 || m.by_chunks(self.size) {
            chunk(b, Expr::Const(0));
        } else {
            b.repeat("k", chunks, chunk);
        }
    }

    /// The repeats of an instruction over `pixels` output pixels whose operand's pixels are
    /// `stride` pixels apart, and its repeat stride in elements: a repeat per pixel, or
    /// (one pixel) a repeat per chunk of lanes.
    fn repeats(&self, pixels: Expr, stride: i64) -> (Expr, i64) {
        let (m, chans) = (self.model, self.size.chans);
        match m.by_chunks(self.size) {
            true => (Expr::Const(m.chunks(chans)), m.lanes),
            false => (pixels, stride * chans),
        }
    }

    /// The weights as the taps read them (converted, or as loaded).
    fn weights(&self) -> Option<BufferId> {
        self.bufs.converted_weights.or(self.bufs.weights)
    }

    /// The window rows inside the image for this output row (in the part the input slot
    /// holds).
    fn rows_inside(&self) -> (Expr, Expr) {
        let w = self.w;
        if let Some((first, rows)) = &self.part {
            return (first.clone(), first.clone() + *rows);
        }
        let first = times(self.p.clone(), w.stride.0) - w.pad.top;
        let (top_ok, bottom_ok) = (
            w.pad.top == 0,
            w.stride.0 * (w.oh - 1) - w.pad.top + w.r <= w.h,
        );
        let lo = if top_ok {
            Expr::Const(0)
        } else {
            (Expr::Const(0) - first.clone()).max(0)
        };
        let hi = if bottom_ok {
            Expr::Const(w.r)
        } else {
            (Expr::Const(w.h) - first).min(w.r)
        };
        (lo, hi)
    }

    /// Window position `(r, s)` combined into the row's output columns whose input falls
    /// inside the image (none: no instruction).
    fn position(&self, b: &mut Builder, r: Expr, s: Expr, l: &Lanes) {
        let w = self.w;
        let (sh, sw) = w.stride;
        let c = self.size.chans;
        let (lane0, mask) = (&l.lane0, &l.mask);
        let q1 = self.q0.clone() + self.cols.clone();
        // output columns whose column s is inside: ceil((left - s) / sw) ..
        let lo = ((Expr::Const(w.pad.left) - s.clone()).max(0) + (sw - 1)) / sw;
        let hi = (Expr::Const(w.w - 1 + w.pad.left) - s.clone()) / sw + 1;
        let (lo, hi) = (lo.max(self.q0.clone()), hi.min(q1));
        let in_cols = self.model.in_cols(self.size.cols);
        let body = |b: &mut Builder| {
            let rel = lo.clone() - self.q0.clone();
            let (repeat, acc_rs) = self.repeats(hi.clone() - lo.clone(), 1);
            let (_, x_rs) = self.repeats(hi.clone() - lo.clone(), sw);
            // the window row's row in the input slot
            let slot_row = match &self.part {
                Some((first, _)) => r.clone() - first.clone(),
                None => times(self.i.clone(), sh) + r.clone(),
            };
            let x_at = self.source.1.clone()
                + times(
                    times(slot_row, in_cols) + times(rel.clone(), sw) + s.clone(),
                    c,
                )
                + lane0.clone();
            let acc_at = self.o_slot.clone()
                + times(times(self.i.clone(), self.size.cols) + rel.clone(), c)
                + lane0.clone();
            let x = b.at(self.source.0, [x_at]);
            let acc = b.at(self.bufs.output.0, [acc_at]);
            let combine = combining(w);
            let with = |b: &mut Builder, operand: MemRef, rs: i64| {
                b.barrier(BarrierScope::Pipe(Pipe::V));
                b.push(
                    Vector::new(
                        VecOp::Binary {
                            op: combine,
                            a: acc.clone(),
                            b: operand,
                        },
                        acc.clone(),
                        repeat.clone(),
                    )
                    .mask(mask.clone())
                    .dst_stride(acc_rs)
                    .src_stride(0, acc_rs)
                    .src_stride(1, rs),
                );
            };
            let temp = |b: &Builder| {
                let at = times(rel.clone(), c) + lane0.clone();
                self.bufs.temp.map(|t| b.at(t, [at]))
            };
            let product = match (&w.term, temp(b)) {
                (Term::Input, _) | (_, None) => None,
                (Term::Scaled(v), Some(t)) => Some((
                    VecOp::Scalar {
                        op: ScalarOp::Muls,
                        a: x.clone(),
                        value: *v,
                    },
                    t,
                    None,
                )),
                (Term::Product { steps, .. }, Some(t)) => self.weights().map(|wb| {
                    // the weights of the position: the tile's channels, the same for every
                    // pixel (a repeat stride of 0) or walked by chunk
                    let at = times(r.clone(), steps.0)
                        + times(s.clone(), steps.1)
                        + self.c0.clone()
                        + lane0.clone();
                    let rs = match self.model.by_chunks(self.size) {
                        true => self.model.lanes,
                        false => 0,
                    };
                    (
                        VecOp::Binary {
                            op: BinaryOp::Mul,
                            a: x.clone(),
                            b: b.at(wb, [at]),
                        },
                        t,
                        Some(rs),
                    )
                }),
            };
            match product {
                None => with(b, x, x_rs),
                Some((op, t, weight_rs)) => {
                    let mut v = Vector::new(op, t.clone(), repeat.clone())
                        .mask(mask.clone())
                        .dst_stride(acc_rs)
                        .src_stride(0, x_rs);
                    if let Some(rs) = weight_rs {
                        v = v.src_stride(1, rs);
                    }
                    b.barrier(BarrierScope::Pipe(Pipe::V));
                    b.push(v);
                    with(b, t, acc_rs);
                }
            }
        };
        b.when("inside", hi.clone().cmp(CmpOp::Gt, lo.clone()), body);
    }
}
