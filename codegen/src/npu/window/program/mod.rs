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
//! Global pooling combined pairwise ([`super::Order::Pairwise`]) computes a tile's terms in place,
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
//! output and all have met at a `sync_all`; other reductions combined pairwise (maxima,
//! minima, sums into `f16`) spread through a GM workspace instead (`meet`): each piece
//! stores its partial result there, and after a `sync_all` each core combines the pieces of
//! its share of the tiles.
//!
//! A depthwise convolution's weights are loaded once per core (flag id 2). The rings'
//! "free" flags are set twice before the loop and waited for twice after it, as the vector
//! path's are (strict semantics: one event per flag).

mod item;
mod meet;
mod row;

use super::tiles::{Choice, Meet, Model, Size};
use super::{Combine, Dim, Term, Window};
use crate::npu::NpuError;
use item::{Context, Item};
use npu_sim::builder::Builder;
use npu_sim::program::TensorId;
use npu_sim::program::{
    BarrierScope, BinaryOp, BufferId, CmpOp, Direction, Dma, Expr, Pipe, ScalarOp, Tier, VecOp,
    Vector,
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

/// A global pooling tile (or a part of one) combined pairwise ([`super::Order::Pairwise`]): its
/// `pixels` pixels of `chans` channels in `work` (from its element given, converted
/// already) scaled in place by `scale` when given, halved until one pixel is left, and
/// combined into the output slot `out`, which is set to `start` first as `initial` says
/// (the initial value; zero for a piece of a spread sum). The meeting of a spread tile's
/// pieces through a workspace combines their partial results so, unscaled.
fn pairwise(
    b: &mut Builder,
    (w, model): (&Window, &Model),
    (work, scale): ((BufferId, Expr), Option<f64>),
    out: (BufferId, Expr),
    (pixels, chans): (i64, i64),
    (initial, start): (&Initial, f64),
) {
    let at = |b: &Builder, (buf, base): &(BufferId, Expr), offset: i64| {
        b.at(*buf, [base.clone() + offset])
    };
    if let Some(value) = scale {
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
    let what = format!("{} set to its initial value", w.output.name);
    b.origin(Some(&what));
    pass(b, model, (1, chans), (slot, &Expr::Const(0)), |_, _| {
        (VecOp::Dup { value: w.init }, 0)
    });
    b.set_flag(Pipe::V, Pipe::Mte3, 0);
    b.wait_flag(Pipe::V, Pipe::Mte3, 0);
    b.origin(None);
    let total: i64 = w.output.shape.iter().product();
    let rank = w.output.shape.len();
    crate::npu::shares::store_shares(
        b,
        (output, rank),
        slot,
        (total, model.share(), chans),
        &what,
    );
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
    let bufs = buffers(&mut b, model, z);
    if let (Some(tensor), Some(buf)) = (weights, bufs.weights) {
        load_weights(&mut b, (w, model), tensor, (buf, bufs.converted_weights));
    }
    if model.meeting(z) == Some(Meet::Atomic) {
        start(&mut b, (w, model), (bufs.output.0, output), z.chans);
    }
    let pieces = workspace(&mut b, (w, model), z);
    let in_slots = model.in_slots();
    for id in 0..in_slots {
        b.set_flag(Pipe::V, Pipe::Mte2, id);
    }
    b.set_flag(Pipe::Mte3, Pipe::V, 0);
    b.set_flag(Pipe::Mte3, Pipe::V, 1);
    let cores = machine.cores as i64;
    let (first_item, count) = dealt(model.items(z), cores);
    let cx = Context {
        w,
        model,
        z,
        bufs: &bufs,
        tensors: (input, output),
        pieces,
        first_item,
        in_tile: model.parted(z).map_or(1, |(_, n)| n),
    };
    b.repeat("t", count, |b, t| Item::new(&cx, t).emit(b));
    for id in 0..in_slots {
        b.wait_flag(Pipe::V, Pipe::Mte2, id);
    }
    b.wait_flag(Pipe::Mte3, Pipe::V, 0);
    b.wait_flag(Pipe::Mte3, Pipe::V, 1);
    if pieces.is_some() {
        meet::emit(&mut b, &cx, cores);
    }
    crate::npu::finish(b)
}

/// The first and the number of `total` work items (or tiles) of the core, in contiguous
/// ranges as [`Model::deal`] deals them.
fn dealt(total: i64, cores: i64) -> (Expr, Expr) {
    let (q, rem) = (total / cores, total % cores);
    match rem {
        0 => (times(Expr::Core, q), Expr::Const(q)),
        _ => (
            times(Expr::Core, q) + Expr::Core.min(rem),
            Expr::Const(q) + Expr::Core.cmp(CmpOp::Lt, rem),
        ),
    }
}

/// The workspace of a spread tiling whose pieces meet through GM ([`Meet::Workspace`]): a
/// `scratch` tensor of the output's type, a row of `chans` elements per work item, named
/// apart from the kernel's arrays.
fn workspace(b: &mut Builder, (w, model): (&Window, &Model), z: Size) -> Option<TensorId> {
    (model.meeting(z) == Some(Meet::Workspace)).then(|| {
        // a spread tile's terms are the input's (or scaled): no weights
        let name = crate::npu::name_apart(format!("{}_pieces", w.output.name), |name| {
            name == w.input.name
        });
        let shape = [model.items(z) as u64, z.chans as u64];
        b.tensor(&name, model.types.1, &shape, Direction::Scratch)
    })
}

/// The UB buffers of tiles of `z`.
fn buffers(b: &mut Builder, model: &Model, z: Size) -> Buffers {
    let (t_in, t_out, t_w) = model.types;
    let e = model.elems(z);
    let mut buffer = |name: &str, d, elems: i64| {
        (elems > 0).then(|| b.buffer(name, Tier::Ub, d, &[elems as u64]))
    };
    Buffers {
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
    }
}

/// The weights (`tensor`, of `rank` dimensions) loaded whole into `buf` once per core (flag
/// id 2), and converted into `converted` when the output's type is not theirs.
fn load_weights(
    b: &mut Builder,
    (w, model): (&Window, &Model),
    (tensor, rank): (TensorId, usize),
    (buf, converted): (BufferId, Option<BufferId>),
) {
    let src = b.at(tensor, vec![Expr::Const(0); rank]);
    let dst = b.at(buf, [Expr::Const(0)]);
    b.origin(Some("load the weights"));
    b.push(Dma::new(dst, src, 1, w.r * w.s * w.c));
    b.set_flag(Pipe::Mte2, Pipe::V, 2);
    b.wait_flag(Pipe::Mte2, Pipe::V, 2);
    if let Some(conv) = converted {
        b.origin(Some("convert the weights"));
        // a window of more positions than an instruction's repeats (global pooling's)
        // takes several
        let all = (w.r * w.s, w.c);
        pass(b, model, all, (conv, &Expr::Const(0)), |b, o| {
            let a = b.at(buf, [Expr::Const(o)]);
            (VecOp::Conv { a }, 1)
        });
    }
    b.origin(None);
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
