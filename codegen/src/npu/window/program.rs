//! The window reduction's program: tiles of `rows x cols` output pixels of one image, dealt
//! to the cores in contiguous ranges of their row-major order; per tile `t` (slot `t % 2` of
//! the input and output rings; the input has one slot when V converts it to the output's
//! type, since the copy frees it at once):
//! - MTE2 waits until V has freed the input slot, loads the tile's input rows and columns
//!   inside the image (one burst per row), tells V;
//! - V waits for them and for MTE3 to have freed the output slot; per output row and chunk
//!   of lanes it sets the accumulators to the initial value, then for each window position
//!   (the kernel's order) combines the output columns whose input falls inside the image:
//!   one instruction (`vmax`, `vmin`, `vadd`), or two with a weight or a constant (`vmul` or
//!   `vmuls` into a temporary row, then `vadd`), a repeat per pixel;
//! - MTE3 stores the tile's rows (one burst each) and frees the output slot.
//!
//! A depthwise convolution's weights are loaded once per core (flag id 2). The rings'
//! "free" flags are set twice before the loop and waited for twice after it, as the vector
//! path's are (strict semantics: one event per flag).

use super::tiles::{Choice, Model};
use super::{Combine, Term, Window};
use crate::npu::NpuError;
use npu_sim::builder::Builder;
use npu_sim::program::{
    BarrierScope, BinaryOp, BufferId, CmpOp, Direction, Dma, Expr, MemRef, Pipe, ScalarOp, Tier,
    VecOp, Vector,
};
use npu_sim::Machine;

/// `e * k`, folded when `k` is 0 or 1.
fn times(e: Expr, k: i64) -> Expr {
    match k {
        0 => Expr::Const(0),
        1 => e,
        _ => Expr::Mul(k, Box::new(e)),
    }
}

/// The UB buffers: the rings (with elements per slot), the temporary, the weights, and the
/// copies of the input tile and of the weights converted to the output's type.
struct Buffers {
    input: (BufferId, i64),
    output: (BufferId, i64),
    temp: Option<BufferId>,
    weights: Option<BufferId>,
    converted: Option<BufferId>,
    converted_weights: Option<BufferId>,
}

/// `vconv` of `pixels` pixels (repeats), one chunk of lanes after another, from `src` to
/// `dst` (both with pixels `c` elements apart).
fn convert(
    b: &mut Builder,
    model: &Model,
    dst: (BufferId, Expr),
    src: (BufferId, Expr),
    pixels: Expr,
) {
    let (c, lanes, chunks) = (model.w.c, model.lanes, model.chunks());
    for k in 0..chunks {
        let lane0 = k * lanes;
        let a = b.at(src.0, [src.1.clone() + lane0]);
        let d = b.at(dst.0, [dst.1.clone() + lane0]);
        b.push(
            Vector::new(VecOp::Conv { a }, d, pixels.clone())
                .mask((c - lane0).min(lanes))
                .dst_stride(c)
                .src_stride(0, c),
        );
    }
}

/// The program for `w` tiled as `choice` says.
pub fn program(
    w: &Window,
    machine: &Machine,
    model: &Model,
    choice: &Choice,
) -> Result<npu_sim::Program, NpuError> {
    let (t_in, t_out, t_w) = model.types;
    let (rows, cols) = (choice.rows, choice.cols);
    let mut b = Builder::new();
    let shape = |s: &[i64]| s.iter().map(|&d| d as u64).collect::<Vec<_>>();
    let input = b.tensor(&w.input.name, t_in, &shape(&w.input.shape), Direction::In);
    let output = b.tensor(
        &w.output.name,
        t_out,
        &shape(&w.output.shape),
        Direction::Out,
    );
    let weights = match &w.term {
        Term::Product { weights, .. } => Some((
            b.tensor(&weights.name, t_w, &shape(&weights.shape), Direction::In),
            weights.shape.len(),
        )),
        _ => None,
    };
    let e = model.elems(rows, cols);
    let mut buffer = |name: &str, d, elems: i64| {
        (elems > 0).then(|| b.buffer(name, Tier::Ub, d, &[elems as u64]))
    };
    let bufs = Buffers {
        temp: buffer("products", t_out, e.temp),
        weights: buffer("weights", t_w, e.weights),
        converted: buffer("in_converted", t_out, e.converted),
        converted_weights: buffer("weights_converted", t_out, e.converted_weights),
        input: (
            b.buffer(
                "in_tile",
                Tier::Ub,
                t_in,
                &[(model.in_slots() * e.input) as u64],
            ),
            e.input,
        ),
        output: (
            b.buffer("out_tile", Tier::Ub, t_out, &[2 * e.output as u64]),
            e.output,
        ),
    };
    if let (Some((tensor, rank)), Some(buf)) = (weights, bufs.weights) {
        let src = b.at(tensor, vec![Expr::Const(0); rank]);
        let dst = b.at(buf, [Expr::Const(0)]);
        b.origin(Some("load the weights"));
        b.push(Dma::new(dst, src, 1, e.weights));
        b.set_flag(Pipe::Mte2, Pipe::V, 2);
        b.wait_flag(Pipe::Mte2, Pipe::V, 2);
        if let Some(conv) = bufs.converted_weights {
            b.origin(Some("convert the weights"));
            convert(
                &mut b,
                model,
                (conv, Expr::Const(0)),
                (buf, Expr::Const(0)),
                Expr::Const(w.r * w.s),
            );
        }
        b.origin(None);
    }
    let in_slots = model.in_slots();
    for id in 0..in_slots {
        b.set_flag(Pipe::V, Pipe::Mte2, id);
    }
    b.set_flag(Pipe::Mte3, Pipe::V, 0);
    b.set_flag(Pipe::Mte3, Pipe::V, 1);

    let (tp, tq, tiles) = model.grid(rows, cols);
    let cores = machine.cores as i64;
    let (q, rem) = (tiles / cores, tiles % cores);
    let (first, count) = if rem == 0 {
        (times(Expr::Core, q), Expr::Const(q))
    } else {
        (
            times(Expr::Core, q) + Expr::Core.min(rem),
            Expr::Const(q) + Expr::Core.cmp(CmpOp::Lt, rem),
        )
    };
    let (sh, sw) = w.stride;
    let c = w.c;
    b.repeat("t", count, |b, t| {
        let g = first.clone() + t.clone();
        let n = g.clone() / (tp * tq);
        let p0 = times((g.clone() / tq) % tp, rows);
        let q0 = times(g % tq, cols);
        let tile_rows = if w.oh % rows == 0 {
            Expr::Const(rows)
        } else {
            (Expr::Const(w.oh) - p0.clone()).min(rows)
        };
        let tile_cols = if w.ow % cols == 0 {
            Expr::Const(cols)
        } else {
            (Expr::Const(w.ow) - q0.clone()).min(cols)
        };
        let slot = t.clone() % 2;
        // the input's slot and flag id: one slot when the tile is converted (the copy frees
        // it at once, so the load of the next tile overlaps this one's work), else two
        let in_slot = match bufs.converted {
            Some(_) => Expr::Const(0),
            None => slot.clone(),
        };
        // the tile's input in image coordinates: rows h0.., columns w0.. (border included)
        let h0 = times(p0.clone(), sh) - w.pad.top;
        let w0 = times(q0.clone(), sw) - w.pad.left;
        let [hlo, hhi, wlo, whi] = input_box(w, [&p0, &q0, &tile_rows, &tile_cols]);
        let in_cols = model.in_cols(cols);
        let hlo_rel = hlo.clone() - h0.clone();
        let hhi_count = hhi - hlo.clone();
        let wcount = whi - wlo.clone();
        b.wait_flag(Pipe::V, Pipe::Mte2, in_slot.clone());
        let at = times(in_slot.clone(), bufs.input.1)
            + times(
                times(hlo_rel.clone(), in_cols) + (wlo.clone() - w0.clone()),
                c,
            );
        let dst = b.at(bufs.input.0, [at]);
        let src = b.at(input, [n.clone(), hlo, wlo.clone(), Expr::Const(0)]);
        b.origin(Some(&format!("load the tile's rows of {}", w.input.name)));
        b.push(
            Dma::new(dst, src, hhi_count.clone(), times(wcount.clone(), c))
                .strides(w.w * c, in_cols * c),
        );
        b.origin(None);
        b.set_flag(Pipe::Mte2, Pipe::V, in_slot.clone());
        b.wait_flag(Pipe::Mte2, Pipe::V, in_slot.clone());
        let x_slot = times(in_slot.clone(), bufs.input.1);
        // the taps read the tile as loaded, or its copy in the output's type (the input
        // slot is then free at once)
        let source = match bufs.converted {
            Some(conv) => {
                b.origin(Some(&format!(
                    "convert the tile's rows of {}",
                    w.input.name
                )));
                // the previous tile's taps read the copy
                b.barrier(BarrierScope::Pipe(Pipe::V));
                b.repeat("j", hhi_count.clone(), |b, j| {
                    let at = times(
                        times(hlo_rel.clone() + j, in_cols) + (wlo.clone() - w0.clone()),
                        c,
                    );
                    convert(
                        b,
                        model,
                        (conv, at.clone()),
                        (bufs.input.0, x_slot.clone() + at),
                        wcount.clone(),
                    );
                });
                b.set_flag(Pipe::V, Pipe::Mte2, in_slot.clone());
                (conv, Expr::Const(0))
            }
            None => (bufs.input.0, x_slot.clone()),
        };
        b.wait_flag(Pipe::Mte3, Pipe::V, slot.clone());
        b.origin(Some(&format!("statement {}", w.stmt)));
        let o_slot = times(slot.clone(), bufs.output.1);
        b.repeat("i", tile_rows.clone(), |b, i| {
            let p = p0.clone() + i.clone();
            let tile = Tile {
                w,
                model,
                bufs: &bufs,
                source: source.clone(),
                o_slot: o_slot.clone(),
                i: i.clone(),
                p,
                q0: q0.clone(),
                cols: tile_cols.clone(),
                max_cols: cols,
            };
            tile.row(b);
        });
        b.origin(None);
        if bufs.converted.is_none() {
            b.set_flag(Pipe::V, Pipe::Mte2, in_slot);
        }
        b.set_flag(Pipe::V, Pipe::Mte3, slot.clone());
        b.wait_flag(Pipe::V, Pipe::Mte3, slot.clone());
        let src = b.at(bufs.output.0, [o_slot]);
        let dst = b.at(output, [n, p0, q0, Expr::Const(0)]);
        b.origin(Some(&format!("store the tile's rows of {}", w.output.name)));
        b.push(Dma::new(dst, src, tile_rows, times(tile_cols, c)).strides(cols * c, w.ow * c));
        b.origin(None);
        b.set_flag(Pipe::Mte3, Pipe::V, slot);
    });
    for id in 0..in_slots {
        b.wait_flag(Pipe::V, Pipe::Mte2, id);
    }
    b.wait_flag(Pipe::Mte3, Pipe::V, 0);
    b.wait_flag(Pipe::Mte3, Pipe::V, 1);
    crate::npu::finish(b)
}

/// The input rows `hlo..hhi` and columns `wlo..whi` a tile loads: those its windows reach
/// inside the image, for the tile whose first output row and column are `p0`, `q0` and
/// which has `rows x cols` output pixels. `footprint::check` evaluates these very
/// expressions against isl's reads.
pub fn input_box(w: &Window, [p0, q0, rows, cols]: [&Expr; 4]) -> [Expr; 4] {
    let (sh, sw) = w.stride;
    let h0 = times(p0.clone(), sh) - w.pad.top;
    let w0 = times(q0.clone(), sw) - w.pad.left;
    [
        h0.clone().max(0),
        (h0 + times(rows.clone(), sh) + (w.r - sh)).min(w.h),
        w0.clone().max(0),
        (w0 + times(cols.clone(), sw) + (w.s - sw)).min(w.w),
    ]
}

/// One output row of a tile, as V computes it.
struct Tile<'a> {
    w: &'a Window,
    model: &'a Model<'a>,
    bufs: &'a Buffers,
    /// Where the taps read the tile's input: a buffer and its first element.
    source: (BufferId, Expr),
    /// The output slot's first element.
    o_slot: Expr,
    /// The row in the tile.
    i: Expr,
    /// The row in the output.
    p: Expr,
    /// The tile's first output column.
    q0: Expr,
    /// The tile's columns.
    cols: Expr,
    /// Columns of a whole tile (the output slot's row pitch).
    max_cols: i64,
}

impl Tile<'_> {
    /// The row's accumulators set to the initial value, then every window position inside
    /// the image combined into them, chunk of lanes by chunk.
    fn row(&self, b: &mut Builder) {
        let (w, m) = (self.w, self.model);
        let (lanes, chunks) = (m.lanes, m.chunks());
        let chunk = |b: &mut Builder, k: Expr| {
            let mask = if w.c % lanes == 0 || chunks == 1 {
                Expr::Const(w.c.min(lanes))
            } else {
                (Expr::Const(w.c) - times(k.clone(), lanes)).min(lanes)
            };
            let lane0 = times(k, lanes);
            let acc0 = self.o_slot.clone() + times(self.i.clone(), self.max_cols * w.c);
            let init = b.at(self.bufs.output.0, [acc0 + lane0.clone()]);
            b.push(
                Vector::new(VecOp::Dup { value: w.init }, init, self.cols.clone())
                    .mask(mask.clone())
                    .dst_stride(w.c),
            );
            let (r_lo, r_hi) = self.rows_inside();
            let by_rows = |b: &mut Builder, s: Expr| {
                b.for_loop("r", r_lo.clone(), r_hi.clone(), 1, |b, r| {
                    self.position(b, r, s, &lane0, &mask);
                });
            };
            if w.r_outer {
                b.for_loop("r", r_lo.clone(), r_hi.clone(), 1, |b, r| {
                    b.repeat("s", w.s, |b, s| {
                        self.position(b, r.clone(), s, &lane0, &mask);
                    });
                });
            } else {
                b.repeat("s", w.s, by_rows);
            }
        };
        if chunks == 1 {
            chunk(b, Expr::Const(0));
        } else {
            b.repeat("k", chunks, chunk);
        }
    }

    /// The weights as the taps read them (converted, or as loaded).
    fn weights(&self) -> Option<BufferId> {
        self.bufs.converted_weights.or(self.bufs.weights)
    }

    /// The window rows inside the image for this output row.
    fn rows_inside(&self) -> (Expr, Expr) {
        let w = self.w;
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
    fn position(&self, b: &mut Builder, r: Expr, s: Expr, lane0: &Expr, mask: &Expr) {
        let w = self.w;
        let (sh, sw) = w.stride;
        let c = w.c;
        let q1 = self.q0.clone() + self.cols.clone();
        // output columns whose column s is inside: ceil((left - s) / sw) ..
        let lo = ((Expr::Const(w.pad.left) - s.clone()).max(0) + (sw - 1)) / sw;
        let hi = (Expr::Const(w.w - 1 + w.pad.left) - s.clone()) / sw + 1;
        let (lo, hi) = (lo.max(self.q0.clone()), hi.min(q1));
        let in_cols = self.model.in_cols(self.max_cols);
        let body = |b: &mut Builder| {
            let rel = lo.clone() - self.q0.clone();
            let repeat = hi.clone() - lo.clone();
            let x_at = self.source.1.clone()
                + times(
                    times(times(self.i.clone(), sh) + r.clone(), in_cols)
                        + times(rel.clone(), sw)
                        + s.clone(),
                    c,
                )
                + lane0.clone();
            let acc_at = self.o_slot.clone()
                + times(times(self.i.clone(), self.max_cols) + rel.clone(), c)
                + lane0.clone();
            let x = b.at(self.source.0, [x_at]);
            let acc = b.at(self.bufs.output.0, [acc_at]);
            let combine = match w.combine {
                Combine::Sum => BinaryOp::Add,
                Combine::Max => BinaryOp::Max,
                Combine::Min => BinaryOp::Min,
            };
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
                    .dst_stride(c)
                    .src_stride(0, c)
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
                    let at = times(r.clone(), steps.0) + times(s.clone(), steps.1) + lane0.clone();
                    (
                        VecOp::Binary {
                            op: BinaryOp::Mul,
                            a: x.clone(),
                            b: b.at(wb, [at]),
                        },
                        t,
                        Some(0),
                    )
                }),
            };
            match product {
                None => with(b, x, sw * c),
                Some((op, t, weight_rs)) => {
                    let mut v = Vector::new(op, t.clone(), repeat.clone())
                        .mask(mask.clone())
                        .dst_stride(c)
                        .src_stride(0, sw * c);
                    if let Some(rs) = weight_rs {
                        v = v.src_stride(1, rs);
                    }
                    b.barrier(BarrierScope::Pipe(Pipe::V));
                    b.push(v);
                    with(b, t, c);
                }
            }
        };
        b.when("inside", hi.clone().cmp(CmpOp::Gt, lo.clone()), body);
    }
}
