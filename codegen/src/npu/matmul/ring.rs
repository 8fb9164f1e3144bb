//! The ring schedule: output tiles double-buffered in L0C, K in chunks through
//! double-buffered L1 slots and sub-steps through double-buffered L0 slots.
//!
//! Per core, for each of its output tiles (`TM x TN` of C, one batch element):
//! - MTE2 loads a K chunk of A (`TM x KC`) and of B (`KC x TN`) from GM into an L1 slot,
//!   ND -> NZ (zero-filled to whole fractals);
//! - MTE1 stages each `TK`-deep sub-step into an L0 slot: A's rows NZ -> zZ (one load per
//!   row of fractals), B NZ -> nZ (transposing loads, one per K fractal);
//! - M multiplies into the tile's L0C slot (the first sub-step overwrites);
//! - V converts the finished tile L0C (NZ) -> UB (ND), MTE3 stores it to GM.
//!
//! With `split` parts (split-K, for products with fewer tiles than cores), each tile's K
//! chunks are cut into `split` parts, each part a work item of its own dealt to the cores
//! like a tile: every core first zeroes its share of C (`sync_all` after it, as an atomic
//! add needs its destination written), and each item adds its partial tile into C with an
//! atomic store (the simulator's `SetAtomicAdd`); the parts' sums then meet in any order,
//! which `--reorder-reductions` allows. Only an f32 C without an epilogue is split.
//!
//! Every resource is a ring of two slots with a "full" flag one way and a "free" flag the
//! other; the free flags are set once before the program and waited for at its end. Tiles
//! at the edges have fewer rows, columns or K values: sizes are expressions of the tile,
//! and where a size sets a layout's pitch (K and N of the L0 operands) the sub-step is
//! emitted once per pitch that occurs.

use super::tail::{Buffers, SpanAt, Tail};
use super::{c, dtype, index, round16, row_stride, Grid, Names, F, FRACTAL};
use crate::npu::recognise::Matmul;
use crate::npu::vector::emit::{Place, Rows};
use crate::npu::NpuError;
use npu_sim::builder::Builder;
use npu_sim::program::{CmpOp, DType, Dma, DmaMode, Expr, Pipe, Tier};
use npu_sim::Machine;

/// The sizes of the ring schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
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
    /// Parts each tile's K chunks are cut into, each a work item whose partial tile is
    /// added into C atomically (1: no split-K). More than 1 only without a panel, for an f32
    /// C without an epilogue, with the chunks a multiple of it.
    pub split: i64,
}

impl Ring {
    /// C's tiles in UB: two slots of each (see `CTiles`).
    pub(super) fn c_tiles(&self) -> super::CTiles {
        super::CTiles {
            slots: 2,
            elems: self.tm * self.tn,
            sums: 2,
            rows: self.tm,
        }
    }

    /// One line for the program's header.
    pub fn describe(&self) -> String {
        let panel = if self.panel {
            " A's rows of a tile stay in L1 while a core works on their band."
        } else {
            ""
        };
        let split = if self.split > 1 {
            format!(
                " Each tile's K is split into {} parts computed on their own, their sums added into C atomically.",
                self.split
            )
        } else {
            String::new()
        };
        format!(
            "Ring schedule: C tiles of {} x {} double-buffered in L0C, K in chunks of {} through L1 and steps of {} through L0.{panel}{split}",
            self.tm, self.tn, self.kc, self.tk
        )
    }
}

/// What one tile's code needs: its position and extents, its slot (L0C and UB), and
/// whether it starts a row band on its core (its A panel must be loaded).
struct Tile {
    at: super::Tile,
    slot: Expr,
    new_band: Expr,
    /// The first K value of its part (the first `mmad` overwrites the L0C slot).
    k_first: Expr,
}

/// The flag rings: (source pipe, destination pipe) of every "free" flag pre-set twice.
const FREE: [(Pipe, Pipe); 4] = [
    (Pipe::Mte1, Pipe::Mte2),
    (Pipe::M, Pipe::Mte1),
    (Pipe::V, Pipe::M),
    (Pipe::Mte3, Pipe::V),
];

/// The program of a matrix product on `cores` cores, not yet finished.
pub(super) fn program(
    mm: &Matmul,
    machine: &Machine,
    t: Ring,
    tail: Option<&Tail>,
) -> Result<Builder, NpuError> {
    let cores = machine.cores as i64;
    let mut b = Builder::new();
    let chunks = (mm.product.k + t.kc - 1) / t.kc;
    let a_slots = if t.panel { chunks } else { 2 };
    let (a, bt, ct) = super::tensors(&mut b, mm)?;
    let (ta, tb) = (dtype(mm.product.a.elem)?, dtype(mm.product.b.elem)?);
    let (c_ub, c_out, bufs) = super::c_buffers(&mut b, mm, tail, t.c_tiles())?;
    let epilogue = tail.zip(bufs.as_ref());
    let names = Names {
        a,
        b: bt,
        c: ct,
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
        c_ub,
        c_out,
    };
    let grid = Grid::new(mm, t.tm, t.tn, cores).split(t.split);
    if t.split > 1 {
        zero_c(&mut b, mm, &names, t, machine);
    }
    for (src, dst) in FREE {
        b.set_flag(src, dst, 0);
        b.set_flag(src, dst, 1);
    }
    // chunks per work item
    let per = chunks / t.split;
    b.repeat("t", grid.per_core, |b, tt| {
        let item = grid.index(&tt);
        b.when("mine", item.clone().cmp(CmpOp::Lt, grid.items()), |b| {
            let (idx, part) = if t.split > 1 {
                (item.clone() / t.split, Some(item % t.split))
            } else {
                (item, None)
            };
            let tile = Tile {
                at: grid.tile(mm, idx),
                slot: tt.clone() % 2,
                new_band: grid.new_band(&tt),
                k_first: part.clone().map_or(c(0), |p| p * (per * t.kc)),
            };
            b.repeat("kc", per, |b, kc| {
                let chunk = tt.clone() * per + kc.clone();
                // the chunk of K (the part's own, split)
                let kc = part.clone().map_or(kc.clone(), |p| p * per + kc);
                load(b, mm, &names, t, &tile, &kc, &chunk);
                steps(b, mm, &names, t, &tile, &kc, &chunk);
            });
            drain(b, mm, &names, t, &tile, epilogue);
        });
    });
    for (src, dst) in FREE {
        b.wait_flag(src, dst, 0);
        b.wait_flag(src, dst, 1);
    }
    if let Some((tail, bufs)) = epilogue {
        tail.finish(&mut b, bufs);
    }
    Ok(b)
}

/// Split-K's start: each core writes zeros over its share of C (from UB slot 0 of `c_ub`,
/// zeroed by V), then every core waits for all of them (`sync_all`), so that the atomic
/// adds find C written.
fn zero_c(b: &mut Builder, mm: &Matmul, n: &Names, t: Ring, machine: &Machine) {
    let total: i64 = mm.c.shape.iter().product();
    let piece = t.tm * t.tn;
    {
        let unit = crate::npu::vector::emit::Unit::of(machine, piece);
        let mut e = crate::npu::vector::emit::Emitter::new(b, unit);
        e.b.origin(Some("zeros for C"));
        let place = Place {
            buf: n.c_ub,
            offset: c(0),
        };
        e.fill(&place, DType::F32, piece);
        e.b.origin(None);
    }
    b.set_flag(Pipe::V, Pipe::Mte3, 0);
    b.wait_flag(Pipe::V, Pipe::Mte3, 0);
    let share = crate::npu::shares::share(total, machine.cores as i64, 4);
    crate::npu::shares::store_shares(
        b,
        (n.c, mm.c.shape.len()),
        n.c_ub,
        (total, share, piece),
        "C zeroed before the atomic adds",
    );
}

/// MTE2: chunk `kc` of A and B into L1 slot `chunk % 2`, ND -> NZ.
fn load(b: &mut Builder, mm: &Matmul, n: &Names, t: Ring, tile: &Tile, kc: &Expr, chunk: &Expr) {
    let slot = chunk.clone() % 2;
    let k0 = kc.clone() * t.kc;
    let len = (c(mm.product.k) - k0.clone()).min(t.kc);
    b.wait_flag(Pipe::Mte1, Pipe::Mte2, slot.clone());
    let load_a = |b: &mut Builder| {
        let src = b.at(
            n.a,
            index(
                &mm.product.a,
                &tile.at.batch,
                tile.at.row0.clone(),
                k0.clone(),
            ),
        );
        let dst = b.at(n.a_l1, [a_slot(t, &slot, kc), c(0)]);
        b.origin(Some("A chunk, ND -> NZ"));
        b.push(
            Dma::new(dst, src, tile.at.rows.clone(), len.clone())
                .strides(row_stride(&mm.product.a), t.tm)
                .mode(DmaMode::Nd2nz),
        );
    };
    if t.panel {
        b.when("band", tile.new_band.clone(), load_a);
    } else {
        load_a(b);
    }
    let src = b.at(
        n.b,
        index(&mm.product.b, &tile.at.batch, k0, tile.at.col0.clone()),
    );
    let dst = b.at(n.b_l1, [slot.clone(), c(0)]);
    b.origin(Some("B chunk, ND -> NZ"));
    b.push(
        Dma::new(dst, src, len, tile.at.cols.clone())
            .strides(row_stride(&mm.product.b), t.kc)
            .mode(DmaMode::Nd2nz),
    );
    b.origin(None);
    b.set_flag(Pipe::Mte2, Pipe::Mte1, slot);
}

/// Where chunk `kc` of A is in L1: its ring slot, or its place in the resident panel. (The
/// B chunk's "full" flag covers it either way: a flag fires after every earlier
/// instruction of its pipe, and A is loaded first.)
fn a_slot(t: Ring, slot: &Expr, kc: &Expr) -> Expr {
    if t.panel {
        kc.clone()
    } else {
        slot.clone()
    }
}

/// MTE1 and M: the chunk's sub-steps, then the L1 slot handed back to MTE2.
fn steps(b: &mut Builder, mm: &Matmul, n: &Names, t: Ring, tile: &Tile, kc: &Expr, chunk: &Expr) {
    let slot = chunk.clone() % 2;
    b.wait_flag(Pipe::Mte2, Pipe::Mte1, slot.clone());
    let a_at = a_slot(t, &slot, kc);
    let subs = t.kc / t.tk;
    // The last sub-step of the product may be shallower, the last column of tiles narrower:
    // each pitch that occurs gets its own copy of the sub-step.
    let k_last = (mm.product.k - 1) / t.tk * t.tk;
    let k_tail = round16(mm.product.k - k_last);
    let n_tail = round16(mm.product.n - (mm.product.n - 1) / t.tn * t.tn);
    b.repeat("sub", subs, |b, sub| {
        let k0 = kc.clone() * t.kc + sub.clone() * t.tk;
        let step = chunk.clone() * subs + sub.clone();
        let in_range = k0.clone().cmp(CmpOp::Lt, mm.product.k);
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
            let last = tile.at.last_col.clone();
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
    t: Ring,
    tile: &Tile,
    (slot, a_at, sub, step, k0): (&Expr, &Expr, &Expr, &Expr, &Expr),
    kd: i64,
    nd: i64,
) {
    let l0 = step.clone() % 2;
    b.wait_flag(Pipe::M, Pipe::Mte1, l0.clone());
    // A: row of fractals bi (NZ: fractal (fk, bi) at (fk * tm/16 + bi) * 256) -> zZ row bi.
    let fk0 = sub.clone() * (t.tk / F);
    b.repeat("bi", tile.at.rows16.clone() / F, |b, bi| {
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
    let first = k0.clone().cmp(CmpOp::Eq, tile.k_first.clone());
    b.when("fresh", first.clone(), |b| {
        b.wait_flag(Pipe::V, Pipe::M, tile.slot.clone())
    });
    b.wait_flag(Pipe::Mte1, Pipe::M, l0.clone());
    let cc = b.at(n.c_l0, [tile.slot.clone(), c(0)]);
    let a = b.at(n.a_l0, [l0.clone(), c(0)]);
    let bb = b.at(n.b_l0, [l0.clone(), c(0)]);
    b.origin(Some("C[m, n] += A[m, k] * B[k, n]"));
    b.mmad(cc, a, bb, (tile.at.rows16.clone(), kd, nd), first);
    b.origin(None);
    b.set_flag(Pipe::M, Pipe::Mte1, l0);
}

/// The index in C (and in every input of its shape) of `tile`'s first element.
fn tile_index(mm: &Matmul, tile: &Tile) -> Vec<Expr> {
    index(
        &mm.c,
        &tile.at.batch,
        tile.at.row0.clone(),
        tile.at.col0.clone(),
    )
}

/// M hands the tile to V, which converts it (L0C NZ -> UB ND) and computes the vector
/// epilogue, if any; MTE3 stores it.
fn drain(
    b: &mut Builder,
    mm: &Matmul,
    n: &Names,
    t: Ring,
    tile: &Tile,
    epilogue: Option<(&Tail, &Buffers)>,
) {
    let s = tile.slot.clone();
    let slot = s.clone() * (t.tm * t.tn);
    b.set_flag(Pipe::M, Pipe::V, s.clone());
    b.wait_flag(Pipe::M, Pipe::V, s.clone());
    b.wait_flag(Pipe::Mte3, Pipe::V, s.clone());
    let dst = b.at(n.c_ub, [slot.clone()]);
    let src = b.at(n.c_l0, [s.clone(), c(0)]);
    b.origin(Some("C tile, L0C NZ -> UB ND"));
    b.push(super::out_of_l0c(
        mm,
        (dst, src),
        (tile.at.rows.clone(), tile.at.cols.clone()),
        (tile.at.rows16.clone(), c(t.tn)),
    ));
    b.origin(None);
    if let Some((tail, bufs)) = epilogue {
        let at = |buf| Place {
            buf,
            offset: slot.clone(),
        };
        let rows = Rows {
            count: tile.at.rows.clone(),
            max: t.tm,
        };
        let gm = SpanAt {
            index: tile_index(mm, tile),
            cols: tile.at.cols.clone(),
            row_stride: row_stride(&mm.c),
            // consecutive tiles alternate
            slot: tile.slot.clone(),
        };
        tail.span(
            b,
            bufs,
            (&at(n.c_ub), &at(n.c_out)),
            (rows, &gm),
            &tile.at.col0,
        );
    }
    b.set_flag(Pipe::V, Pipe::M, s.clone());
    b.set_flag(Pipe::V, Pipe::Mte3, s.clone());
    b.wait_flag(Pipe::V, Pipe::Mte3, s.clone());
    let dst = b.at(n.c, tile_index(mm, tile));
    let src = b.at(n.c_out, [slot]);
    let store = Dma::new(dst, src, tile.at.rows.clone(), tile.at.cols.clone())
        .strides(t.tn, row_stride(&mm.c));
    if t.split > 1 {
        b.origin(Some("C tile's partial sums, added atomically"));
        b.push(store.atomic_add());
    } else {
        b.origin(Some("C tile store"));
        b.push(store);
    }
    b.origin(None);
    b.set_flag(Pipe::Mte3, Pipe::V, s);
}
