//! The analytic model the tiles are chosen by: a timeline of one slab on one core, walked
//! in the program's order with the machine's figures (no simulation of the program).
//!
//! GM moves one transfer at a time at the core's bandwidth, each burst a cycle, bytes
//! charged in whole segments. Each pipe moves its transfers in order, a transfer's fixed
//! latency overlapping only the one before it on its pipe (MTE2 the loads; MTE3 the
//! stores and the UB -> L1 hops, in the program's order; V the drains). The slab's loads
//! go first, in the order the program issues them (the first weight chunk, the first band
//! chunk, the other weight chunks, then a band chunk ahead of each group of tiles), each
//! in pieces through a UB ring of two slots or straight to L1. A tile computes once its
//! band chunk (and, for the first tile, each block of weights) is in L1: per sub-step the
//! larger of the cube's cycles (its start-up included) and MTE1's (its operands' bytes at
//! the L1 -> L0 bandwidth and a latency). V drains a finished tile (L0C -> UB) once the
//! store two back has left UB, and MTE3 stores it. With a prologue the loads (and
//! conversions, at the vector path's bandwidth) come first, serially. A core's cycles are
//! its slabs' (one after the other); the model returns the busiest core's.

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

/// The transfer queues: GM one transfer at a time (the core's bandwidth), and each of the
/// pipes that move data in order, a transfer's latency overlapping only the one before it
/// on its pipe.
struct Queues<'f> {
    f: &'f Figures,
    /// When GM is next free to move data.
    gm: f64,
    /// MTE2 (loads) and MTE3 (stores and UB -> L1 hops).
    mte2: Pipe,
    mte3: Pipe,
    /// V (drains of L0C).
    v: Pipe,
}

/// One pipe's queue.
#[derive(Default)]
struct Pipe {
    /// When its last transfer started moving data.
    moving: f64,
    /// When its last transfer ended.
    end: f64,
}

impl Pipe {
    /// A transfer ready at `ready`, of `latency`, moving for `cycles` from no earlier than
    /// `free`: when it ends.
    fn go(&mut self, ready: f64, latency: f64, cycles: f64, free: f64) -> f64 {
        let start = (ready.max(self.moving) + latency).max(self.end).max(free);
        self.moving = start;
        self.end = start + cycles;
        self.end
    }
}

/// Which pipe a GM transfer takes.
#[derive(Clone, Copy)]
enum Way {
    Load,
    Store,
}

impl Queues<'_> {
    /// A GM transfer ready at `ready` of `bursts` bursts of `len` bytes: when its data has
    /// moved.
    fn gm(&mut self, way: Way, ready: f64, bursts: i64, len: i64) -> f64 {
        let f = self.f;
        let cycles = f.charged(bursts, len) / f.bw + bursts as f64 * f.burst;
        let pipe = match way {
            Way::Load => &mut self.mte2,
            Way::Store => &mut self.mte3,
        };
        self.gm = pipe.go(ready, f.latency, cycles, self.gm);
        self.gm
    }

    /// `bytes` from UB to L1 (MTE3), ready at `ready`: when they are in L1.
    fn hop(&mut self, ready: f64, bytes: i64) -> f64 {
        let (bw, latency) = self.f.ub_l1;
        self.mte3.go(ready, latency, bytes as f64 / bw, 0.0)
    }

    /// A tile of `bytes` drained from L0C to UB, ready at `ready`.
    fn drain(&mut self, ready: f64, bytes: f64) -> f64 {
        let (bw, latency) = self.f.l0c_ub;
        self.v.go(ready, latency, bytes / bw, 0.0)
    }
}

/// A UB stage ring of two slots: when each slot was last emptied.
#[derive(Default)]
struct Ring {
    freed: [f64; 2],
    next: usize,
}

impl Ring {
    /// A piece of `bursts` bursts of `len` bytes (`bytes` in all) through the ring into L1:
    /// when it is there.
    fn piece(&mut self, q: &mut Queues, bursts: i64, len: i64, bytes: i64) -> f64 {
        let slot = self.next % 2;
        self.next += 1;
        let staged = q.gm(Way::Load, self.freed[slot], bursts, len);
        self.freed[slot] = q.hop(staged, bytes);
        self.freed[slot]
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
    let mut q = Queues {
        f,
        gm: 0.0,
        mte2: Pipe::default(),
        mte3: Pipe::default(),
        v: Pipe::default(),
    };
    let (mut band_ring, mut weight_ring) = (Ring::default(), Ring::default());
    // the weights: per chunk (block of output channels, or group of positions) its units
    // (window positions, or output channels) and per unit its bursts and their bytes
    let (weight_chunks, unit): (Vec<i64>, (i64, i64)) = if transposed_weights(cv) {
        let per = weight_chunk_positions(cv, t.nrs);
        let chunks = (0..cdiv(cv.rs(), per))
            .map(|j| per.min(cv.rs() - j * per))
            .collect();
        let unit = if ks >= cv.k {
            (1, cv.c * cv.k * 2)
        } else {
            (cv.c, ks * 2)
        };
        (chunks, unit)
    } else {
        (
            vec![ks / t.kblocks; t.kblocks as usize],
            (1, cv.rs() * cv.c * 2),
        )
    };
    let load_weights = |q: &mut Queues, ring: &mut Ring, units: i64| -> f64 {
        let (bursts, len) = unit;
        if t.weight_piece > 0 || !t.streamed {
            let piece = if t.streamed { t.weight_piece } else { units };
            let mut end = 0.0;
            for from in (0..units).step_by(piece as usize) {
                let n = piece.min(units - from);
                let (b, l) = if bursts == 1 {
                    (1, n * len)
                } else {
                    (n * bursts, len)
                };
                end = ring.piece(q, b, l, n * bursts * len);
            }
            end
        } else if transposed_weights(cv) {
            q.gm(Way::Load, 0.0, units * bursts, len)
        } else {
            // nd2nz straight to L1: a burst per output channel
            q.gm(Way::Load, 0.0, units, len)
        }
    };
    // the band: per chunk, its tiles' pixels (a tile's alone when pointwise)
    let group = t.band_group.max(1);
    let chunks = cdiv(tiles, group);
    let load_band = |q: &mut Queues, ring: &mut Ring, g: i64| -> f64 {
        let last = (g * group + group - 1).min(tiles - 1);
        let parts: Vec<i64> = match mode {
            BandMode::Rows => vec![(g * group..=last).map(|u| adds[u as usize]).sum()],
            BandMode::Pixels => (g * group..=last).map(|u| adds[u as usize]).collect(),
        };
        let mut end = 0.0;
        for px in parts {
            if t.band_piece > 0 || !t.streamed {
                let piece = if t.streamed { t.band_piece } else { px.max(1) };
                for from in (0..px).step_by(piece as usize) {
                    let bytes = piece.min(px - from) * cv.c * 2;
                    end = ring.piece(q, 1, bytes, bytes);
                }
            } else {
                // nd2nz straight to L1: a burst per pixel
                end = q.gm(Way::Load, 0.0, px, cv.c * 2);
            }
        }
        end
    };
    let mut weights_ready = vec![0.0; weight_chunks.len()];
    let mut chunk_ready = vec![0.0; chunks as usize];
    if t.streamed {
        weights_ready[0] = load_weights(&mut q, &mut weight_ring, weight_chunks[0]);
        chunk_ready[0] = load_band(&mut q, &mut band_ring, 0);
        for j in 1..weight_chunks.len() {
            weights_ready[j] = load_weights(&mut q, &mut weight_ring, weight_chunks[j]);
        }
    } else {
        // the prologue: everything in, converted, before the first tile
        let mut end = 0.0f64;
        for g in 0..chunks {
            end = end.max(load_band(&mut q, &mut band_ring, g));
        }
        for &units in &weight_chunks {
            end = end.max(load_weights(&mut q, &mut weight_ring, units));
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
    let mut cube_free = 0.0f64;
    let (mut drains, mut stores): (Vec<f64>, Vec<f64>) = (vec![], vec![]);
    for (g, &px) in pixels.iter().enumerate() {
        let rows = ((px + 15) / 16 * 16) as f64;
        let chunk = g as i64 / group;
        if t.streamed && g as i64 % group == 0 && chunk + 1 < chunks {
            chunk_ready[chunk as usize + 1] = load_band(&mut q, &mut band_ring, chunk + 1);
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
        // the drain into UB once the store two back has left its slot
        let slot = if g >= 2 { stores[g - 2] } else { 0.0 };
        drains.push(q.drain(at.max(slot), rows * ks as f64 * 4.0));
        // the store: one burst (whole pixel rows), a burst per pixel (NHWC, part of K) or
        // per channel (NCHW)
        let (bursts, len) = match orient {
            Orientation::PixelRows if ks >= cv.k => (1, px * cv.k * 4),
            Orientation::PixelRows => (px, ks * 4),
            Orientation::ChannelRows => (ks, px * 4),
        };
        stores.push(q.gm(Way::Store, drains[g], bursts, len));
    }
    stores.last().copied().unwrap_or(0.0)
}
