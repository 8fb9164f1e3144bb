//! The machine figures the model reads, and what a GM transfer costs.

use npu_sim::machine::Mem;
use npu_sim::Machine;

/// The costs of one core of a machine, as the model sees them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Figures {
    /// GM -> L1 and UB -> GM latencies.
    pub load_latency: f64,
    pub store_latency: f64,
    /// Bytes a cycle of one core's GM transfers: the smallest of the path's bandwidth, the
    /// core's budget and its share of the total among the cores at work.
    pub gm_rate: f64,
    /// Cycles per GM burst, and the GM segment (bursts are charged whole segments).
    pub burst: f64,
    pub segment: u64,
    /// L1 -> L0A/L0B (MTE1) and L0C -> UB (V): latency and bytes a cycle.
    pub stage_latency: f64,
    pub stage_rate: f64,
    pub drain_latency: f64,
    pub drain_rate: f64,
    /// The cube's block (m0, k0, n0) and start-up.
    pub cube: (i64, i64, i64),
    pub startup: f64,
    /// Cycles of a flag.
    pub flag: f64,
}

impl Figures {
    /// The figures of `machine` when `active` cores work at once.
    pub fn new(machine: &Machine, active: i64) -> Figures {
        let path = |from: Mem, to: Mem| (machine.path(from, to)).map(|p| &machine.paths[p]);
        let rate_latency = |from: Mem, to: Mem| {
            path(from, to).map_or((1.0, 0.0), |p| (p.bytes_per_cycle, p.latency))
        };
        let (load_rate, load_latency) = rate_latency(Mem::Gm, Mem::L1);
        let (_, store_latency) = rate_latency(Mem::Ub, Mem::Gm);
        let (stage_rate, stage_latency) = rate_latency(Mem::L1, Mem::L0a);
        let (drain_rate, drain_latency) = rate_latency(Mem::L0c, Mem::Ub);
        let gm = &machine.gm;
        let gm_rate = load_rate
            .min(gm.bytes_per_cycle_per_core)
            .min(gm.bytes_per_cycle_total / active.max(1) as f64);
        Figures {
            load_latency,
            store_latency,
            gm_rate,
            burst: gm.burst_cycles,
            segment: gm.segment.max(1),
            stage_latency,
            stage_rate,
            drain_latency,
            drain_rate,
            cube: (
                machine.cube.m0 as i64,
                machine.cube.k0 as i64,
                machine.cube.n0 as i64,
            ),
            startup: machine.cube.startup,
            flag: machine.scalar.flag_cycles,
        }
    }

    /// Cycles of the data phase of a GM transfer of `rows` bursts of `len` bytes, `stride`
    /// bytes apart from byte `start` of a tensor: a cycle per burst and every segment each
    /// burst touches, whole, at the core's rate.
    pub fn gm(&self, rows: i64, len: i64, start: i64, stride: i64) -> f64 {
        let seg = self.segment as i64;
        // the pattern of segment offsets repeats after seg / gcd(stride, seg) rows
        let period = (seg / gcd(stride.rem_euclid(seg), seg)).min(rows.max(0));
        let charged = |r: i64| {
            let at = start + r * stride;
            let (first, last) = (at.div_euclid(seg), (at + len - 1).div_euclid(seg));
            (last - first + 1) * seg
        };
        let per_period: i64 = (0..period).map(charged).sum();
        let bytes = if period == 0 {
            0.0
        } else {
            per_period as f64 * rows as f64 / period as f64
        };
        rows as f64 * self.burst + bytes / self.gm_rate
    }

    /// Cycles of an on-chip staging of `bytes` (L1 -> L0), latency included.
    pub fn stage(&self, bytes: i64) -> f64 {
        self.stage_latency + bytes as f64 / self.stage_rate
    }

    /// Cycles of a conversion of `bytes` of L0C out to UB, latency included.
    pub fn drain(&self, bytes: i64) -> f64 {
        self.drain_latency + bytes as f64 / self.drain_rate
    }

    /// Cycles of one `mmad` of `m x k x n`.
    pub fn mmad(&self, m: i64, k: i64, n: i64) -> f64 {
        let (m0, k0, n0) = self.cube;
        let up = |v: i64, d: i64| (v + d - 1) / d;
        self.startup + (up(m, m0) * up(k, k0) * up(n, n0)) as f64
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if a == 0 {
        b
    } else {
        gcd(b % a, a)
    }
}
