//! The analytic model that chooses a product's schedule and sizes, never the simulator.
//!
//! Every candidate of both schedules whose buffers fit the machine's tiers (and whose flags
//! fit its flag ids) gets a lower bound on its busiest core's cycles: the larger of the
//! core's cube cycles (start-ups included) and its GM cycles (bytes charged in whole
//! segments plus a cycle per burst, at the core's share of GM bandwidth; A counted once per
//! row band the core's tiles load). The candidates are then costed in the order of their
//! bounds until the next bound exceeds the best cost found:
//!
//! - a ring candidate ([`Ring`]) costs its bound plus the time before the first `mmad` (the
//!   first chunk's GM latency and data, its staging) and after the last (one tile's
//!   conversion, GM latency and store);
//! - a strips candidate ([`Strips`]) costs the end of a timeline of the pipes of each core
//!   whose sequence of tiles differs (`timeline`).
//!
//! The cheapest wins; ties go to the larger tile.

mod figures;
mod timeline;

use super::ring::Ring;
use super::strips::Strips;
use super::{c_ub_bytes, round16, row_stride, stores_apart, Grid, Schedule, F};
use crate::npu::recognise::Matmul;
use figures::Figures;
use npu_sim::machine::Mem;
use npu_sim::Machine;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

impl Schedule {
    /// The schedule for a product on `machine`: the cheapest candidate by the model, `None`
    /// when no tile fits the machine's buffers.
    pub fn choose(mm: &Matmul, machine: &Machine) -> Option<Schedule> {
        Schedule::ranked(mm, machine)
            .into_iter()
            .next()
            .map(|(_, s)| s)
    }

    /// The model's cycles for the busiest core of `mm` scheduled as `self` on `machine`.
    pub fn predict(&self, mm: &Matmul, machine: &Machine) -> f64 {
        Model::new(mm, machine).cost(self)
    }

    /// The candidates costed by the model, cheapest first (those whose bound exceeds the
    /// cheapest cost are left out).
    pub fn ranked(mm: &Matmul, machine: &Machine) -> Vec<(f64, Schedule)> {
        let mut model = Model::new(mm, machine);
        let mut bounded: Vec<(f64, Schedule)> = Vec::new();
        for s in candidates(mm, machine) {
            bounded.push((model.bound(&s), s));
        }
        bounded.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut costed: Vec<(f64, Schedule)> = Vec::new();
        let mut best = f64::INFINITY;
        for (bound, s) in bounded {
            if bound > best {
                break;
            }
            let c = model.cost(&s);
            best = best.min(c);
            costed.push((c, s));
        }
        let area = |s: &Schedule| {
            let (tm, tn) = s.tile();
            tm * tn
        };
        costed.sort_by(|a, b| a.0.total_cmp(&b.0).then(area(&b.1).cmp(&area(&a.1))));
        costed
    }
}

/// A tier's capacity in bytes (0 if the machine lacks it).
fn capacity(machine: &Machine, m: Mem) -> i64 {
    machine.tiers.get(&m).map_or(0, |t| t.capacity as i64)
}

/// Every candidate of both schedules that fits the machine: tiles in multiples of 16 up to
/// 256, steps of 16 to 128 K values; for the ring, chunks of one, two or four steps, with
/// and without a resident A band; for the strips, 1, 2 or 4 strips (whole or in halves),
/// chunks of 3 to 16 steps or the whole K, 0, 1, 2 or 4 final steps, a ring of 2.
fn candidates(mm: &Matmul, machine: &Machine) -> Vec<Schedule> {
    let c_bytes = mm.c.elem.size_bytes() as i64;
    let cap = |m: Mem| capacity(machine, m);
    let cores = machine.cores.max(1) as i64;
    let ids = machine.flag_ids as i64;
    let k16 = round16(mm.product.k);
    let sizes = |extent: i64| {
        (1..=16)
            .map(|k| k * F)
            .filter(move |&v| v <= round16(extent))
    };
    // C's rows off GM blocks are stored by tiles of whole rows: those wider than 256 too
    let whole = round16(mm.product.n);
    let widths: Vec<i64> = (sizes(mm.product.n).chain((whole > 16 * F).then_some(whole)))
        .filter(|&tn| stores_apart(mm, tn, c_bytes))
        .collect();
    let mut out = Vec::new();
    for tm in sizes(mm.product.m) {
        for &tn in &widths {
            for tk in [16, 32, 64, 128].into_iter().filter(|&tk| tk <= k16) {
                if 2 * tm * tk * 2 > cap(Mem::L0a) || 2 * tk * tn * 2 > cap(Mem::L0b) {
                    continue;
                }
                for steps in [4, 2, 1] {
                    let kc = ((mm.product.k + tk - 1) / tk * tk).min(steps * tk);
                    let chunks = (mm.product.k + kc - 1) / kc;
                    for (panel, split) in ring_variants(mm, machine, (tm, tn), chunks) {
                        let ring = Ring {
                            tm,
                            tn,
                            tk,
                            kc,
                            panel,
                            split,
                        };
                        let a_l1 = if panel { chunks } else { 2 } * tm * kc * 2;
                        let fits = a_l1 + 2 * kc * tn * 2 <= cap(Mem::L1)
                            && 2 * tm * tn * 4 <= cap(Mem::L0c)
                            && c_ub_bytes(
                                mm,
                                machine,
                                tn,
                                ring.c_tiles(),
                                ring.workspace(mm).is_some(),
                            )
                            .is_some_and(|b| b <= cap(Mem::Ub));
                        // a resident band is rewritten behind the ring's flags, which needs
                        // two chunks
                        if fits && !(panel && chunks < 2) {
                            out.push(Schedule::Ring(ring));
                        }
                    }
                }
                let steps = (mm.product.k + tk - 1) / tk;
                let chunks: BTreeSet<i64> = [3, 4, 6, 8, 16, steps]
                    .into_iter()
                    .filter(|&c| c <= steps)
                    .collect();
                for (strips, halves) in [(1, 1), (2, 1), (2, 2), (4, 1), (4, 2)] {
                    for &chunk in &chunks {
                        for last in [0, 1, 2, 4] {
                            let s = Strips {
                                tm,
                                tn,
                                tk,
                                strips,
                                chunk,
                                halves,
                                ring: 2,
                                last,
                            };
                            if s.fits(mm, machine) && s.check(mm, cores, ids).is_ok() {
                                out.push(Schedule::Strips(s));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The ring schedule's variants for tiles `tm x tn` and `chunks` K chunks: with and without
/// A's panel and, when there are fewer tiles than cores, split-K into 2 to 16 parts that
/// divide the chunks, without a panel, as long as the parts do not outnumber the cores
/// twice (through an f32 workspace when C is not the f32 sums themselves).
fn ring_variants(
    mm: &Matmul,
    machine: &Machine,
    (tm, tn): (i64, i64),
    chunks: i64,
) -> Vec<(bool, i64)> {
    let mut out = vec![(false, 1), (true, 1)];
    let cores = machine.cores.max(1) as i64;
    let tiles = Grid::new(mm, tm, tn, cores).tiles;
    if tiles < cores {
        for split in [2, 4, 8, 16] {
            if chunks % split == 0 && tiles * split <= 2 * cores {
                out.push((false, split));
            }
        }
    }
    out
}

/// The model of one product on one machine, with what it has worked out per tile shape.
struct Model<'a> {
    mm: &'a Matmul,
    machine: &'a Machine,
    shapes: HashMap<(i64, i64), Rc<Shape>>,
}

/// What the model knows of one tile shape.
struct Shape {
    /// The machine's figures with as many cores at work as have tiles.
    f: Figures,
    /// The distinct sequences of tiles of the cores: for each tile, whether it loads A.
    patterns: BTreeSet<Vec<bool>>,
}

impl<'a> Model<'a> {
    fn new(mm: &'a Matmul, machine: &'a Machine) -> Model<'a> {
        Model {
            mm,
            machine,
            shapes: HashMap::new(),
        }
    }

    /// What the model knows of tiles `tm x tn`.
    fn shape(&mut self, (tm, tn): (i64, i64)) -> Rc<Shape> {
        let (mm, machine) = (self.mm, self.machine);
        (self.shapes.entry((tm, tn)))
            .or_insert_with(|| {
                let cores = machine.cores.max(1) as i64;
                let grid = Grid::new(mm, tm, tn, cores);
                let active = (grid.tiles + grid.per_core - 1) / grid.per_core.max(1);
                let patterns = (0..cores)
                    .map(|core| {
                        let first = core * grid.per_core;
                        let mine = (grid.tiles - first).clamp(0, grid.per_core);
                        (0..mine)
                            .map(|tt| tt == 0 || (first + tt) % grid.nt == 0)
                            .collect()
                    })
                    .collect();
                Rc::new(Shape {
                    f: Figures::new(machine, active),
                    patterns,
                })
            })
            .clone()
    }

    /// A lower bound of the busiest core's cycles under `s`: the larger of its cube cycles
    /// and its GM cycles, on the core that needs the most.
    fn bound(&mut self, s: &Schedule) -> f64 {
        if let Schedule::Ring(r) = s {
            if r.split > 1 {
                return self.split_bound(r);
            }
        }
        let mm = self.mm;
        let (tm, tn) = s.tile();
        let shape = self.shape((tm, tn));
        let f = &shape.f;
        let (a_row, b_row, c_row) = row_bytes(mm);
        let c_bytes = mm.c.elem.size_bytes() as i64;
        let (tk, kc) = match s {
            Schedule::Ring(r) => (r.tk, r.kc),
            Schedule::Strips(st) => (st.tk, st.chunk * st.tk),
        };
        let chunks = (mm.product.k + kc - 1) / kc;
        let steps = (mm.product.k + tk - 1) / tk;
        let a = chunks as f64 * f.gm(tm, kc.min(mm.product.k) * 2, 0, a_row);
        let (b, strip, reloads) = match s {
            Schedule::Ring(r) => (
                chunks as f64 * f.gm(kc.min(mm.product.k), tn * 2, 0, b_row),
                tm,
                !r.panel,
            ),
            Schedule::Strips(st) => (
                steps as f64 * f.gm(tk.min(mm.product.k), tn * 2, 0, b_row),
                st.strip_rows(),
                false,
            ),
        };
        let store = f.gm(tm, tn * c_bytes, 0, c_row) + seconds(mm, f, tm, tn);
        let per_tile = ((tm / strip) * steps) as f64 * f.mmad(strip, tk, tn);
        (shape.patterns.iter())
            .map(|bands| {
                let tiles = bands.len() as f64;
                let loads = if reloads {
                    tiles
                } else {
                    bands.iter().filter(|&&b| b).count() as f64
                };
                (loads * a + tiles * (b + store)).max(tiles * per_tile)
            })
            .fold(0.0, f64::max)
    }

    /// [`Model::bound`] of a ring with split-K: the busiest core's work items, each `chunks
    /// / split` chunks of A and B and an atomic store against its cube cycles, with as many
    /// cores at work as have items.
    fn split_bound(&self, r: &Ring) -> f64 {
        let mm = self.mm;
        let cores = self.machine.cores.max(1) as i64;
        let grid = Grid::new(mm, r.tm, r.tn, cores).split(r.split);
        let active = (grid.items() + grid.per_core - 1) / grid.per_core.max(1);
        let f = Figures::new(self.machine, active);
        let (a_row, b_row, c_row) = row_bytes(mm);
        let kc = r.kc.min(mm.product.k);
        let per = (mm.product.k + r.kc - 1) / r.kc / r.split;
        // a tile is at most C's rows and columns
        let (tm, tn) = (r.tm.min(mm.product.m), r.tn.min(mm.product.n));
        let gm = per as f64 * (f.gm(tm, kc * 2, 0, a_row) + f.gm(kc, tn * 2, 0, b_row))
            + f.gm(tm, tn * 4, 0, c_row);
        let cube = (per * (r.kc / r.tk)) as f64 * f.mmad(r.tm, r.tk, r.tn);
        grid.per_core as f64 * gm.max(cube)
    }

    /// Split-K's pass through the workspace on the busiest core: a `sync_all` (a GM round
    /// trip), then per tile of its share the workspace's slices of f32 sums loaded and
    /// added, the epilogue or the conversion on V and the store, one after the other.
    fn pass(&self, r: &Ring, f: &Figures, slices: i64) -> f64 {
        let mm = self.mm;
        let grid = Grid::new(mm, r.tm, r.tn, self.machine.cores.max(1) as i64);
        let c_row = row_bytes(mm).2;
        let w_row = c_row / mm.c.elem.size_bytes() as i64 * 4;
        let c_bytes = mm.c.elem.size_bytes() as i64;
        let vector = match mm.epilogue.vector() {
            Some(_) => epilogue(mm, self.machine, r.tn, r.tm),
            // a ReLU and a conversion, 64 f32 lanes a repeat
            None => 2.0 * (self.machine.vector.startup + (r.tm * r.tn) as f64 / 64.0),
        };
        let add = self.machine.vector.startup + (r.tm * r.tn) as f64 / 64.0;
        // a tile is at most C's rows and columns
        let (tm, tn) = (r.tm.min(mm.product.m), r.tn.min(mm.product.n));
        let per_tile = f.load_latency
            + slices as f64 * f.gm(tm, tn * 4, 0, w_row)
            + (slices - 1) as f64 * add
            + seconds(mm, f, tm, tn)
            + vector
            + f.store_latency
            + f.gm(tm, tn * c_bytes, 0, c_row);
        f.load_latency + grid.per_core as f64 * per_tile
    }

    /// The model's cycles of the busiest core under `s`.
    fn cost(&mut self, s: &Schedule) -> f64 {
        let mm = self.mm;
        let (tm, tn) = s.tile();
        let shape = self.shape((tm, tn));
        let f = &shape.f;
        let (a_row, b_row, c_row) = row_bytes(mm);
        let c_bytes = mm.c.elem.size_bytes() as i64;
        match s {
            Schedule::Ring(r) => {
                let kc = r.kc.min(mm.product.k);
                let fill = f.load_latency
                    + f.gm(tm, kc * 2, 0, a_row)
                    + f.gm(kc, tn * 2, 0, b_row)
                    + f.stage((tm + tn) * r.tk * 2);
                let tail = f.drain(tm * tn * 4)
                    + epilogue(mm, self.machine, tn, tm)
                    + seconds(mm, f, tm, tn)
                    + f.store_latency
                    + f.gm(tm, tn * c_bytes, 0, c_row);
                // split-K first zeroes each core's share of C (or of the workspace's
                // slices), then waits for every core
                let zero = if r.split > 1 {
                    let slices = r.workspace(mm).unwrap_or(1);
                    let total: i64 = slices * mm.c.shape.iter().product::<i64>();
                    let cores = self.machine.cores.max(1) as i64;
                    f.store_latency + f.gm(1, total * 4 / cores, 0, 0) + f.load_latency
                } else {
                    0.0
                };
                let pass = r
                    .workspace(mm)
                    .map_or(0.0, |slices| self.pass(r, f, slices));
                self.bound(s) + fill + tail + zero + pass
            }
            Schedule::Strips(st) => {
                let mut costs =
                    timeline::costs(st, mm.product.k, f, (a_row, b_row, c_row), c_bytes);
                let sr = st.strip_rows();
                let second = seconds(mm, f, sr, tn);
                costs.store_row += second / sr as f64;
                costs.epilogue_row = (epilogue(mm, self.machine, tn, sr) + second) / sr as f64;
                let steps = st.steps(mm.product.k);
                (shape.patterns.iter())
                    .map(|bands| timeline::core_cycles(st, steps, f, &costs, bands))
                    .fold(0.0, f64::max)
            }
        }
    }
}

/// GM cycles of the second tiles (a residual) and per-row vectors a vector epilogue loads with `rows` rows of
/// a tile `tn` wide (0 without any). The vector unit waits for their data; their latency
/// overlaps the span before (a ring of two slots).
fn seconds(mm: &Matmul, f: &Figures, rows: i64, tn: i64) -> f64 {
    let Some(epi) = mm.epilogue.vector() else {
        return 0.0;
    };
    let stride = row_stride(&mm.c);
    let tiles: f64 = (epi.second_tiles().iter())
        .map(|&a| {
            let e = epi.kernel.array(a).elem.size_bytes() as i64;
            f.gm(rows, tn * e, 0, stride * e)
        })
        .sum();
    // a per-row vector's span: one burst of f32
    tiles + epi.row_vectors().len() as f64 * f.gm(1, rows * 4, 0, 0)
}

/// The vector unit's cycles for a vector epilogue over `rows` rows of tiles `tn` wide (0
/// without one).
fn epilogue(mm: &Matmul, machine: &Machine, tn: i64, rows: i64) -> f64 {
    (mm.epilogue.vector())
        .and_then(|epi| super::tail::Tail::new(epi, machine, tn))
        .map_or(0.0, |t| t.cycles(rows))
}

/// The byte distance between two rows of A, of B and of C in GM.
fn row_bytes(mm: &Matmul) -> (i64, i64, i64) {
    let bytes = |op: &crate::npu::recognise::Operand| row_stride(op) * op.elem.size_bytes() as i64;
    (bytes(&mm.product.a), bytes(&mm.product.b), bytes(&mm.c))
}
