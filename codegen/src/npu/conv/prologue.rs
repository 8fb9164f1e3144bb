//! A slab's prologue: its input band and its weights brought into L1 in the layouts the
//! cube reads, in chunks that fit the scratch space. Each step is separated from the next
//! by `barrier ALL` (the prologue runs between two of them, so its scratch in L0A, L0B,
//! L0C and UB may share the main loop's space).
//!
//! The band (C1HWC0: per block of 16 input channels, the band's pixels, 16 channels each):
//! - NHWC with channels a multiple of 16: GM -> UB in one burst per chunk of rows, then one
//!   strided UB -> L1 DMA per channel block (16 channels of every pixel);
//! - NHWC otherwise: GM -> UB, the vector unit spreads each pixel's channels over zeroed
//!   blocks of 16 (one repeat per pixel and block), UB -> L1;
//! - NCHW: GM -> L1 as NZ (channels by pixels, `nd2nz`), each fractal transposed into L0A,
//!   multiplied by the identity into L0C (pixels by channels, exact: every product is a value
//!   times 1 or 0), L0C -> UB (back to f16, exact) and UB -> L1.
//!
//! The weights (fractals of 16 output by 16 input channels; for the pixel-rows orientation
//! column after column of fractals, for the channel-rows one row after row):
//! - `[k, r, s, c]` (and any 1x1): GM -> UB, then per window position an `nd2nz` UB -> L1
//!   placing its input channels' columns (channels not a multiple of 16 are first spread
//!   over zeroed blocks of 16 by the vector unit, as for the band);
//! - `[k, c, r, s]` with a window: GM -> L1 as NZ in its own order (input channel major),
//!   then per block of 16 input channels a product with a permutation matrix (built in UB
//!   by the vector unit) that moves column `c0 * RS + rs` to `rs * 16 + c0`, through L0C,
//!   UB and back to L1.

use super::emit::{Ctx, Names};
use super::geometry::{c, Orientation, Shape, Slab};
use super::tiles::{permuted_weights, stage_rows, transposed_weights, Capacity, Footprint, Tiles};
use super::{Activations, Conv};
use npu_sim::builder::Builder;
use npu_sim::program::{
    BarrierScope, BufferId, CmpOp, DType, Dma, DmaMode, Expr, Placement, Tier, UnaryOp, VecOp,
    Vector,
};

/// Elements of a 16 x 16 fractal.
const FRACTAL: i64 = 256;
/// f16 lanes of one vector repeat.
const LANES: i64 = 128;
/// Pixels (or rows) per vector instruction when spreading channels: at most 255 repeats,
/// and a multiple of 16 so that every instruction's source starts on a 32-byte block.
const SPREAD: i64 = 240;

/// The prologue's scratch: L1 buffers of its own, and views of all of L0A, L0B, L0C and UB
/// (which the main loop's buffers also occupy).
pub struct Scratch {
    /// L1: the NCHW band chunk as NZ, before its transposition.
    stage: BufferId,
    /// L1: the weights in their own order, before the permutation.
    natural: BufferId,
    /// L1: the permutation (or identity) matrix as NZ.
    perm: BufferId,
    /// All of L0A.
    l0a: BufferId,
    /// All of L0B.
    l0b: BufferId,
    /// All of L0C.
    l0c: BufferId,
    /// All of UB.
    ub: BufferId,
}

impl Scratch {
    /// Declares the scratch buffers of a program whose L1 buffers are `fp`.
    pub fn declare(b: &mut Builder, fp: &Footprint, cap: Capacity) -> Scratch {
        let at0 = Placement::At(0);
        let l1 = |b: &mut Builder, name: &str, len: i64| {
            b.buffer(name, Tier::L1, DType::F16, &[len.max(16) as u64])
        };
        Scratch {
            stage: l1(b, "stage", fp.stage),
            natural: l1(b, "natural", fp.natural),
            perm: l1(b, "perm", fp.perm),
            l0a: b.buffer_placed(
                "l0a_all",
                Tier::L0a,
                DType::F16,
                &[(cap.l0a / 2) as u64],
                at0,
            ),
            l0b: b.buffer_placed(
                "l0b_all",
                Tier::L0b,
                DType::F16,
                &[(cap.l0b / 2) as u64],
                at0,
            ),
            l0c: b.buffer_placed(
                "l0c_all",
                Tier::L0c,
                DType::F32,
                &[(cap.l0c / 4) as u64],
                at0,
            ),
            ub: b.buffer_placed("ub_all", Tier::Ub, DType::F16, &[(cap.ub / 2) as u64], at0),
        }
    }
}

fn all(b: &mut Builder) {
    b.barrier(BarrierScope::All);
}

/// `len` elements from `dst` on zeroed by the vector unit (whole repeats: the buffer must
/// extend to the next multiple of 128 elements).
fn zero(b: &mut Builder, buf: BufferId, at: Expr, len: Expr, most: i64) {
    let per = LANES * 255;
    b.repeat("z", (most + per - 1) / per, |b, z| {
        let left = len.clone() - z.clone() * per;
        b.when("zl", left.clone().cmp(CmpOp::Gt, 0), |b| {
            let dst = b.at(buf, [at.clone() + z * per]);
            let reps = ((left + (LANES - 1)) / LANES).min(255);
            b.push(Vector::new(VecOp::Dup { value: 0.0 }, dst, reps));
        });
    });
}

/// `len` zeros into the L1 buffer `names.zeros`, through UB (at the program's start).
pub fn zeros(b: &mut Builder, names: &Names, len: i64) {
    zero(b, names.scratch.ub, c(0), c(len), len);
    all(b);
    let dst = b.at(names.zeros, [c(0)]);
    let src = b.at(names.scratch.ub, [c(0)]);
    b.push(Dma::new(dst, src, 1, len));
    all(b);
}

/// The vector unit copies `rows` rows of `width` values (`pitch` apart, from `src`) into
/// rows of `blocks * 16` values (from `dst`, zeroed first), one channel block at a time.
#[allow(clippy::too_many_arguments)]
fn spread(
    b: &mut Builder,
    ub: BufferId,
    (src, dst): (Expr, Expr),
    rows: Expr,
    most_rows: i64,
    width: i64,
    blocks: i64,
) {
    zero(
        b,
        ub,
        dst.clone(),
        rows.clone() * (blocks * 16),
        most_rows * blocks * 16,
    );
    b.barrier(BarrierScope::Pipe(npu_sim::program::Pipe::V));
    b.repeat("cb", blocks, |b, cb| {
        b.repeat("blk", (most_rows + SPREAD - 1) / SPREAD, |b, blk| {
            let left = rows.clone() - blk.clone() * SPREAD;
            b.when("bl", left.clone().cmp(CmpOp::Gt, 0), |b| {
                let to = b.at(
                    ub,
                    [dst.clone() + blk.clone() * (SPREAD * blocks * 16) + cb.clone() * 16],
                );
                let from = b.at(ub, [src.clone() + blk * (SPREAD * width) + cb.clone() * 16]);
                let op = VecOp::Unary {
                    op: UnaryOp::Mov,
                    a: from,
                };
                b.origin(Some("channels spread over blocks of 16"));
                b.push(
                    Vector::new(op, to, left.min(SPREAD))
                        .mask((c(width) - cb * 16).min(16))
                        .src_stride(0, width)
                        .dst_stride(blocks * 16),
                );
                b.origin(None);
            });
        });
    });
}

/// UB offset (elements) of the second region, after `first` elements, on a repeat.
fn after(first: i64) -> i64 {
    (first + LANES - 1) / LANES * LANES
}

/// Where input row `row` (an expression, relative to the band's first row) of channel
/// block `c1` starts in the band, in elements.
fn band_at(sh: &Shape, c1: Expr, row: Expr) -> Expr {
    c1 * (sh.slice * 16) + (row * sh.pitch + (sh.lead + sh.left)) * 16
}

/// `rows` C1HWC0 rows of UB (channel block `c1` from `src(c1)`, rows of `W` pixels back to
/// back) into the band from band row `row`.
fn place(
    b: &mut Builder,
    cv: &Conv,
    sh: &Shape,
    n: &Names,
    src: &dyn Fn(Expr) -> Expr,
    rows: Expr,
    row: Expr,
) {
    b.repeat("c1", cv.c1(), |b, c1| {
        let dst = b.at(n.band, [band_at(sh, c1.clone(), row.clone())]);
        let from = b.at(n.scratch.ub, [src(c1)]);
        b.origin(Some("input rows, UB -> L1 C1HWC0"));
        b.push(Dma::new(dst, from, rows.clone(), cv.w * 16).strides(cv.w * 16, sh.pitch * 16));
        b.origin(None);
    });
}

/// The slab's input rows into the band (C1HWC0). Each chunk's GM read starts up to
/// `align_rows - 1` rows early, on GM's alignment; those rows are skipped when the chunk,
/// by then C1HWC0 (32 bytes a pixel), is placed.
pub fn band(b: &mut Builder, cx: &Ctx, slab: &Slab) {
    let Ctx { cv, t, sh, n, .. } = *cx;
    let s = &n.scratch;
    if cv.input_layout == Activations::Nchw {
        permutation(b, s, 1, 1, (c(0), 1));
    }
    if sh.orient == Orientation::ChannelRows {
        zero_band(b, n);
    }
    let bc = t.band_chunk;
    let g = sh.align_rows;
    let most = stage_rows(cv, bc) * cv.w;
    b.repeat("ch", (sh.band_rows + bc - 1) / bc, |b, ch| {
        let a = slab.y_first.clone() + ch * bc;
        b.when("rows", a.clone().cmp(CmpOp::Lt, slab.y_end.clone()), |b| {
            let rows = (slab.y_end.clone() - a.clone()).min(bc);
            let row = a.clone() - slab.y_base.clone();
            // rows before `a` read to start on GM's alignment, counted over the tensor
            let skip = match cv.input_layout {
                Activations::Nhwc => (slab.n.clone() * cv.h + a.clone()) % g,
                Activations::Nchw => (slab.n.clone() * (cv.c * cv.h) + a.clone()) % g,
            };
            let first = a - skip.clone();
            let px = (rows.clone() + skip.clone()) * cv.w;
            match cv.input_layout {
                Activations::Nhwc => {
                    let src = b.at(
                        n.input,
                        [
                            c(0),
                            c(0),
                            c(0),
                            (slab.n.clone() * cv.h + first) * (cv.w * cv.c),
                        ],
                    );
                    let ub = b.at(s.ub, [c(0)]);
                    b.origin(Some("input rows, GM -> UB"));
                    b.push(Dma::new(ub, src, 1, px.clone() * cv.c));
                    b.origin(None);
                    all(b);
                    // NHWC with a channel pitch of a whole number of 32-byte blocks
                    let (from, width) = if cv.c % 16 == 0 {
                        (0, cv.c)
                    } else {
                        let at = after(most * cv.c);
                        spread(b, s.ub, (c(0), c(at)), px.clone(), most, cv.c, cv.c1());
                        all(b);
                        (at, cv.c1() * 16)
                    };
                    // a pixel's 16 channels per burst, the rows back to back or one by one
                    let whole = sh.pitch == cv.w;
                    let (count, times) = if whole {
                        (rows.clone() * cv.w, c(1))
                    } else {
                        (c(cv.w), rows.clone())
                    };
                    b.repeat("c1", cv.c1(), |b, c1| {
                        b.repeat("r", times.clone(), |b, r| {
                            let dst =
                                b.at(n.band, [band_at(sh, c1.clone(), row.clone() + r.clone())]);
                            let src = (skip.clone() + r) * (cv.w * width) + c1.clone() * 16 + from;
                            let src = b.at(s.ub, [src]);
                            b.origin(Some("input rows, UB -> L1 C1HWC0"));
                            b.push(Dma::new(dst, src, count.clone(), 16).strides(width, 16));
                            b.origin(None);
                        });
                    });
                    all(b);
                }
                Activations::Nchw => {
                    transpose(b, cv, t, n, slab, first, px.clone());
                    let from = |c1: Expr| c1 * (most * 16) + skip.clone() * (cv.w * 16);
                    place(b, cv, sh, n, &from, rows, row);
                    all(b);
                }
            }
        });
    });
}

/// The band zeroed (its padding and lead), from a zeroed block of UB.
fn zero_band(b: &mut Builder, n: &Names) {
    let s = &n.scratch;
    let (len, block) = (n.band_len, n.zero_block);
    zero(b, s.ub, c(0), c(block), block);
    all(b);
    let ub = b.at(s.ub, [c(0)]);
    if len >= block {
        let dst = b.at(n.band, [c(0)]);
        b.push(Dma::new(dst, ub.clone(), len / block, block).strides(0, block));
    }
    if len % block != 0 {
        let dst = b.at(n.band, [c(len / block * block)]);
        b.push(Dma::new(dst, ub, 1, len % block));
    }
    all(b);
}

/// NCHW rows from `first` (`px` pixels of every channel) transposed through the cube into
/// UB as C1HWC0 (channel block `c1` from `c1 * most * 16`, `most` the chunk's largest
/// pixel count).
fn transpose(b: &mut Builder, cv: &Conv, t: &Tiles, n: &Names, slab: &Slab, first: Expr, px: Expr) {
    let s = &n.scratch;
    let c1s = cv.c1();
    let p1 = (px.clone() + 15) / 16;
    let most = stage_rows(cv, t.band_chunk) * cv.w;
    // each channel block's pixels `pitch` fractals apart in L0A and L0C
    let pitch = (most + 15) / 16;
    let src = b.at(
        n.input,
        [
            c(0),
            c(0),
            c(0),
            (slab.n.clone() * (cv.c * cv.h) + first) * cv.w,
        ],
    );
    let stage = b.at(s.stage, [c(0)]);
    b.origin(Some("input rows, GM NCHW -> L1 NZ (channels x pixels)"));
    b.push(
        Dma::new(stage, src, cv.c, px.clone())
            .strides(cv.h * cv.w, c1s * 16)
            .mode(DmaMode::Nd2nz),
    );
    all(b);
    b.repeat("c1", c1s, |b, c1| {
        let dst = b.at(s.l0a, [c1.clone() * (pitch * FRACTAL)]);
        let src = b.at(s.stage, [c1 * FRACTAL]);
        b.origin(Some("fractals transposed, L1 -> L0A (pixels x channels)"));
        b.push(
            Dma::new(dst, src, p1.clone(), FRACTAL)
                .strides(c1s * FRACTAL, FRACTAL)
                .mode(DmaMode::Transpose),
        );
    });
    all(b);
    b.repeat("c1", c1s, |b, c1| {
        let off = c1 * (pitch * FRACTAL);
        let cc = b.at(s.l0c, [off.clone()]);
        let aa = b.at(s.l0a, [off]);
        let id = b.at(s.l0b, [c(0)]);
        b.origin(Some("times the identity: pixels x channels in L0C"));
        b.mmad(cc, aa, id, (p1.clone() * 16, 16, 16), 1);
    });
    all(b);
    let ub = b.at(s.ub, [c(0)]);
    let l0c = b.at(s.l0c, [c(0)]);
    b.origin(Some("L0C -> UB, back to f16"));
    b.push(Dma::new(ub, l0c, c1s, px * 16).strides(pitch * FRACTAL, most * 16));
    b.origin(None);
    all(b);
}

/// Columns `g0 * 16 .. (g0 + gg) * 16` of the permutation taking column `c0 * RS + rs` of a
/// block of 16 input channels by the `RS` window positions to column `rs * 16 + c0` (rows
/// `0 .. kf * 16`; with `RS` = 1 and `kf` = 1 the identity), into L0B (nZ): built dense in UB
/// (zeros, then one strided `vdup` per window position puts its ones), UB -> L1 (NZ),
/// L1 -> L0B transposing.
fn permutation(b: &mut Builder, s: &Scratch, rs: i64, kf: i64, (g0, gg): (Expr, i64)) {
    let (rows, cols) = (16 * kf, 16 * gg);
    zero(b, s.ub, c(0), c(rows * cols), rows * cols);
    b.barrier(BarrierScope::Pipe(npu_sim::program::Pipe::V));
    b.repeat("r", gg, |b, r| {
        let at = g0.clone() + r.clone();
        // one 1 per channel c0 whose row c0 * RS + at is in the matrix
        let ones = ((c(rows + rs - 1) - at.clone()) / rs).min(16);
        let dst = b.at(s.ub, [at * cols + r * 16]);
        b.origin(Some("the permutation's ones"));
        b.push(
            Vector::new(VecOp::Dup { value: 1.0 }, dst, ones)
                .mask(1)
                .dst_stride(rs * cols + 1),
        );
        b.origin(None);
    });
    all(b);
    let perm = b.at(s.perm, [c(0)]);
    let ub = b.at(s.ub, [c(0)]);
    b.push(
        Dma::new(perm, ub, rows, cols)
            .strides(cols, rows)
            .mode(DmaMode::Nd2nz),
    );
    all(b);
    b.repeat("f1", kf, |b, f1| {
        let dst = b.at(s.l0b, [f1.clone() * (gg * FRACTAL)]);
        let src = b.at(s.perm, [f1 * FRACTAL]);
        b.push(
            Dma::new(dst, src, gg, FRACTAL)
                .strides(kf * FRACTAL, FRACTAL)
                .mode(DmaMode::Transpose),
        );
    });
    all(b);
}

/// The slab's weights into L1.
pub fn weights(b: &mut Builder, cx: &Ctx, slab: &Slab) {
    let Ctx { cv, t, n, .. } = *cx;
    if permuted_weights(cv) {
        permuted(b, cx, slab);
        return;
    }
    if transposed_weights(cv) {
        positions(b, cx, slab);
        return;
    }
    let s = &n.scratch;
    let wc = t.weight_chunk;
    let rs = cv.rs();
    if wc == 0 {
        direct_weights(b, cx, slab);
        return;
    }
    b.repeat("wc", (t.ks + wc - 1) / wc, |b, w| {
        let kr0 = w * wc;
        b.when("wrows", kr0.clone().cmp(CmpOp::Lt, slab.ka.clone()), |b| {
            let kra = (slab.ka.clone() - kr0.clone()).min(wc);
            let src = b.at(
                n.weights,
                n.weight_index((slab.k0.clone() + kr0.clone()) * (rs * cv.c)),
            );
            let ub = b.at(s.ub, [c(0)]);
            b.origin(Some("weights, GM -> UB"));
            b.push(Dma::new(ub, src, 1, kra.clone() * (rs * cv.c)));
            b.origin(None);
            all(b);
            let (from, width) = if cv.c % 16 == 0 {
                (0, cv.c)
            } else {
                let at = after(wc * rs * cv.c);
                spread(
                    b,
                    s.ub,
                    (c(0), c(at)),
                    kra.clone() * rs,
                    wc * rs,
                    cv.c,
                    cv.c1(),
                );
                all(b);
                (at, cv.c1() * 16)
            };
            let src = |b: &mut Builder, row: Expr| b.at(s.ub, [c(from) + row * (rs * width)]);
            place_rows(b, cx, (kr0, kra), rs * width, &src);
            all(b);
        });
    });
}

/// Rows `k0 ..` (`rows` of them, `k0` a multiple of 16) of `[k, r, s, c]` weights, each
/// `len` values (window positions by channels padded to blocks of 16) `len` apart from
/// `src(row)`, into the weights' fractals: column after column of them (one nd2nz), or for
/// the channel-rows orientation row after row (one nd2nz per 16 rows).
pub fn place_rows(
    b: &mut Builder,
    cx: &Ctx,
    (k0, rows): (Expr, Expr),
    len: i64,
    src: &dyn Fn(&mut Builder, Expr) -> npu_sim::program::MemRef,
) {
    let Ctx { t, sh, n, .. } = *cx;
    b.origin(Some("weights -> L1 fractals"));
    match sh.orient {
        Orientation::PixelRows => {
            let dst = b.at(n.wts, [k0.clone() * 16]);
            let from = src(b, c(0));
            b.push(
                Dma::new(dst, from, rows, len)
                    .strides(len, t.ks)
                    .mode(DmaMode::Nd2nz),
            );
        }
        Orientation::ChannelRows => b.repeat("k1", (rows.clone() + 15) / 16, |b, k1| {
            let dst = b.at(n.wts, [(k0.clone() / 16 + k1.clone()) * (sh.j * FRACTAL)]);
            let from = src(b, k1.clone() * 16);
            let count = (rows.clone() - k1 * 16).min(16);
            b.push(
                Dma::new(dst, from, count, len)
                    .strides(len, 16)
                    .mode(DmaMode::Nd2nz),
            );
        }),
    }
    b.origin(None);
}

/// `[r, s, c, k]` weights: window positions in chunks GM -> UB, then per position an
/// `nd2nz` into L1 (fractals of 16 input by 16 output channels, rows padded to blocks of 16
/// by the fill).
fn positions(b: &mut Builder, cx: &Ctx, slab: &Slab) {
    let Ctx { cv, t, n, .. } = *cx;
    let s = &n.scratch;
    let pc = t.weight_chunk;
    b.repeat("wc", (cv.rs() + pc - 1) / pc, |b, w| {
        let first = w * pc;
        let np = (c(cv.rs()) - first.clone()).min(pc);
        let src = b.at(
            n.weights,
            n.weight_index(first.clone() * (cv.c * cv.k) + slab.k0.clone()),
        );
        let ub = b.at(s.ub, [c(0)]);
        b.origin(Some("weights, GM -> UB"));
        b.push(Dma::new(ub, src, np.clone() * cv.c, slab.ka.clone()).strides(cv.k, t.ks));
        b.origin(None);
        all(b);
        b.repeat("r", np, |b, r| {
            let dst = b.at(n.wts, [(first.clone() + r.clone()) * (cv.c1() * 256)]);
            let src = b.at(s.ub, [r * (cv.c * t.ks)]);
            b.origin(Some(
                "weights, UB -> L1 fractals (input by output channels)",
            ));
            b.push(
                Dma::new(dst, src, cv.c, slab.ka.clone())
                    .strides(t.ks, cv.c1() * cv.rs() * 16)
                    .mode(DmaMode::Nd2nz),
            );
            b.origin(None);
        });
        all(b);
    });
}

/// Weights with channels a multiple of 16 straight from GM (UB too small to stage 16 rows).
fn direct_weights(b: &mut Builder, cx: &Ctx, slab: &Slab) {
    let Ctx { cv, n, .. } = *cx;
    let row = cv.rs() * cv.c;
    let src =
        |b: &mut Builder, r: Expr| b.at(n.weights, n.weight_index((slab.k0.clone() + r) * row));
    place_rows(b, cx, (c(0), slab.ka.clone()), row, &src);
    all(b);
}

/// `[k, c, r, s]` weights with a window: natural order into L1, then per block of 16 input
/// channels a product with the permutation, through L0C and UB back to L1.
fn permuted(b: &mut Builder, cx: &Ctx, slab: &Slab) {
    let Ctx { cv, t, n, .. } = *cx;
    let s = &n.scratch;
    let rs = cv.rs();
    let crs = cv.c * rs;
    let src = b.at(n.weights, n.weight_index(slab.k0.clone() * crs));
    let nat = b.at(s.natural, [c(0)]);
    b.origin(Some("weights, GM -> L1 NZ in their own order"));
    b.push(
        Dma::new(nat, src, slab.ka.clone(), crs)
            .strides(crs, t.ks)
            .mode(DmaMode::Nd2nz),
    );
    b.origin(None);
    // full blocks of 16 channels span `rs` fractal columns, a last partial one fewer; the
    // permutation's columns go `perm_group` window positions at a time
    let full = cv.c / 16;
    let kf_last = ((cv.c % 16) * rs + 15) / 16;
    let kf_max = if full > 0 { rs } else { kf_last };
    let gsize = t.perm_group;
    let group = |b: &mut Builder, g0: Expr, gg: i64| {
        permutation(b, s, rs, kf_max, (g0.clone(), gg));
        b.repeat("c1", full, |b, c1| {
            permute_block(b, cx, slab, c1, rs, (g0.clone(), gg))
        });
        if kf_last > 0 {
            permute_block(b, cx, slab, c(full), kf_last, (g0.clone(), gg));
        }
    };
    b.repeat("g", rs / gsize, |b, g| group(b, g * gsize, gsize));
    if rs % gsize != 0 {
        group(b, c(rs / gsize * gsize), rs % gsize);
    }
}

/// One block of 16 input channels (`kf` fractal columns of the natural order) times the
/// permutation's window positions `g0 .. g0 + gg`, into the weights' fractals.
#[allow(clippy::too_many_arguments)]
fn permute_block(b: &mut Builder, cx: &Ctx, slab: &Slab, c1: Expr, kf: i64, (g0, gg): (Expr, i64)) {
    let Ctx { cv, t, sh, n, .. } = *cx;
    let s = &n.scratch;
    let rs = cv.rs();
    let ks1 = t.ks / 16;
    let m1 = slab.ka16.clone() / 16;
    b.repeat("k1", m1.clone(), |b, k1| {
        let dst = b.at(s.l0a, [k1.clone() * (kf * FRACTAL)]);
        let src = b.at(s.natural, [(c1.clone() * (rs * ks1) + k1) * FRACTAL]);
        b.push(Dma::new(dst, src, kf, FRACTAL).strides(ks1 * FRACTAL, FRACTAL));
    });
    all(b);
    let cc = b.at(s.l0c, [c(0)]);
    let aa = b.at(s.l0a, [c(0)]);
    let pp = b.at(s.l0b, [c(0)]);
    b.origin(Some("weights times the permutation"));
    b.mmad(cc, aa, pp, (slab.ka16.clone(), kf * 16, gg * 16), 1);
    b.origin(None);
    all(b);
    let ub = b.at(s.ub, [c(0)]);
    let l0c = b.at(s.l0c, [c(0)]);
    b.push(Dma::new(ub, l0c, 1, slab.ka16.clone() * (16 * gg)));
    all(b);
    // L0C's NZ: per window position, m1 fractals (its 16 channels of every row), into the
    // weights' columns (window position, channel block): `c1` blocks apart
    let col = g0 * cv.c1() + c1;
    let apart = cv.c1();
    match sh.orient {
        Orientation::PixelRows => {
            let dst = b.at(n.wts, [col * (ks1 * FRACTAL)]);
            let src = b.at(s.ub, [c(0)]);
            b.push(
                Dma::new(dst, src, gg, m1.clone() * FRACTAL)
                    .strides(m1 * FRACTAL, apart * ks1 * FRACTAL),
            );
        }
        Orientation::ChannelRows => b.repeat("k1", m1.clone(), |b, k1| {
            let dst = b.at(n.wts, [(k1.clone() * sh.j + col.clone()) * FRACTAL]);
            let src = b.at(s.ub, [k1 * FRACTAL]);
            b.push(Dma::new(dst, src, gg, FRACTAL).strides(m1.clone() * FRACTAL, apart * FRACTAL));
        }),
    }
    all(b);
}
