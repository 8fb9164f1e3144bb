//! The program's work items: what they share ([`Context`]) and each one's loads, work and
//! store ([`Item`]).

use super::row::Tile;
use super::{
    convert, input_box, modulo, over, pairwise, pass, placed, times, Buffers, Initial, Part,
};
use crate::npu::window::tiles::{piece_of, Meet, Model, Size};
use crate::npu::window::{Combine, Order, Term, Window};
use npu_sim::builder::Builder;
use npu_sim::program::{BarrierScope, CmpOp, Dma, Expr, Pipe, TensorId, VecOp};

/// What every work item of the program shares: the reduction, its model and tiling, the
/// buffers, the input and output tensors, the workspace its pieces meet through (if they
/// do: [`crate::npu::window::tiles::Meet::Workspace`]), the core's first work item, and the
/// parts a tile has (1 unless it goes in parts).
pub(super) struct Context<'a> {
    pub(super) w: &'a Window,
    pub(super) model: &'a Model<'a>,
    pub(super) z: Size,
    pub(super) bufs: &'a Buffers,
    pub(super) tensors: (TensorId, TensorId),
    pub(super) pieces: Option<TensorId>,
    pub(super) first_item: Expr,
    pub(super) in_tile: i64,
}

impl Context<'_> {
    /// Piece `k`'s first part and its parts ([`piece_of`]).
    fn piece(&self, k: &Expr) -> (Expr, Expr) {
        piece_of(k.clone(), self.in_tile, self.z.spread)
    }

    /// The loads of the work items before item `g` (of every core).
    fn before(&self, g: &Expr) -> Expr {
        let spread = self.z.spread;
        times(over(g.clone(), spread), self.in_tile) + self.piece(&modulo(g.clone(), spread)).0
    }

    /// The output's index of pixel `(n, p, q)`, channel `c0` (global pooling: no `p`, `q`),
    /// through the arrays' view of NHWC.
    pub(super) fn out_at(&self, n: Expr, p: Expr, q: Expr, c0: Expr) -> Vec<Expr> {
        match self.w.spatial() {
            true => placed(&self.w.view.output, vec![n, p, q, c0]),
            false => placed(&self.w.view.output, vec![n, c0]),
        }
    }

    /// The input's index of pixel `(n, h, x)`, channel `c0`, through the view.
    fn in_at(&self, n: Expr, h: Expr, x: Expr, c0: Expr) -> Vec<Expr> {
        placed(&self.w.view.input, vec![n, h, x, c0])
    }
}

/// Work item `t` of a core: a tile (or a piece of one), its image `n`, first output row,
/// column and channel, its clipped size, its output slot, and the input rows and columns
/// its windows reach.
pub(super) struct Item<'a> {
    cx: &'a Context<'a>,
    t: Expr,
    piece: Expr,
    n: Expr,
    p0: Expr,
    q0: Expr,
    c0: Expr,
    rows: Expr,
    cols: Expr,
    slot: Expr,
    o_slot: Expr,
    /// [`input_box`].
    hlo: Expr,
    hhi: Expr,
    wlo: Expr,
    /// Input columns loaded.
    wcount: Expr,
    /// The tile's first input column (border included).
    w0: Expr,
}

impl<'a> Item<'a> {
    /// Work item `t` of the core.
    pub(super) fn new(cx: &'a Context<'a>, t: Expr) -> Item<'a> {
        let (w, z) = (cx.w, cx.z);
        let [tp, tq, tc, _] = cx.model.grid(z);
        let g = cx.first_item.clone() + t.clone();
        // the item's piece of its tile
        let piece = modulo(g.clone(), z.spread);
        let g = over(g, z.spread);
        let n = over(g.clone(), tp * tq * tc);
        let p0 = times(modulo(over(g.clone(), tq * tc), tp), z.rows);
        let q0 = times(modulo(over(g.clone(), tc), tq), z.cols);
        let c0 = times(modulo(g, tc), z.chans);
        let rows = if w.oh % z.rows == 0 {
            Expr::Const(z.rows)
        } else {
            (Expr::Const(w.oh) - p0.clone()).min(z.rows)
        };
        let cols = if w.ow % z.cols == 0 {
            Expr::Const(z.cols)
        } else {
            (Expr::Const(w.ow) - q0.clone()).min(z.cols)
        };
        let slot = t.clone() % 2;
        let o_slot = times(slot.clone(), cx.bufs.output.1);
        let [hlo, hhi, wlo, whi] = input_box(w, [&p0, &q0, &rows, &cols]);
        let wcount = whi - wlo.clone();
        let w0 = times(q0.clone(), w.stride.1) - w.pad.left;
        Item {
            cx,
            t,
            piece,
            n,
            p0,
            q0,
            c0,
            rows,
            cols,
            slot,
            o_slot,
            hlo,
            hhi,
            wlo,
            wcount,
            w0,
        }
    }

    /// The item's loads, each combined into its outputs, then its store.
    pub(super) fn emit(&self, b: &mut Builder) {
        let (w, spread) = (self.cx.w, self.cx.z.spread);
        match self.cx.model.parted(self.cx.z) {
            None => self.combine(b, &Part::Whole),
            Some((rows, _)) => {
                // the output slot, once a work item, before its first part's work
                b.wait_flag(Pipe::Mte3, Pipe::V, self.slot.clone());
                // the piece's parts: those of whole `rows`, then the image's last, shorter
                // part (in the last piece)
                let (full, rem) = (w.h / rows, w.h % rows);
                let (first_part, count) = match spread {
                    1 => (Expr::Const(0), Expr::Const(self.cx.in_tile)),
                    _ => self.cx.piece(&self.piece),
                };
                let last = self.piece.clone().cmp(CmpOp::Eq, spread - 1);
                let whole = match (rem, spread) {
                    (0, _) => count.clone(),
                    (_, 1) => Expr::Const(full),
                    _ => count.clone() - last.clone(),
                };
                b.repeat("part", whole.clone(), |b, j| {
                    let first = times(first_part.clone() + j.clone(), rows);
                    self.combine(
                        b,
                        &Part::Rows {
                            first,
                            rows,
                            index: j,
                        },
                    );
                });
                if rem > 0 {
                    let first = Expr::Const(full * rows);
                    let part = Part::Rows {
                        first,
                        rows: rem,
                        index: whole,
                    };
                    match spread {
                        1 => self.combine(b, &part),
                        _ => b.when("last_piece", last, |b| self.combine(b, &part)),
                    }
                }
            }
        }
        self.store(b);
    }

    /// One load of the tile's input rows combined into its outputs: all its rows, or
    /// (global pooling in parts) one part's.
    fn combine(&self, b: &mut Builder, part: &Part) {
        let (cx, w, model, bufs) = (self.cx, self.cx.w, self.cx.model, self.cx.bufs);
        let (z, chans, c) = (cx.z, cx.z.chans, w.c);
        let input = cx.tensors.0;
        // the input's slot and flag id: one slot when the tile is converted (the copy frees
        // it at once, so the next load overlaps this one's work), else two, which turn once
        // a tile, or once a part; the slot's first row `h0` (border included), the first and
        // the number of rows loaded, their pixels
        let (turn, h0, lo, count, pixels, initial) = match part {
            Part::Whole => (
                self.slot.clone(),
                times(self.p0.clone(), w.stride.0) - w.pad.top,
                self.hlo.clone(),
                self.hhi.clone() - self.hlo.clone(),
                w.h * w.w,
                Initial::Always,
            ),
            Part::Rows { first, rows, index } => (
                // the ring turns once a load: the core's loads before this one
                (cx.before(&(cx.first_item.clone() + self.t.clone())) - cx.before(&cx.first_item)
                    + index.clone())
                    % 2,
                first.clone(),
                first.clone(),
                Expr::Const(*rows),
                rows * w.w,
                match index {
                    Expr::Const(0) => Initial::Always,
                    Expr::Const(_) => Initial::Never,
                    _ => Initial::When(index.clone().cmp(CmpOp::Eq, 0)),
                },
            ),
        };
        let in_slot = match bufs.converted {
            Some(_) => Expr::Const(0),
            None => turn,
        };
        let in_cols = model.in_cols(z.cols);
        let hlo_rel = lo.clone() - h0.clone();
        b.wait_flag(Pipe::V, Pipe::Mte2, in_slot.clone());
        // the first loaded pixel of loaded row j in the slot
        let pixel =
            |j: Expr| times(hlo_rel.clone() + j, in_cols) + (self.wlo.clone() - self.w0.clone());
        b.origin(Some(&format!("load the tile's rows of {}", w.input.name)));
        if chans == c {
            let at = times(in_slot.clone(), bufs.input.1) + times(pixel(Expr::Const(0)), c);
            let dst = b.at(bufs.input.0, [at]);
            let src = b.at(
                input,
                cx.in_at(self.n.clone(), lo.clone(), self.wlo.clone(), Expr::Const(0)),
            );
            b.push(
                Dma::new(dst, src, count.clone(), times(self.wcount.clone(), c))
                    .strides(w.w * c, in_cols * c),
            );
        } else if w.consecutive() {
            // global pooling without a border: the image's pixels one after the other in GM
            // too, so one transfer of a burst per pixel (its group of channels)
            let dst = b.at(bufs.input.0, [times(in_slot.clone(), bufs.input.1)]);
            let src = b.at(
                input,
                cx.in_at(
                    self.n.clone(),
                    lo.clone(),
                    self.wlo.clone(),
                    self.c0.clone(),
                ),
            );
            b.push(Dma::new(dst, src, pixels, chans).strides(c, chans));
        } else {
            // a burst per pixel: its group of channels
            b.repeat("j", count.clone(), |b, j| {
                let at = times(in_slot.clone(), bufs.input.1) + times(pixel(j.clone()), chans);
                let dst = b.at(bufs.input.0, [at]);
                let src = b.at(
                    input,
                    cx.in_at(
                        self.n.clone(),
                        lo.clone() + j,
                        self.wlo.clone(),
                        self.c0.clone(),
                    ),
                );
                b.push(Dma::new(dst, src, self.wcount.clone(), chans).strides(c, chans));
            });
        }
        b.origin(None);
        b.set_flag(Pipe::Mte2, Pipe::V, in_slot.clone());
        b.wait_flag(Pipe::Mte2, Pipe::V, in_slot.clone());
        let x_slot = times(in_slot.clone(), bufs.input.1);
        // the taps read the tile as loaded, or its copy in the output's type (the input slot
        // is then free at once)
        let source = match bufs.converted {
            Some(conv) => {
                b.origin(Some(&format!(
                    "convert the tile's rows of {}",
                    w.input.name
                )));
                // the previous tile's taps read the copy
                b.barrier(BarrierScope::Pipe(Pipe::V));
                match model.order {
                    Order::Kernel => b.repeat("j", count.clone(), |b, j| {
                        let at = times(pixel(j), chans);
                        convert(
                            b,
                            model,
                            (conv, at.clone()),
                            (bufs.input.0, x_slot.clone() + at),
                            (self.wcount.clone(), chans),
                        );
                    }),
                    // the image's pixels are consecutive
                    Order::Pairwise => {
                        let from = (bufs.input.0, x_slot.clone());
                        pass(
                            b,
                            model,
                            (pixels, chans),
                            (conv, &Expr::Const(0)),
                            |b, o| {
                                let a = b.at(from.0, [from.1.clone() + o]);
                                (VecOp::Conv { a }, 1)
                            },
                        );
                    }
                }
                b.set_flag(Pipe::V, Pipe::Mte2, in_slot.clone());
                (conv, Expr::Const(0))
            }
            None => (bufs.input.0, x_slot.clone()),
        };
        if let Part::Whole = part {
            b.wait_flag(Pipe::Mte3, Pipe::V, self.slot.clone());
        }
        b.origin(Some(&format!("statement {}", w.stmt)));
        if model.order == Order::Pairwise {
            let out = (bufs.output.0, self.o_slot.clone());
            // a piece of a spread sum starts from zero (the initial value is counted once,
            // by the output's start or the pieces' meeting); a maximum or minimum may take
            // the initial value in every piece
            let start = match (z.spread, w.combine) {
                (1, _) | (_, Combine::Max | Combine::Min) => w.init,
                (_, Combine::Sum) => 0.0,
            };
            let scale = match w.term {
                Term::Scaled(value) => Some(value),
                _ => None,
            };
            pairwise(
                b,
                (w, model),
                (source.clone(), scale),
                out,
                (pixels, chans),
                (&initial, start),
            );
        } else {
            b.repeat("i", self.rows.clone(), |b, i| {
                let tile = Tile {
                    w,
                    model,
                    bufs,
                    source: source.clone(),
                    o_slot: self.o_slot.clone(),
                    i: i.clone(),
                    p: self.p0.clone() + i,
                    q0: self.q0.clone(),
                    c0: self.c0.clone(),
                    cols: self.cols.clone(),
                    size: z,
                    part: match part {
                        Part::Whole => None,
                        Part::Rows { first, rows, .. } => Some((first.clone(), *rows)),
                    },
                    initial: initial.clone(),
                };
                tile.row(b);
            });
        }
        b.origin(None);
        if bufs.converted.is_none() {
            b.set_flag(Pipe::V, Pipe::Mte2, in_slot);
        }
    }

    /// MTE3 stores the item's outputs (a piece's partial results are added into the
    /// output, or stored into its row of the workspace), then frees the output slot.
    fn store(&self, b: &mut Builder) {
        let (cx, w, bufs) = (self.cx, self.cx.w, self.cx.bufs);
        let (z, c, output) = (cx.z, w.c, cx.tensors.1);
        b.set_flag(Pipe::V, Pipe::Mte3, self.slot.clone());
        b.wait_flag(Pipe::V, Pipe::Mte3, self.slot.clone());
        b.origin(Some(&match cx.pieces {
            Some(_) => format!("store the piece's partial results of {}", w.output.name),
            None => format!("store the tile's rows of {}", w.output.name),
        }));
        let store = |d: Dma| match cx.model.meeting(z) {
            Some(Meet::Atomic) => d.atomic_add(),
            _ => d,
        };
        if let Some(pieces) = cx.pieces {
            // a piece of global pooling (one output pixel, its group of channels) into its
            // row of the workspace
            let src = b.at(bufs.output.0, [self.o_slot.clone()]);
            let dst = b.at(
                pieces,
                [cx.first_item.clone() + self.t.clone(), Expr::Const(0)],
            );
            b.push(Dma::new(dst, src, 1, z.chans));
        } else if z.chans == c {
            let src = b.at(bufs.output.0, [self.o_slot.clone()]);
            let at = cx.out_at(
                self.n.clone(),
                self.p0.clone(),
                self.q0.clone(),
                Expr::Const(0),
            );
            let dst = b.at(output, at);
            b.push(store(
                Dma::new(dst, src, self.rows.clone(), times(self.cols.clone(), c))
                    .strides(z.cols * c, w.ow * c),
            ));
        } else {
            // a burst per pixel: its group of channels
            b.repeat("i", self.rows.clone(), |b, i| {
                let src = b.at(
                    bufs.output.0,
                    [self.o_slot.clone() + times(i.clone(), z.cols * z.chans)],
                );
                let at = cx.out_at(
                    self.n.clone(),
                    self.p0.clone() + i,
                    self.q0.clone(),
                    self.c0.clone(),
                );
                let dst = b.at(output, at);
                b.push(store(
                    Dma::new(dst, src, self.cols.clone(), z.chans).strides(z.chans, c),
                ));
            });
        }
        b.origin(None);
        b.set_flag(Pipe::Mte3, Pipe::V, self.slot.clone());
    }
}
