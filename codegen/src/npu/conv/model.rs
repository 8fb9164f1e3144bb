//! The analytic model the tiles are chosen by: a timeline of one slab on one core, walked
//! in the program's order with the machine's figures (no simulation of the program).
//!
//! GM moves one transfer at a time at the core's bandwidth, each transfer's fixed latency
//! overlapping the transfers before it, each burst a cycle, bytes charged in whole
//! segments. The slab's loads go first, in the order the program issues them (the first
//! weight chunk, the first band chunk, the other weight chunks, then a band chunk ahead of
//! each group of tiles); a streamed load reaches L1 through UB (MTE3 at its bandwidth) or
//! directly. A tile computes once its band chunk (and, for the first tile, each block of
//! weights) is in L1: per sub-step the larger of the cube's cycles (its start-up included)
//! and MTE1's (its operands' bytes at the L1 -> L0 bandwidth and a latency). V drains a
//! finished tile (L0C -> UB) and its store joins GM when GM is free. With a prologue the
//! loads (and conversions, at the vector path's bandwidth) come first, serially. A core's
//! cycles are its slabs' (one after the other); the model returns the busiest core's.

use super::geometry::{need, BandMode, Orientation};
use super::tiles::{transposed_weights, weight_chunk_positions, Tiles};
use super::{Activations, Conv};
use npu_sim::machine::Mem;
use npu_sim::Machine;

fn cdiv(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The machine's figures the model reads.
struct Figures {
    /// GM bytes a cycle (one core).
    bw: f64,
    /// GM latency.
    latency: f64,
    /// Cycles a burst adds.
    burst: f64,
    /// GM segment bytes.
    segment: i64,
    /// L1 -> L0 bytes a cycle and latency.
    l1: (f64, f64),
    /// UB -> L1 bytes a cycle and latency.
    ub_l1: (f64, f64),
    /// L0C -> UB bytes a cycle and latency.
    l0c_ub: (f64, f64),
    /// Cube start-up per `mmad`.
    startup: f64,
}

impl Figures {
    fn of(m: &Machine) -> Figures {
        let path = |from: Mem, to: Mem| {
            (m.paths.iter())
                .find(|p| p.from == from && p.to == to)
                .map_or((1.0, 1000.0), |p| (p.bytes_per_cycle, p.latency))
        };
        let latency = (m.paths.iter())
            .filter(|p| p.touches_gm())
            .map(|p| p.latency)
            .fold(0.0, f64::max);
        Figures {
            bw: m.gm.bytes_per_cycle_per_core,
            latency,
            burst: m.gm.burst_cycles,
            segment: m.gm.segment.max(1) as i64,
            l1: path(Mem::L1, Mem::L0a),
            ub_l1: path(Mem::Ub, Mem::L1),
            l0c_ub: path(Mem::L0c, Mem::Ub),
            startup: m.cube.startup,
        }
    }

    /// Bytes charged for `bursts` bursts of `len` bytes (each across one more segment
    /// when it does not fill whole ones).
    fn charged(&self, bursts: i64, len: i64) -> f64 {
        let segments = cdiv(len, self.segment) + i64::from(len % self.segment != 0);
        (bursts * segments * self.segment) as f64
    }
}

/// GM as one queue of transfers.
struct Gm<'f> {
    f: &'f Figures,
    /// When GM is next free to move data.
    free: f64,
}

impl Gm<'_> {
    /// A transfer ready at `ready` of `bursts` bursts of `len` bytes: when its data has
    /// moved.
    fn transfer(&mut self, ready: f64, bursts: i64, len: i64) -> f64 {
        let start = (ready + self.f.latency).max(self.free);
        self.free = start + self.f.charged(bursts, len) / self.f.bw + bursts as f64 * self.f.burst;
        self.free
    }
}

/// The model's cycles of `t` for `cv` on `machine` (the busiest core's).
pub fn cycles(cv: &Conv, machine: &Machine, orient: Orientation, t: &Tiles) -> f64 {
    let f = Figures::of(machine);
    let cores = machine.cores.max(1) as i64;
    let slabs = cv.batch * cdiv(cv.k, t.ks) * cdiv(cv.pixels(), t.ps);
    let per_core = cdiv(slabs, cores) as f64;
    // a slab away from the image's top (the most input rows a first tile needs)
    let p0 = if cv.pixels() > t.ps { t.ps } else { 0 };
    let range = (p0, (p0 + t.ps).min(cv.pixels()));
    per_core * slab(cv, &f, orient, t, range)
}

/// The model's cycles of one slab of output pixels `range`.
fn slab(cv: &Conv, f: &Figures, orient: Orientation, t: &Tiles, range: (i64, i64)) -> f64 {
    let mode = BandMode::of(cv, orient);
    let tiles = t.count(range.1 - range.0);
    let ks = t.ks;
    // per tile: the band pixels it adds, its pixels
    let adds: Vec<i64> = (0..tiles)
        .map(|g| need(cv, mode, t, range, g) - need(cv, mode, t, range, g - 1))
        .collect();
    let pixels: Vec<i64> = (0..tiles)
        .map(|g| (range.1 - range.0 - t.start(g)).min(if g == 0 { t.m0 } else { t.mp }))
        .collect();
    let mut gm = Gm { f, free: 0.0 };
    // the weights: per chunk (block of output channels, or group of positions) its bytes
    let weight_chunks: Vec<i64> = if transposed_weights(cv) {
        let per = weight_chunk_positions(cv, t.nrs);
        (0..cdiv(cv.rs(), per))
            .map(|j| (per.min(cv.rs() - j * per)) * cv.c * ks * 2)
            .collect()
    } else {
        let kt = ks / t.kblocks;
        (0..t.kblocks).map(|_| kt * cv.rs() * cv.c * 2).collect()
    };
    let hop = |bytes: i64, ready: f64, streamed_through_ub: bool| {
        if streamed_through_ub {
            ready + bytes as f64 / f.ub_l1.0 + f.ub_l1.1
        } else {
            ready
        }
    };
    let band_hop = t.band_piece > 0;
    let weights_hop = t.weight_piece > 0;
    let band_bytes = |px: i64| px * cv.c * 2;
    // loads in the program's order
    let mut weights_ready = vec![0.0; weight_chunks.len()];
    let group = t.band_group.max(1);
    let chunk_of = |g: i64| -> i64 {
        let last = (g * group + group - 1).min(tiles - 1);
        (g * group..=last).map(|u| adds[u as usize]).sum()
    };
    let load_band = |gm: &mut Gm, g: i64, ready: f64| -> f64 {
        let px = chunk_of(g);
        let bytes = band_bytes(px);
        let arrival = if t.streamed && !band_hop {
            // nd2nz straight to L1: a burst per pixel
            gm.transfer(ready, px, cv.c * 2)
        } else {
            gm.transfer(ready, 1, bytes)
        };
        hop(bytes, arrival, band_hop || !t.streamed)
    };
    let load_weights = |gm: &mut Gm, bytes: i64| -> f64 {
        let rows = bytes / (cv.rs() * cv.c * 2).max(1);
        let arrival = if t.streamed && !weights_hop && !transposed_weights(cv) {
            gm.transfer(0.0, rows, cv.rs() * cv.c * 2)
        } else {
            gm.transfer(0.0, 1, bytes)
        };
        hop(bytes, arrival, weights_hop || !t.streamed)
    };
    let chunks = cdiv(tiles, group);
    let mut chunk_ready = vec![0.0; chunks as usize];
    if t.streamed {
        weights_ready[0] = load_weights(&mut gm, weight_chunks[0]);
        chunk_ready[0] = load_band(&mut gm, 0, 0.0);
        for j in 1..weight_chunks.len() {
            weights_ready[j] = load_weights(&mut gm, weight_chunks[j]);
        }
    } else {
        // the prologue: everything in, converted, before the first tile
        let mut end = 0.0;
        for g in 0..chunks {
            end = load_band(&mut gm, g, 0.0);
        }
        for &bytes in &weight_chunks {
            end = end.max(load_weights(&mut gm, bytes));
        }
        let band: i64 = adds.iter().sum();
        let conversion = match cv.input_layout {
            Activations::Nchw => band * cv.c1() * 16 * 6,
            Activations::Nhwc => band * cv.c1() * 16 * 2,
        } as f64
            / f.l0c_ub.0;
        end += conversion;
        weights_ready.iter_mut().for_each(|w| *w = end);
        chunk_ready.iter_mut().for_each(|b| *b = end);
    }
    // the tiles
    let steps = cdiv(cv.rs(), t.nrs) * cdiv(cv.c1(), t.kc1);
    let kd = (cv.c1() * cv.rs() * 16) as f64 / steps as f64;
    let step = |m: f64, n: f64| -> f64 {
        let cube = m / 16.0 * (kd / 16.0).ceil() * n / 16.0 + f.startup;
        let mte1 = match orient {
            Orientation::PixelRows => (m + n) * kd * 2.0 / f.l1.0 + f.l1.1,
            Orientation::ChannelRows => {
                let runs = ((t.mp - 1) / cv.ow + 2) as f64 * kd / 16.0;
                n * kd * 2.0 / f.l1.0 + runs * f.l1.1
            }
        };
        cube.max(mte1)
    };
    let (mut cube_free, mut last) = (0.0f64, 0.0f64);
    let mut drains: Vec<f64> = vec![];
    for (g, &px) in pixels.iter().enumerate() {
        let rows = ((px + 15) / 16 * 16) as f64;
        let chunk = g as i64 / group;
        if t.streamed && g as i64 % group == 0 && chunk + 1 < chunks {
            // the next chunk, once the chunk two back has left its UB slot
            let slot = if chunk >= 1 {
                chunk_ready[chunk as usize - 1]
            } else {
                0.0
            };
            chunk_ready[chunk as usize + 1] = load_band(&mut gm, chunk + 1, slot);
        }
        let mut at = cube_free.max(chunk_ready[chunk as usize]);
        // L0C holds two tiles: the tile two back must have drained
        if g >= 2 {
            at = at.max(drains[g - 2]);
        }
        if g == 0 {
            // block by block (or group by group) as the weights come
            let blocks = weight_chunks.len() as f64;
            let kn = if transposed_weights(cv) {
                ks as f64
            } else {
                (ks / t.kblocks) as f64
            };
            let per_block =
                steps as f64 * step(rows, kn) / if transposed_weights(cv) { blocks } else { 1.0 };
            for &ready in &weights_ready {
                at = at.max(ready) + per_block;
            }
        } else {
            at += steps as f64 * step(rows, ks as f64);
        }
        cube_free = at;
        let drain = at + rows * ks as f64 * 4.0 / f.l0c_ub.0 + f.l0c_ub.1;
        drains.push(drain);
        // the store: one burst (whole pixel rows), a burst per pixel (NHWC, part of K) or
        // per channel (NCHW)
        let (bursts, len) = match orient {
            Orientation::PixelRows if ks >= cv.k => (1, px * cv.k * 4),
            Orientation::PixelRows => (px, ks * 4),
            Orientation::ChannelRows => (ks, px * 4),
        };
        last = gm.transfer(drain, bursts, len);
    }
    last
}
