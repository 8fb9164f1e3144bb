//! A matrix product as an NPU program: output tiles distributed over the cores, K in chunks
//! through double-buffered L1 slots and sub-steps through double-buffered L0 slots, every
//! layout conversion explicit, strict synchronisation.
//!
//! Per core, for each of its output tiles (`TM x TN` of C, one batch element):
//! - MTE2 loads a K chunk of A (`TM x KC`) and of B (`KC x TN`) from GM into an L1 slot,
//!   ND -> NZ (zero-filled to whole fractals);
//! - MTE1 stages each `TK`-deep sub-step into an L0 slot: A's rows NZ -> zZ (one load per
//!   row of fractals), B NZ -> nZ (transposing loads, one per K fractal);
//! - M multiplies into the tile's L0C slot (the first sub-step overwrites);
//! - V converts the finished tile L0C (NZ) -> UB (ND), MTE3 stores it to GM.
//!
//! Every resource is a ring of two slots with a "full" flag one way and a "free" flag the
//! other; the free flags are set once before the program and waited for at its end. Tiles
//! at the edges have fewer rows, columns or K values: sizes are expressions of the tile,
//! and where a size sets a layout's pitch (K and N of the L0 operands) the sub-step is
//! emitted once per pitch that occurs.

use super::recognise::{Dim, Matmul, Operand};
use super::NpuError;
use npu_sim::builder::Builder;
use npu_sim::machine::Mem;
use npu_sim::program::{
    BufferId, CmpOp, DType, Direction, Dma, DmaMode, Expr, Pipe, TensorId, Tier,
};
use npu_sim::Machine;

/// Rows and columns of a fractal.
const F: i64 = 16;
/// Elements of a 16-bit fractal.
const FRACTAL: i64 = F * F;

/// The tile sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    /// Rows of a C tile.
    pub tm: i64,
    /// Columns of a C tile.
    pub tn: i64,
    /// K values of one L0 sub-step.
    pub tk: i64,
    /// K values of one L1 chunk (a multiple of `tk`).
    pub kc: i64,
    /// Whether A's `TM x K` panel stays in L1 while a core computes the tiles of one row
    /// band (loaded with the band's first tile), instead of coming with every tile.
    pub panel: bool,
}

fn round16(v: i64) -> i64 {
    (v + F - 1) / F * F
}

impl Tiles {
    /// The tiles for a product on `machine`, chosen by an analytic model rather than by
    /// simulation: every `TM x TN` in multiples of 16 up to 256 whose double-buffered
    /// operands fit L1, L0A, L0B, L0C and UB is costed as the busiest core's larger of cube
    /// cycles and GM cycles (bytes charged in whole segments, plus a cycle per burst, at the
    /// core's share of GM bandwidth), and the cheapest wins (the larger on a tie). K goes
    /// through L0 16, 32 or 64 deep and through L1 in chunks of one to four sub-steps (four
    /// 64-deep ones make rows of 512 bytes, a GM segment), whichever fits.
    pub fn choose(mm: &Matmul, machine: &Machine, c_bytes: i64) -> Option<Tiles> {
        let mut best: Option<(f64, i64, Tiles)> = None;
        for tk in [64, 32, 16].map(|d: i64| d.min(round16(mm.k))) {
            for steps in [4, 2, 1] {
                let kc = ((mm.k + tk - 1) / tk * tk).min(steps * tk);
                Tiles::consider(mm, machine, c_bytes, (tk, kc), &mut best);
            }
        }
        best.map(|(_, _, t)| t)
    }

    /// Costs every `TM x TN` (and with or without a resident panel) for one K blocking.
    fn consider(
        mm: &Matmul,
        machine: &Machine,
        c_bytes: i64,
        (tk, kc): (i64, i64),
        best: &mut Option<(f64, i64, Tiles)>,
    ) {
        let cap = |m: Mem| machine.tiers.get(&m).map_or(0, |t| t.capacity as i64);
        let (cube_rate, gm) = (
            machine.cube.m0 * machine.cube.n0 * machine.cube.k0,
            &machine.gm,
        );
        let segment = gm.segment.max(1) as i64;
        let charged = |row_bytes: i64| (row_bytes + segment - 1) / segment * segment;
        let batches: i64 = mm.batch.iter().map(|(_, e)| e).product();
        let cores = machine.cores.max(1) as i64;
        for tm in (1..=16).map(|k| k * F).filter(|&v| v <= round16(mm.m)) {
            for tn in (1..=16).map(|k| k * F).filter(|&v| v <= round16(mm.n)) {
                let chunks = (mm.k + kc - 1) / kc;
                for panel in [false, true] {
                    let a_l1 = if panel {
                        chunks * tm * kc * 2
                    } else {
                        2 * tm * kc * 2
                    };
                    let fits = a_l1 + 2 * kc * tn * 2 <= cap(Mem::L1)
                        && 2 * tm * tk * 2 <= cap(Mem::L0a)
                        && 2 * tk * tn * 2 <= cap(Mem::L0b)
                        && 2 * tm * tn * 4 <= cap(Mem::L0c)
                        && 2 * tm * tn * c_bytes <= cap(Mem::Ub);
                    // a resident panel is rewritten behind the ring's flags, which needs two
                    // chunks
                    if !fits || (panel && chunks < 2) || !stores_apart(mm, tn, c_bytes) {
                        continue;
                    }
                    let nt = (mm.n + tn - 1) / tn;
                    let tiles = batches * ((mm.m + tm - 1) / tm) * nt;
                    let mine = (tiles + cores - 1) / cores;
                    // the panels a core loads: one per row band its consecutive tiles touch
                    let panels = if panel {
                        ((mine + nt - 1) / nt + 1).min(mine)
                    } else {
                        mine
                    };
                    let a = chunks * tm * charged(kc * 2);
                    let per_tile = chunks * kc * charged(tn * 2) + tm * charged(tn * c_bytes);
                    let bytes = panels * a + mine * per_tile;
                    let bursts = panels * chunks * tm + mine * (chunks * kc + tm);
                    let gm_cycles = (bytes as f64 / gm.bytes_per_cycle_per_core)
                        + bursts as f64 * gm.burst_cycles;
                    let cube_cycles = (mine * tm * tn * round16(mm.k) / cube_rate as i64) as f64;
                    let cost = gm_cycles.max(cube_cycles);
                    let better = (best.as_ref())
                        .is_none_or(|(c, area, _)| cost < *c || (cost == *c && tm * tn > *area));
                    if better {
                        let tiles = Tiles {
                            tm,
                            tn,
                            tk,
                            kc,
                            panel,
                        };
                        *best = Some((cost, tm * tn, tiles));
                    }
                }
            }
        }
    }
}

/// Whether tiles `tn` wide store C in 32-byte blocks of their own (the hardware writes GM in
/// whole blocks, so two stores into one block race unless ordered): C's rows must start on
/// a block, or a tile must hold whole rows. (Row bands start on a block: a tile's rows are a
/// multiple of 16.)
fn stores_apart(mm: &Matmul, tn: i64, c_bytes: i64) -> bool {
    (mm.n * c_bytes) % npu_sim::hazards::BLOCK as i64 == 0 || tn >= mm.n
}

/// The program's tensors and buffers.
struct Names {
    a: TensorId,
    b: TensorId,
    c: TensorId,
    a_l1: BufferId,
    b_l1: BufferId,
    a_l0: BufferId,
    b_l0: BufferId,
    c_l0: BufferId,
    c_ub: BufferId,
}

/// What one tile's code needs: its position and extents as expressions.
struct Tile {
    batch: Vec<Expr>,
    row0: Expr,
    col0: Expr,
    rows: Expr,
    /// `rows` rounded up to whole fractals (the NZ height in L0C).
    rows16: Expr,
    cols: Expr,
    /// Whether this is the last column of tiles (whose width may be a partial tile).
    last_col: Expr,
    /// The tile's slot (L0C and UB).
    slot: Expr,
    /// Whether the tile starts a row band on its core (its A panel must be loaded).
    new_band: Expr,
}

fn c(v: i64) -> Expr {
    Expr::Const(v)
}

/// The flag rings: (source pipe, destination pipe) of every "free" flag pre-set twice.
const FREE: [(Pipe, Pipe); 4] = [
    (Pipe::Mte1, Pipe::Mte2),
    (Pipe::M, Pipe::Mte1),
    (Pipe::V, Pipe::M),
    (Pipe::Mte3, Pipe::V),
];

/// The simulator's type of an element type (the NPU has no f64).
pub fn dtype(e: frontend::ir::ElemType) -> Result<DType, NpuError> {
    use frontend::ir::ElemType::*;
    Ok(match e {
        F16 => DType::F16,
        BF16 => DType::Bf16,
        F32 => DType::F32,
        I8 => DType::I8,
        I32 => DType::I32,
        F64 => return Err(NpuError::Unsupported("the NPU has no f64".into())),
    })
}

/// The element offset between two rows of an operand's tensor.
fn row_stride(op: &Operand) -> i64 {
    let d = op.dims.iter().position(|&d| d == Dim::Row).unwrap_or(0);
    op.shape[d + 1..].iter().product()
}

/// The index of (batch, row, col) in an operand's tensor.
fn index(op: &Operand, batch: &[Expr], row: Expr, col: Expr) -> Vec<Expr> {
    (op.dims.iter())
        .map(|d| match d {
            Dim::Batch(j) => batch[*j].clone(),
            Dim::Row => row.clone(),
            Dim::Col => col.clone(),
        })
        .collect()
}

/// The NPU program of a matrix product on `cores` cores.
pub fn program(
    mm: &Matmul,
    elems: [frontend::ir::ElemType; 3],
    cores: i64,
    t: Tiles,
) -> Result<npu_sim::Program, NpuError> {
    if !stores_apart(mm, t.tn, elems[2].size_bytes() as i64) {
        return Err(NpuError::Unsupported(format!(
            "C's rows ({} values) do not start on 32-byte blocks, so tiles {} wide would store into shared blocks",
            mm.n, t.tn
        )));
    }
    let batch_bytes = mm.m * mm.n * elems[2].size_bytes() as i64;
    if mm.batch.iter().any(|(_, e)| *e > 1) && batch_bytes % npu_sim::hazards::BLOCK as i64 != 0 {
        return Err(NpuError::Unsupported(format!(
            "C's batch elements ({} x {} values) do not start on 32-byte blocks: cores would store into shared blocks",
            mm.m, mm.n
        )));
    }
    let mut b = Builder::new();
    let chunks = (mm.k + t.kc - 1) / t.kc;
    let a_slots = if t.panel { chunks } else { 2 };
    let shape = |op: &Operand| op.shape.iter().map(|&e| e as u64).collect::<Vec<u64>>();
    let (ta, tb, tc) = (dtype(elems[0])?, dtype(elems[1])?, dtype(elems[2])?);
    let names = Names {
        a: b.tensor(&mm.a.name, ta, &shape(&mm.a), Direction::In),
        b: b.tensor(&mm.b.name, tb, &shape(&mm.b), Direction::In),
        c: b.tensor(&mm.c.name, tc, &shape(&mm.c), Direction::Out),
        a_l1: b.buffer(
            "a_l1",
            Tier::L1,
            ta,
            &[a_slots as u64, (t.tm * t.kc) as u64],
        ),
        b_l1: b.buffer("b_l1", Tier::L1, tb, &[2, (t.kc * t.tn) as u64]),
        a_l0: b.buffer("a_l0", Tier::L0a, ta, &[2, (t.tm * t.tk) as u64]),
        b_l0: b.buffer("b_l0", Tier::L0b, tb, &[2, (t.tk * t.tn) as u64]),
        c_l0: b.buffer("c_l0", Tier::L0c, DType::F32, &[2, (t.tm * t.tn) as u64]),
        c_ub: b.buffer("c_ub", Tier::Ub, tc, &[2, (t.tm * t.tn) as u64]),
    };
    let (mt, nt) = ((mm.m + t.tm - 1) / t.tm, (mm.n + t.tn - 1) / t.tn);
    let batches: i64 = mm.batch.iter().map(|(_, e)| e).product();
    let tiles = batches * mt * nt;
    let per_core = (tiles + cores - 1) / cores;
    for (src, dst) in FREE {
        b.set_flag(src, dst, 0);
        b.set_flag(src, dst, 1);
    }
    b.repeat("t", per_core, |b, tt| {
        // consecutive tiles of a core share their row band (tiles are numbered along rows)
        let idx = Expr::Core * per_core + tt.clone();
        b.when("mine", idx.clone().cmp(CmpOp::Lt, tiles), |b| {
            let tn = idx.clone() % nt;
            let tm = idx.clone() / nt % mt;
            let mut rest = idx.clone() / (nt * mt);
            let mut batch = vec![c(0); mm.batch.len()];
            for (j, (_, e)) in mm.batch.iter().enumerate().rev() {
                batch[j] = rest.clone() % *e;
                rest = rest / *e;
            }
            let row0 = tm * t.tm;
            let col0 = tn.clone() * t.tn;
            let rows = (c(mm.m) - row0.clone()).min(t.tm);
            let tile = Tile {
                rows16: (rows.clone() + (F - 1)) / F * F,
                rows,
                cols: (c(mm.n) - col0.clone()).min(t.tn),
                last_col: tn.cmp(CmpOp::Eq, nt - 1),
                batch,
                row0,
                col0,
                slot: tt.clone() % 2,
                new_band: (tt.clone().cmp(CmpOp::Eq, 0))
                    .select(1, (idx.clone() % nt).cmp(CmpOp::Eq, 0)),
            };
            b.repeat("kc", chunks, |b, kc| {
                let chunk = tt.clone() * chunks + kc.clone();
                load(b, mm, &names, t, &tile, &kc, &chunk);
                steps(b, mm, &names, t, &tile, &kc, &chunk);
            });
            drain(b, mm, &names, t, &tile);
        });
    });
    for (src, dst) in FREE {
        b.wait_flag(src, dst, 0);
        b.wait_flag(src, dst, 1);
    }
    b.finish().map_err(|d| {
        NpuError::Internal(format!(
            "the generated program does not assemble: {}",
            d.message
        ))
    })
}

/// MTE2: chunk `kc` of A and B into L1 slot `chunk % 2`, ND -> NZ.
fn load(b: &mut Builder, mm: &Matmul, n: &Names, t: Tiles, tile: &Tile, kc: &Expr, chunk: &Expr) {
    let slot = chunk.clone() % 2;
    let k0 = kc.clone() * t.kc;
    let len = (c(mm.k) - k0.clone()).min(t.kc);
    b.wait_flag(Pipe::Mte1, Pipe::Mte2, slot.clone());
    let load_a = |b: &mut Builder| {
        let src = b.at(
            n.a,
            index(&mm.a, &tile.batch, tile.row0.clone(), k0.clone()),
        );
        let dst = b.at(n.a_l1, [a_slot(t, &slot, kc), c(0)]);
        b.origin(Some("A chunk, ND -> NZ"));
        b.push(
            Dma::new(dst, src, tile.rows.clone(), len.clone())
                .strides(row_stride(&mm.a), t.tm)
                .mode(DmaMode::Nd2nz),
        );
    };
    if t.panel {
        b.when("band", tile.new_band.clone(), load_a);
    } else {
        load_a(b);
    }
    let src = b.at(n.b, index(&mm.b, &tile.batch, k0, tile.col0.clone()));
    let dst = b.at(n.b_l1, [slot.clone(), c(0)]);
    b.origin(Some("B chunk, ND -> NZ"));
    b.push(
        Dma::new(dst, src, len, tile.cols.clone())
            .strides(row_stride(&mm.b), t.kc)
            .mode(DmaMode::Nd2nz),
    );
    b.origin(None);
    b.set_flag(Pipe::Mte2, Pipe::Mte1, slot);
}

/// Where chunk `kc` of A is in L1: its ring slot, or its place in the resident panel. (The
/// B chunk's "full" flag covers it either way: a flag fires after every earlier
/// instruction of its pipe, and A is loaded first.)
fn a_slot(t: Tiles, slot: &Expr, kc: &Expr) -> Expr {
    if t.panel {
        kc.clone()
    } else {
        slot.clone()
    }
}

/// MTE1 and M: the chunk's sub-steps, then the L1 slot handed back to MTE2.
fn steps(b: &mut Builder, mm: &Matmul, n: &Names, t: Tiles, tile: &Tile, kc: &Expr, chunk: &Expr) {
    let slot = chunk.clone() % 2;
    b.wait_flag(Pipe::Mte2, Pipe::Mte1, slot.clone());
    let a_at = a_slot(t, &slot, kc);
    let subs = t.kc / t.tk;
    // The last sub-step of the product may be shallower, the last column of tiles narrower:
    // each pitch that occurs gets its own copy of the sub-step.
    let k_last = (mm.k - 1) / t.tk * t.tk;
    let k_tail = round16(mm.k - k_last);
    let n_tail = round16(mm.n - (mm.n - 1) / t.tn * t.tn);
    b.repeat("sub", subs, |b, sub| {
        let k0 = kc.clone() * t.kc + sub.clone() * t.tk;
        let step = chunk.clone() * subs + sub.clone();
        let in_range = k0.clone().cmp(CmpOp::Lt, mm.k);
        let is_tail = k0.clone().cmp(CmpOp::Eq, k_last);
        let ks = if k_tail == t.tk {
            vec![(t.tk, in_range)]
        } else {
            let body = in_range.select(is_tail.clone().cmp(CmpOp::Eq, 0), 0);
            vec![(t.tk, body), (k_tail, is_tail)]
        };
        let ns = if n_tail == t.tn {
            vec![(t.tn, c(1))]
        } else {
            let last = tile.last_col.clone();
            vec![(t.tn, last.clone().cmp(CmpOp::Eq, 0)), (n_tail, last)]
        };
        for (kd, k_cond) in &ks {
            for (nd, n_cond) in &ns {
                let cond = k_cond.clone().select(n_cond.clone(), 0);
                b.when("pitch", cond, |b| {
                    sub_step(b, n, t, tile, (&slot, &a_at, &sub, &step, &k0), *kd, *nd);
                });
            }
        }
    });
    b.set_flag(Pipe::Mte1, Pipe::Mte2, slot);
}

/// One sub-step with K depth `kd` and N width `nd` (multiples of 16): stage into L0 slot
/// `step % 2`, multiply into the tile's L0C slot.
fn sub_step(
    b: &mut Builder,
    n: &Names,
    t: Tiles,
    tile: &Tile,
    (slot, a_at, sub, step, k0): (&Expr, &Expr, &Expr, &Expr, &Expr),
    kd: i64,
    nd: i64,
) {
    let l0 = step.clone() % 2;
    b.wait_flag(Pipe::M, Pipe::Mte1, l0.clone());
    // A: row of fractals bi (NZ: fractal (fk, bi) at (fk * tm/16 + bi) * 256) -> zZ row bi.
    let fk0 = sub.clone() * (t.tk / F);
    b.repeat("bi", tile.rows16.clone() / F, |b, bi| {
        let dst = b.at(n.a_l0, [l0.clone(), bi.clone() * (kd / F * FRACTAL)]);
        let src = b.at(
            n.a_l1,
            [a_at.clone(), (fk0.clone() * (t.tm / F) + bi) * FRACTAL],
        );
        b.origin(Some("A sub-step, NZ -> zZ"));
        b.push(Dma::new(dst, src, kd / F, FRACTAL).strides(t.tm * F, FRACTAL));
    });
    // B: K fractal bk (NZ: fractal (fk, bn) at (bn * kc/16 + fk) * 256) -> nZ, transposed.
    b.repeat("bk", kd / F, |b, bk| {
        let dst = b.at(n.b_l0, [l0.clone(), bk.clone() * (nd / F * FRACTAL)]);
        let src = b.at(n.b_l1, [slot.clone(), (fk0.clone() + bk) * FRACTAL]);
        b.origin(Some("B sub-step, NZ -> nZ (transposing)"));
        b.push(
            Dma::new(dst, src, nd / F, FRACTAL)
                .strides(t.kc * F, FRACTAL)
                .mode(DmaMode::Transpose),
        );
    });
    b.origin(None);
    b.set_flag(Pipe::Mte1, Pipe::M, l0.clone());
    let first = k0.clone().cmp(CmpOp::Eq, 0);
    b.when("fresh", first.clone(), |b| {
        b.wait_flag(Pipe::V, Pipe::M, tile.slot.clone())
    });
    b.wait_flag(Pipe::Mte1, Pipe::M, l0.clone());
    let cc = b.at(n.c_l0, [tile.slot.clone(), c(0)]);
    let a = b.at(n.a_l0, [l0.clone(), c(0)]);
    let bb = b.at(n.b_l0, [l0.clone(), c(0)]);
    b.origin(Some("C[m, n] += A[m, k] * B[k, n]"));
    b.mmad(cc, a, bb, (tile.rows16.clone(), kd, nd), first);
    b.origin(None);
    b.set_flag(Pipe::M, Pipe::Mte1, l0);
}

/// M hands the tile to V, which converts it (L0C NZ -> UB ND); MTE3 stores it.
fn drain(b: &mut Builder, mm: &Matmul, n: &Names, t: Tiles, tile: &Tile) {
    let s = tile.slot.clone();
    b.set_flag(Pipe::M, Pipe::V, s.clone());
    b.wait_flag(Pipe::M, Pipe::V, s.clone());
    b.wait_flag(Pipe::Mte3, Pipe::V, s.clone());
    let dst = b.at(n.c_ub, [s.clone(), c(0)]);
    let src = b.at(n.c_l0, [s.clone(), c(0)]);
    b.origin(Some("C tile, L0C NZ -> UB ND"));
    b.push(
        Dma::new(dst, src, tile.rows.clone(), tile.cols.clone())
            .strides(tile.rows16.clone(), t.tn)
            .mode(DmaMode::Nz2nd),
    );
    b.origin(None);
    b.set_flag(Pipe::V, Pipe::M, s.clone());
    b.set_flag(Pipe::V, Pipe::Mte3, s.clone());
    b.wait_flag(Pipe::V, Pipe::Mte3, s.clone());
    let dst = b.at(
        n.c,
        index(&mm.c, &tile.batch, tile.row0.clone(), tile.col0.clone()),
    );
    let src = b.at(n.c_ub, [s.clone(), c(0)]);
    b.origin(Some("C tile store"));
    b.push(
        Dma::new(dst, src, tile.rows.clone(), tile.cols.clone()).strides(t.tn, row_stride(&mm.c)),
    );
    b.origin(None);
    b.set_flag(Pipe::Mte3, Pipe::V, s);
}
