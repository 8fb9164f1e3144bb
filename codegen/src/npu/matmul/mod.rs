//! A matrix product as an NPU program: output tiles distributed over the cores, every
//! layout conversion explicit, strict synchronisation. Two schedules, chosen by the
//! analytic model of [`model`]:
//!
//! - [`ring`]: each tile double-buffered in L0C, K in chunks through two L1 slots (A's band
//!   optionally resident): small tiles, small buffers, any K;
//! - [`strips`]: A's band resident in L1 over a core's consecutive tiles, each tile filling
//!   L0C once in row strips that drain on their own, B in K pieces through a ring of L1
//!   slots, the core's last steps strip by strip: large products.
//!
//! The tile grid and the GM layout of the operands are common to both (this module).

mod fold;
pub mod model;
pub mod ring;
pub mod strips;
pub mod tail;

use super::recognise::{Dim, Matmul, Operand};
use super::NpuError;
use npu_sim::builder::Builder;
use npu_sim::program::{
    BufferId, CmpOp, DType, Direction, Dma, DmaMode, Expr, MemRef, TensorId, Tier,
};
use npu_sim::Machine;

/// Rows and columns of a fractal.
const F: i64 = 16;
/// Elements of a 16-bit fractal.
const FRACTAL: i64 = F * F;

/// A product program's tensors and buffers (both schedules declare the same ones).
struct Names {
    a: TensorId,
    b: TensorId,
    c: TensorId,
    a_l1: BufferId,
    b_l1: BufferId,
    a_l0: BufferId,
    b_l0: BufferId,
    c_l0: BufferId,
    /// The tiles' sums out of L0C (in C's type, or f32 for a vector epilogue), one slot
    /// after the other.
    c_ub: BufferId,
    /// Where C is stored from: `c_ub`, or the vector epilogue's results.
    c_out: BufferId,
}

/// How a product is scheduled, with its sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Double-buffered tiles ([`ring`]).
    Ring(ring::Ring),
    /// Tiles in strips over a resident A band ([`strips`]).
    Strips(strips::Strips),
}

impl Schedule {
    /// The rows and columns of a C tile.
    pub fn tile(&self) -> (i64, i64) {
        match self {
            Schedule::Ring(r) => (r.tm, r.tn),
            Schedule::Strips(s) => (s.tm, s.tn),
        }
    }

    /// One line for the program's header.
    pub fn describe(&self) -> String {
        match self {
            Schedule::Ring(r) => r.describe(),
            Schedule::Strips(s) => s.describe(),
        }
    }
}

/// The NPU program of a matrix product on `machine`, following `schedule`.
pub fn program(
    mm: &Matmul,
    machine: &Machine,
    schedule: Schedule,
) -> Result<npu_sim::Program, NpuError> {
    let (cores, flag_ids) = (machine.cores as i64, machine.flag_ids as i64);
    let c_bytes = mm.c.elem.size_bytes() as i64;
    let (_, tn) = schedule.tile();
    if !stores_apart(mm, tn, c_bytes) {
        return Err(NpuError::Unsupported(format!(
            "C's rows ({} values) do not start on 32-byte blocks, so tiles {} wide would store into shared blocks",
            mm.product.n, tn
        )));
    }
    for op in [&mm.product.a, &mm.product.b, &mm.c] {
        if let Some(stride) = misaligned_batch(mm, op) {
            return Err(NpuError::Unsupported(format!(
                "`{}`'s batch elements ({stride} bytes apart) do not start on 32-byte blocks, where GM transfers start",
                op.name
            )));
        }
    }
    let tail = match mm.epilogue.vector() {
        Some(epi) => Some(tail::Tail::new(epi, machine, tn).ok_or_else(|| {
            NpuError::Unsupported(format!(
                "the vector epilogue is not computed on tiles {tn} wide of C's {} columns",
                mm.product.n
            ))
        })?),
        None => None,
    };
    let program = match schedule {
        Schedule::Ring(r) => ring::program(mm, machine, r, tail.as_ref())?,
        Schedule::Strips(s) => strips::program(mm, cores, flag_ids, s, tail.as_ref())?,
    };
    crate::npu::finish(program)
}

/// Whether tiles `tn` wide store C in 32-byte blocks of their own (the hardware writes GM in
/// whole blocks, so two stores into one block race unless ordered): C's rows must start on
/// a block, or a tile must hold whole rows, or C is one row (per batch element: those start
/// on blocks, `misaligned_batch`). (Row bands start on a block: a tile's rows are a
/// multiple of 16.)
fn stores_apart(mm: &Matmul, tn: i64, c_bytes: i64) -> bool {
    (mm.product.n * c_bytes) % npu_sim::hazards::BLOCK as i64 == 0
        || tn >= mm.product.n
        || mm.product.m == 1
}

/// The byte distance between two elements of a batch of `op`, if some is not a multiple of
/// GM's 32-byte blocks (a transfer must start on one, and two stores into one block race).
fn misaligned_batch(mm: &Matmul, op: &Operand) -> Option<i64> {
    let block = npu_sim::hazards::BLOCK as i64;
    (op.dims.iter().enumerate())
        .filter(|(_, d)| matches!(d, Dim::Batch(j) if mm.product.batch[*j].1 > 1))
        .map(|(d, _)| op.shape[d + 1..].iter().product::<i64>() * op.elem.size_bytes() as i64)
        .find(|stride| stride % block != 0)
}

/// Declares the product's GM tensors A, B (inputs) and C (output).
fn tensors(
    b: &mut npu_sim::builder::Builder,
    mm: &Matmul,
) -> Result<(TensorId, TensorId, TensorId), NpuError> {
    let mut declare = |op: &Operand, dir: Direction| {
        let shape: Vec<u64> = op.shape.iter().map(|&e| e as u64).collect();
        Ok(b.tensor(&op.name, dtype(op.elem)?, &shape, dir))
    };
    Ok((
        declare(&mm.product.a, Direction::In)?,
        declare(&mm.product.b, Direction::In)?,
        declare(&mm.c, Direction::Out)?,
    ))
}

/// C's tiles in UB: `slots` of `elems` elements, each `rows` rows at most. Without a vector
/// epilogue, one buffer in C's type (the sums converted on their way out of L0C). With one,
/// the results in C's type and `sums` slots of f32 sums: only V touches the sums (the copy
/// out of L0C and the epilogue, with a barrier between spans), so one slot is enough where
/// the schedule's flags do not tell slots apart.
#[derive(Clone, Copy, Debug)]
struct CTiles {
    slots: i64,
    elems: i64,
    sums: i64,
    rows: i64,
}

/// Declares C's UB buffers (the sums, the results: the same buffer without a vector
/// epilogue) and, with a vector epilogue, its own buffers, its per-core inputs loaded and
/// values computed before the tiles.
fn c_buffers(
    b: &mut Builder,
    mm: &Matmul,
    tail: Option<&tail::Tail>,
    t: CTiles,
    through: bool,
) -> Result<(BufferId, BufferId, Option<tail::Buffers>), NpuError> {
    let tc = dtype(mm.c.elem)?;
    let size = |slots: i64| [(slots * t.elems) as u64];
    Ok(match tail {
        // split-K through a workspace: the parts' f32 sums, and C converted from them
        None if through => {
            let c_ub = b.buffer("c_ub", Tier::Ub, DType::F32, &size(t.slots));
            let c_out = b.buffer("c_out", Tier::Ub, tc, &size(1));
            (c_ub, c_out, None)
        }
        None => {
            let c_ub = b.buffer("c_ub", Tier::Ub, tc, &size(t.slots));
            (c_ub, c_ub, None)
        }
        Some(tail) => {
            let c_ub = b.buffer("c_ub", Tier::Ub, DType::F32, &size(t.sums));
            let c_out = b.buffer("c_out", Tier::Ub, tc, &size(t.slots));
            let (bufs, loads) = tail.declare(b, t.rows)?;
            tail.prologue(b, &bufs, loads, (c_ub, DType::F32, t.sums * t.elems));
            (c_ub, c_out, Some(bufs))
        }
    })
}

/// UB bytes of C's tiles and of the vector epilogue's buffers for tiles `tn` wide; `None`
/// when that width does not suit the epilogue.
fn c_ub_bytes(mm: &Matmul, machine: &Machine, tn: i64, t: CTiles, through: bool) -> Option<i64> {
    let c_bytes = mm.c.elem.size_bytes() as i64;
    match mm.epilogue.vector() {
        // split-K through a workspace: f32 sums in every slot, one tile of C converted
        None if through => Some(t.slots * t.elems * 4 + t.elems * c_bytes),
        None => Some(t.slots * t.elems * c_bytes),
        Some(epi) => {
            let tail = tail::Tail::new(epi, machine, tn)?;
            let align = crate::npu::vector::lower::Frame::of(machine, 0).align;
            let tc = dtype(mm.c.elem).ok()?;
            Some(
                tail::bytes(t.sums * t.elems, DType::F32, align)
                    + tail::bytes(t.slots * t.elems, tc, align)
                    + tail.ub_bytes(t.rows),
            )
        }
    }
}

/// The copy of `rows x cols` of C from L0C (NZ, `pitch` rows per fractal column) to UB (ND,
/// rows `ub_row` apart), with the product's epilogue: the conversion to C's type and ReLU.
fn out_of_l0c(
    mm: &Matmul,
    (dst, src): (MemRef, MemRef),
    (rows, cols): (Expr, Expr),
    (pitch, ub_row): (Expr, Expr),
) -> Dma {
    let d = Dma::new(dst, src, rows, cols)
        .strides(pitch, ub_row)
        .mode(DmaMode::Nz2nd);
    if mm.epilogue.relu() {
        d.with_relu()
    } else {
        d
    }
}

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

fn round16(v: i64) -> i64 {
    (v + F - 1) / F * F
}

fn c(v: i64) -> Expr {
    Expr::Const(v)
}

/// `e` rounded up to whole fractals.
fn up16(e: Expr) -> Expr {
    match e {
        Expr::Const(v) => c(round16(v)),
        e => (e + (F - 1)) / F * F,
    }
}

/// `min(extent - start, size)`: the part of a tile of `size` from `start` inside `extent`, a
/// constant when every tile is whole.
fn clipped(extent: i64, size: i64, start: Expr) -> Expr {
    if extent % size == 0 {
        c(size)
    } else {
        (c(extent) - start).min(size)
    }
}

/// The element offset between two rows of an operand's tensor.
fn row_stride(op: &Operand) -> i64 {
    let d = op.dims.iter().position(|&d| d == Dim::Row).unwrap_or(0);
    op.shape[d + 1..].iter().product()
}

/// The index of (batch, row, col) in an operand's tensor.
pub(crate) fn index(op: &Operand, batch: &[Expr], row: Expr, col: Expr) -> Vec<Expr> {
    (op.dims.iter())
        .map(|d| match d {
            Dim::Batch(j) => batch[*j].clone(),
            Dim::Row => row.clone(),
            Dim::Col => col.clone(),
        })
        .collect()
}

/// The output tiles of `tm x TN`: numbered along C's rows (then batches), dealt to the cores
/// in contiguous ranges, so that a core's consecutive tiles share their row band.
#[derive(Clone, Copy, Debug)]
struct Grid {
    tm: i64,
    tn: i64,
    /// Tiles along C's columns.
    nt: i64,
    /// Tiles in all.
    tiles: i64,
    /// Work items per tile (split-K parts; 1 without).
    parts: i64,
    /// Work items per core (the last cores may have fewer, or none).
    per_core: i64,
    cores: i64,
}

/// One tile's position and extents, as expressions of its number.
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
}

impl Grid {
    fn new(mm: &Matmul, tm: i64, tn: i64, cores: i64) -> Grid {
        let (mt, nt) = ((mm.product.m + tm - 1) / tm, (mm.product.n + tn - 1) / tn);
        let batches: i64 = mm.product.batch.iter().map(|(_, e)| e).product();
        let tiles = batches * mt * nt;
        Grid {
            tm,
            tn,
            nt,
            tiles,
            parts: 1,
            per_core: (tiles + cores - 1) / cores,
            cores,
        }
    }

    /// The grid with each tile cut into `parts` work items (split-K), dealt to the cores
    /// like tiles: item `i` is part `i % parts` of tile `i / parts`.
    fn split(self, parts: i64) -> Grid {
        let items = self.tiles * parts;
        Grid {
            parts,
            per_core: (items + self.cores - 1) / self.cores,
            ..self
        }
    }

    /// Work items in all.
    fn items(&self) -> i64 {
        self.tiles * self.parts
    }

    /// The number of this core's work item `tt` (its tile's, without split-K).
    fn index(&self, tt: &Expr) -> Expr {
        Expr::Core * self.per_core + tt.clone()
    }

    /// How many work items this core has.
    fn mine(&self) -> Expr {
        if self.items() == self.per_core * self.cores {
            return c(self.per_core);
        }
        (c(self.items()) - Expr::Core * self.per_core)
            .min(self.per_core)
            .max(0)
    }

    /// Whether this core's tile `tt` starts a row band on the core (its first tile, or the
    /// first of a band): A's rows must be loaded for it.
    fn new_band(&self, tt: &Expr) -> Expr {
        (tt.clone().cmp(CmpOp::Eq, 0)).select(1, (self.index(tt) % self.nt).cmp(CmpOp::Eq, 0))
    }

    /// Tile number `idx`.
    fn tile(&self, mm: &Matmul, idx: Expr) -> Tile {
        let mt = (mm.product.m + self.tm - 1) / self.tm;
        let tn = idx.clone() % self.nt;
        let tm = idx.clone() / self.nt % mt;
        let mut rest = idx / (self.nt * mt);
        let mut batch = vec![c(0); mm.product.batch.len()];
        for (j, (_, e)) in mm.product.batch.iter().enumerate().rev() {
            batch[j] = rest.clone() % *e;
            rest = rest / *e;
        }
        let row0 = tm * self.tm;
        let col0 = tn.clone() * self.tn;
        let rows = clipped(mm.product.m, self.tm, row0.clone());
        let cols = clipped(mm.product.n, self.tn, col0.clone());
        Tile {
            rows16: up16(rows.clone()),
            rows,
            cols,
            last_col: tn.cmp(CmpOp::Eq, self.nt - 1),
            batch,
            row0,
            col0,
        }
    }
}
