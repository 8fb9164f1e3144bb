//! The analytic model the tiles are chosen by: a timeline of one slab on one core, walked
//! in the program's order with the machine's figures (no simulation of the program).
//!
//! GM moves one transfer at a time at the core's bandwidth, each burst a cycle, bytes
//! charged in whole segments. Each pipe moves its transfers in order, a transfer's fixed
//! latency overlapping only the one before it on its pipe (MTE2 the loads; MTE3 the
//! stores and the UB -> L1 hops, in the program's order; V the drains). The slab's loads
//! go first, in the order the program issues them (the first weight chunk, the first band
//! chunk, the other weight chunks, then a band chunk ahead of each group of tiles: two ahead
//! for rows straight to L1, which wait only for the flag of the chunk two back), each
//! in pieces through a UB ring of two slots or straight to L1. A tile computes once its
//! band chunk (and, for the first tile, each block of weights) is in L1: per sub-step the
//! larger of the cube's cycles (its start-up included) and MTE1's (its operands' bytes at
//! the L1 -> L0 bandwidth and a latency). V drains a finished tile (L0C -> UB) once the
//! store two back has left UB, and MTE3 stores it. With a prologue the loads (and
//! conversions, at the vector path's bandwidth) come first, serially. A core's cycles are
//! its slabs' (one after the other); the model returns the busiest core's.

use super::geometry::{need, BandMode, Orientation};
use super::stream::SPREAD_ROWS;
use super::tiles::{transposed_weights, weight_chunk_positions, Tiles};
use super::{Activations, Conv};
use crate::npu::matmul::tail::Tail;
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
    /// Vector f16 lanes a repeat and start-up per instruction.
    vector: (f64, f64),
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
            vector: (m.vector.bytes_per_repeat as f64 / 2.0, m.vector.startup),
        }
    }

    /// The vector unit's cycles to spread `rows` rows of `cv`'s channels over zeroed blocks
    /// of 16 (none when the channels are a multiple of 16): zeros in instructions of at
    /// most 255 repeats, then per block of channels a move of up to `SPREAD_ROWS` rows a
    /// repeat each.
    fn spread(&self, cv: &Conv, rows: i64) -> f64 {
        if cv.c % 16 == 0 || rows <= 0 {
            return 0.0;
        }
        let (lanes, startup) = self.vector;
        let zeros = (rows * cv.c1() * 16) as f64 / lanes;
        let dups = (zeros / 255.0).ceil();
        let moves = cdiv(rows, SPREAD_ROWS) as f64;
        zeros.ceil() + dups * startup + cv.c1() as f64 * (rows as f64 + moves * startup)
    }

    /// Bytes charged for `run`: every segment each burst touches, whole (the bursts'
    /// offsets within a segment repeat, so one period of them is counted).
    fn charged(&self, run: Run) -> f64 {
        let seg = self.segment;
        let period = seg / gcd(run.stride.rem_euclid(seg), seg);
        let counted = run.count.min(period).max(0);
        let segments: i64 = (0..counted)
            .map(|i| {
                let a = run.start + i * run.stride;
                (a + run.len - 1).div_euclid(seg) - a.div_euclid(seg) + 1
            })
            .sum();
        (segments * seg) as f64 * run.count as f64 / counted.max(1) as f64
    }

    /// [`Figures::charged`] averaged over the slabs of output channels: `run` of a slab's
    /// first output channel.
    fn charged_per_slab(&self, cv: &Conv, ks: i64, run: impl Fn(i64) -> Run) -> f64 {
        let slabs = cdiv(cv.k, ks);
        (0..slabs).map(|j| self.charged(run(j * ks))).sum::<f64>() / slabs as f64
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A GM transfer's bursts: `count` of `len` bytes, `stride` bytes apart from `start`.
#[derive(Clone, Copy)]
struct Run {
    start: i64,
    count: i64,
    len: i64,
    stride: i64,
}

impl Run {
    /// One burst of `len` bytes at `start`.
    fn one(start: i64, len: i64) -> Run {
        Run {
            start,
            count: 1,
            len,
            stride: len,
        }
    }
}

/// The transfer queues: GM one transfer at a time (the core's bandwidth), and each of the
/// pipes that move data in order, a transfer's latency overlapping only the one before it
/// on its pipe.
struct Queues<'f> {
    f: &'f Figures,
    /// The convolution.
    cv: &'f Conv,
    /// When GM is next free to move data.
    gm: f64,
    /// MTE2 (loads) and MTE3 (stores and UB -> L1 hops).
    mte2: Pipe,
    mte3: Pipe,
    /// V (drains of L0C).
    v: Pipe,
    /// When the last load started and ended moving its data.
    load: (f64, f64),
    /// The last load's end before a store delayed it, and by how much.
    delayed: Option<(f64, f64)>,
}

/// One pipe's queue: two transfers in flight, the second's latency running while the
/// first moves its data.
#[derive(Default)]
struct Pipe {
    /// When the transfer before its last one ended (the last one's latency could start).
    before: f64,
    /// When its last transfer ended.
    end: f64,
}

impl Pipe {
    /// A pipe whose transfers start no earlier than `at`.
    fn from(at: f64) -> Pipe {
        Pipe {
            before: at,
            end: at,
        }
    }

    /// A transfer ready at `ready`, of `latency`, moving for `cycles` from no earlier than
    /// `free`: when it ends. Its latency starts once it is ready and the transfer two back
    /// has ended; its data moves once the one before it has ended.
    fn go(&mut self, ready: f64, latency: f64, cycles: f64, free: f64) -> f64 {
        let start = self.start(ready, latency).max(free);
        self.until(start + cycles)
    }

    /// When a transfer ready at `ready` of `latency` could start moving data.
    fn start(&self, ready: f64, latency: f64) -> f64 {
        (ready.max(self.before) + latency).max(self.end)
    }

    /// Its next transfer ends at `end`.
    fn until(&mut self, end: f64) -> f64 {
        self.before = self.end;
        self.end = end;
        end
    }
}

/// Which pipe a GM transfer takes.
#[derive(Clone, Copy)]
enum Way {
    Load,
    Store,
}

impl Queues<'_> {
    /// A GM transfer ready at `ready` of `bursts` bursts, `charged` bytes: when its data
    /// has moved.
    /// A store that starts moving while a load does shares GM with it, each at half the
    /// bandwidth until the shorter is done: the load ends later by the store's bytes or by
    /// what was left of it ([`Queues::delayed`]).
    fn gm(&mut self, way: Way, ready: f64, bursts: i64, charged: f64) -> f64 {
        let f = self.f;
        let (setup, data) = (bursts as f64 * f.burst, charged / f.bw);
        if let Way::Load = way {
            self.gm = self.mte2.go(ready, f.latency, setup + data, self.gm);
            self.load = (self.gm - data, self.gm);
            return self.gm;
        }
        let (from, to) = self.load;
        let start = (self.mte3.start(ready, f.latency) + setup).max(from);
        if start >= to {
            self.gm = self.mte3.go(ready, f.latency, setup + data, self.gm);
            return self.gm;
        }
        let left = to - start;
        let (load_end, store_end) = if data <= left {
            (to + data, start + 2.0 * data)
        } else {
            (to + left, to + data)
        };
        self.delayed = Some((to, load_end - to));
        self.load.1 = load_end;
        self.mte2.end = self.mte2.end.max(load_end);
        self.gm = load_end.max(store_end);
        self.mte3.until(store_end)
    }

    /// `bytes` from UB to L1 (MTE3), ready at `ready`: when they are in L1.
    fn hop(&mut self, ready: f64, bytes: i64) -> f64 {
        let (bw, latency) = self.f.ub_l1;
        self.mte3.go(ready, latency, bytes as f64 / bw, 0.0)
    }

    /// A tile of `bytes` drained from L0C to UB, ready at `ready`, and `epilogue` cycles of
    /// the vector unit's work on it.
    fn drain(&mut self, ready: f64, bytes: f64, epilogue: f64) -> f64 {
        let (bw, latency) = self.f.l0c_ub;
        self.v.go(ready, latency, bytes / bw + epilogue, 0.0)
    }
}

/// A UB stage ring of two slots: when each slot was last emptied.
#[derive(Default)]
struct Ring {
    freed: [f64; 2],
    next: usize,
}

impl Ring {
    /// A piece of `bursts` bursts, `charged` bytes through the ring into L1, its `rows`
    /// rows of channels spread by the vector unit if they need it: when it is there.
    fn piece(&mut self, q: &mut Queues, bursts: i64, charged: f64, rows: i64) -> f64 {
        let slot = self.next % 2;
        self.next += 1;
        let staged = q.gm(Way::Load, self.freed[slot], bursts, charged);
        let cv = q.cv;
        let spread = match q.f.spread(cv, rows) {
            0.0 => staged,
            cycles => q.v.go(staged, 0.0, cycles, 0.0),
        };
        self.freed[slot] = q.hop(spread, rows * cv.c1() * 16 * 2);
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
    // the vector epilogue's work on each tile, if any
    let tail = (cv.epilogue.vector()).and_then(|e| Tail::new(e, machine, t.ks));
    per_core * slab(cv, (&f, tail.as_ref()), orient, t, range)
}

/// When a slab's loads can start: a pointwise slab whose last tile has fewer than `mp`
/// pixels (`last`) first zeroes the rest of that tile's band slot, a UB -> L1 transfer per
/// block of input channels (MTE3), and waits for them (`barrier ALL`).
fn tail_zeros(cv: &Conv, f: &Figures, t: &Tiles, mode: BandMode, last: i64) -> f64 {
    if mode != BandMode::Pixels || last >= t.mp {
        return 0.0;
    }
    let (bw, latency) = f.ub_l1;
    let mut mte3 = Pipe::default();
    let bytes = (t.mp - last) * 16 * 2;
    (0..cv.c1()).fold(0.0, |_, _| mte3.go(0.0, latency, bytes as f64 / bw, 0.0))
}

/// The model's cycles of one slab of output pixels `range`.
fn slab(
    cv: &Conv,
    (f, tail): (&Figures, Option<&Tail>),
    orient: Orientation,
    t: &Tiles,
    range: (i64, i64),
) -> f64 {
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
    let start = tail_zeros(cv, f, t, mode, pixels.last().copied().unwrap_or(t.mp));
    let mut q = Queues {
        f,
        cv,
        gm: start,
        mte2: Pipe::from(start),
        mte3: Pipe::from(start),
        v: Pipe::from(start),
        load: (start, start),
        delayed: None,
    };
    let (mut band_ring, mut weight_ring) = (Ring::default(), Ring::default());
    // the weights: per chunk (block of output channels, or group of positions) its units
    // (window positions, or output channels) and per unit its bursts and their bytes
    let by_positions = |per: i64| -> Vec<i64> {
        (0..cdiv(cv.rs(), per))
            .map(|j| per.min(cv.rs() - j * per))
            .collect()
    };
    let (weight_chunks, unit): (Vec<i64>, (i64, i64)) = if transposed_weights(cv) {
        let unit = if ks >= cv.k {
            (1, cv.c * cv.k * 2)
        } else {
            (cv.c, ks * 2)
        };
        (by_positions(weight_chunk_positions(cv, t.nrs)), unit)
    } else if t.window_group > 0 {
        // per output channel a burst of the group's positions
        (by_positions(t.window_group), (ks, cv.c * 2))
    } else {
        (
            vec![ks / t.kblocks; t.kblocks as usize],
            (1, cv.rs() * cv.c * 2),
        )
    };
    // the GM bursts of `n` units from unit `at` (of the chunk's, from the slab's first
    // output channel `k0`)
    let weight_run = |at: i64, n: i64, k0: i64| -> Run {
        let (bursts, len) = unit;
        if transposed_weights(cv) {
            // a position's C rows of K output channels
            let start = (at * cv.c * cv.k + k0) * 2;
            match bursts {
                1 => Run::one(start, n * len),
                _ => Run {
                    start,
                    count: n * bursts,
                    len,
                    stride: cv.k * 2,
                },
            }
        } else if t.window_group > 0 {
            // every output channel's positions `at ..`: a burst per channel
            Run {
                start: (k0 * cv.rs() + at) * len,
                count: bursts,
                len: n * len,
                stride: cv.rs() * len,
            }
        } else {
            // an output channel's row: one burst of several rows through UB, a burst per
            // row (nd2nz) straight to L1
            let start = (k0 + at) * len;
            match t.weight_piece > 0 || !t.streamed {
                true => Run::one(start, n * len),
                false => Run {
                    start,
                    count: n,
                    len,
                    stride: len,
                },
            }
        }
    };
    let load_weights = |q: &mut Queues, ring: &mut Ring, first: i64, units: i64| -> f64 {
        let bursts = unit.0;
        let charged = |at: i64, n: i64| f.charged_per_slab(cv, ks, |k0| weight_run(at, n, k0));
        if t.weight_piece > 0 || !t.streamed {
            let piece = if t.streamed { t.weight_piece } else { units };
            let mut end = 0.0;
            for from in (0..units).step_by(piece as usize) {
                let n = piece.min(units - from);
                let b = if bursts == 1 { 1 } else { n * bursts };
                let rows = if transposed_weights(cv) {
                    n * cv.c
                } else {
                    n * cv.rs()
                };
                end = ring.piece(q, b, charged(first + from, n), rows);
            }
            end
        } else {
            let b = if transposed_weights(cv) {
                units * bursts
            } else if t.window_group > 0 {
                bursts
            } else {
                units
            };
            q.gm(Way::Load, 0.0, b, charged(first, units))
        }
    };
    // the band: per chunk, its tiles' pixels (a tile's alone when pointwise)
    let group = t.band_group.max(1);
    let chunks = cdiv(tiles, group);
    // the band's first input pixel in GM (of the image's), and where each tile's pixels
    // start after it
    let band_first = match mode {
        BandMode::Rows => ((range.0 / cv.ow) * cv.stride - cv.pad.top).max(0) * cv.w,
        BandMode::Pixels => range.0,
    };
    let band_at: Vec<i64> = (adds.iter())
        .scan(band_first, |at, &a| {
            *at += a;
            Some(*at - a)
        })
        .collect();
    let pixel_bytes = cv.c * 2;
    let load_band = |q: &mut Queues, ring: &mut Ring, g: i64| -> f64 {
        let last = (g * group + group - 1).min(tiles - 1);
        let parts: Vec<(i64, i64)> = match mode {
            BandMode::Rows => vec![(
                band_at[(g * group) as usize],
                (g * group..=last).map(|u| adds[u as usize]).sum(),
            )],
            BandMode::Pixels => (g * group..=last)
                .map(|u| (band_at[u as usize], adds[u as usize]))
                .collect(),
        };
        let mut end = 0.0;
        for (at, px) in parts {
            if t.band_piece > 0 || !t.streamed {
                let piece = if t.streamed { t.band_piece } else { px.max(1) };
                for from in (0..px).step_by(piece as usize) {
                    let run = Run::one(
                        (at + from) * pixel_bytes,
                        piece.min(px - from) * pixel_bytes,
                    );
                    end = ring.piece(q, 1, f.charged(run), piece.min(px - from));
                }
            } else {
                // nd2nz straight to L1: a burst per pixel
                let run = Run {
                    start: at * pixel_bytes,
                    count: px,
                    len: pixel_bytes,
                    stride: pixel_bytes,
                };
                end = q.gm(Way::Load, 0.0, px, f.charged(run));
            }
        }
        end
    };
    // how many chunks MTE2 loads ahead of the tile it is at: rows straight to L1 (the band
    // holds the slab's rows) wait only for the chunk two back to have arrived; UB pieces
    // wait for their ring's slots, a pointwise tile's pixels for its band slot
    let ahead = match (t.band_piece, mode) {
        (0, BandMode::Rows) => 2,
        _ => 1,
    };
    let mut weights_ready = vec![0.0; weight_chunks.len()];
    let mut chunk_ready = vec![0.0; chunks as usize];
    if t.streamed {
        weights_ready[0] = load_weights(&mut q, &mut weight_ring, 0, weight_chunks[0]);
        chunk_ready[0] = load_band(&mut q, &mut band_ring, 0);
        for j in 1..weight_chunks.len() {
            let first = weight_chunks[..j].iter().sum();
            weights_ready[j] = load_weights(&mut q, &mut weight_ring, first, weight_chunks[j]);
        }
        for c in 1..ahead.min(chunks) {
            chunk_ready[c as usize] = load_band(&mut q, &mut band_ring, c);
        }
    } else {
        // the prologue: everything in, converted, before the first tile
        let mut end = 0.0f64;
        for g in 0..chunks {
            end = end.max(load_band(&mut q, &mut band_ring, g));
        }
        for (j, &units) in weight_chunks.iter().enumerate() {
            let first = weight_chunks[..j].iter().sum();
            end = end.max(load_weights(&mut q, &mut weight_ring, first, units));
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
    // the sub-steps' depths in fractal columns: per channel block, groups of `nrs` window
    // positions, the last maybe fewer; pointwise, groups of `kc1` channel blocks
    let groups = |all: i64, per: i64| (0..cdiv(all, per)).map(move |j| per.min(all - j * per));
    let depths: Vec<i64> = if t.kc1 > 1 || cv.rs() == 1 {
        groups(cv.c1(), t.kc1).collect()
    } else {
        (0..cv.c1()).flat_map(|_| groups(cv.rs(), t.nrs)).collect()
    };
    let step = |m: f64, n: f64, depth: i64| -> f64 {
        let kd = (depth * 16) as f64;
        let cube = m / 16.0 * depth as f64 * n / 16.0 + f.startup;
        let mte1 = match orient {
            // two transfers (the window, the weights), each one's latency under the
            // other's data as far as it goes
            Orientation::PixelRows => {
                let (a, b) = (m * kd * 2.0 / f.l1.0, n * kd * 2.0 / f.l1.0);
                a + b + (f.l1.1 - a).max(0.0) + (f.l1.1 - b).max(0.0)
            }
            Orientation::ChannelRows => {
                let runs = ((t.mp - 1) / cv.ow + 2) as f64 * kd / 16.0;
                n * kd * 2.0 / f.l1.0 + runs * f.l1.1
            }
        };
        cube.max(mte1)
    };
    // a tile of `m` rows by `n` output channels: its sub-steps one after the other
    let tile = |m: f64, n: f64| -> f64 { depths.iter().map(|&d| step(m, n, d)).sum() };
    let mut cube_free = 0.0f64;
    let (mut drains, mut stores): (Vec<f64>, Vec<f64>) = (vec![], vec![]);
    for (g, &px) in pixels.iter().enumerate() {
        let rows = ((px + 15) / 16 * 16) as f64;
        let chunk = g as i64 / group;
        if t.streamed && g as i64 % group == 0 && chunk + ahead < chunks {
            let c = (chunk + ahead) as usize;
            chunk_ready[c] = load_band(&mut q, &mut band_ring, c as i64);
        }
        let mut at = cube_free.max(chunk_ready[chunk as usize]);
        // L0C holds two tiles: the tile two back must have drained
        if g >= 2 {
            at = at.max(drains[g - 2]);
        }
        if g == 0 && t.window_group > 0 {
            // group of window positions by group as the weights come, every channel block
            for (&ready, &positions) in weights_ready.iter().zip(&weight_chunks) {
                at = at.max(ready) + cv.c1() as f64 * step(rows, ks as f64, positions);
            }
        } else if g == 0 {
            // block by block (or group by group) as the weights come
            let blocks = weight_chunks.len() as f64;
            let kn = if transposed_weights(cv) {
                ks as f64
            } else {
                (ks / t.kblocks) as f64
            };
            let per_block = tile(rows, kn) / if transposed_weights(cv) { blocks } else { 1.0 };
            for &ready in &weights_ready {
                at = at.max(ready) + per_block;
            }
        } else {
            at += tile(rows, ks as f64);
        }
        cube_free = at;
        // the store: one burst (whole pixel rows), a burst per pixel (NHWC, part of K) or
        // per channel (NCHW), of elements `e` bytes wide
        let p = range.0 + t.start(g as i64);
        let run = |k0: i64, e: i64| match orient {
            Orientation::PixelRows if ks >= cv.k => Run::one(p * cv.k * e, px * cv.k * e),
            Orientation::PixelRows => Run {
                start: (p * cv.k + k0) * e,
                count: px,
                len: ks * e,
                stride: cv.k * e,
            },
            Orientation::ChannelRows => Run {
                start: (k0 * cv.pixels() + p) * e,
                count: ks,
                len: px * e,
                stride: cv.pixels() * e,
            },
        };
        // the drain into UB once the store two back has left its slot, and the epilogue's
        // second tiles (a residual: NHWC, like the output) are in, loaded into a ring of
        // two once the drain two back has freed their slot
        let slot = if g >= 2 { stores[g - 2] } else { 0.0 };
        let mut ready = at.max(slot);
        for e in tail.map_or(vec![], |tl| tl.second_sizes()) {
            let free = if g >= 2 { drains[g - 2] } else { 0.0 };
            let charged = f.charged_per_slab(cv, ks, |k0| run(k0, e));
            ready = ready.max(q.gm(Way::Load, free, run(0, e).count, charged));
        }
        let epilogue = tail.map_or(0.0, |tl| tl.cycles(px));
        drains.push(q.drain(ready, rows * ks as f64 * 4.0, epilogue));
        let e = cv.out_bytes();
        let charged = f.charged_per_slab(cv, ks, |k0| run(k0, e));
        stores.push(q.gm(Way::Store, drains[g], run(0, e).count, charged));
        // what waited for the load a store delayed waits longer
        if let Some((end, by)) = q.delayed.take() {
            (chunk_ready.iter_mut().chain(weights_ready.iter_mut()))
                .filter(|r| **r >= end)
                .for_each(|r| *r += by);
        }
    }
    stores.last().copied().unwrap_or(0.0)
}
