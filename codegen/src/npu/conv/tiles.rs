//! The tile sizes of a convolution, chosen by an analytic model (no simulation).
//!
//! The work is cut into *slabs*: one image, a range of `ks` output channels and a range of
//! `ps` output pixels. Slabs are dealt to the cores in contiguous ranges; a core keeps a
//! slab's input rows (the *band*, C1HWC0) and its weights in L1 while it computes the
//! slab's tiles of `mp` pixels by `ks` channels, one L0C tile each, the reduction in
//! sub-steps of one input-channel block by `nrs` window positions (pointwise: `kc1` blocks).
//!
//! The first tile of a slab may be smaller (`m0`: it needs fewer input rows before the cube
//! starts) and, when the weights stream, may go through blocks of output channels as their
//! weights arrive (`kblocks`); the band streams in chunks of `band_group` tiles, through UB
//! in pieces or straight from GM.
//!
//! Every candidate whose buffers fit (L1: band, weights and the prologue's scratch; L0A,
//! L0B, L0C and UB: two slots each, and the streams' slots) is costed by the timeline of
//! `super::model`; the cheapest wins, the larger tile on a tie.

use super::geometry::{align_pixels, align_rows, band_layout, need, BandMode, Orientation};
use super::{Activations, Conv, Weights};
use crate::npu::up;
use npu_sim::machine::Mem;
use npu_sim::program::{CmpOp, Expr};
use npu_sim::Machine;

/// Bytes of a block of the hardware's GM writes (stores must not share one).
const BLOCK: i64 = npu_sim::hazards::BLOCK as i64;

/// The decisions for one convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tiles {
    /// Output pixels of a tile (a multiple of 16).
    pub mp: i64,
    /// Output pixels of a slab's first tile (at most `mp`; e.g. one output row): smaller,
    /// it needs fewer input rows before the cube can start.
    pub m0: i64,
    /// Window positions of a reduction sub-step (its depth is `16 * nrs * kc1`).
    pub nrs: i64,
    /// Input-channel blocks of a reduction sub-step (1 unless the convolution is
    /// pointwise, when `nrs` is 1).
    pub kc1: i64,
    /// Blocks of output channels the slab's first tile goes through one after the other,
    /// each as soon as its weights are in L1 (streamed `[k, r, s, c]` or `[k, c]` weights,
    /// which come in such blocks; else 1).
    pub kblocks: i64,
    /// Window positions per chunk when `[k, r, s, c]` weights stream straight to L1 by
    /// groups of window positions, every output channel of the slab in each (a burst per
    /// output channel): the slab's first tile goes through the groups as they arrive, in
    /// sub-steps of one group and one channel block. 0: the weights come by blocks of
    /// output channels (`kblocks`).
    pub window_group: i64,
    /// Output channels of a slab and of its tiles (a multiple of 16).
    pub ks: i64,
    /// Output pixels of a slab (its last tile may have fewer than `mp`).
    pub ps: i64,
    /// Input rows per chunk of the prologue's band conversion.
    pub band_chunk: i64,
    /// Output channels (weight rows) per chunk the prologue stages in UB (a multiple of 16;
    /// 0: the weights go straight from GM to L1), or for `[r, s, c, k]` weights window
    /// positions.
    pub weight_chunk: i64,
    /// Window positions per product with the permutation (`[k, c, r, s]` weights with a
    /// window; 0 otherwise).
    pub perm_group: i64,
    /// Whether the band and weights stream into L1 while the cube works (else a prologue
    /// brings them).
    pub streamed: bool,
    /// Tiles whose band rows stream as one chunk.
    pub band_group: i64,
    /// Band pixels per piece of the band's stream through UB (0: GM -> L1 directly).
    pub band_piece: i64,
    /// Weight rows (output channels, a multiple of 16) per piece of the weights' stream
    /// through UB, or for `[r, s, c, k]` weights window positions (0: GM -> L1 directly).
    pub weight_piece: i64,
}

impl Tiles {
    /// Where tile `t` of a slab starts, in pixels from the slab's first.
    pub fn start(&self, t: i64) -> i64 {
        if t <= 0 {
            0
        } else {
            self.m0 + (t - 1) * self.mp
        }
    }

    /// [`Tiles::start`] as an expression.
    pub fn start_expr(&self, t: Expr) -> Expr {
        t.clone()
            .cmp(CmpOp::Eq, 0)
            .select(0, t * self.mp + (self.m0 - self.mp))
    }

    /// Rows of the first tile's im2col window and L0C tile (when it goes through blocks of
    /// output channels, each a column of L0C fractals this high).
    pub fn rows0(&self) -> i64 {
        up(self.m0, 16)
    }

    /// Tiles of a slab of `ps` pixels.
    pub fn count(&self, ps: i64) -> i64 {
        1 + cdiv((ps - self.m0).max(0), self.mp)
    }

    /// Fractal columns (16-deep slices of the reduction) of a sub-step.
    pub fn depth(&self) -> i64 {
        self.nrs * self.kc1
    }

    /// Window positions of a sub-step of the slab's first tile: a group of the weights'
    /// window positions when they come by such groups, else `nrs`.
    pub fn first_nrs(&self) -> i64 {
        if self.window_group > 0 {
            self.window_group
        } else {
            self.nrs
        }
    }
}

fn cdiv(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The tiers' capacities of a machine, in bytes (0 for a tier it lacks).
#[derive(Clone, Copy, Debug)]
pub struct Capacity {
    /// L1.
    pub l1: i64,
    /// L0A.
    pub l0a: i64,
    /// L0B.
    pub l0b: i64,
    /// L0C.
    pub l0c: i64,
    /// UB.
    pub ub: i64,
}

impl Capacity {
    /// The capacities of `machine`.
    pub fn of(machine: &Machine) -> Capacity {
        let cap = |m: Mem| machine.tiers.get(&m).map_or(0, |t| t.capacity as i64);
        Capacity {
            l1: cap(Mem::L1),
            l0a: cap(Mem::L0a),
            l0b: cap(Mem::L0b),
            l0c: cap(Mem::L0c),
            ub: cap(Mem::Ub),
        }
    }
}

/// Rows a band of the slab of output pixels `[a, b)` holds: the input rows it reads, or
/// for the channel-rows orientation (whose band holds the padding too) the padded rows (as
/// isl counts them: [`super::footprint`]).
pub fn band_rows(cv: &Conv, orient: Orientation, a: i64, b: i64) -> i64 {
    match orient {
        Orientation::PixelRows => {
            let (first, end) = cv.rows.input_rows(a, b);
            end - first
        }
        Orientation::ChannelRows => cv.rows.padded_rows(a, b),
    }
}

/// The most rows any slab of `ps` pixels needs.
pub fn max_band_rows(cv: &Conv, orient: Orientation, ps: i64) -> i64 {
    let parts = cdiv(cv.pixels(), ps);
    (0..parts)
        .map(|pp| band_rows(cv, orient, pp * ps, (pp * ps + ps).min(cv.pixels())))
        .max()
        .unwrap_or(0)
}

/// L1 bytes of a band of `rows` rows (C1HWC0, each channel block's slice a whole number
/// of fractals, after the band's lead).
pub fn band_bytes(cv: &Conv, orient: Orientation, rows: i64) -> i64 {
    let (pitch, _, lead) = band_layout(cv, orient);
    (lead + cv.c1() * up(rows * pitch, 16)) * 16 * 2
}

/// L1 bytes of a slab's weights.
pub fn weight_bytes(cv: &Conv, ks: i64) -> i64 {
    ks * cv.c1() * cv.rs() * 16 * 2
}

/// Whether the weights need the permutation through the cube (`[k, c, r, s]` with a window).
pub fn permuted_weights(cv: &Conv) -> bool {
    cv.weight_layout == Weights::Kcrs && cv.rs() > 1
}

/// The L1 buffers of a candidate, in f16 elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// The band (with its lead).
    pub band: i64,
    /// The slab's weights.
    pub weights: i64,
    /// The staging of an NCHW band chunk before its transposition (NZ).
    pub stage: i64,
    /// The weights in their own order before the permutation.
    pub natural: i64,
    /// The permutation (or the transposition's identity), dense then NZ.
    pub perm: i64,
    /// Zeros for the channel-rows orientation's L0B slots.
    pub zeros: i64,
    /// UB, per slot: a band piece as GM has it.
    pub band_stage: i64,
    /// UB, per slot: a band piece spread over blocks of 16 channels.
    pub band_spread: i64,
    /// UB, per slot: a weight piece as GM has it.
    pub w_stage: i64,
    /// UB, per slot: a weight piece spread.
    pub w_spread: i64,
}

impl Footprint {
    /// The buffers of `t` (its chunks and sub-step already chosen).
    pub fn of(cv: &Conv, orient: Orientation, t: &Tiles) -> Footprint {
        let rows = max_band_rows(cv, orient, t.ps);
        let stage = match cv.input_layout {
            Activations::Nchw => cv.c1() * 16 * up(stage_rows(cv, t.band_chunk) * cv.w, 16),
            Activations::Nhwc => 0,
        };
        let perm = if permuted_weights(cv) {
            16 * perm_rows(cv) * 16 * t.perm_group
        } else {
            256
        };
        Footprint {
            band: match BandMode::of(cv, orient) {
                BandMode::Rows => band_bytes(cv, orient, rows) / 2,
                BandMode::Pixels => t.count(t.ps) * cv.c1() * t.mp * 16,
            },
            weights: weight_bytes(cv, t.ks) / 2,
            stage,
            natural: if permuted_weights(cv) {
                t.ks * up(cv.c * cv.rs(), 16)
            } else {
                0
            },
            perm,
            zeros: match orient {
                Orientation::ChannelRows => t.depth() * 16 * t.mp,
                Orientation::PixelRows => 0,
            },
            band_stage: up((t.band_piece + align_pixels(cv) - 1) * cv.c, 16),
            band_spread: spread_len(cv, t.band_piece + align_pixels(cv) - 1),
            w_stage: if transposed_weights(cv) {
                t.weight_piece * cv.c * t.ks
            } else {
                up(t.weight_piece * cv.rs() * cv.c, 16)
            },
            w_spread: if transposed_weights(cv) {
                0
            } else {
                spread_len(cv, t.weight_piece * cv.rs())
            },
        }
    }

    /// Bytes of L1 it takes (each buffer on L1's 32-byte alignment, and at least 16
    /// elements: the program declares every one, used or not).
    pub fn l1_bytes(&self) -> i64 {
        [
            self.band,
            self.weights,
            self.stage,
            self.natural,
            self.perm,
            self.zeros,
        ]
        .iter()
        .map(|&e| up(e.max(16) * 2, 32))
        .sum()
    }
}

/// Elements of a UB slot holding `rows` rows spread over blocks of 16 channels (whole
/// vector repeats; none when the channels need no spreading).
fn spread_len(cv: &Conv, rows: i64) -> i64 {
    if cv.c % 16 == 0 {
        0
    } else {
        up(rows * cv.c1() * 16, 128)
    }
}

/// Whether `cv`'s band and weights can stream into L1 while the cube works: the pixel-rows
/// orientation, NHWC input and weights needing no permutation (else a prologue brings
/// them; it also does when the streams' UB slots do not fit).
pub fn streamable(cv: &Conv, orient: Orientation) -> bool {
    orient == Orientation::PixelRows
        && cv.input_layout == Activations::Nhwc
        && !permuted_weights(cv)
}

/// Window positions per weight chunk: one sub-step group's; all of them when a chunk's
/// first row could not start a GM read (the channels need spreading, or `[r, s, c, k]`
/// rows that do not make whole 16-element blocks).
pub fn weight_chunk_positions(cv: &Conv, nrs: i64) -> i64 {
    let aligned = match cv.weight_layout {
        Weights::Rsck => (cv.c * cv.k) % 16 == 0,
        _ => cv.c % 16 == 0,
    };
    if aligned {
        nrs
    } else {
        cv.rs()
    }
}

/// Whether the weights are `[r, s, c, k]`: in L1 as fractals of 16 input by 16 output
/// channels (their rows the reduction), read transposed into the cube's operands.
pub fn transposed_weights(cv: &Conv) -> bool {
    cv.weight_layout == Weights::Rsck
}

/// Window positions of `[r, s, c, k]` weights a GM read may start at: multiples of this
/// make whole 16-element blocks.
pub fn weight_align_positions(cv: &Conv) -> i64 {
    16 / gcd(cv.c * cv.k, 16)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The streams' pieces: (band pixels, weight rows) whose two UB slots each fit beside the
/// output tiles, whole chunks if they can; 0 for a stream that goes straight from GM to L1
/// (`nd2nz`): channels a multiple of 256 (each pixel's or row's burst a whole number of
/// 512-byte segments), or a multiple of 16 and UB too small.
fn pieces(cv: &Conv, cap: Capacity, t: &Tiles, max_chunk: i64) -> Option<(i64, i64)> {
    // the output tiles, and room for the unused streams' buffers (16 elements a slot)
    let free = cap.ub - 2 * t.mp * t.ks * cv.drained_elem().size_bytes() as i64 - 5 * 64;
    if free < 0 {
        return None;
    }
    let skip = align_pixels(cv) - 1;
    let spread = |rows: i64| 2 * 2 * spread_len(cv, rows);
    let band = |px: i64| 2 * 2 * up((px + skip) * cv.c, 16) + spread(px + skip);
    let positions = weight_chunk_positions(cv, t.nrs);
    // the weights: whole rows of output channels, or of window positions ([r, s, c, k])
    let (w_aligned, w_direct, weights): (bool, bool, Box<dyn Fn(i64) -> i64>) =
        if transposed_weights(cv) {
            let slot = move |pp: i64| 2 * 2 * pp * cv.c * t.ks;
            (
                (cv.c * cv.k) % 16 == 0,
                cv.k % 256 == 0 && cv.c % 16 == 0,
                Box::new(slot),
            )
        } else {
            let slot = move |wp: i64| 2 * 2 * up(wp * cv.rs() * cv.c, 16) + spread(wp * cv.rs());
            (cv.c % 16 == 0, cv.c % 256 == 0, Box::new(slot))
        };
    let candidates: Vec<i64> = if transposed_weights(cv) {
        let g = weight_align_positions(cv);
        (1..=positions)
            .rev()
            .filter(|&pp| pp % g == 0 || pp == positions)
            .collect()
    } else {
        (1..=t.ks / t.kblocks / 16).rev().map(|k| k * 16).collect()
    };
    let staged = (!w_direct)
        .then(|| candidates.into_iter().find(|&w| weights(w) <= free / 2))
        .flatten();
    let rows = match staged {
        Some(rows) => rows,
        None if w_aligned => 0,
        None => return None,
    };
    let left = free - if rows > 0 { weights(rows) } else { 0 };
    let (aligned, direct) = (cv.c % 16 == 0, cv.c % 256 == 0);
    let most = max_chunk.max(16);
    let pixels = (!direct)
        .then(|| (16..=most).rev().find(|&px| band(px) <= left))
        .flatten();
    match pixels {
        Some(px) => Some((px, rows)),
        None if aligned => Some((0, rows)),
        None => None,
    }
}

/// Input rows a band chunk's GM read spans: its rows, started up to `align_rows - 1` rows
/// earlier so that the read starts on GM's alignment.
pub fn stage_rows(cv: &Conv, chunk: i64) -> i64 {
    chunk + align_rows(cv) - 1
}

/// The largest band chunk (input rows) the prologue's scratch holds, if any.
fn band_chunk(cv: &Conv, cap: Capacity, rows: i64) -> Option<i64> {
    let fits = |br: i64| {
        let px = stage_rows(cv, br) * cv.w;
        let px16 = up(px, 16);
        match cv.input_layout {
            Activations::Nhwc if cv.c % 16 == 0 => px * cv.c * 2 <= cap.ub,
            Activations::Nhwc => (up(px * cv.c, 128) + up(px * cv.c1() * 16, 128)) * 2 <= cap.ub,
            Activations::Nchw => {
                cv.c1() * px16 * 32 <= cap.l0a
                    && cv.c1() * px16 * 64 <= cap.l0c
                    && cv.c1() * px * 32 <= cap.ub
                    && 512 <= cap.l0b
            }
        }
    };
    (1..=rows.max(1)).rev().find(|&br| fits(br))
}

/// The largest weight chunk (output channels, a multiple of 16) UB stages, if any; 0:
/// none, the weights go straight from GM (channels a multiple of 16).
fn weight_chunk(cv: &Conv, cap: Capacity, ks: i64) -> Option<i64> {
    if transposed_weights(cv) {
        // window positions (C rows of ks each) starting GM reads
        let g = weight_align_positions(cv);
        let fits = |pp: i64| pp * cv.c * ks * 2 <= cap.ub;
        return (1..=cv.rs())
            .rev()
            .filter(|&pp| pp % g == 0 || pp == cv.rs())
            .find(|&pp| fits(pp));
    }
    let fits = |kr: i64| {
        if cv.c % 16 == 0 {
            kr * cv.rs() * cv.c * 2 <= cap.ub
        } else {
            (up(kr * cv.rs() * cv.c, 128) + up(kr * cv.rs() * cv.c1() * 16, 128)) * 2 <= cap.ub
        }
    };
    let staged = (1..=ks / 16).rev().map(|k| k * 16).find(|&kr| fits(kr));
    staged.or((cv.c % 16 == 0).then_some(0))
}

/// Fractal rows of the permutation: a block of 16 input channels by the window, or the
/// fewer rows of the input's only block.
pub fn perm_rows(cv: &Conv) -> i64 {
    if cv.c >= 16 {
        cv.rs()
    } else {
        (cv.c * cv.rs() + 15) / 16
    }
}

/// The most window positions one product with the permutation covers (0: no permutation;
/// `None`: not even one fits).
fn perm_group(cv: &Conv, cap: Capacity, ks: i64) -> Option<i64> {
    if !permuted_weights(cv) {
        return Some(0);
    }
    let rows = 16 * perm_rows(cv);
    let fits = |g: i64| {
        let cols = 16 * g;
        rows * cols * 2 <= cap.ub.min(cap.l0b)
            && ks * cols * 4 <= cap.l0c
            && ks * cols * 2 <= cap.ub
            && ks * rows * 2 <= cap.l0a
    };
    (1..=cv.rs()).rev().find(|&g| fits(g))
}

impl Tiles {
    /// The cheapest tiles for `cv` on `machine` by the model (of equal costs, the larger
    /// tiles), or `None` if nothing fits.
    pub fn choose(cv: &Conv, machine: &Machine) -> Option<Tiles> {
        Tiles::ranked(cv, machine)
            .into_iter()
            .next()
            .map(|(_, t)| t)
    }

    /// [`Tiles::options`] cheapest first by the model (of equal costs, the larger tiles
    /// first), each tiling once: the first is [`Tiles::choose`]'s.
    pub fn ranked(cv: &Conv, machine: &Machine) -> Vec<(f64, Tiles)> {
        let mut options = Tiles::options(cv, machine);
        options.sort_by(|(a, x), (b, y)| a.total_cmp(b).then((y.mp * y.ks).cmp(&(x.mp * x.ks))));
        let mut seen = std::collections::HashSet::new();
        options.retain(|(_, t)| seen.insert(*t));
        options
    }

    /// The tiling in one line: the slab and tile sizes, the sub-step, and how the slab's
    /// operands reach L1.
    pub fn describe(&self) -> String {
        let sizes = format!(
            "slabs {} ch x {} px, tiles of {} px, sub-steps {} pos x {} blk",
            self.ks, self.ps, self.mp, self.nrs, self.kc1
        );
        if !self.streamed {
            return format!("{sizes}, prologue");
        }
        let via = |piece: i64, unit: &str| {
            if piece > 0 {
                format!("UB pieces of {piece} {unit}")
            } else {
                "GM -> L1".to_string()
            }
        };
        let first = if self.window_group > 0 {
            format!("by groups of {} window positions", self.window_group)
        } else {
            format!("in {} block(s)", self.kblocks)
        };
        format!(
            "{sizes}, first tile {} px {first}, band chunks of {} tile(s) ({}), weights ({})",
            self.m0,
            self.band_group,
            via(self.band_piece, "px"),
            via(self.weight_piece, "rows")
        )
    }

    /// Every tiling of `cv` whose buffers fit `machine`, with the model's cycles: tiles of
    /// 16 to 256 pixels, slabs from dividing the output channels and the pixels evenly, and
    /// for each the deepest sub-step, the ways to stream (the first tile's blocks of output
    /// channels, its size, band chunks of one tile or of the slab).
    pub fn options(cv: &Conv, machine: &Machine) -> Vec<(f64, Tiles)> {
        let cap = Capacity::of(machine);
        let orient = Orientation::of(cv);
        let k1 = cdiv(cv.k, 16);
        let pixels = cv.pixels();
        let mut ks_all: Vec<i64> = (1..=k1).map(|pk| up(cdiv(cv.k, pk), 16)).collect();
        ks_all.dedup();
        let mut options = vec![];
        for mp in (1..=16).map(|v| v * 16).filter(|&v| v <= up(pixels, 16)) {
            for &ks in &ks_all {
                for pp in 1..=cdiv(pixels, mp).min(64) {
                    let ps = up(cdiv(pixels, pp), pixel_step(cv, orient));
                    options.extend(Tiles::consider(cv, machine, cap, orient, mp, ks, ps));
                }
            }
        }
        options
    }

    /// The variants of one candidate whose buffers fit and whose stores keep to their own
    /// GM blocks, costed.
    fn consider(
        cv: &Conv,
        machine: &Machine,
        cap: Capacity,
        orient: Orientation,
        mp: i64,
        ks: i64,
        ps: i64,
    ) -> Vec<(f64, Tiles)> {
        // a vector epilogue takes UB beside the output tiles (its results and its own
        // buffers) and needs streamed slabs whose channels divide the output's
        let vector = cv.epilogue.vector();
        let cap = match vector {
            None => cap,
            Some(epi) => match crate::npu::matmul::tail::Tail::new(epi, machine, ks) {
                Some(tail) => Capacity {
                    ub: cap.ub - 2 * mp * ks * cv.out_bytes() - tail.ub_bytes(mp),
                    ..cap
                },
                None => return vec![],
            },
        };
        let rows = max_band_rows(cv, orient, ps);
        if !stores_apart(cv, orient, mp, ks, ps)
            || 2 * mp * ks * 4 > cap.l0c
            || 2 * mp * ks * cv.drained_elem().size_bytes() as i64 > cap.ub
        {
            return vec![];
        }
        // the deepest sub-step that fits both L0 slots: window positions of one channel
        // block, or (pointwise) channel blocks
        let (a_rows, b_cols) = match orient {
            Orientation::PixelRows => (mp, ks),
            Orientation::ChannelRows => (ks, mp),
        };
        let fits = |n: i64| 2 * a_rows * n * 32 <= cap.l0a && 2 * b_cols * n * 32 <= cap.l0b;
        let pointwise = BandMode::of(cv, orient) == BandMode::Pixels;
        let Some(depth) = (1..=if pointwise { cv.c1() } else { cv.rs() })
            .rev()
            .find(|&n| fits(n))
        else {
            return vec![];
        };
        let (nrs, kc1) = if pointwise { (1, depth) } else { (depth, 1) };
        let tiles = Tiles {
            mp,
            m0: mp,
            nrs,
            kc1,
            kblocks: 1,
            window_group: 0,
            band_group: 1,
            ks,
            ps,
            band_chunk: 0,
            weight_chunk: 0,
            perm_group: 0,
            streamed: false,
            band_piece: 0,
            weight_piece: 0,
        };
        if !streamable(cv, orient) {
            if vector.is_some() {
                return vec![];
            }
            let prologue = || -> Option<(f64, Tiles)> {
                Tiles {
                    band_chunk: band_chunk(cv, cap, rows)?,
                    weight_chunk: weight_chunk(cv, cap, ks)?,
                    perm_group: perm_group(cv, cap, ks)?,
                    ..tiles
                }
                .costed(cv, machine, cap, orient)
            };
            return prologue().into_iter().collect();
        }
        // streamed: the first tile in 1, 2, 4, ... blocks of output channels (weights that
        // come in blocks of output channels), the cheapest; every block of the last slab of
        // channels must hold some (the program has no empty block)
        let blocks = if transposed_weights(cv) { 1 } else { ks / 16 };
        let last = cv.k - (cdiv(cv.k, ks) - 1) * ks;
        let kbs = (0..)
            .map(|e| 1 << e)
            .take_while(|&kb| kb <= blocks.min(4) && ks % (kb * 16) == 0)
            .filter(|&kb| (kb - 1) * (ks / kb) < last);
        // a smaller first tile (about one output row, or half a tile) starts sooner, if the
        // tile after it still stores from the start of a GM block (whole pixel rows of K
        // values: a block multiple when K is not one)
        let firsts: Vec<i64> = match BandMode::of(cv, orient) {
            BandMode::Pixels => vec![mp],
            BandMode::Rows => {
                let mut f = vec![mp, cv.ow.min(mp), up(mp / 2, 16)];
                f.dedup();
                f.retain(|&m0| m0 == mp || (m0 * cv.k * cv.out_bytes()) % BLOCK == 0);
                f
            }
        };
        let mut options = vec![];
        for kblocks in kbs {
            for &m0 in &firsts {
                let t = Tiles {
                    kblocks,
                    m0,
                    streamed: true,
                    ..tiles
                };
                for band_group in [1, t.count(ps)] {
                    options.push(Tiles { band_group, ..t });
                }
            }
        }
        // the band in the largest pieces UB holds, or (so that hops overlap loads sooner)
        // in half of them
        options
            .into_iter()
            .filter_map(|t| {
                let chunk = max_chunk(cv, orient, &t);
                let (band_piece, weight_piece) = pieces(cv, cap, &t, chunk)?;
                Some(Tiles {
                    band_piece,
                    weight_piece,
                    ..t
                })
            })
            .flat_map(|t| {
                let half = Tiles {
                    band_piece: (t.band_piece + 1) / 2,
                    ..t
                };
                if t.band_piece >= 32 {
                    vec![t, half]
                } else {
                    vec![t]
                }
            })
            .flat_map(|t| {
                let mut v = vec![t];
                v.extend(window_groups(cv, &t).map(|window_group| Tiles { window_group, ..t }));
                v
            })
            .filter_map(|t| t.costed(cv, machine, cap, orient))
            .collect()
    }

    /// `self` costed, if its L1 buffers fit.
    fn costed(
        self,
        cv: &Conv,
        machine: &Machine,
        cap: Capacity,
        orient: Orientation,
    ) -> Option<(f64, Tiles)> {
        if Footprint::of(cv, orient, &self).l1_bytes() > cap.l1 {
            return None;
        }
        Some((super::model::cycles(cv, machine, orient, &self), self))
    }
}

/// The groups of window positions `[k, r, s, c]` weights may stream by for `t` (whole
/// rows of the window, fewer than all, no deeper than a sub-step): when they go straight
/// from GM to L1 (each output channel's group one burst) and the first tile would otherwise
/// take them in one block of output channels.
fn window_groups(cv: &Conv, t: &Tiles) -> impl Iterator<Item = i64> {
    let direct = cv.weight_layout == Weights::Krsc && t.weight_piece == 0 && cv.c % 16 == 0;
    let fits = direct && t.kblocks == 1 && t.kc1 == 1;
    let (s, rs, nrs) = (cv.s, cv.rs(), t.nrs);
    (1..cv.r)
        .map(move |rows| rows * s)
        .filter(move |&g| fits && g < rs && g <= nrs)
}

/// The most band pixels a chunk (the `band_group` tiles from one a multiple of it) adds to
/// what earlier tiles of its slab needed (pointwise, a tile's: its pieces stay in its slot).
pub fn max_chunk(cv: &Conv, orient: Orientation, t: &Tiles) -> i64 {
    let mode = BandMode::of(cv, orient);
    let group = match mode {
        BandMode::Rows => t.band_group,
        BandMode::Pixels => 1,
    };
    (0..cdiv(cv.pixels(), t.ps))
        .flat_map(|q| {
            let range = (q * t.ps, (q * t.ps + t.ps).min(cv.pixels()));
            // the first tile may be smaller than the others
            let tiles = t.count(range.1 - range.0);
            (0..cdiv(tiles, group)).map(move |g| {
                let last = (g * group + group - 1).min(tiles - 1);
                need(cv, mode, t, range, last) - need(cv, mode, t, range, g * group - 1)
            })
        })
        .max()
        .unwrap_or(0)
}

/// The granularity of slabs' pixel ranges: any pixel when an output pixel is a whole number
/// of GM blocks (NHWC, K a multiple of 8 f32 or 16 f16 values), else 16 pixels.
fn pixel_step(cv: &Conv, orient: Orientation) -> i64 {
    if orient == Orientation::PixelRows && cv.k % (BLOCK / cv.out_bytes()) == 0 {
        1
    } else {
        16
    }
}

/// Whether every tile's stores start and end on GM blocks of their own (a GM operand
/// starts on a 32-byte block, and two stores into one block race unless ordered).
fn stores_apart(cv: &Conv, orient: Orientation, mp: i64, ks: i64, ps: i64) -> bool {
    let per_block = BLOCK / cv.out_bytes();
    let image = cv.pixels() * cv.k;
    let batch_ok = cv.batch == 1 || image % per_block == 0;
    match orient {
        // rows of K values per pixel: a partial row needs K on block boundaries
        Orientation::PixelRows => batch_ok && (ks >= cv.k || cv.k % per_block == 0),
        // rows of OH*OW values per channel: a partial row needs the rows on block boundaries
        Orientation::ChannelRows => {
            batch_ok && (cv.pixels() % per_block == 0 || (mp >= cv.pixels() && ps >= cv.pixels()))
        }
    }
}
