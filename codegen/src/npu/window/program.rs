//! The window reduction's program: tiles of `rows x cols` output pixels of one image and of
//! a group of its channels (all of them, or an equal share), dealt to the cores in
//! contiguous ranges of their row-major order; per tile `t` (slot `t % 2` of the input and
//! output rings; the input has one slot when V converts it to the output's type, since the
//! copy frees it at once):
//! - MTE2 waits until V has freed the input slot, loads the tile's input rows and columns
//!   inside the image (one burst per row, or per pixel for a group of channels), tells V;
//! - V waits for them and for MTE3 to have freed the output slot; per output row and chunk
//!   of lanes it sets the accumulators to the initial value, then for each window position
//!   (the kernel's order) combines the output columns whose input falls inside the image:
//!   one instruction (`vmax`, `vmin`, `vadd`), or two with a weight or a constant (`vmul` or
//!   `vmuls` into a temporary row, then `vadd`), a repeat per pixel (or, for a tile one
//!   column wide, a repeat per chunk of lanes: global pooling);
//! - MTE3 stores the tile's rows (one burst each, or one per pixel) and frees the output
//!   slot.
//!
//! Global pooling combined pairwise ([`Order::Pairwise`]) computes a tile's terms in place,
//! in its converted copy or its input slot (a pass each for the conversion and the scaling,
//! its pixels consecutive), then halves the pixels until one is left (the first `n / 2`
//! combined with the last `n / 2`), then sets the output to the initial value and combines
//! the last pixel into it; a barrier separates dependent passes.
//!
//! Global pooling without a border may go in *parts* ([`Size::part`]): a tile's image rows
//! a few at a time, each part loaded into the next input slot (the ring turns once a part)
//! and combined into the tile's outputs before the next (in the kernel's order when the
//! window's rows are its outer loop, or pairwise within the part, then into the outputs),
//! the initial value written with the first part only; the tile is stored after its last.
//! So an image larger than UB is pooled, and a part's load overlaps the work on the one
//! before. A sum combined pairwise into `f32` may *spread* a tile's parts over pieces
//! ([`Size::spread`]), each a work item whose partial sums (from zero) are added into the
//! output atomically, after every core has stored the initial value over its share of the
//! output and all have met at a `sync_all` ([`start`]).
//!
//! A depthwise convolution's weights are loaded once per core (flag id 2). The rings'
//! "free" flags are set twice before the loop and waited for twice after it, as the vector
//! path's are (strict semantics: one event per flag).

use super::tiles::{Choice, Model, Size};
use super::{Combine, Dim, Order, Term, Window};
use crate::npu::NpuError;
use npu_sim::builder::Builder;
use npu_sim::program::TensorId;
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

/// `e / k`, folded when `k` is 1.
fn over(e: Expr, k: i64) -> Expr {
    match k {
        1 => e,
        _ => e / k,
    }
}

/// `e % k`, folded when `k` is 1.
fn modulo(e: Expr, k: i64) -> Expr {
    match k {
        1 => Expr::Const(0),
        _ => e % k,
    }
}

/// The input rows one load of a tile brings.
enum Part {
    /// All the rows the tile reads ([`input_box`]).
    Whole,
    /// Global pooling in parts ([`Size::part`]): `rows` image rows from `first`, the tile's
    /// part `index`.
    Rows { first: Expr, rows: i64, index: Expr },
}

/// When a pass writes the initial value into a tile's outputs: with its first load.
#[derive(Clone)]
enum Initial {
    /// Every time (a tile loaded whole, a tile's first part).
    Always,
    /// Never (a later part).
    Never,
    /// When the condition holds (the parts in a loop: the first).
    When(Expr),
}

impl Initial {
    /// Emits `write` as the initial value is written: always, never or under a condition.
    fn write(&self, b: &mut Builder, write: impl FnOnce(&mut Builder)) {
        match self {
            Initial::Always => write(b),
            Initial::Never => {}
            Initial::When(cond) => b.when("first", cond.clone(), write),
        }
    }
}

/// An array's indices at the NHWC form's `at`, through `dims` (a [`super::View`]'s): each present
/// dimension's index at its position, a merged one's split (`e / inner`, `e % inner`), the
/// absent ones (extent 1, index 0) dropped.
fn placed(dims: &[Dim], at: Vec<Expr>) -> Vec<Expr> {
    let mut out = vec![Expr::Const(0); dims.iter().map(|d| d.rank()).sum()];
    for (d, e) in dims.iter().zip(at) {
        match *d {
            Dim::Absent => {}
            Dim::At(k) => out[k] = e,
            Dim::Merged { at, inner } => {
                out[at] = over(e.clone(), inner);
                out[at + 1] = modulo(e, inner);
            }
        }
    }
    out
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

/// `vconv` of `pixels` pixels (repeats) of `c` channels, one chunk of lanes after another,
/// from `src` to `dst` (both with pixels `c` elements apart).
fn convert(
    b: &mut Builder,
    model: &Model,
    dst: (BufferId, Expr),
    src: (BufferId, Expr),
    (pixels, c): (Expr, i64),
) {
    let (lanes, chunks) = (model.lanes, model.chunks(c));
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

/// One pass of `model.runs(pixels, chans)`: per run, `op(b, offset)` (its operation with its
/// sources `offset` elements on, and how many sources it has) written to `dst` plus
/// `offset`.
fn pass(
    b: &mut Builder,
    model: &Model,
    (pixels, chans): (i64, i64),
    dst: (BufferId, &Expr),
    mut op: impl FnMut(&mut Builder, i64) -> (VecOp, usize),
) {
    for run in model.runs(pixels, chans) {
        let (vop, sources) = op(b, run.offset);
        let d = b.at(dst.0, [dst.1.clone() + run.offset]);
        let mut v = Vector::new(vop, d, run.repeats)
            .mask(run.mask)
            .dst_stride(run.stride);
        for k in 0..sources {
            v = v.src_stride(k, run.stride);
        }
        b.push(v);
    }
}

/// The combining operation of `w`.
fn combining(w: &Window) -> BinaryOp {
    match w.combine {
        Combine::Sum => BinaryOp::Add,
        Combine::Max => BinaryOp::Max,
        Combine::Min => BinaryOp::Min,
    }
}

/// A global pooling tile (or a part of one) combined pairwise ([`Order::Pairwise`]): its
/// `pixels` pixels of `chans` channels in `work` (from its element given, converted
/// already) scaled in place when the term is, halved until one pixel is left, and combined
/// into the output slot `out`, which is set to `start` first as `initial` says (the
/// initial value; zero for a piece of a spread tile, whose output holds it already).
fn pairwise(
    b: &mut Builder,
    (w, model): (&Window, &Model),
    work: (BufferId, Expr),
    out: (BufferId, Expr),
    (pixels, chans): (i64, i64),
    (initial, start): (&Initial, f64),
) {
    let at = |b: &Builder, (buf, base): &(BufferId, Expr), offset: i64| {
        b.at(*buf, [base.clone() + offset])
    };
    if let Term::Scaled(value) = w.term {
        b.barrier(BarrierScope::Pipe(Pipe::V));
        pass(b, model, (pixels, chans), (work.0, &work.1), |b, o| {
            let a = at(b, &work, o);
            let op = ScalarOp::Muls;
            (VecOp::Scalar { op, a, value }, 1)
        });
    }
    let op = combining(w);
    let mut n = pixels;
    while n > 1 {
        let half = n / 2;
        // pixels 0..half combined with n - half..n
        let second = (n - half) * chans;
        b.barrier(BarrierScope::Pipe(Pipe::V));
        pass(b, model, (half, chans), (work.0, &work.1), |b, o| {
            let (a, bb) = (at(b, &work, o), at(b, &work, second + o));
            (VecOp::Binary { op, a, b: bb }, 2)
        });
        n -= half;
    }
    initial.write(b, |b| {
        pass(b, model, (1, chans), (out.0, &out.1), |_, _| {
            (VecOp::Dup { value: start }, 0)
        })
    });
    b.barrier(BarrierScope::Pipe(Pipe::V));
    pass(b, model, (1, chans), (out.0, &out.1), |b, o| {
        let (a, bb) = (at(b, &out, o), at(b, &work, o));
        (VecOp::Binary { op, a, b: bb }, 2)
    });
}

/// A spread's start ([`Size::spread`]): V writes the initial value over the output slot
/// `slot` (`chans` elements), MTE3 stores it over the core's share of `output`
/// ([`Model::share`]), then every core waits for all (`sync_all`), so that the pieces'
/// atomic adds find the output set.
fn start(
    b: &mut Builder,
    (w, model): (&Window, &Model),
    (slot, output): (BufferId, TensorId),
    chans: i64,
) {
    b.origin(Some(&format!("{} set to its initial value", w.output.name)));
    pass(b, model, (1, chans), (slot, &Expr::Const(0)), |_, _| {
        (VecOp::Dup { value: w.init }, 0)
    });
    b.set_flag(Pipe::V, Pipe::Mte3, 0);
    b.wait_flag(Pipe::V, Pipe::Mte3, 0);
    let share = model.share();
    let total: i64 = w.output.shape.iter().product();
    let begin = times(Expr::Core, share);
    let len = (Expr::Const(total) - begin.clone()).min(share).max(0);
    b.repeat("s", (len.clone() + (chans - 1)) / chans, |b, k| {
        let at = begin.clone() + times(k, chans);
        // the flat element `at`, as the last index
        let mut index = vec![Expr::Const(0); w.output.shape.len()];
        if let Some(last) = index.last_mut() {
            *last = at.clone();
        }
        let dst = b.at(output, index);
        let src = b.at(slot, [Expr::Const(0)]);
        b.push(Dma::new(
            dst,
            src,
            1,
            (begin.clone() + len.clone() - at).min(chans),
        ));
    });
    b.sync_all();
    b.origin(None);
}

/// The program for `w` tiled as `choice` says.
pub fn program(
    w: &Window,
    machine: &Machine,
    model: &Model,
    choice: &Choice,
) -> Result<npu_sim::Program, NpuError> {
    let (t_in, t_out, t_w) = model.types;
    let z = choice.size;
    let (rows, cols, chans) = (z.rows, z.cols, z.chans);
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
    let e = model.elems(z);
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
            // a window of more positions than an instruction's repeats (global pooling's)
            // takes several
            let all = (w.r * w.s, w.c);
            pass(&mut b, model, all, (conv, &Expr::Const(0)), |b, o| {
                let a = b.at(buf, [Expr::Const(o)]);
                (VecOp::Conv { a }, 1)
            });
        }
        b.origin(None);
    }
    if z.spread > 1 {
        start(&mut b, (w, model), (bufs.output.0, output), chans);
    }
    let in_slots = model.in_slots();
    for id in 0..in_slots {
        b.set_flag(Pipe::V, Pipe::Mte2, id);
    }
    b.set_flag(Pipe::Mte3, Pipe::V, 0);
    b.set_flag(Pipe::Mte3, Pipe::V, 1);

    let [tp, tq, tc, _] = model.grid(z);
    let tiles = model.items(z);
    let cores = machine.cores as i64;
    let (q, rem) = (tiles / cores, tiles % cores);
    let (first_item, count) = if rem == 0 {
        (times(Expr::Core, q), Expr::Const(q))
    } else {
        (
            times(Expr::Core, q) + Expr::Core.min(rem),
            Expr::Const(q) + Expr::Core.cmp(CmpOp::Lt, rem),
        )
    };
    let (sh, sw) = w.stride;
    let c = w.c;
    let whole = chans == c;
    // the output's index of pixel (n, p, q), channel c0 (global pooling: no p, q), and
    // the input's of pixel (n, h, w), channel c0, through the arrays' view of NHWC
    let out_at = |n: Expr, p: Expr, q: Expr, c0: Expr| match w.spatial() {
        true => placed(&w.view.output, vec![n, p, q, c0]),
        false => placed(&w.view.output, vec![n, c0]),
    };
    let in_at = |n: Expr, h: Expr, x: Expr, c0: Expr| placed(&w.view.input, vec![n, h, x, c0]);
    let spread = z.spread;
    let parts = model.parted(z);
    let in_tile = parts.map_or(1, |(_, n)| n);
    // piece `k`'s first part and parts ([`Model::piece`])
    let piece_of = |k: &Expr| {
        let (q, r) = (in_tile / spread, in_tile % spread);
        match r {
            0 => (times(k.clone(), q), Expr::Const(q)),
            _ => (
                times(k.clone(), q) + k.clone().min(r),
                Expr::Const(q) + k.clone().cmp(CmpOp::Lt, r),
            ),
        }
    };
    // the loads of the work items before item `g` (of every core)
    let before =
        |g: &Expr| times(over(g.clone(), spread), in_tile) + piece_of(&modulo(g.clone(), spread)).0;
    b.repeat("t", count, |b, t| {
        let g = first_item.clone() + t.clone();
        // the item's piece of its tile
        let piece = modulo(g.clone(), spread);
        let g = over(g, spread);
        let n = over(g.clone(), tp * tq * tc);
        let p0 = times(modulo(over(g.clone(), tq * tc), tp), rows);
        let q0 = times(modulo(over(g.clone(), tc), tq), cols);
        let c0 = times(modulo(g, tc), chans);
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
        let o_slot = times(slot.clone(), bufs.output.1);
        let [hlo, hhi, wlo, whi] = input_box(w, [&p0, &q0, &tile_rows, &tile_cols]);
        let in_cols = model.in_cols(cols);
        let wcount = whi - wlo.clone();
        // the tile's input in image coordinates: columns w0.. (border included)
        let w0 = times(q0.clone(), sw) - w.pad.left;
        // one load of the tile's input rows combined into its outputs: all its rows, or
        // (global pooling in parts) one part's
        let combine_part = |b: &mut Builder, part: &Part| {
            // the input's slot and flag id: one slot when the tile is converted (the copy
            // frees it at once, so the next load overlaps this one's work), else two, which
            // turn once a tile, or once a part; the slot's first row `h0` (border
            // included), the first and the number of rows loaded, their pixels
            let (turn, h0, lo, count, pixels, initial) = match part {
                Part::Whole => (
                    slot.clone(),
                    times(p0.clone(), sh) - w.pad.top,
                    hlo.clone(),
                    hhi.clone() - hlo.clone(),
                    w.h * w.w,
                    Initial::Always,
                ),
                Part::Rows { first, rows, index } => (
                    // the ring turns once a load: the core's loads before this one
                    (before(&(first_item.clone() + t.clone())) - before(&first_item)
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
            let hlo_rel = lo.clone() - h0.clone();
            b.wait_flag(Pipe::V, Pipe::Mte2, in_slot.clone());
            // the first loaded pixel of loaded row j in the slot
            let pixel = |j: Expr| times(hlo_rel.clone() + j, in_cols) + (wlo.clone() - w0.clone());
            b.origin(Some(&format!("load the tile's rows of {}", w.input.name)));
            if whole {
                let at = times(in_slot.clone(), bufs.input.1) + times(pixel(Expr::Const(0)), c);
                let dst = b.at(bufs.input.0, [at]);
                let src = b.at(
                    input,
                    in_at(n.clone(), lo.clone(), wlo.clone(), Expr::Const(0)),
                );
                b.push(
                    Dma::new(dst, src, count.clone(), times(wcount.clone(), c))
                        .strides(w.w * c, in_cols * c),
                );
            } else if w.consecutive() {
                // global pooling without a border: the image's pixels one after the other
                // in GM too, so one transfer of a burst per pixel (its group of channels)
                let dst = b.at(bufs.input.0, [times(in_slot.clone(), bufs.input.1)]);
                let src = b.at(input, in_at(n.clone(), lo.clone(), wlo.clone(), c0.clone()));
                b.push(Dma::new(dst, src, pixels, chans).strides(c, chans));
            } else {
                // a burst per pixel: its group of channels
                b.repeat("j", count.clone(), |b, j| {
                    let at = times(in_slot.clone(), bufs.input.1) + times(pixel(j.clone()), chans);
                    let dst = b.at(bufs.input.0, [at]);
                    let src = b.at(
                        input,
                        in_at(n.clone(), lo.clone() + j, wlo.clone(), c0.clone()),
                    );
                    b.push(Dma::new(dst, src, wcount.clone(), chans).strides(c, chans));
                });
            }
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
                    match model.order {
                        Order::Kernel => b.repeat("j", count.clone(), |b, j| {
                            let at = times(pixel(j), chans);
                            convert(
                                b,
                                model,
                                (conv, at.clone()),
                                (bufs.input.0, x_slot.clone() + at),
                                (wcount.clone(), chans),
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
                b.wait_flag(Pipe::Mte3, Pipe::V, slot.clone());
            }
            b.origin(Some(&format!("statement {}", w.stmt)));
            if model.order == Order::Pairwise {
                let out = (bufs.output.0, o_slot.clone());
                pairwise(
                    b,
                    (w, model),
                    source.clone(),
                    out,
                    (pixels, chans),
                    (&initial, if spread > 1 { 0.0 } else { w.init }),
                );
            } else {
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
                        c0: c0.clone(),
                        cols: tile_cols.clone(),
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
        };
        match parts {
            None => combine_part(b, &Part::Whole),
            Some((rows, _)) => {
                // the output slot, once a work item, before its first part's work
                b.wait_flag(Pipe::Mte3, Pipe::V, slot.clone());
                // the piece's parts: those of whole `rows`, then the image's last, shorter
                // part (in the last piece)
                let (full, rem) = (w.h / rows, w.h % rows);
                let (first_part, count) = match spread {
                    1 => (Expr::Const(0), Expr::Const(in_tile)),
                    _ => piece_of(&piece),
                };
                let last = piece.clone().cmp(CmpOp::Eq, spread - 1);
                let whole = match (rem, spread) {
                    (0, _) => count.clone(),
                    (_, 1) => Expr::Const(full),
                    _ => count.clone() - last.clone(),
                };
                b.repeat("part", whole.clone(), |b, j| {
                    let first = times(first_part.clone() + j.clone(), rows);
                    combine_part(
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
                        1 => combine_part(b, &part),
                        _ => b.when("last_piece", last, |b| combine_part(b, &part)),
                    }
                }
            }
        }
        b.set_flag(Pipe::V, Pipe::Mte3, slot.clone());
        b.wait_flag(Pipe::V, Pipe::Mte3, slot.clone());
        b.origin(Some(&format!("store the tile's rows of {}", w.output.name)));
        // a piece's partial sums are added into the output
        let store = |d: Dma| match spread {
            1 => d,
            _ => d.atomic_add(),
        };
        if whole {
            let src = b.at(bufs.output.0, [o_slot]);
            let dst = b.at(output, out_at(n, p0, q0, Expr::Const(0)));
            b.push(store(
                Dma::new(dst, src, tile_rows, times(tile_cols, c)).strides(cols * c, w.ow * c),
            ));
        } else {
            // a burst per pixel: its group of channels
            b.repeat("i", tile_rows, |b, i| {
                let src = b.at(
                    bufs.output.0,
                    [o_slot.clone() + times(i.clone(), cols * chans)],
                );
                let dst = b.at(
                    output,
                    out_at(n.clone(), p0.clone() + i, q0.clone(), c0.clone()),
                );
                b.push(store(
                    Dma::new(dst, src, tile_cols.clone(), chans).strides(chans, c),
                ));
            });
        }
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
    /// The tile's first channel.
    c0: Expr,
    /// The tile's columns.
    cols: Expr,
    /// A whole tile's size (its columns: the output slot's row pitch; its channels: a
    /// pixel's, in UB).
    size: Size,
    /// Global pooling in parts: the image rows the input slot holds, `(first, rows)`.
    part: Option<(Expr, i64)>,
    /// When the row's outputs are set to the initial value.
    initial: Initial,
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
    fn row(&self, b: &mut Builder) {
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
