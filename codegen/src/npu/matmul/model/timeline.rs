//! The strips schedule's cycles, from a timeline of one core's pipes.
//!
//! The model follows the program's structure step by step (every tile full-sized, the
//! busiest cores): MTE2 issues its transfers in program order, each after its GM latency
//! (overlapping the previous transfer's data, as the machine pipelines latencies) and the
//! ring slot it waits for; MTE1 stages a step once the cube has freed its L0 slot and its
//! data is in; the cube runs the strips in order, each once its half of the slot is staged
//! (and, on a tile's first step, once the strip has drained); V and MTE3 drain strips after
//! their last step. MTE2 and MTE3 share the core's GM budget: every store is charged to the
//! MTE2 transfer under way when it starts, as if the two took turns. The result is the last
//! store's end.

use super::figures::Figures;
use crate::npu::matmul::strips::Strips;
use crate::npu::matmul::F;

/// The sizes of one tile's operations, in cycles.
pub(super) struct Costs {
    /// GM data phases: A's half chunk, a B piece, and one store of `r` rows (per row).
    pub a_half: f64,
    pub b_piece: f64,
    pub store_row: f64,
    /// A's slice of one half of a step, of one strip, and B's piece, staged; per step depth
    /// (full, last).
    pub stage_half: [f64; 2],
    pub stage_strip: [f64; 2],
    pub stage_b: [f64; 2],
    /// One strip's `mmad` (full, last step).
    pub mmad: [f64; 2],
    /// One row of a strip converted out of L0C (without latency).
    pub drain_row: f64,
    /// One row's share of the vector epilogue, after its strip's L0C block is free.
    pub epilogue_row: f64,
    /// The parts in which the last tile's strips drain.
    pub parts: Vec<i64>,
}

/// The model's cycles for one core whose tiles are `bands` (for each, whether it loads A).
pub(super) fn core_cycles(s: &Strips, steps: i64, f: &Figures, c: &Costs, bands: &[bool]) -> f64 {
    let n = bands.len() * steps as usize;
    if n == 0 {
        return 0.0;
    }
    let last = s.last as usize;
    let main = n - last;
    let (ring, strips, halves) = (s.ring as usize, s.strips as usize, s.halves as usize);
    let per_half = strips / halves;
    let sr = s.strip_rows();
    let depth = |st: usize| (st == steps as usize - 1) as usize;
    let mut t = Timeline::default();
    let mut stage_b_end = vec![0.0; n];
    let mut mmad_end = vec![0.0; main + strips * last];
    let mut a_ready = vec![0.0; halves];
    let mut strip_end = vec![0.0; strips];
    let mut strip_free = vec![0.0; strips];
    let drains = strips.max(c.parts.len());
    let mut ub_free = vec![0.0; drains];
    let (mut mte1, mut m, mut tile_staged) = (0.0f64, 0.0f64, 0.0f64);
    let (final_from, final_gap) = s.final_loads(steps);
    for g in 0..main {
        let (tt, st) = (g / steps as usize, g % steps as usize);
        let band = bands[tt];
        let loads_a = band && st % s.chunk as usize == 0;
        // MTE2: a new band after another waits until MTE1 is done with the old one
        let issue = if band && tt > 0 && st == 0 {
            tile_staged
        } else {
            0.0
        };
        if loads_a {
            a_ready[0] = t.load(f, issue, c.a_half);
        }
        let from_final = st as i64 - final_from;
        if tt + 1 == bands.len() && from_final >= 0 && from_final % final_gap == 0 && s.last > 0 {
            t.load(f, issue, c.b_piece);
        }
        let slot_free = if g >= ring {
            stage_b_end[g - ring]
        } else {
            0.0
        };
        let b_ready = t.load(f, issue.max(slot_free), c.b_piece);
        if loads_a {
            for ready in a_ready.iter_mut().skip(1) {
                *ready = t.load(f, issue.max(slot_free), c.a_half);
            }
        }
        // MTE1
        let mut at = mte1.max(if g >= 2 { mmad_end[g - 2] } else { 0.0 });
        let mut half_done = vec![0.0; halves];
        for h in 0..halves {
            if loads_a {
                at = at.max(a_ready[h] + f.flag);
            }
            at += c.stage_half[depth(st)];
            if h == 0 {
                at = at.max(b_ready + f.flag) + c.stage_b[depth(st)];
                stage_b_end[g] = at;
            }
            half_done[h] = at;
        }
        mte1 = at;
        if st == steps as usize - 1 {
            tile_staged = mte1;
        }
        // M
        for q in 0..strips {
            let mut ready = if band { half_done[q / per_half] } else { mte1 } + f.flag;
            if st == 0 {
                ready = ready.max(strip_free[q] + f.flag);
            }
            m = m.max(ready) + c.mmad[depth(st)];
            strip_end[q] = m;
        }
        mmad_end[g] = m;
        // V, MTE3
        if st == steps as usize - 1 {
            for q in 0..strips {
                strip_free[q] = t.drain(f, c, (strip_end[q], q), sr, &mut ub_free);
            }
        }
    }
    // the last tile's final steps, strip by strip
    let parts = &c.parts;
    for q in 0..if last > 0 { strips } else { 0 } {
        for k in 0..last {
            let g = main + q * last + k;
            let st = steps as usize - last + k;
            mte1 = mte1.max(if g >= 2 { mmad_end[g - 2] } else { 0.0 })
                + c.stage_strip[depth(st)]
                + c.stage_b[depth(st)];
            m = m.max(mte1 + f.flag) + c.mmad[depth(st)];
            mmad_end[g] = m;
        }
        for (j, &rows) in parts.iter().enumerate() {
            t.drain(f, c, (m, j), rows, &mut ub_free);
        }
    }
    t.mte3.max(m)
}

/// MTE2, V and MTE3 of one core.
#[derive(Default)]
struct Timeline {
    /// When MTE2's last transfer ends.
    mte2: f64,
    /// When V and MTE3 are free.
    v: f64,
    mte3: f64,
    /// Stores (start, cycles) not yet charged to MTE2.
    stores: Vec<(f64, f64)>,
}

impl Timeline {
    /// A GM load of `data` cycles issued at `issue`: when it ends.
    fn load(&mut self, f: &Figures, issue: f64, mut data: f64) -> f64 {
        let start = (issue + f.load_latency).max(self.mte2);
        self.stores.retain(|&(at, cycles)| {
            let shares = at < start + data;
            if shares {
                data += cycles;
            }
            !shares
        });
        self.mte2 = start + data;
        self.mte2
    }

    /// Converts `rows` rows of a strip that is done at `done` (V waits for the last store
    /// out of UB region `id`), computes the vector epilogue over them and stores them: when
    /// the conversion ends (the strip's L0C block is free again).
    fn drain(
        &mut self,
        f: &Figures,
        c: &Costs,
        (done, id): (f64, usize),
        rows: i64,
        ub_free: &mut [f64],
    ) -> f64 {
        let start = self.v.max(done + f.flag).max(ub_free[id] + f.flag);
        let free = start + f.drain_latency + rows as f64 * c.drain_row;
        self.v = free + rows as f64 * c.epilogue_row;
        let cycles = rows as f64 * c.store_row;
        let at = (self.v + f.flag + f.store_latency).max(self.mte3);
        self.mte3 = at + cycles;
        self.stores.push((at, cycles));
        ub_free[id] = self.mte3;
        free
    }
}

/// The costs of `s`'s operations for a product of `k` (reduction), with rows of A, B and C
/// `a_row`, `b_row`, `c_row` bytes apart in GM and C's elements `c_bytes` wide.
pub(super) fn costs(
    s: &Strips,
    k: i64,
    f: &Figures,
    (a_row, b_row, c_row): (i64, i64, i64),
    c_bytes: i64,
) -> Costs {
    let steps = s.steps(k);
    let k16 = (k + F - 1) / F * F;
    let tail = k16 - (steps - 1) * s.tk;
    let kc = (s.chunk * s.tk).min(k);
    let hr = s.tm / s.halves;
    let sr = s.strip_rows();
    let per_depth = |g: &dyn Fn(i64) -> f64| [g(s.tk), g(tail)];
    Costs {
        a_half: f.gm(hr, kc * 2, 0, a_row),
        b_piece: f.gm(s.tk.min(k), s.tn * 2, 0, b_row),
        store_row: f.gm(1, s.tn * c_bytes, 0, c_row),
        stage_half: per_depth(&|d| f.stage(hr * d * 2)),
        stage_strip: per_depth(&|d| f.stage(sr * d * 2)),
        stage_b: per_depth(&|d| f.stage(d * s.tn * 2)),
        mmad: per_depth(&|d| f.mmad(sr, d, s.tn)),
        drain_row: (s.tn * 4) as f64 / f.drain_rate,
        epilogue_row: 0.0,
        parts: s.parts(c_row),
    }
}
