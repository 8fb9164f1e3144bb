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
//! which `--reorder-reductions` allows. An f32 C without an epilogue is the sums
//! themselves; any other C (f16, or with an epilogue) is split through an f32 workspace
//! (`scratch`) of `ceil(split / 2)` slices of C's elements (each padded to whole 32-byte
//! blocks, where GM transfers start): parts `2s` and `2s + 1` add into
//! slice `s` (two adds onto zero give the same bits in either order, so the result does not
//! depend on timing), and after a `sync_all` each core takes its share of the tiles through
//! V: the slices loaded GM -> UB and summed in order, the epilogue or the conversion, UB ->
//! C.
//!
//! Every resource is a ring of two slots with a "full" flag one way and a "free" flag the
//! other; the free flags are set once before the program and waited for at its end. Tiles
//! at the edges have fewer rows, columns or K values: sizes are expressions of the tile,
//! and where a size sets a layout's pitch (K and N of the L0 operands) the sub-step is
//! emitted once per pitch that occurs.

use super::tail::{Buffers, SpanAt, Tail};
use super::{c, dtype, index, round16, row_stride, Grid, Names, F, FRACTAL};
use crate::npu::epilogue::Epilogue;
use crate::npu::recognise::Matmul;
use crate::npu::vector::emit::{Emitter, Place, Rows, Unit};
use crate::npu::vector::graph::{Graph, Imm, Layout, Op, Val};
use crate::npu::NpuError;
use frontend::ir::ElemType;
use npu_sim::builder::Builder;
use npu_sim::program::{
    BinaryOp, BufferId, CmpOp, DType, Direction, Dma, DmaMode, Expr, Pipe, ScalarOp, TensorId, Tier,
};
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
    /// added atomically into C, or into an f32 workspace when C is not the f32 sums
    /// themselves (1: no split-K). More than 1 only without a panel, with the chunks a
    /// multiple of it.
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
                " Each tile's K is split into {} parts computed on their own, their f32 sums added atomically (into C, or into a workspace that a last pass turns into C).",
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

impl Ring {
    /// The slices of the f32 workspace split-K goes through (two parts add into each), if
    /// it does: when C is split and is not the f32 sums themselves (an f16 C, or an
    /// epilogue), so that adding rounded or transformed parts would be wrong.
    pub fn workspace(&self, mm: &Matmul) -> Option<i64> {
        let plain = mm.c.elem == ElemType::F32 && mm.epilogue == Epilogue::None;
        (self.split > 1 && !plain).then_some((self.split + 1) / 2)
    }
}

/// Elements of a workspace slice: C's, padded to whole 32-byte blocks of f32, so that every
/// slice starts on a block.
fn slice_elems(mm: &Matmul) -> i64 {
    crate::npu::up(mm.c.shape.iter().product(), 8)
}

/// The workspace of split-K's f32 sums: `slices` slices of C's elements (flat, each
/// [`slice_elems`] long), a `scratch` tensor named apart from the kernel's arrays.
fn declare_workspace(b: &mut Builder, mm: &Matmul, slices: i64) -> TensorId {
    let name = crate::npu::name_apart("sums".into(), |name| {
        [&mm.product.a, &mm.product.b, &mm.c]
            .iter()
            .any(|o| o.name == name)
            || (mm.epilogue.vector())
                .is_some_and(|v| v.kernel.arrays.iter().any(|a| a.name == name))
    });
    let shape = [slices as u64, slice_elems(mm) as u64];
    b.tensor(&name, DType::F32, &shape, Direction::Scratch)
}

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
    if chunks % t.split != 0 {
        return Err(NpuError::Internal(format!(
            "{chunks} chunks of K cannot be cut into {} equal parts",
            t.split
        )));
    }
    let a_slots = if t.panel { chunks } else { 2 };
    let (a, bt, ct) = super::tensors(&mut b, mm)?;
    let (ta, tb) = (dtype(mm.product.a.elem)?, dtype(mm.product.b.elem)?);
    let slices = t.workspace(mm);
    let ws = slices.map(|n| (declare_workspace(&mut b, mm, n), n));
    let (c_ub, c_out, bufs) = super::c_buffers(&mut b, mm, tail, t.c_tiles(), ws.is_some())?;
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
        let target = match ws {
            Some((ws, slices)) => (ws, slices * slice_elems(mm), 2),
            None => (names.c, mm.c.shape.iter().product(), mm.c.shape.len()),
        };
        zero_c(&mut b, target, &names, t, machine);
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
            let into = match (ws, part) {
                (Some((ws, _)), Some(p)) => Into::Workspace(ws, p / 2),
                (None, Some(_)) => Into::Atomic,
                _ => Into::C(epilogue),
            };
            drain(b, mm, &names, t, &tile, into);
        });
    });
    for (src, dst) in FREE {
        b.wait_flag(src, dst, 0);
        b.wait_flag(src, dst, 1);
    }
    if let Some(ws) = ws {
        pass(&mut b, (mm, machine), &names, t, ws, epilogue)?;
    }
    if let Some((tail, bufs)) = epilogue {
        tail.finish(&mut b, bufs);
    }
    Ok(b)
}

/// Split-K's start: each core writes zeros over its share of `target`'s `total` elements
/// (C, or the workspace; `rank` dimensions; from UB slot 0 of `c_ub`, zeroed by V), then
/// every core waits for all of them (`sync_all`), so that the atomic adds find it written.
fn zero_c(
    b: &mut Builder,
    (target, total, rank): (TensorId, i64, usize),
    n: &Names,
    t: Ring,
    machine: &Machine,
) {
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
        (target, rank),
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

/// Where a finished tile goes.
enum Into<'a> {
    /// Into C, through the copy's conversion and ReLU and the vector epilogue, if any.
    C(Option<(&'a Tail<'a>, &'a Buffers)>),
    /// A split-K part's f32 sums added into C (an f32 C without an epilogue).
    Atomic,
    /// A split-K part's f32 sums added into the workspace's slice (`Expr`), as they are.
    Workspace(TensorId, Expr),
}

/// M hands the tile to V, which copies it out of L0C (NZ -> UB ND: converted, with the
/// vector epilogue, into C; as it is into the workspace); MTE3 stores it, or adds it
/// atomically (`into`).
fn drain(b: &mut Builder, mm: &Matmul, n: &Names, t: Ring, tile: &Tile, into: Into) {
    let s = tile.slot.clone();
    let slot = s.clone() * (t.tm * t.tn);
    b.set_flag(Pipe::M, Pipe::V, s.clone());
    b.wait_flag(Pipe::M, Pipe::V, s.clone());
    b.wait_flag(Pipe::Mte3, Pipe::V, s.clone());
    let dst = b.at(n.c_ub, [slot.clone()]);
    let src = b.at(n.c_l0, [s.clone(), c(0)]);
    let sizes = (tile.at.rows.clone(), tile.at.cols.clone());
    let pitch = (tile.at.rows16.clone(), c(t.tn));
    b.origin(Some("C tile, L0C NZ -> UB ND"));
    b.push(match into {
        Into::Workspace(..) => Dma::new(dst, src, sizes.0, sizes.1)
            .strides(pitch.0, pitch.1)
            .mode(DmaMode::Nz2nd),
        _ => super::out_of_l0c(mm, (dst, src), sizes, pitch),
    });
    b.origin(None);
    if let Into::C(Some((tail, bufs))) = into {
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
    let (dst, src) = match &into {
        Into::Workspace(ws, slice) => (
            b.at(*ws, slice_index(slice.clone(), mm, tile)),
            b.at(n.c_ub, [slot]),
        ),
        _ => (b.at(n.c, tile_index(mm, tile)), b.at(n.c_out, [slot])),
    };
    let store = Dma::new(dst, src, tile.at.rows.clone(), tile.at.cols.clone())
        .strides(t.tn, row_stride(&mm.c));
    match into {
        Into::C(_) => {
            b.origin(Some("C tile store"));
            b.push(store);
        }
        Into::Atomic => {
            b.origin(Some("C tile's partial sums, added atomically"));
            b.push(store.atomic_add());
        }
        Into::Workspace(..) => {
            b.origin(Some(
                "C tile's partial sums, added atomically into the workspace",
            ));
            b.push(store.atomic_add());
        }
    }
    b.origin(None);
    b.set_flag(Pipe::Mte3, Pipe::V, s);
}

/// The flag id of MTE2 <-> V for the pass's second UB slot: the vector epilogue's second
/// tiles use ids 1 and 2 of the pair (`tail`), its per-core loads id 0 before the tiles.
const SLOT1: i64 = 3;

/// The index of a tile's first element in slice `slice` of the workspace: the slice, and
/// the element's flat offset in C.
fn slice_index(slice: Expr, mm: &Matmul, tile: &Tile) -> Vec<Expr> {
    let shape = &mm.c.shape;
    let flat = (tile_index(mm, tile).into_iter().enumerate())
        .map(|(d, i)| i * shape[d + 1..].iter().product::<i64>())
        .fold(c(0), |acc, x| acc + x);
    vec![slice, flat]
}

/// Split-K's end through the workspace: after every core's parts (`sync_all`), each core's
/// share of C's tiles (dealt like the tiles without split-K): the tile's first slice GM ->
/// UB into `c_ub`'s slot 0 and each further one into slot 1 (MTE2), added into slot 0 in
/// order (V), then the vector epilogue or the conversion and ReLU of the copy out of L0C
/// (V), and UB -> C (MTE3), one tile at a time (flag ids 0, slot 0 and the tile's result,
/// and [`SLOT1`] of MTE2 <-> V; 0 of V <-> MTE3). Both slots are zeroed first: a tile at
/// C's edges loads fewer rows or columns than V reads.
fn pass(
    b: &mut Builder,
    (mm, machine): (&Matmul, &Machine),
    n: &Names,
    t: Ring,
    (ws, slices): (TensorId, i64),
    epilogue: Option<(&Tail, &Buffers)>,
) -> Result<(), NpuError> {
    b.sync_all();
    let unit = Unit::of(machine, t.tn);
    let first = |buf| Place { buf, offset: c(0) };
    {
        let mut e = Emitter::new(b, unit);
        e.b.origin(Some("the workspace's tile slots zeroed"));
        e.fill(&first(n.c_ub), DType::F32, 2 * t.tm * t.tn);
        e.b.origin(None);
    }
    let grid = Grid::new(mm, t.tm, t.tn, machine.cores as i64);
    let out = dtype(mm.c.elem)?;
    let more = slices - 1;
    b.set_flag(Pipe::V, Pipe::Mte2, 0);
    b.set_flag(Pipe::V, Pipe::Mte2, SLOT1);
    b.set_flag(Pipe::Mte3, Pipe::V, 0);
    b.repeat("u", grid.per_core, |b, u| {
        let item = grid.index(&u);
        b.when("mine", item.clone().cmp(CmpOp::Lt, grid.items()), |b| {
            let tile = Tile {
                at: grid.tile(mm, item),
                slot: c(0),
                new_band: c(0),
                k_first: c(0),
            };
            let at = tile_index(mm, &tile);
            let (rows, cols) = (tile.at.rows.clone(), tile.at.cols.clone());
            let load = |b: &mut Builder, slice: Expr, slot: i64| {
                let dst = b.at(n.c_ub, [c(slot * t.tm * t.tn)]);
                let src = b.at(ws, slice_index(slice, mm, &tile));
                b.origin(Some("C tile's sums, a workspace slice -> UB"));
                b.push(
                    Dma::new(dst, src, rows.clone(), cols.clone()).strides(row_stride(&mm.c), t.tn),
                );
                b.origin(None);
            };
            b.wait_flag(Pipe::V, Pipe::Mte2, 0);
            load(b, c(0), 0);
            b.set_flag(Pipe::Mte2, Pipe::V, 0);
            b.wait_flag(Pipe::Mte2, Pipe::V, 0);
            b.wait_flag(Pipe::Mte3, Pipe::V, 0);
            let span = Rows {
                count: rows.clone(),
                max: t.tm,
            };
            b.repeat("s", more, |b, s| {
                b.wait_flag(Pipe::V, Pipe::Mte2, SLOT1);
                load(b, s + 1, 1);
                b.set_flag(Pipe::Mte2, Pipe::V, SLOT1);
                b.wait_flag(Pipe::Mte2, Pipe::V, SLOT1);
                add(b, unit, n.c_ub, t.tm * t.tn, &span);
                b.set_flag(Pipe::V, Pipe::Mte2, SLOT1);
            });
            let from = match epilogue {
                Some((tail, bufs)) => {
                    let gm = SpanAt {
                        index: at.clone(),
                        cols: cols.clone(),
                        row_stride: row_stride(&mm.c),
                        slot: u.clone() % 2,
                    };
                    tail.span(
                        b,
                        bufs,
                        (&first(n.c_ub), &first(n.c_out)),
                        (span, &gm),
                        &tile.at.col0,
                    );
                    n.c_out
                }
                None => convert(b, unit, (mm, out), (n.c_ub, n.c_out), &span),
            };
            b.set_flag(Pipe::V, Pipe::Mte2, 0);
            b.set_flag(Pipe::V, Pipe::Mte3, 0);
            b.wait_flag(Pipe::V, Pipe::Mte3, 0);
            let dst = b.at(n.c, at);
            let src = b.at(from, [c(0)]);
            b.origin(Some("C tile store"));
            b.push(Dma::new(dst, src, rows, cols).strides(t.tn, row_stride(&mm.c)));
            b.origin(None);
            b.set_flag(Pipe::Mte3, Pipe::V, 0);
        });
    });
    b.wait_flag(Pipe::V, Pipe::Mte2, 0);
    b.wait_flag(Pipe::V, Pipe::Mte2, SLOT1);
    b.wait_flag(Pipe::Mte3, Pipe::V, 0);
    Ok(())
}

/// V: every value of `g` but the given ones, over `rows` rows of tiles `unit.frame.width`
/// apart, each where `place` says, between barriers (the operands were written by other
/// pipes or V's own instructions), noted `origin`.
fn on_v(
    b: &mut Builder,
    unit: Unit,
    g: &Graph,
    place: &dyn Fn(Val) -> Place,
    rows: &Rows,
    origin: &str,
) {
    let mut e = Emitter::new(b, unit);
    e.barrier();
    e.b.origin(Some(origin));
    for v in (0..g.nodes.len()).filter(|&v| g.nodes[v].op != Op::Given) {
        e.node(g, v, place, rows);
    }
    e.barrier();
    e.b.origin(None);
}

/// A tile of f32 rows `unit.frame.width` apart.
fn f32_tile(unit: Unit) -> Layout {
    Layout::Tile {
        pitch: unit.frame.width,
    }
}

/// V: `buf`'s slot 1 (`slot` elements on) added into its slot 0, over `rows` rows.
fn add(b: &mut Builder, unit: Unit, buf: BufferId, slot: i64, rows: &Rows) {
    let tile = f32_tile(unit);
    let mut g = Graph::new();
    let (x, y) = (g.given(DType::F32, tile), g.given(DType::F32, tile));
    g.add(Op::Binary(BinaryOp::Add, x, y), DType::F32, tile);
    let place = |w: Val| Place {
        buf,
        offset: c(if w == y { slot } else { 0 }),
    };
    on_v(b, unit, &g, &place, rows, "a workspace slice added");
}

/// V: what the copy out of L0C would have done to a tile's f32 sums in `sums` (ReLU, the
/// conversion to C's type `out`), on the vector unit, into `c_out` when C is narrower; the
/// buffer C is stored from.
fn convert(
    b: &mut Builder,
    unit: Unit,
    (mm, out): (&Matmul, DType),
    (sums, c_out): (BufferId, BufferId),
    rows: &Rows,
) -> BufferId {
    let tile = f32_tile(unit);
    let mut g = Graph::new();
    let mut v = g.given(DType::F32, tile);
    if mm.epilogue.relu() {
        v = g.add(
            Op::Scalar(ScalarOp::Maxs, v, Imm::new(0.0)),
            DType::F32,
            tile,
        );
    }
    let narrow = out != DType::F32;
    if narrow {
        v = g.add(Op::Conv(v), out, tile);
    }
    let place = |w: Val| Place {
        buf: if narrow && w == v { c_out } else { sums },
        offset: c(0),
    };
    on_v(
        b,
        unit,
        &g,
        &place,
        rows,
        "C tile converted by the vector unit",
    );
    if narrow {
        c_out
    } else {
        sums
    }
}
