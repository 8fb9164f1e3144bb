//! The attention program's sizes, chosen analytically, not by simulation: query rows per
//! block (`rows`), keys per cube step (`keys`) and value rows per UB stage (`stage`).
//!
//! Every pair of multiples of 16 (rows at most the queries and the vector unit's repeats,
//! a head's last block shorter where they do not divide the queries; keys dividing the
//! keys counted in whole fractals, 197 as 208) whose buffers fit the tiers with their double buffering
//! ([`Tiles::bytes`]) is costed: the busiest core's blocks times the largest of what a block
//! takes on the vector unit (the softmax as the vector path emits it, and the two drains out
//! of L0C), on the cube (its `mmad`s with their start-ups) and on MTE1 (the operands staged
//! into L0A and L0B, the keys and values again for every block, each transfer the longer of
//! its data and the path's latency), plus what cannot overlap: before the first block's
//! softmax the first head's keys and the block's scores, after the last one the last
//! block's output product, drain and store. The cheapest wins, the larger on a tie. The values' stage is the
//! largest that fits UB beside the rest, twice (a head's values go GM -> UB -> L1, so that
//! their 16-row fractals are built on chip rather than from short GM bursts).

use super::recognise::Attention;
use npu_sim::machine::Mem;
use npu_sim::program::Tier;
use npu_sim::Machine;

/// Rows and columns of a fractal.
pub const F: i64 = 16;

/// The sizes of the attention program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    /// Query rows per block (a multiple of 16; a head's last block may have fewer).
    pub rows: i64,
    /// Keys per cube step (a multiple of 16 dividing the keys rounded up to 16): columns of
    /// the scores per `mmad` of the first product, depth of the second's.
    pub keys: i64,
    /// Rows of values per stage through UB (a multiple of 16 dividing the keys rounded up
    /// to 16).
    pub stage: i64,
    /// Blocks of scores in L0C: 2 lets the cube compute the next block's scores before the
    /// vector unit has drained this one's; 1 leaves room for larger blocks.
    pub scores: i64,
}

/// The bytes each tier needs for the sizes (UB apart from the softmax's own buffers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes {
    /// Keys and values of two heads, two query blocks and two probability blocks.
    pub l1: u64,
    /// Two step slots of the left operand.
    pub l0a: u64,
    /// Two step slots of the right operand.
    pub l0b: u64,
    /// One or two score blocks and two output blocks (f32).
    pub l0c: u64,
    /// The output block's drain (f32), two stages of values and, with keys off multiples of
    /// 16, the zeros of the keys' last fractal (whole repeats of the vector unit).
    pub ub: u64,
}

impl Tiles {
    /// What the buffers of these sizes take in each tier.
    pub fn bytes(&self, att: &Attention) -> Bytes {
        let (m, n, d, dv) = (self.rows, att.np(), att.d(), att.dv());
        let t = self.keys;
        let b = |e: i64, size: i64| (e * size) as u64;
        Bytes {
            l1: b(2 * (n * d + n * dv) + 2 * m * d + 2 * m * n, 2),
            l0a: b(2 * m * d.max(t), 2),
            l0b: b(2 * t * d.max(dv), 2),
            l0c: b(self.scores * m * n + 2 * m * dv, 4),
            ub: b(m * dv, 4) + b(2 * self.stage * dv, 2) + b(zeros(att), 2),
        }
    }
}

/// Elements of the zeros that fill the keys' last fractal past the last key (in UB, whole
/// repeats of 128 f16 lanes; none when the keys are a multiple of 16).
pub fn zeros(att: &Attention) -> i64 {
    crate::npu::up((att.np() - att.n()) * att.d(), 128)
}

/// What the choice needs beyond the kernel and the machine.
pub struct Model<'a> {
    /// The block.
    pub att: &'a Attention,
    /// The machine.
    pub machine: &'a Machine,
    /// The softmax's vector cycles for a block of `rows` rows.
    pub vector: &'a dyn Fn(i64) -> f64,
    /// The softmax's UB bytes for a block of `rows` rows.
    pub ub: &'a dyn Fn(i64) -> u64,
}

/// The sizes chosen with the model's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// The sizes.
    pub tiles: Tiles,
    /// Blocks on the busiest core.
    pub blocks: i64,
    /// The model's cycles for the busiest core.
    pub cycles: f64,
    /// Its vector, cube and MTE1 cycles per block.
    pub per_block: (f64, f64, f64),
    /// UB bytes used.
    pub ub_bytes: u64,
}

impl Model<'_> {
    /// Whether the sizes' buffers fit every tier (UB with the softmax's).
    pub fn fits(&self, t: Tiles) -> Option<u64> {
        let bytes = t.bytes(self.att);
        let ub = (self.ub)(t.rows).next_multiple_of(32) + bytes.ub;
        let fits = [
            (Tier::L1, bytes.l1),
            (Tier::L0a, bytes.l0a),
            (Tier::L0b, bytes.l0b),
            (Tier::L0c, bytes.l0c),
            (Tier::Ub, ub),
        ]
        .into_iter()
        .all(|(tier, need)| self.machine.tier(tier).is_some_and(|c| need <= c.capacity));
        fits.then_some(ub)
    }

    /// The model's figures for sizes `t`, if they fit.
    pub fn cost(&self, t: Tiles) -> Option<Choice> {
        let ub_bytes = self.fits(t)?;
        let att = self.att;
        let k = t.keys as f64;
        let (n, d, dv) = (att.np() as f64, att.d() as f64, att.dv() as f64);
        let m = self.machine;
        let path = |from, to| {
            m.path(from, to).map_or((1.0, 0.0), |p| {
                (m.paths[p].bytes_per_cycle, m.paths[p].latency)
            })
        };
        let (drain_bw, drain_lat) = path(Mem::L0c, Mem::Ub);
        let (mte1_bw, mte1_lat) = path(Mem::L1, Mem::L0a);
        let steps = n / k;
        let f = F as f64;
        // a pipe starts a transfer's latency as soon as the one before it has started
        // (`npu_sim::timing`): in a run of transfers, each pair costs one latency and both
        // data phases, unless the data is longer than the latency
        let move_ = |count: f64, elems: f64| {
            let data = elems * 2.0 / mte1_bw;
            count * data.max((data + mte1_lat) / 2.0)
        };
        // a block's rows of the inputs of the scores' shape come once the vector unit is
        // done with the last block's (one buffer each): their load delays the softmax
        let (mask_bw, mask_lat) = path(Mem::Gm, Mem::Ub);
        let mask_rows = att.mask_row_bytes();
        let masks = |r: f64| match mask_rows.is_empty() {
            true => 0.0,
            false => {
                let row = |&b: &i64| m.gm.charged(0, b as u64) as f64 / mask_bw + m.gm.burst_cycles;
                mask_lat + r * mask_rows.iter().map(row).sum::<f64>()
            }
        };
        let qk_mte1 = |r: f64| move_(r / f, f * d) + move_(d / f, k * f);
        let pv_mte1 = |r: f64| move_(r / f, k * f) + move_(dv / f, k * f);
        // a block computing `rows` rows: its vector, cube and MTE1 cycles
        let block = |rows: i64| {
            let r = rows as f64;
            let vector = (self.vector)(rows)
                + 2.0 * drain_lat
                + (r * n + r * dv) * 4.0 / drain_bw
                + masks(r);
            let cube = 2.0 * steps * m.cube.startup
                + (r / f) * (d / f) * (k / f) * steps
                + (r / f) * (k / f) * (dv / f) * steps;
            (vector, cube, steps * (qk_mte1(r) + pv_mte1(r)))
        };
        // blocks are dealt to the cores in contiguous ranges; a head's last block computes
        // its queries rounded up to a fractal
        let per_head = (att.m() + t.rows - 1) / t.rows;
        let last = crate::npu::up(att.m() - (per_head - 1) * t.rows, F);
        let (full, short) = (block(t.rows), block(last));
        let cores = m.cores as i64;
        let all = att.heads * per_head;
        let (q, rem) = (all / cores, all % cores);
        let work = |c: i64| {
            let first = c * q + c.min(rem);
            (first..first + q + i64::from(c < rem))
                .map(|b| match b % per_head == per_head - 1 {
                    true => short,
                    false => full,
                })
                .map(|(v, cu, mt)| v.max(cu).max(mt))
                .sum::<f64>()
        };
        let busiest = (0..cores).map(work).fold(0.0, f64::max);
        let (gm_bw, gm_lat) = path(Mem::Gm, Mem::L1);
        // before the vector unit's first block: the first head's keys, the block's queries
        // and scores; after its last: the last block's output product, drain and store
        let r = t.rows as f64;
        // (a pipeline of two stages, MTE1's transfers and the cube's `mmad`, per step)
        let piped = |mte1: f64, cube: f64| mte1 + steps * mte1.max(m.cube.startup + cube);
        let qk = piped(qk_mte1(r), (r / f) * (d / f) * (k / f));
        let pv = piped(pv_mte1(r), (r / f) * (k / f) * (dv / f));
        // the block's queries come in a burst per row (`nd2nz`), each charged the GM
        // segments it touches
        let row = (att.d() * 2) as u64;
        let queries: f64 = (0..t.rows as u64)
            .map(|i| m.gm.charged(i * row, row) as f64 / gm_bw + m.gm.burst_cycles)
            .sum();
        let fill = gm_lat + n * d * 2.0 / gm_bw + queries + qk;
        let tail = pv + drain_lat + r * dv * 4.0 / drain_bw + gm_lat + r * dv * 4.0 / gm_bw;
        Some(Choice {
            tiles: t,
            blocks: (all + cores - 1) / cores,
            cycles: busiest + fill + tail,
            per_block: full,
            ub_bytes,
        })
    }

    /// Every choice of sizes that fits (the largest stage of values for each rows, keys and
    /// blocks of scores), cheapest first, the larger sizes and two blocks of scores first
    /// among equals.
    pub fn ranked(&self) -> Vec<Choice> {
        let att = self.att;
        let (mp, np) = (att.mp(), att.np());
        let max_rows = mp.min(self.machine.vector.max_repeat as i64);
        let divisors = |e: i64, max: i64| -> Vec<i64> {
            (F..=max.min(e))
                .step_by(F as usize)
                .filter(|k| e % k == 0)
                .collect()
        };
        let mut out = Vec::new();
        // a head's last block may be shorter; the keys and stages divide the keys
        for rows in (1..=max_rows / F).rev().map(|b| b * F) {
            for keys in divisors(np, np).into_iter().rev() {
                // the largest stage of values that fits, two blocks of scores if they fit
                let fit = [2, 1].into_iter().find_map(|scores| {
                    (divisors(np, np).into_iter().rev()).find_map(|stage| {
                        let t = Tiles {
                            rows,
                            keys,
                            stage,
                            scores,
                        };
                        self.cost(t)
                    })
                });
                out.extend(fit);
            }
        }
        // stable: the larger sizes stay first among equal costs
        out.sort_by(|a, b| a.cycles.total_cmp(&b.cycles));
        out
    }

    /// The cheapest sizes that fit, if any.
    pub fn choose(&self) -> Option<Choice> {
        self.ranked().into_iter().next()
    }
}
