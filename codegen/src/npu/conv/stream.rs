//! Streaming a slab's band and weights into L1 while the cube works (the pixel-rows
//! orientation with NHWC input and `[k, r, s, c]`, `[k, c]`, `[r, s, c, k]` or `[c, k]`
//! weights).
//!
//! Each stream moves *pieces*: GM -> UB in one burst per piece (the band's pixels are
//! contiguous in NHWC; a piece of `[k, r, s, c]` weights is a block of output channels'
//! rows, of `[r, s, c, k]` weights a group of window positions), then, if the channels are
//! not a multiple of 16, the vector unit spreads them over zeroed blocks of 16, then
//! UB -> L1 (16 channels of a pixel per burst into the band's C1HWC0; the weights' rows in
//! one `nd2nz` into their fractals). Where GM's bursts are long enough (channels a multiple
//! of 256) or UB too small, a stream goes GM -> L1 directly with `nd2nz`. Pieces make
//! *chunks*: the band's chunk `g` is what its `band_group` tiles need beyond what earlier
//! tiles needed (loaded while the tiles before compute; pointwise, each tile's pixels into
//! its own slot), the weights' chunk `j` a block of output channels (which the slab's
//! first tile goes through one by one as they arrive) or, for `[r, s, c, k]` weights, a
//! group of window positions. Every hop is a ring of two UB slots; a chunk's arrival in L1
//! is a ring of its own whose consumer (MTE1) hands the id back as soon as it has seen it
//! (the data stays: L1 holds the whole band and all weights of a slab).

use super::emit::{Ctx, Names};
use super::geometry::{c, up16, BandMode, Shape, Slab};
use super::ring::Ring;
use super::tiles::{transposed_weights, weight_chunk_positions, Footprint, Tiles};
use super::Conv;
use npu_sim::builder::Builder;
use npu_sim::program::{
    BarrierScope, BufferId, CmpOp, DType, Dma, DmaMode, Expr, Pipe, Tier, UnaryOp, VecOp, Vector,
};

/// f16 lanes of one vector repeat.
const LANES: i64 = 128;
/// Rows per vector instruction when spreading channels: at most 255 repeats, and a
/// multiple of 16 so that every instruction's source starts on a 32-byte block.
pub const SPREAD_ROWS: i64 = 240;

/// The vector unit's spread output to MTE3, shared by both streams in program order.
const SPREAD: Ring = Ring {
    from: Pipe::V,
    to: Pipe::Mte3,
    base: 2,
};

/// One stream's rings.
#[derive(Clone, Copy, Debug)]
pub struct Feed {
    /// GM -> UB, to the vector unit (spread) or MTE3; `None`: GM -> L1 directly (`nd2nz`,
    /// long enough bursts, or UB too small).
    stage: Option<Ring>,
    /// A chunk in L1, to MTE1.
    ready: Ring,
    /// Whether the vector unit spreads the channels (not a multiple of 16).
    spread: bool,
}

/// UB buffers of the streams (two slots each).
#[derive(Clone, Copy, Debug)]
pub struct StreamBuffers {
    /// The band's pieces as GM has them.
    pub band_stage: BufferId,
    /// The band's pieces spread over blocks of 16 channels.
    pub band_spread: BufferId,
    /// The weights' pieces as GM has them.
    pub w_stage: BufferId,
    /// The weights' pieces spread.
    pub w_spread: BufferId,
    /// 16 zeros.
    pub zero: BufferId,
}

impl StreamBuffers {
    /// Declares them, sized by `fp` (in UB, before the scratch that spans all of it).
    pub fn declare(b: &mut Builder, fp: &Footprint) -> StreamBuffers {
        let mut ub =
            |name: &str, len: i64| b.buffer(name, Tier::Ub, DType::F16, &[2, len.max(16) as u64]);
        StreamBuffers {
            band_stage: ub("band_stage", fp.band_stage),
            band_spread: ub("band_spread", fp.band_spread),
            w_stage: ub("w_stage", fp.w_stage),
            w_spread: ub("w_spread", fp.w_spread),
            zero: b.buffer("zero", Tier::Ub, DType::F16, &[16]),
        }
    }

    /// The zeros written (at the program's start, before any stream).
    pub fn zero(&self, b: &mut Builder) {
        let dst = b.at(self.zero, [c(0)]);
        b.push(Vector::new(VecOp::Dup { value: 0.0 }, dst, 1).mask(16));
        b.barrier(BarrierScope::All);
    }
}

/// The streams of a program.
#[derive(Clone, Copy, Debug)]
pub struct Streams {
    /// The band's.
    pub band: Feed,
    /// The weights'.
    pub weights: Feed,
    /// Band pieces per chunk.
    pub band_pieces: i64,
    /// Weight pieces per chunk.
    pub weight_pieces: i64,
    /// Weight chunks.
    pub weight_chunks: i64,
    /// Sub-step groups per weight chunk.
    groups_per_chunk: i64,
    /// Window positions per weight chunk (`[r, s, c, k]` weights).
    chunk_positions: i64,
    /// Whether the weights come in chunks of window positions (`[r, s, c, k]`, or
    /// `[k, r, s, c]` by groups) rather than of output channels.
    by_positions: bool,
    /// The UB buffers.
    buffers: StreamBuffers,
}

impl Streams {
    /// The streams of `cv` with tiles `t`.
    pub fn new(cv: &Conv, t: &Tiles, sh: &Shape, buffers: StreamBuffers) -> Streams {
        let spread = cv.c % 16 != 0;
        // a whole number of sub-step groups (all window positions when spreading), or the
        // groups `[k, r, s, c]` weights come by (one first-tile sub-step group each)
        let by_positions = transposed_weights(cv) || t.window_group > 0;
        let positions = if t.window_group > 0 {
            t.window_group
        } else {
            weight_chunk_positions(cv, t.nrs)
        };
        let feed = |base, hop: bool, spread: bool| Feed {
            stage: hop.then_some(Ring {
                from: Pipe::Mte2,
                to: if spread { Pipe::V } else { Pipe::Mte3 },
                base,
            }),
            ready: Ring {
                from: if hop { Pipe::Mte3 } else { Pipe::Mte2 },
                to: Pipe::Mte1,
                base,
            },
            spread,
        };
        Streams {
            band: feed(0, t.band_piece > 0, spread),
            // [r, s, c, k] weights pad their channels when placed, never spread
            weights: feed(2, t.weight_piece > 0, spread && !transposed_weights(cv)),
            band_pieces: match sh.mode {
                BandMode::Rows => (sh.max_chunk + t.band_piece.max(1) - 1) / t.band_piece.max(1),
                BandMode::Pixels => {
                    t.band_group * ((t.mp + t.band_piece.max(1) - 1) / t.band_piece.max(1))
                }
            },
            weight_pieces: if by_positions {
                (positions + t.weight_piece.max(1) - 1) / t.weight_piece.max(1)
            } else {
                (t.ks / t.kblocks + t.weight_piece.max(1) - 1) / t.weight_piece.max(1)
            },
            weight_chunks: if by_positions {
                (cv.rs() + positions - 1) / positions
            } else {
                t.kblocks
            },
            by_positions,
            groups_per_chunk: (positions + t.first_nrs() - 1) / t.first_nrs(),
            chunk_positions: positions,
            buffers,
        }
    }

    fn rings(&self) -> Vec<Ring> {
        let mut rings = vec![self.band.ready, self.weights.ready];
        rings.extend(self.band.stage);
        rings.extend(self.weights.stage);
        if self.band.spread || self.weights.spread {
            rings.push(SPREAD);
        }
        rings
    }

    /// Every ring open and the zeros written, before the program.
    pub fn open(&self, b: &mut Builder) {
        self.buffers.zero(b);
        self.rings().iter().for_each(|r| r.open(b));
    }

    /// Every ring closed, at the program's end.
    pub fn close(&self, b: &mut Builder) {
        self.rings().iter().for_each(|r| r.close(b));
    }

    /// Spread pieces of the first weight chunk and of all of them.
    fn weight_spreads(&self) -> (i64, i64) {
        if self.weights.spread {
            (self.weight_pieces, self.weight_chunks * self.weight_pieces)
        } else {
            (0, 0)
        }
    }

    /// The spread counter of the band's staged piece `k` (its stage counter), in program
    /// order: the first weight chunk's pieces, the first band chunk's, the other weight
    /// chunks', the other band chunks'.
    fn band_spread(&self, k: &Expr) -> Expr {
        let (first, all) = self.weight_spreads();
        k.clone()
            + first
            + k.clone()
                .cmp(CmpOp::Ge, self.band_pieces)
                .select(all - first, 0)
    }

    /// The spread counter of weight chunk `j`'s piece `i`.
    fn weight_spread(&self, j: &Expr, i: &Expr) -> Expr {
        let band = if self.band.spread {
            self.band_pieces
        } else {
            0
        };
        j.clone() * self.weight_pieces + i.clone() + j.clone().cmp(CmpOp::Gt, 0).select(band, 0)
    }

    /// Before a slab's chunks (pointwise): zeros after the pixels of the slab's last tile,
    /// if it has fewer than `mp` (its window reads them all), then `barrier ALL`.
    pub fn prepare(&self, b: &mut Builder, cx: &Ctx, slab: &Slab) {
        let Ctx { cv, t, sh, n, .. } = *cx;
        if sh.mode != BandMode::Pixels {
            return;
        }
        let last = (slab.p_end.clone() - slab.p0.clone() - 1) / t.mp;
        let pixels = slab.p_end.clone() - slab.p0.clone() - last.clone() * t.mp;
        b.when("tail", pixels.clone().cmp(CmpOp::Lt, t.mp), |b| {
            b.repeat("c1", cv.c1(), |b, c1| {
                let dst = b.at(n.band, [sh.slice_at(&last, c1) + pixels.clone() * 16]);
                let src = b.at(self.buffers.zero, [c(0)]);
                b.origin(Some("zeros after the last tile's pixels"));
                b.push(Dma::new(dst, src, c(t.mp) - pixels.clone(), 16).strides(0, 16));
                b.origin(None);
            });
        });
        b.barrier(BarrierScope::All);
    }

    /// Band chunk `g` of `slab` (what its tiles `g * band_group ..` need beyond what the
    /// earlier ones did) into L1, and its arrival announced to MTE1.
    pub fn band_chunk(&self, b: &mut Builder, cx: &Ctx, slab: &Slab, g: Expr) {
        let Ctx { cv, t, sh, .. } = *cx;
        let group = t.band_group;
        let first = g.clone() * group;
        match sh.mode {
            BandMode::Rows => {
                let lo = slab.need(cv, t, sh, first.clone() - 1);
                let hi = slab.need(cv, t, sh, first + (group - 1));
                let k0 = g.clone() * self.band_pieces;
                self.band_range(b, cx, slab, (k0, self.band_pieces), (lo, hi), (c(0), c(0)));
            }
            // pointwise, each tile's pixels into its own slot
            BandMode::Pixels => {
                let per = self.band_pieces / group;
                b.repeat("u", group, |b, u| {
                    let tile = first.clone() + u.clone();
                    let lo = slab.need(cv, t, sh, tile.clone() - 1);
                    let hi = slab.need(cv, t, sh, tile.clone());
                    let k0 = g.clone() * self.band_pieces + u * per;
                    let base = tile.clone() * t.mp;
                    self.band_range(b, cx, slab, (k0, per), (lo, hi), (tile, base));
                });
            }
        }
        self.band.ready.acquire(b, &g);
        self.band.ready.publish(b, &g);
    }

    /// Band pixels `lo .. hi` into L1 (tile `tile`'s slot, whose first pixel is `base`, when
    /// pointwise): `pieces` pieces through UB from stage counter `k0`, or straight from GM.
    #[allow(clippy::too_many_arguments)]
    fn band_range(
        &self,
        b: &mut Builder,
        cx: &Ctx,
        slab: &Slab,
        (k0, pieces): (Expr, i64),
        (lo, hi): (Expr, Expr),
        (tile, base): (Expr, Expr),
    ) {
        let Ctx { cv, t, sh, n, .. } = *cx;
        match self.band.stage {
            Some(stage) => b.repeat("piece", pieces, |b, i| {
                let from = lo.clone() + i.clone() * t.band_piece;
                let k = k0.clone() + i;
                let piece = Piece {
                    v: self.band_spread(&k),
                    k,
                    len: (hi.clone() - from.clone()).min(t.band_piece),
                    from,
                };
                self.band_piece(b, cx, slab, stage, &piece, (&tile, &base));
            }),
            None => {
                // whole fractals of 16 pixels but the band's last: `nd2nz` fills the rest
                let total = slab.need(cv, t, sh, c(sh.tiles - 1));
                let lo = up16(lo).min(total.clone());
                let hi = up16(hi).min(total);
                b.when("load", (hi.clone() - lo.clone()).cmp(CmpOp::Gt, 0), |b| {
                    let pixel = slab.n.clone() * cv.pixels_in() + slab.origin(cv, sh) + lo.clone();
                    let src = b.at(n.input, [c(0), c(0), c(0), pixel * cv.c]);
                    let dst = b.at(
                        n.band,
                        [sh.slice_at(&tile, c(0)) + (lo.clone() - base) * 16],
                    );
                    b.origin(Some("input pixels, GM -> L1 C1HWC0"));
                    b.push(
                        Dma::new(dst, src, hi - lo, cv.c)
                            .strides(cv.c, sh.slice)
                            .mode(DmaMode::Nd2nz),
                    );
                    b.origin(None);
                });
            }
        }
    }

    /// One piece of a band chunk through UB: GM -> UB from 16 elements on (`skip` pixels
    /// early, dropped when placed), spread if need be, UB -> L1 16 channels of a pixel a
    /// burst.
    #[allow(clippy::too_many_arguments)]
    fn band_piece(
        &self,
        b: &mut Builder,
        cx: &Ctx,
        slab: &Slab,
        stage: Ring,
        p: &Piece,
        (g, base): (&Expr, &Expr),
    ) {
        let Ctx { cv, t, sh, n, .. } = *cx;
        let some = p.len.clone().cmp(CmpOp::Gt, 0);
        let pixel = slab.n.clone() * cv.pixels_in() + slab.origin(cv, sh) + p.from.clone();
        let skip = pixel.clone() % sh.align_pixels;
        let read = p.len.clone() + skip.clone();
        stage.acquire(b, &p.k);
        b.when("load", some.clone(), |b| {
            let src = b.at(n.input, [c(0), c(0), c(0), (pixel - skip.clone()) * cv.c]);
            let dst = b.at(self.buffers.band_stage, [p.k.clone() % 2, c(0)]);
            b.origin(Some("input pixels, GM -> UB"));
            b.push(Dma::new(dst, src, 1, read.clone() * cv.c));
            b.origin(None);
        });
        stage.publish(b, &p.k);
        let spread = self.band.spread;
        let (buffer, slot, pitch) = if spread {
            let buffers = (self.buffers.band_stage, self.buffers.band_spread);
            let most = t.band_piece + sh.align_pixels - 1;
            spread_piece(
                b,
                stage,
                &p.k,
                buffers,
                &p.v,
                (read, some.clone()),
                (cv.c, cv.c1()),
                most,
            );
            SPREAD.take(b, &p.v);
            (self.buffers.band_spread, p.v.clone() % 2, cv.c1() * 16)
        } else {
            stage.take(b, &p.k);
            (self.buffers.band_stage, p.k.clone() % 2, cv.c)
        };
        b.when("place", some, |b| {
            b.repeat("c1", cv.c1(), |b, c1| {
                let dst = b.at(
                    n.band,
                    [sh.slice_at(g, c1.clone()) + (p.from.clone() - base.clone()) * 16],
                );
                let src = b.at(buffer, [slot.clone(), skip.clone() * pitch + c1 * 16]);
                b.origin(Some("input pixels, UB -> L1 C1HWC0"));
                b.push(Dma::new(dst, src, p.len.clone(), 16).strides(pitch, 16));
                b.origin(None);
            });
        });
        if spread {
            SPREAD.release(b, &p.v);
        } else {
            stage.release(b, &p.k);
        }
    }

    /// MTE1, at tile `tile` (whether it computes or not), sees the band chunk starting
    /// there arrive.
    pub fn band_arrived(&self, b: &mut Builder, t: &Tiles, tile: &Expr) {
        let g = t.band_group;
        b.when(
            "arrived",
            tile.clone().cmp(CmpOp::Eq, tile.clone() / g * g),
            |b| {
                let chunk = tile.clone() / g;
                self.band.ready.take(b, &chunk);
                self.band.ready.release(b, &chunk);
            },
        );
    }

    /// Band chunks in a slab.
    pub fn band_chunks(&self, t: &Tiles, sh: &Shape) -> i64 {
        (sh.tiles + t.band_group - 1) / t.band_group
    }

    /// MTE1, before the first tile's block `kb` of output channels, sees that block's
    /// weights arrive (`[k, r, s, c]` and `[k, c]` weights, chunked by output channels).
    pub fn rows_arrived(&self, b: &mut Builder, kb: &Expr) {
        if !self.by_positions {
            self.weights.ready.take(b, kb);
            self.weights.ready.release(b, kb);
        }
    }

    /// MTE1, before the first tile's sub-step group `group`, sees the weight chunk starting
    /// there arrive (weights chunked by window positions).
    pub fn positions_arrived(&self, b: &mut Builder, group: &Expr) {
        if !self.by_positions {
            return;
        }
        let g = self.groups_per_chunk;
        b.when(
            "arrived",
            group.clone().cmp(CmpOp::Eq, group.clone() / g * g),
            |b| {
                let j = group.clone() / g;
                self.weights.ready.take(b, &j);
                self.weights.ready.release(b, &j);
            },
        );
    }

    /// The first weight chunk of `slab` (`first`) or the others into L1, each announced to
    /// MTE1: blocks of `ks / kblocks` output channels (every window position), or groups
    /// of window positions (every output channel).
    pub fn weights(&self, b: &mut Builder, cx: &Ctx, slab: &Slab, first: bool) {
        let Ctx { cv, t, n, .. } = *cx;
        let chunks = if self.by_positions {
            (cv.rs() + self.chunk_positions - 1) / self.chunk_positions
        } else {
            t.kblocks
        };
        let (lo, hi) = if first { (0, 1) } else { (1, chunks) };
        b.for_loop("wchunk", c(lo), c(hi), 1, |b, j| {
            if self.by_positions {
                // the last chunk may have fewer positions
                let per = self.chunk_positions;
                let full = cv.rs() / per;
                let chunk = |b: &mut Builder, nrs: i64| {
                    if transposed_weights(cv) {
                        self.position_chunk(b, cv, t, n, slab, j.clone(), nrs)
                    } else {
                        self.window_chunk(b, (cv, t, n), slab, (j.clone(), nrs))
                    }
                };
                b.when("whole", j.clone().cmp(CmpOp::Lt, full), |b| chunk(b, per));
                if cv.rs() % per != 0 {
                    b.when("part", j.clone().cmp(CmpOp::Eq, full), |b| {
                        chunk(b, cv.rs() % per)
                    });
                }
            } else {
                self.row_chunk(b, cv, t, n, slab, j)
            }
        });
    }

    /// Weight chunk `j` of output channels `j * kt ..`, every window position.
    fn row_chunk(&self, b: &mut Builder, cv: &Conv, t: &Tiles, n: &Names, slab: &Slab, j: Expr) {
        let feed = self.weights;
        let rs = cv.rs();
        let kt = t.ks / t.kblocks;
        let k0 = j.clone() * kt;
        let rows = (slab.ka.clone() - k0.clone()).min(kt);
        match feed.stage {
            Some(stage) => b.repeat("wpiece", self.weight_pieces, |b, i| {
                let from = k0.clone() + i.clone() * t.weight_piece;
                let piece = Piece {
                    k: j.clone() * self.weight_pieces + i.clone(),
                    v: self.weight_spread(&j, &i),
                    len: (rows.clone() - i * t.weight_piece).min(t.weight_piece),
                    from,
                };
                self.weight_piece(b, cv, t, n, slab, stage, &piece);
            }),
            None => b.when("rows", rows.clone().cmp(CmpOp::Gt, 0), |b| {
                // whole rows (every window position): one nd2nz into the fractals
                let first = (slab.k0.clone() + k0.clone()) * (rs * cv.c);
                let at = (first, k0.clone() * 16);
                let origin = "weights, GM -> L1 fractals";
                weights_to_l1(b, (cv, t, n), at, (rows.clone(), rs * cv.c), origin);
            }),
        }
        feed.ready.acquire(b, &j);
        feed.ready.publish(b, &j);
    }

    /// `[k, r, s, c]` weight chunk `j`: window positions `j * chunk_positions ..` (`nrs` of
    /// them) of every output channel of the slab, straight from GM (a burst per output
    /// channel) into their columns of fractals (`nd2nz`).
    fn window_chunk(
        &self,
        b: &mut Builder,
        (cv, t, n): (&Conv, &Tiles, &Names),
        slab: &Slab,
        (j, nrs): (Expr, i64),
    ) {
        let rs0 = j.clone() * self.chunk_positions;
        let first = (slab.k0.clone() * cv.rs() + rs0.clone()) * cv.c;
        let at = (first, rs0 * (cv.c1() * t.ks * 16));
        let origin = "weights, GM -> L1 fractals (a group of window positions)";
        weights_to_l1(b, (cv, t, n), at, (slab.ka.clone(), nrs * cv.c), origin);
        self.weights.ready.acquire(b, &j);
        self.weights.ready.publish(b, &j);
    }

    /// `[r, s, c, k]` weight chunk `j`: window positions `j * chunk_positions ..` (`nrs` of
    /// them), every output channel.
    #[allow(clippy::too_many_arguments)]
    fn position_chunk(
        &self,
        b: &mut Builder,
        cv: &Conv,
        t: &Tiles,
        n: &Names,
        slab: &Slab,
        j: Expr,
        nrs: i64,
    ) {
        let feed = self.weights;
        let rs0 = j.clone() * self.chunk_positions;
        match feed.stage {
            Some(stage) => b.repeat("wpiece", self.weight_pieces, |b, i| {
                let piece = Piece {
                    k: j.clone() * self.weight_pieces + i.clone(),
                    v: c(0),
                    len: (c(nrs) - i.clone() * t.weight_piece).min(t.weight_piece),
                    from: rs0.clone() + i * t.weight_piece,
                };
                self.position_piece(b, cv, t, n, slab, stage, &piece);
            }),
            None => b.repeat("r", nrs, |b, r| {
                let position = rs0.clone() + r;
                let first = position.clone() * (cv.c * cv.k) + slab.k0.clone();
                let src = b.at(n.weights, n.weight_index(first));
                let dst = b.at(n.wts, [position * (cv.c1() * 256)]);
                b.origin(Some(
                    "weights, GM -> L1 fractals (input by output channels)",
                ));
                b.push(
                    Dma::new(dst, src, cv.c, slab.ka.clone())
                        .strides(cv.k, sh_j(cv) * 16)
                        .mode(DmaMode::Nd2nz),
                );
                b.origin(None);
            }),
        }
        feed.ready.acquire(b, &j);
        feed.ready.publish(b, &j);
    }

    /// One piece of `[r, s, c, k]` weights through UB: window positions `p.from ..` (`p.len`
    /// of them), each `C` rows of the slab's output channels, GM -> UB in one read, then per
    /// position an `nd2nz` into L1 (its channel rows padded to blocks of 16 by the fill).
    #[allow(clippy::too_many_arguments)]
    fn position_piece(
        &self,
        b: &mut Builder,
        cv: &Conv,
        t: &Tiles,
        n: &Names,
        slab: &Slab,
        stage: Ring,
        p: &Piece,
    ) {
        let some = p.len.clone().cmp(CmpOp::Gt, 0);
        stage.acquire(b, &p.k);
        b.when("load", some.clone(), |b| {
            let first = p.from.clone() * (cv.c * cv.k) + slab.k0.clone();
            let src = b.at(n.weights, n.weight_index(first));
            let dst = b.at(self.buffers.w_stage, [p.k.clone() % 2, c(0)]);
            b.origin(Some("weights, GM -> UB"));
            if t.ks == cv.k {
                // whole rows of every output channel: back to back in GM, one burst
                b.push(Dma::new(dst, src, 1, p.len.clone() * (cv.c * cv.k)));
            } else {
                b.push(
                    Dma::new(dst, src, p.len.clone() * cv.c, slab.ka.clone()).strides(cv.k, t.ks),
                );
            }
            b.origin(None);
        });
        stage.publish(b, &p.k);
        stage.take(b, &p.k);
        b.when("place", some, |b| {
            b.repeat("r", p.len.clone(), |b, r| {
                let dst = b.at(n.wts, [(p.from.clone() + r.clone()) * (cv.c1() * 256)]);
                let src = b.at(self.buffers.w_stage, [p.k.clone() % 2, r * (cv.c * t.ks)]);
                b.origin(Some(
                    "weights, UB -> L1 fractals (input by output channels)",
                ));
                b.push(
                    Dma::new(dst, src, cv.c, slab.ka.clone())
                        .strides(t.ks, sh_j(cv) * 16)
                        .mode(DmaMode::Nd2nz),
                );
                b.origin(None);
            });
        });
        stage.release(b, &p.k);
    }

    /// One piece of a weight chunk through UB: output channels `p.from ..` (`p.len` of them),
    /// whole rows (every window position) GM -> UB in one burst, spread if need be, then per
    /// window position an `nd2nz` into L1.
    #[allow(clippy::too_many_arguments)]
    fn weight_piece(
        &self,
        b: &mut Builder,
        cv: &Conv,
        t: &Tiles,
        n: &Names,
        slab: &Slab,
        stage: Ring,
        p: &Piece,
    ) {
        let rs = cv.rs();
        let some = p.len.clone().cmp(CmpOp::Gt, 0);
        stage.acquire(b, &p.k);
        b.when("load", some.clone(), |b| {
            let first = (slab.k0.clone() + p.from.clone()) * (rs * cv.c);
            let src = b.at(n.weights, n.weight_index(first));
            let dst = b.at(self.buffers.w_stage, [p.k.clone() % 2, c(0)]);
            b.origin(Some("weights, GM -> UB"));
            b.push(Dma::new(dst, src, 1, p.len.clone() * (rs * cv.c)));
            b.origin(None);
        });
        stage.publish(b, &p.k);
        let spread = self.weights.spread;
        let (buffer, slot, width) = if spread {
            let buffers = (self.buffers.w_stage, self.buffers.w_spread);
            let most = t.weight_piece * rs;
            spread_piece(
                b,
                stage,
                &p.k,
                buffers,
                &p.v,
                (p.len.clone() * rs, some.clone()),
                (cv.c, cv.c1()),
                most,
            );
            SPREAD.take(b, &p.v);
            (self.buffers.w_spread, p.v.clone() % 2, cv.c1() * 16)
        } else {
            stage.take(b, &p.k);
            (self.buffers.w_stage, p.k.clone() % 2, cv.c)
        };
        b.when("place", some, |b| {
            // whole rows (every window position, channels padded to blocks of 16): one
            // nd2nz into the fractals
            let dst = b.at(n.wts, [p.from.clone() * 16]);
            let src = b.at(buffer, [slot, c(0)]);
            b.origin(Some("weights, UB -> L1 fractals"));
            b.push(
                Dma::new(dst, src, p.len.clone(), rs * width)
                    .strides(rs * width, t.ks)
                    .mode(DmaMode::Nd2nz),
            );
            b.origin(None);
        });
        if spread {
            SPREAD.release(b, &p.v);
        } else {
            stage.release(b, &p.k);
        }
    }
}

/// `[k, r, s, c]` weights straight from GM into their fractals in L1 (`nd2nz`): `rows`
/// output channels' `len` values each from element `first` (rows a whole window apart),
/// into L1 from element `to` (fractal columns of the slab's `ks` channels).
fn weights_to_l1(
    b: &mut Builder,
    (cv, t, n): (&Conv, &Tiles, &Names),
    (first, to): (Expr, Expr),
    (rows, len): (Expr, i64),
    origin: &'static str,
) {
    let src = b.at(n.weights, n.weight_index(first));
    let dst = b.at(n.wts, [to]);
    b.origin(Some(origin));
    b.push(
        Dma::new(dst, src, rows, len)
            .strides(cv.rs() * cv.c, t.ks)
            .mode(DmaMode::Nd2nz),
    );
    b.origin(None);
}

/// One piece of a stream: its staging counter `k`, its spread counter `v`, where it
/// starts (a band pixel, a weight row or a window position) and how many it has.
struct Piece {
    k: Expr,
    v: Expr,
    from: Expr,
    len: Expr,
}

/// Fractal rows of the weights' reduction (channel blocks by window positions).
fn sh_j(cv: &Conv) -> i64 {
    cv.c1() * cv.rs()
}

/// The vector unit takes staged piece `k`, spreads its `rows` rows of `c` channels over
/// `c1` zeroed blocks of 16 into spread slot `v % 2`, and hands both slots on. `most`:
/// the most rows a piece has.
#[allow(clippy::too_many_arguments)]
fn spread_piece(
    b: &mut Builder,
    stage: Ring,
    k: &Expr,
    (from, to): (BufferId, BufferId),
    v: &Expr,
    (rows, some): (Expr, Expr),
    (cc, c1): (i64, i64),
    most: i64,
) {
    stage.take(b, k);
    SPREAD.acquire(b, v);
    b.when("spread", some, |b| {
        let width = c1 * 16;
        // zeros first, whole repeats
        let total = rows.clone() * width;
        let per = LANES * 255;
        b.repeat("z", (most * width + per - 1) / per, |b, z| {
            let left = total.clone() - z.clone() * per;
            b.when("zl", left.clone().cmp(CmpOp::Gt, 0), |b| {
                let dst = b.at(to, [v.clone() % 2, z * per]);
                let reps = ((left + (LANES - 1)) / LANES).min(255);
                b.push(Vector::new(VecOp::Dup { value: 0.0 }, dst, reps));
            });
        });
        b.barrier(BarrierScope::Pipe(Pipe::V));
        b.repeat("cb", c1, |b, cb| {
            b.repeat("blk", (most + SPREAD_ROWS - 1) / SPREAD_ROWS, |b, blk| {
                let left = rows.clone() - blk.clone() * SPREAD_ROWS;
                b.when("bl", left.clone().cmp(CmpOp::Gt, 0), |b| {
                    let dst = b.at(
                        to,
                        [
                            v.clone() % 2,
                            blk.clone() * (SPREAD_ROWS * width) + cb.clone() * 16,
                        ],
                    );
                    let src = b.at(
                        from,
                        [k.clone() % 2, blk * (SPREAD_ROWS * cc) + cb.clone() * 16],
                    );
                    let op = VecOp::Unary {
                        op: UnaryOp::Mov,
                        a: src,
                    };
                    b.origin(Some("channels spread over blocks of 16"));
                    b.push(
                        Vector::new(op, dst, left.min(SPREAD_ROWS))
                            .mask((c(cc) - cb * 16).min(16))
                            .src_stride(0, cc)
                            .dst_stride(width),
                    );
                    b.origin(None);
                });
            });
        });
    });
    stage.release(b, k);
    SPREAD.publish(b, v);
}
