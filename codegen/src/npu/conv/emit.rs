//! A convolution as an NPU program.
//!
//! Each core runs its slabs one after the other. A slab's input band (C1HWC0) and weights
//! (fractals of 16 output by 16 input channels, one column of fractals per channel block
//! and window position) come into L1 either streamed while the cube works
//! (`super::stream`: NHWC input, weights with channels innermost, NHWC output) or, where
//! they need converting through the cube or the output is NCHW, by a prologue before the
//! slab's tiles (`super::prologue`). Then, per tile of `mp` output pixels:
//! - MTE1 stages each sub-step into one of two L0 slots: the tile's window of the im2col
//!   matrix for one channel block and `nrs` window positions, or for a pointwise
//!   convolution `kc1` channel blocks (`load3d`, or for NCHW outputs
//!   DMA runs into L0B) and the matching weight fractals;
//! - M multiplies into the tile's L0C slot (one of two; the first sub-step overwrites);
//! - V converts the finished tile L0C (NZ) -> UB (ND), MTE3 stores it.
//!
//! The L0 slots, the L0C tiles and the UB tiles are rings of two (`super::ring`). Slabs are
//! separated by `barrier ALL`, which also orders the prologue's reuse of the L0, L0C and
//! UB space.

use super::geometry::{c, Orientation, Shape, Slab, Tile};
use super::prologue;
use super::ring::Ring;
use super::stream::{StreamBuffers, Streams};
use super::tiles::{transposed_weights, Capacity, Footprint, Tiles};
use super::{Activations, Conv};
use crate::npu::matmul::tail::{Buffers, SpanAt, Tail};
use crate::npu::vector::emit::{Place, Rows};
use crate::npu::NpuError;
use npu_sim::builder::Builder;
use npu_sim::program::{
    BarrierScope, BufferId, CmpOp, DType, Direction, Dma, DmaMode, Expr, Pipe, TensorId, Tier,
};
use npu_sim::Machine;

/// Elements of a 16 x 16 fractal.
const FRACTAL: i64 = 256;

/// The program's tensors and main buffers.
pub struct Names {
    /// The input.
    pub input: TensorId,
    /// The weights.
    pub weights: TensorId,
    /// The output.
    pub output: TensorId,
    /// The slab's input band in L1 (C1HWC0).
    pub band: BufferId,
    /// The slab's weights in L1.
    pub wts: BufferId,
    /// L0A slots.
    pub a_l0: BufferId,
    /// L0B slots.
    pub b_l0: BufferId,
    /// L0C tiles.
    pub c_l0: BufferId,
    /// UB tiles.
    pub c_ub: BufferId,
    /// Where the output tiles are stored from: `c_ub`, or the vector epilogue's results.
    pub c_out: BufferId,
    /// Zeros in L1 (an L0B slot's worth, for the transposed windows' padding).
    pub zeros: BufferId,
    /// Dimensions of the weights tensor.
    pub weight_rank: usize,
    /// Elements of the band.
    pub band_len: i64,
    /// Elements of the zeroed UB block the band is zeroed from.
    pub zero_block: i64,
    /// The prologue's scratch buffers.
    pub scratch: prologue::Scratch,
}

/// What the emitting functions read: the convolution, its tiles, its shape and the
/// program's names.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The convolution.
    pub cv: &'a Conv,
    /// Its tiles.
    pub t: &'a Tiles,
    /// Its shape.
    pub sh: &'a Shape,
    /// The program's tensors and buffers.
    pub n: &'a Names,
    /// The vector epilogue with its buffers, if any.
    pub epilogue: Option<(&'a Tail<'a>, &'a Buffers)>,
}

impl Names {
    /// The index of the weights' element `flat` (row-major), for any rank.
    pub fn weight_index(&self, flat: Expr) -> Vec<Expr> {
        let mut index = vec![c(0); self.weight_rank - 1];
        index.push(flat);
        index
    }
}

/// The main loop's rings: L0 slots (MTE1 -> M), L0C tiles (M -> V), UB tiles (V -> MTE3).
const L0: Ring = Ring {
    from: Pipe::Mte1,
    to: Pipe::M,
    base: 0,
};
const L0C: Ring = Ring {
    from: Pipe::M,
    to: Pipe::V,
    base: 0,
};
const UB: Ring = Ring {
    from: Pipe::V,
    to: Pipe::Mte3,
    base: 0,
};

fn shape_of(t: &super::Tensor) -> Vec<u64> {
    t.shape.iter().map(|&e| e as u64).collect()
}

/// The NPU program of `cv` with tiles `t` on `cores` cores.
pub fn program(cv: &Conv, t: &Tiles, machine: &Machine) -> Result<npu_sim::Program, NpuError> {
    let sh = Shape::new(cv, t, machine.cores as i64);
    super::footprint::check(cv, t, &sh)?;
    let mut b = Builder::new();
    let (a_slot, b_slot) = match sh.orient {
        Orientation::PixelRows => (t.mp * t.depth() * 16, t.depth() * 16 * t.ks),
        Orientation::ChannelRows => (t.ks * t.depth() * 16, t.depth() * 16 * t.mp),
    };
    let cap = Capacity::of(machine);
    let fp = Footprint::of(cv, sh.orient, t);
    let tail = match cv.epilogue.vector() {
        Some(epi) if t.streamed => Some(Tail::new(epi, machine, t.ks).ok_or_else(|| {
            NpuError::Internal(format!(
                "slabs of {} channels do not divide the {} output channels",
                t.ks, cv.k
            ))
        })?),
        Some(_) => {
            return Err(NpuError::Internal(
                "a vector epilogue needs streamed slabs (the prologue uses all of UB)".into(),
            ))
        }
        None => None,
    };
    // the streams' buffers before the scratch, which spans all of L0A, L0B, L0C and UB
    let streams = t
        .streamed
        .then(|| Streams::new(cv, t, &sh, StreamBuffers::declare(&mut b, &fp)));
    let out = crate::npu::matmul::dtype(cv.out_elem())?;
    let drained = crate::npu::matmul::dtype(cv.drained_elem())?;
    let c_ub = b.buffer("c_ub", Tier::Ub, drained, &[(2 * t.mp * t.ks) as u64]);
    let c_out = match &tail {
        Some(_) => b.buffer("c_out", Tier::Ub, out, &[(2 * t.mp * t.ks) as u64]),
        None => c_ub,
    };
    // the epilogue's buffers before the scratch too; its per-core values computed first
    let bufs = match &tail {
        Some(tail) => {
            let (bufs, loads) = tail.declare(&mut b, t.mp)?;
            tail.prologue(&mut b, &bufs, loads, (c_ub, drained, 2 * t.mp * t.ks));
            Some(bufs)
        }
        None => None,
    };
    let names = Names {
        input: b.tensor(
            &cv.input.name,
            DType::F16,
            &shape_of(&cv.input),
            Direction::In,
        ),
        weights: b.tensor(
            &cv.weights.name,
            DType::F16,
            &shape_of(&cv.weights),
            Direction::In,
        ),
        output: b.tensor(&cv.output.name, out, &shape_of(&cv.output), Direction::Out),
        band: b.buffer("band", Tier::L1, DType::F16, &[fp.band as u64]),
        wts: b.buffer("weights", Tier::L1, DType::F16, &[fp.weights as u64]),
        a_l0: b.buffer("a_l0", Tier::L0a, DType::F16, &[2, a_slot as u64]),
        b_l0: b.buffer("b_l0", Tier::L0b, DType::F16, &[2, b_slot as u64]),
        c_l0: b.buffer("c_l0", Tier::L0c, DType::F32, &[2, (t.mp * t.ks) as u64]),
        c_ub,
        c_out,
        zeros: b.buffer("zeros", Tier::L1, DType::F16, &[fp.zeros.max(16) as u64]),
        weight_rank: cv.weights.shape.len(),
        band_len: fp.band,
        zero_block: zero_block(cap),
        scratch: prologue::Scratch::declare(&mut b, &fp, cap),
    };

    if sh.orient == Orientation::ChannelRows {
        prologue::zeros(&mut b, &names, fp.zeros);
    }
    let cx = &Ctx {
        cv,
        t,
        sh: &sh,
        n: &names,
        epilogue: tail.as_ref().zip(bufs.as_ref()),
    };
    for ring in [L0, L0C, UB] {
        ring.open(&mut b);
    }
    if let Some(st) = &streams {
        st.open(&mut b);
    }
    b.repeat("slab", sh.per_core, |b, si| {
        let index = Expr::Core * sh.per_core + si.clone();
        b.when("mine", index.clone().cmp(CmpOp::Lt, sh.slabs), |b| {
            let slab = Slab::at(cv, t, &sh, index);
            b.barrier(BarrierScope::All);
            match &streams {
                Some(st) => {
                    // in the order the first tile needs them
                    st.prepare(b, cx, &slab);
                    st.weights(b, cx, &slab, true);
                    st.band_chunk(b, cx, &slab, c(0));
                    st.weights(b, cx, &slab, false);
                }
                None => {
                    prologue::band(b, cx, &slab);
                    prologue::weights(b, cx, &slab);
                    b.barrier(BarrierScope::All);
                }
            }
            b.repeat("t", sh.tiles, |b, ti| {
                let tile = Tile::at(cv, t, &slab, ti.clone());
                if let Some(st) = &streams {
                    // at a chunk's first tile, the next chunk's loads
                    let g = t.band_group;
                    let next = ti.clone() / g + 1;
                    let ahead = ti.clone().cmp(CmpOp::Eq, ti.clone() / g * g);
                    let ahead =
                        ahead.select(next.clone().cmp(CmpOp::Lt, st.band_chunks(t, &sh)), 0);
                    b.when("ahead", ahead, |b| {
                        st.band_chunk(b, cx, &slab, next);
                    });
                    st.band_arrived(b, t, &ti);
                }
                b.when("tile", tile.valid.clone(), |b| {
                    let count = si.clone() * sh.tiles + ti.clone();
                    // the slab's first tile waits for the weights, a block of output
                    // channels at a time (or a group of window positions), the others not
                    let first = ti.clone().cmp(CmpOp::Eq, 0);
                    b.when("first", first.clone(), |b| {
                        // through blocks of output channels: columns of L0C fractals rows0
                        // high
                        let rows = if t.kblocks > 1 {
                            c(t.rows0())
                        } else {
                            tile.rows.clone()
                        };
                        tile_steps(
                            b,
                            cx,
                            (&slab, &tile, &count, rows),
                            (t.kblocks, t.first_nrs()),
                            streams.as_ref(),
                        );
                    });
                    b.when("later", first.cmp(CmpOp::Eq, 0), |b| {
                        let at = (&slab, &tile, &count, tile.rows.clone());
                        tile_steps(b, cx, at, (1, t.nrs), None);
                    });
                    drain(b, cx, &slab, &tile, &count);
                });
            });
        });
    });
    for ring in [L0, L0C, UB] {
        ring.close(&mut b);
    }
    if let Some(st) = &streams {
        st.close(&mut b);
    }
    if let (Some(tail), Some(bufs)) = (&tail, &bufs) {
        tail.finish(&mut b, bufs);
    }
    crate::npu::finish(b)
}

/// Elements of the zeroed UB block bands are zeroed from: 4096, or less on a small UB.
fn zero_block(cap: Capacity) -> i64 {
    let mut z = 4096;
    while z > 16 && z * 2 * 2 > cap.ub {
        z /= 2;
    }
    z
}

/// A tile's sub-steps: per block of `ks / kblocks` output channels, window positions in
/// groups of `nrs`, channel blocks within. `streams`: the weights' chunks to wait for (the
/// slab's first tile).
fn tile_steps(
    b: &mut Builder,
    cx: &Ctx,
    (slab, tile, count, rows): (&Slab, &Tile, &Expr, Expr),
    (kblocks, nrs): (i64, i64),
    streams: Option<&Streams>,
) {
    let Ctx { cv, t, sh, .. } = *cx;
    let kt = t.ks / kblocks;
    let subs = (cv.rs() + nrs - 1) / nrs;
    let steps = subs * sh.csubs;
    b.repeat("kb", kblocks, |b, kb| {
        if let Some(st) = streams {
            st.rows_arrived(b, &kb);
        }
        b.repeat("sub", subs, |b, sub| {
            if let Some(st) = streams {
                st.positions_arrived(b, &sub);
            }
            b.repeat("cg", sh.csubs, |b, cg| {
                let local = (kb.clone() * subs + sub.clone()) * sh.csubs + cg.clone();
                let rs0 = sub.clone() * nrs;
                let c1 = cg.clone() * t.kc1;
                // one of the two counts is 1: the columns are contiguous
                let n = if t.kc1 == 1 {
                    (c(cv.rs()) - rs0.clone()).min(nrs)
                } else {
                    (c(cv.c1()) - c1.clone()).min(t.kc1)
                };
                let k0 = kb.clone() * kt;
                let at = Step {
                    first: cg
                        .cmp(CmpOp::Eq, 0)
                        .select(sub.clone().cmp(CmpOp::Eq, 0), 0),
                    fresh: kb.clone().cmp(CmpOp::Eq, 0),
                    c1,
                    rs0,
                    n,
                    kn: (slab.ka.clone() - k0.clone()).min(kt),
                    k0,
                    l0: count.clone() * (steps * kblocks) + local,
                    rows: rows.clone(),
                    tile: count.clone(),
                };
                sub_step(b, cx, slab, tile, &at);
            });
        });
    });
}

/// One reduction sub-step's place.
struct Step {
    /// The first input-channel block.
    c1: Expr,
    /// The first window position.
    rs0: Expr,
    /// Its fractal columns: window positions of one block, or (pointwise) blocks.
    n: Expr,
    /// The L0 ring's counter.
    l0: Expr,
    /// The L0C ring's counter (the tile's, on this core).
    tile: Expr,
    /// Whether it is its block of output channels' first (it overwrites them in L0C).
    first: Expr,
    /// Whether it is in the tile's first block (whose first sub-step waits for L0C).
    fresh: Expr,
    /// The block's first output channel (of the slab's).
    k0: Expr,
    /// The block's output channels.
    kn: Expr,
    /// Rows of the tile's im2col window and L0C tile.
    rows: Expr,
}

/// MTE1 stages one sub-step into an L0 slot; M multiplies it into the tile.
#[allow(clippy::too_many_arguments)]
fn sub_step(b: &mut Builder, cx: &Ctx, slab: &Slab, tile: &Tile, at: &Step) {
    let Ctx { cv, t, sh, n, .. } = *cx;
    let ks1 = t.ks / 16;
    // the weights' reduction fractals in (window position, channel block) order: the
    // sub-step's `n` of them `red_step` apart
    let red0 = at.rs0.clone() * cv.c1() + at.c1.clone();
    let red_step = if t.kc1 == 1 { cv.c1() } else { 1 };
    let ka1 = slab.ka16.clone() / 16;
    let kn1 = (at.kn.clone() + 15) / 16;
    let slot = at.l0.clone() % 2;
    L0.acquire(b, &at.l0);
    let a = b.at(n.a_l0, [slot.clone(), c(0)]);
    let bb = b.at(n.b_l0, [slot.clone(), c(0)]);
    let kd = at.n.clone() * 16;
    match sh.orient {
        Orientation::PixelRows => {
            let src = b.at(n.band, [tile.window_at(cv, sh, at.c1.clone())]);
            // the first column within the window's channels
            let k_start = if t.kc1 == 1 {
                at.rs0.clone() * 16
            } else {
                at.c1.clone() * 16
            };
            b.origin(Some("im2col window of the tile, L1 C1HWC0 -> L0A zZ"));
            b.load3d(
                a.clone(),
                src,
                tile.window(cv, sh, (t.mp, at.rows.clone()), k_start, kd.clone()),
            );
            if transposed_weights(cv) {
                // fractals (input by output channels) transposed into nZ, per k1
                b.repeat("k1", ka1.clone(), |b, k1| {
                    let w = b.at(n.wts, [(k1.clone() * sh.j + red0.clone()) * FRACTAL]);
                    let dst = b.at(n.b_l0, [slot.clone(), k1 * FRACTAL]);
                    b.origin(Some("weights, L1 -> L0B nZ (transposing)"));
                    b.push(
                        Dma::new(dst, w, at.n.clone(), FRACTAL)
                            .strides(red_step * FRACTAL, ka1.clone() * FRACTAL)
                            .mode(DmaMode::Transpose),
                    );
                });
            } else {
                // the sub-step's columns of fractals, the block's kn1 of each: nZ as they are
                let w = b.at(n.wts, [(red0 * ks1 + at.k0.clone() / 16) * FRACTAL]);
                b.origin(Some("weights, L1 -> L0B nZ"));
                b.push(
                    Dma::new(bb.clone(), w, at.n.clone(), kn1.clone() * FRACTAL)
                        .strides(red_step * ks1 * FRACTAL, kn1.clone() * FRACTAL),
                );
            }
        }
        Orientation::ChannelRows => {
            // per reduction fractal, the tile's output channels' fractals (rows of fractals
            // in L1, transposed for [r, s, c, k] weights)
            let mode = if transposed_weights(cv) {
                DmaMode::Transpose
            } else {
                DmaMode::Plain
            };
            b.repeat("jj", at.n.clone(), |b, jj| {
                let w = b.at(n.wts, [(red0.clone() + jj.clone() * red_step) * FRACTAL]);
                let dst = b.at(n.a_l0, [slot.clone(), jj * FRACTAL]);
                b.origin(Some("weights, L1 -> L0A zZ"));
                b.push(
                    Dma::new(dst, w, ka1.clone(), FRACTAL)
                        .strides(sh.j * FRACTAL, at.n.clone() * FRACTAL)
                        .mode(mode),
                );
            });
            transposed_window(b, cx, slab, tile, at);
        }
    }
    b.origin(None);
    L0.publish(b, &at.l0);
    let fresh = at.first.clone().select(at.fresh.clone(), 0);
    b.when("fresh", fresh, |b| L0C.acquire(b, &at.tile));
    L0.take(b, &at.l0);
    // the tile in L0C: NZ with mp rows per fractal column, the block's columns from k0
    let (m, nn, at_c) = match sh.orient {
        Orientation::PixelRows => (
            at.rows.clone(),
            kn1 * 16,
            at.k0.clone() / 16 * (t.rows0() * 16),
        ),
        Orientation::ChannelRows => (slab.ka16.clone(), c(t.mp), c(0)),
    };
    let cc = b.at(n.c_l0, [at.tile.clone() % 2, at_c]);
    b.origin(Some("O += im2col x weights"));
    b.mmad(cc, a, bb, (m, kd, nn), at.first.clone());
    b.origin(None);
    L0.release(b, &at.l0);
}

/// The tile's im2col window transposed into L0B (nZ: per window position, the tile's
/// pixels' 16 channels each) by DMAs from the band, which holds the padded image: per window
/// position and output row one strided run. (`load3d` writes L0A only.) A DMA must start on
/// L0B's 512-byte alignment (16 pixels): each run starts at the 16-pixel boundary before
/// it, its first pixels wrong until the run of the row before overwrites them, so the rows
/// go last to first, each write ordered after the previous by `barrier MTE1`. The slot is
/// zeroed first: the product reads the pixels past the tile too.
#[allow(clippy::too_many_arguments)]
fn transposed_window(b: &mut Builder, cx: &Ctx, slab: &Slab, tile: &Tile, at: &Step) {
    let Ctx { cv, t, sh, n, .. } = *cx;
    let slot = t.depth() * 16 * t.mp;
    let dst = b.at(n.b_l0, [at.l0.clone() % 2, c(0)]);
    let zeros = b.at(n.zeros, [c(0)]);
    b.origin(Some("im2col window, transposed: zeros first"));
    b.push(Dma::new(dst, zeros, 1, slot));
    b.origin(None);
    let st = cv.stride;
    let oy_a = tile.p0.clone() / cv.ow;
    let rows = (t.mp - 1) / cv.ow + 2;
    b.repeat("jj", at.n.clone(), |b, jj| {
        let rs = at.rs0.clone() + jj.clone();
        let (r, s) = (rs.clone() / cv.s, rs % cv.s);
        b.repeat("back", rows, |b, back| {
            let oy = oy_a.clone() + (rows - 1) - back;
            let first = tile.p0.clone().max(oy.clone() * cv.ow);
            let last = (tile.p0.clone() + tile.pixels.clone()).min((oy.clone() + 1) * cv.ow);
            b.when(
                "run",
                (last.clone() - first.clone()).cmp(CmpOp::Gt, 0),
                |b| {
                    // the run's place in the slot, from the 16-pixel boundary before it
                    let pos = first.clone() - tile.p0.clone();
                    let lead = pos.clone() % 16;
                    let band_row = oy.clone() * st + r.clone() - cv.pad.top - slab.y_base.clone();
                    let pixel = band_row * sh.pitch + (first.clone() - oy * cv.ow) * st + s.clone();
                    let from = at.c1.clone() * (sh.slice * 16)
                        + (pixel + sh.lead - lead.clone() * st) * 16;
                    let to = jj.clone() * (t.mp * 16) + (pos - lead.clone()) * 16;
                    b.barrier(BarrierScope::Pipe(Pipe::Mte1));
                    let src = b.at(n.band, [from]);
                    let dst = b.at(n.b_l0, [at.l0.clone() % 2, to]);
                    b.origin(Some(
                        "im2col window, transposed: a run of one output row, L1 -> L0B nZ",
                    ));
                    b.push(Dma::new(dst, src, last - first + lead, 16).strides(16 * st, 16));
                    b.origin(None);
                },
            );
        });
    });
}

/// The index in an NHWC output (and in every input of its shape) of `tile`'s first pixel,
/// at `slab`'s first channel.
fn nhwc_index(cv: &Conv, slab: &Slab, tile: &Tile) -> Vec<Expr> {
    vec![
        slab.n.clone(),
        c(0),
        c(0),
        tile.p0.clone() * cv.k + slab.k0.clone(),
    ]
}

/// V converts the finished tile (L0C NZ -> UB ND, ReLU on the way if asked); MTE3 stores
/// it.
#[allow(clippy::too_many_arguments)]
fn drain(b: &mut Builder, cx: &Ctx, slab: &Slab, tile: &Tile, count: &Expr) {
    let Ctx { cv, t, sh, n, .. } = *cx;
    let s = &(count.clone() % 2);
    L0C.publish(b, count);
    L0C.take(b, count);
    UB.acquire(b, count);
    let slot = s.clone() * (t.mp * t.ks);
    let ub = b.at(n.c_ub, [slot.clone()]);
    let l0c = b.at(n.c_l0, [s.clone(), c(0)]);
    // rows and columns of the tile as L0C holds it, and the UB row pitch
    let (rows, cols, height, pitch) = match sh.orient {
        Orientation::PixelRows => (
            tile.pixels.clone(),
            slab.ka.clone(),
            tile.rows.clone(),
            t.ks,
        ),
        Orientation::ChannelRows => (
            slab.ka.clone(),
            tile.pixels.clone(),
            slab.ka16.clone(),
            t.mp,
        ),
    };
    b.origin(Some("output tile, L0C NZ -> UB ND"));
    let copy = Dma::new(ub.clone(), l0c, rows.clone(), cols.clone())
        .strides(height, pitch)
        .mode(DmaMode::Nz2nd);
    b.push(if cv.epilogue.relu() {
        copy.with_relu()
    } else {
        copy
    });
    b.origin(None);
    L0C.release(b, count);
    let ub = match cx.epilogue {
        Some((tail, bufs)) => {
            let at = |buf| Place {
                buf,
                offset: slot.clone(),
            };
            let span = Rows {
                count: rows.clone(),
                max: t.mp,
            };
            // (a vector epilogue follows an NHWC convolution only)
            let gm = SpanAt {
                index: nhwc_index(cv, slab, tile),
                cols: cols.clone(),
                row_stride: cv.k,
                // consecutive tiles alternate
                slot: s.clone(),
            };
            tail.span(b, bufs, (&at(n.c_ub), &at(n.c_out)), (span, &gm), &slab.k0);
            b.at(n.c_out, [slot])
        }
        None => ub,
    };
    UB.publish(b, count);
    UB.take(b, count);
    b.origin(Some("output tile store"));
    match cv.output_layout {
        Activations::Nhwc => {
            let dst = b.at(n.output, nhwc_index(cv, slab, tile));
            if t.ks == cv.k {
                // whole pixel rows, back to back in UB and GM: one burst
                b.push(Dma::new(dst, ub, 1, rows * cv.k));
            } else {
                b.push(Dma::new(dst, ub, rows, cols).strides(pitch, cv.k));
            }
        }
        Activations::Nchw => {
            let dst = b.at(
                n.output,
                [slab.n.clone(), slab.k0.clone(), c(0), tile.p0.clone()],
            );
            if t.mp == cv.pixels() {
                b.push(Dma::new(dst, ub, 1, rows * cv.pixels()));
            } else {
                b.push(Dma::new(dst, ub, rows, cols).strides(pitch, cv.pixels()));
            }
        }
    }
    b.origin(None);
    UB.release(b, count);
}
