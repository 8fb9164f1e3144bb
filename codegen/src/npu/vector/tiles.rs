//! The rows per group (tile), chosen analytically, not by simulation.
//!
//! Every candidate `R` (a multiple of the row granule that keeps GM stores apart, at most
//! the repeats of an instruction when groups have columns, at most the busiest core's rows)
//! whose buffers fit UB is costed over the busiest core's groups. Per group: its GM cycles
//! `G` (every burst charged its whole 512-byte segments at the core's share of GM bandwidth,
//! plus a cycle per burst) and its vector cycles `V` (the emission's own count). With two
//! slots a group's load can only start when the vector unit has finished the group before
//! the previous one, and takes the GM latency `lat` before its data moves, so the pipeline
//! advances a group every `max(G, V, (lat + G + V) / 2)` cycles; the first load and the last
//! store add `2 lat + G`, and per-row outputs kept for the core's rows their one store. The
//! cheapest wins, the larger on a tie.

use npu_sim::Machine;

/// A GM transfer every group makes: a load or a store of one array's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Bytes per row in GM.
    pub row_bytes: i64,
    /// Whether a group's rows move as one burst (rows back to back in UB as in GM).
    pub one_burst: bool,
}

/// What the choice needs to know of the kernel and the program.
pub struct Model<'a> {
    /// The machine.
    pub machine: &'a Machine,
    /// The number of rows.
    pub rows: i64,
    /// Groups start on multiples of this many rows.
    pub granule: i64,
    /// Cores' rows start on multiples of this many rows (a multiple of `granule`).
    pub core_granule: i64,
    /// The most rows a group may have.
    pub max_rows: i64,
    /// The GM transfers of a group.
    pub transfers: Vec<Transfer>,
    /// Vector cycles of a group of `r` rows.
    pub vector: &'a dyn Fn(i64) -> f64,
    /// UB bytes the program needs with groups of `R` rows.
    pub ub: &'a dyn Fn(i64) -> u64,
    /// Cycles of the stores made once per core after its last group of `R` rows (`None`:
    /// groups of `R` rows cannot make them).
    pub after: &'a dyn Fn(i64) -> Option<f64>,
}

/// The rows per group chosen, with the model's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tiling {
    /// Rows per group.
    pub rows: i64,
    /// Groups on the busiest core.
    pub groups: i64,
    /// The model's cycles for the busiest core.
    pub cycles: f64,
    /// Its GM cycles.
    pub gm_cycles: f64,
    /// Its vector cycles.
    pub vector_cycles: f64,
    /// UB bytes used.
    pub ub_bytes: u64,
}

/// Rows of the busiest core when `rows` rows are dealt in granules over `cores` cores.
pub fn busiest(rows: i64, granule: i64, cores: i64) -> i64 {
    let granules = (rows + granule - 1) / granule;
    ((granules + cores - 1) / cores * granule).min(rows)
}

/// A core's share of `m`'s GM bandwidth in bytes per cycle, and the longest latency of its
/// paths to or from GM.
pub fn gm_share(m: &Machine) -> (f64, f64) {
    let gm = &m.gm;
    let rate = gm
        .bytes_per_cycle_per_core
        .min(gm.bytes_per_cycle_total / m.cores as f64);
    let lat = (m.paths.iter())
        .filter(|p| p.touches_gm())
        .map(|p| p.latency)
        .fold(0.0, f64::max);
    (rate, lat)
}

impl Model<'_> {
    /// GM cycles of one group of `r` rows starting at row `row0`.
    fn gm(&self, row0: i64, r: i64) -> f64 {
        let gm = &self.machine.gm;
        let (mut charged, mut bursts) = (0u64, 0u64);
        for t in &self.transfers {
            let b = t.row_bytes as u64;
            if t.one_burst {
                charged += gm.charged(row0 as u64 * b, r as u64 * b);
                bursts += 1;
            } else {
                for i in 0..r as u64 {
                    charged += gm.charged((row0 as u64 + i) * b, b);
                }
                bursts += r as u64;
            }
        }
        let (rate, _) = gm_share(self.machine);
        charged as f64 / rate + bursts as f64 * gm.burst_cycles
    }

    /// The model's figures for groups of `r` rows (`None` if they do not fit UB or are not
    /// a size a group may have).
    pub fn cost(&self, r: i64) -> Option<Tiling> {
        let mine = busiest(self.rows, self.core_granule, self.machine.cores as i64);
        // groups after the first start on the granule (a single group may be any size)
        let starts_apart = r % self.granule == 0 || r >= mine;
        if r < 1 || r > self.max_rows || !starts_apart {
            return None;
        }
        let after = (self.after)(r)?;
        let ub_bytes = (self.ub)(r);
        let capacity = self.machine.tier(npu_sim::program::Tier::Ub)?.capacity;
        if ub_bytes > capacity {
            return None;
        }
        let groups = (mine + r - 1) / r;
        let (_, lat) = gm_share(self.machine);
        let (mut gm, mut vector, mut cycles) = (0.0, 0.0, 0.0);
        for k in 0..groups {
            let rows = r.min(mine - k * r);
            let (g, v) = (self.gm(k * r, rows), (self.vector)(rows));
            gm += g;
            vector += v;
            cycles += g.max(v).max((lat + g + v) / 2.0);
        }
        cycles += 2.0 * lat + self.gm(0, r.min(mine)) + after;
        Some(Tiling {
            rows: r,
            groups,
            cycles,
            gm_cycles: gm,
            vector_cycles: vector,
            ub_bytes,
        })
    }

    /// The cheapest group size that fits, if any.
    pub fn choose(&self) -> Option<Tiling> {
        let mine = busiest(self.rows, self.core_granule, self.machine.cores as i64);
        let g = self.granule;
        let top = self.max_rows.min((mine + g - 1) / g * g).max(g) / g;
        // every multiple of the granule, or a geometric series when there are very many
        let mut candidates: Vec<i64> = if top <= 512 {
            (1..=top).map(|k| k * g).collect()
        } else {
            let mut c: Vec<i64> = (0..).map(|e| 1i64 << e).take_while(|&k| k <= top).collect();
            c.push(top);
            c.into_iter().map(|k| k * g).collect()
        };
        // all of the busiest core's rows in one group
        candidates.push(mine);
        let mut best: Option<Tiling> = None;
        for r in candidates {
            if let Some(t) = self.cost(r) {
                if best.is_none_or(|b| t.cycles <= b.cycles) {
                    best = Some(t);
                }
            }
        }
        best
    }
}
