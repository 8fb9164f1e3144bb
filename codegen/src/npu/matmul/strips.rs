//! The strips schedule: a core's consecutive tiles share A's row band, resident in L1; each
//! tile fills L0C once, in row strips that drain on their own; the core's last steps go strip
//! by strip. It generalises the hand-written `examples/npu/gemm.npu` (`docs/npu.md`,
//! "Performance").
//!
//! Per core, one loop over the steps (`TK` of K) of all its tiles, then one over its last
//! tile's last `last` steps strip by strip:
//! - MTE2: with the first tile of a band, A's `TM x K` band goes to L1 (NZ) in chunks of
//!   `chunk` steps, each in `halves` row halves with a "ready" flag each, loaded at the step
//!   that first needs them; B comes in pieces of one step (`TK x TN`, NZ) through a ring of
//!   `ring` L1 slots; the pieces of the last tile's final steps go to slots of their own,
//!   loaded every other step ahead of them;
//! - MTE1: per step, A's `TM x TK` slice NZ -> zZ (one load per K fractal and half, the
//!   first half before B's piece is waited for) and B's piece NZ -> nZ (one transposing load
//!   per K fractal) into one of two L0 slots; in a tile that loads A the slot is ready half
//!   by half, else as a whole;
//! - M: one `mmad` per strip of `TM / strips` rows, each strip its own NZ block of L0C; a
//!   tile's first step on a strip waits only for that strip's drain;
//! - V and MTE3: after a tile's last step its strips are converted (L0C NZ f32 -> UB ND, the
//!   epilogue on the way) and stored one by one; the strips of the core's last tile, which
//!   finish one after the other, in parts ([`Strips::parts`]) so that the last store starts
//!   early.
//!
//! Flags: MTE2 -> MTE1 has the ring's slots and A's halves; MTE1 -> MTE2 the ring's slots
//! and "A's band is free" (when a core moves to another band); MTE1 -> M two L0 slots times
//! the halves; M -> MTE1 the two L0 slots; M -> V and V -> M one per strip; V -> MTE3 and
//! MTE3 -> V one per strip, then one per part. Every "free" flag is set once before the
//! program and waited for at its end.

use super::fold::fold;
use super::{c, dtype, index, round16, row_stride, Grid, Tile, F, FRACTAL};
use crate::npu::recognise::Matmul;
use crate::npu::NpuError;
use npu_sim::builder::{Builder, IntoTarget};
use npu_sim::program::{BufferId, CmpOp, DType, Dma, DmaMode, Expr, MemRef, Pipe, TensorId, Tier};

/// The sizes and counts of the strips schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strips {
    /// Rows of a C tile (a multiple of 16 times `strips`).
    pub tm: i64,
    /// Columns of a C tile.
    pub tn: i64,
    /// K values of one step (a multiple of 16).
    pub tk: i64,
    /// Row strips of a tile, each with its own L0C block and flags.
    pub strips: i64,
    /// Steps per chunk of A's band.
    pub chunk: i64,
    /// Row halves of an A chunk with a "ready" flag each (1 or 2).
    pub halves: i64,
    /// L1 slots of B's ring.
    pub ring: i64,
    /// Steps at the end of a core's last tile computed strip by strip.
    pub last: i64,
}

/// Rows of a strip of a core's last tile converted and stored in the first part: small, so
/// that the last store starts soon after the last `mmad`.
const FIRST_PART: i64 = 8;
/// Rows up to the end of the second part: long enough (at 512 bytes a row, about 200 cycles
/// of GM) to hide the next part's GM latency.
const SECOND_PART_END: i64 = 32;

impl Strips {
    /// Rows of a strip.
    pub fn strip_rows(&self) -> i64 {
        self.tm / self.strips
    }

    /// Steps of a tile, for a reduction of `k`.
    pub fn steps(&self, k: i64) -> i64 {
        (k + self.tk - 1) / self.tk
    }

    /// The parts (rows) in which each strip of a core's last tile is converted and stored,
    /// for rows of C `row_bytes` apart in GM: 8 rows, up to row 32, the rest (as many as fit
    /// the strip), each part starting on a GM block (stores into one block would race).
    pub fn parts(&self, row_bytes: i64) -> Vec<i64> {
        let sr = self.strip_rows();
        let block = npu_sim::hazards::BLOCK as i64;
        let ends = [FIRST_PART.min(sr), SECOND_PART_END.min(sr), sr];
        let mut parts = Vec::new();
        let mut from = 0;
        for end in ends {
            if end > from && (end == sr || end * row_bytes % block == 0) {
                parts.push(end - from);
                from = end;
            }
        }
        parts
    }

    /// The flag ids each pipe pair needs, at most, for rows of C `row_bytes` apart.
    pub fn flag_ids(&self, row_bytes: i64) -> i64 {
        let parts = self.parts(row_bytes).len() as i64;
        [
            self.ring + self.halves,
            self.ring + 1,
            2 * self.halves,
            self.strips.max(parts),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }

    /// Why the schedule cannot compute `mm` on `cores` cores with `flag_ids` ids per pipe
    /// pair, if it cannot.
    pub fn unfit(&self, mm: &Matmul, cores: i64, flag_ids: i64) -> Option<String> {
        let steps = self.steps(mm.k);
        let chunks = (steps + self.chunk - 1) / self.chunk;
        let grid = Grid::new(mm, self.tm, self.tn, cores);
        // does some core's last tile load A (its final steps then need their chunks loaded
        // in the first loop)?
        let last_loads_a = (0..cores).any(|core| {
            let mine = (grid.tiles - core * grid.per_core).clamp(0, grid.per_core);
            let idx = core * grid.per_core + mine - 1;
            mine == 1 || (mine > 1 && idx % grid.nt == 0)
        });
        let why = if self.tm % (F * self.strips) != 0 || self.tn % F != 0 || self.tk % F != 0 {
            "tiles and steps must be whole fractals, strips too"
        } else if !(1..=2).contains(&self.halves) || self.strips % self.halves != 0 {
            "A's chunks come whole or in two halves of whole strips"
        } else if self.ring < 1 || self.chunk < 1 || self.chunk > steps {
            "the ring needs a slot, a chunk a step"
        } else if chunks > 1 && self.chunk <= self.ring {
            // MTE2 sets a chunk's flags again only after a ring wait that follows MTE1's
            // waits for the previous chunk (a flag holds one event)
            "chunks of A must be more steps apart than the ring has slots"
        } else if self.last < 0 || (self.last > 0 && 2 * self.last > steps) {
            "the final steps' B pieces are loaded every other step or every step before them"
        } else if last_loads_a && self.last > steps - 1 - (chunks - 1) * self.chunk {
            "a last tile that loads A needs its last chunk before its final steps"
        } else if self.flag_ids(c_row_bytes(mm)) > flag_ids {
            "not enough flag ids"
        } else {
            return None;
        };
        Some(format!("strips schedule {self:?}: {why}"))
    }

    /// Whether the buffers fit `machine`'s tiers: A's band and the B slots in L1, two L0
    /// slots, one tile in L0C (f32) and in UB (C's type).
    pub fn fits(&self, mm: &Matmul, machine: &npu_sim::Machine) -> bool {
        let cap = |m: npu_sim::machine::Mem| machine.tiers.get(&m).map_or(0, |t| t.capacity as i64);
        let (a, b) = (mm.a.elem.size_bytes() as i64, mm.b.elem.size_bytes() as i64);
        let c_bytes = mm.c.elem.size_bytes() as i64;
        use npu_sim::machine::Mem;
        self.tm * round16(mm.k) * a + (self.ring + self.last) * self.tk * self.tn * b
            <= cap(Mem::L1)
            && 2 * self.tm * self.tk * a <= cap(Mem::L0a)
            && 2 * self.tk * self.tn * b <= cap(Mem::L0b)
            && self.tm * self.tn * 4 <= cap(Mem::L0c)
            && self.tm * self.tn * c_bytes <= cap(Mem::Ub)
    }

    /// One line for the program's header.
    pub fn describe(&self) -> String {
        let halves = if self.halves == 2 {
            ", each in two row halves"
        } else {
            ""
        };
        let last = match self.last {
            0 => String::new(),
            n => format!(" A core's last {n} steps go strip by strip."),
        };
        format!(
            "Strips schedule: C tiles of {} x {} in {} row strips, one tile at a time in L0C; A's band stays in L1, loaded in chunks of {} K values{halves}; B in pieces of {} K values through {} L1 slots.{last}",
            self.tm,
            self.tn,
            self.strips,
            self.chunk * self.tk,
            self.tk,
            self.ring,
        )
    }
}

/// The byte distance between two rows of C in GM.
fn c_row_bytes(mm: &Matmul) -> i64 {
    row_stride(&mm.c) * mm.c.elem.size_bytes() as i64
}

/// A size that takes one of two constant values: `yes` where `cond` holds, else `no` (the
/// depth of the last step, the width of the last column of tiles). Products with it stay
/// products with a constant.
#[derive(Clone)]
struct Two {
    cond: Expr,
    yes: i64,
    no: i64,
}

impl Two {
    fn new(cond: Expr, yes: i64, no: i64) -> Two {
        Two { cond, yes, no }
    }

    /// The value.
    fn expr(&self) -> Expr {
        self.times(c(1))
    }

    /// `x` times the value.
    fn times(&self, x: Expr) -> Expr {
        let mul = |k: i64| match &x {
            Expr::Const(v) => c(v * k),
            x => x.clone() * k,
        };
        if self.yes == self.no {
            mul(self.no)
        } else {
            (self.cond.clone()).select(mul(self.yes), mul(self.no))
        }
    }
}

/// `min(max(e, 0), hi)`, folded when `e` is a constant.
fn clamp(e: Expr, hi: i64) -> Expr {
    match e {
        Expr::Const(v) => c(v.clamp(0, hi)),
        e => e.max(0).min(hi),
    }
}

/// `e - k`, folded when `e` is a constant.
fn minus(e: &Expr, k: i64) -> Expr {
    match e {
        Expr::Const(v) => c(v - k),
        e => e.clone() - k,
    }
}

/// `e > 0`, folded when `e` is a constant.
fn positive(e: &Expr) -> Expr {
    match e {
        Expr::Const(v) => c((*v > 0) as i64),
        e => e.clone().cmp(CmpOp::Gt, 0),
    }
}

/// `b.when`, folded: nothing or the body alone when `cond` is a constant.
fn when(b: &mut Builder, name: &str, cond: Expr, body: impl FnOnce(&mut Builder)) {
    match fold(cond) {
        Expr::Const(0) => {}
        Expr::Const(_) => body(b),
        cond => b.when(name, cond, body),
    }
}

/// `b.repeat`, its extent folded.
fn repeat(b: &mut Builder, name: &str, n: impl Into<Expr>, body: impl FnOnce(&mut Builder, Expr)) {
    b.repeat(name, fold(n.into()), body);
}

/// `set_flag`, its id folded.
fn set(b: &mut Builder, src: Pipe, dst: Pipe, id: impl Into<Expr>) {
    b.set_flag(src, dst, fold(id.into()));
}

/// `wait_flag`, its id folded.
fn wait(b: &mut Builder, src: Pipe, dst: Pipe, id: impl Into<Expr>) {
    b.wait_flag(src, dst, fold(id.into()));
}

/// `b.at`, the index folded.
fn at(b: &Builder, target: impl IntoTarget, index: impl IntoIterator<Item = Expr>) -> MemRef {
    b.at(target, index.into_iter().map(fold))
}

/// Pushes `d`, its sizes folded, with the origin `note`.
fn push(b: &mut Builder, note: &str, mut d: Dma) {
    let z = &mut d.sizes;
    for e in [
        &mut z.count,
        &mut z.len,
        &mut z.src_stride,
        &mut z.dst_stride,
    ] {
        *e = fold(std::mem::replace(e, Expr::Const(0)));
    }
    b.origin(Some(note));
    b.push(d);
    b.origin(None);
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

/// Everything the emitting functions share.
struct Emit<'a> {
    mm: &'a Matmul,
    s: Strips,
    n: Names,
    grid: Grid,
    steps: i64,
    /// Rows of a strip, of a half of A.
    sr: i64,
    hr: i64,
    /// Rows of the last row band's tiles, rounded to fractals (the edge tile's height).
    m_tail16: i64,
    /// This core's tiles, and the iterations of its first loop.
    mine: Expr,
    main: Expr,
    /// The first loop's step of the last tile at which the first final B piece is loaded,
    /// and the steps between two of them.
    final_from: i64,
    final_gap: i64,
}

/// One step of the first loop: global step `g`, the core's tile `tt`, the tile's step `st`.
struct Step {
    g: Expr,
    tt: Expr,
    st: Expr,
    tile: Tile,
    /// Whether the tile loads A.
    band: Expr,
    /// Whether the tile is in the last row band (whose height may be a partial tile).
    last_row: Expr,
}

/// The program of a matrix product on `cores` cores, not yet finished.
pub(super) fn program(
    mm: &Matmul,
    cores: i64,
    flag_ids: i64,
    s: Strips,
) -> Result<Builder, NpuError> {
    if let Some(why) = s.unfit(mm, cores, flag_ids) {
        return Err(NpuError::Internal(why));
    }
    let mut b = Builder::new();
    let (a, bt, ct) = super::tensors(&mut b, mm)?;
    let (ta, tb, tc) = (dtype(mm.a.elem)?, dtype(mm.b.elem)?, dtype(mm.c.elem)?);
    let sr = s.strip_rows();
    let n = Names {
        a,
        b: bt,
        c: ct,
        a_l1: b.buffer("a_l1", Tier::L1, ta, &[(s.tm * round16(mm.k)) as u64]),
        b_l1: b.buffer(
            "b_l1",
            Tier::L1,
            tb,
            &[(s.ring + s.last) as u64, (s.tk * s.tn) as u64],
        ),
        a_l0: b.buffer("a_l0", Tier::L0a, ta, &[2, (s.tm * s.tk) as u64]),
        b_l0: b.buffer("b_l0", Tier::L0b, tb, &[2, (s.tk * s.tn) as u64]),
        c_l0: b.buffer(
            "c_l0",
            Tier::L0c,
            DType::F32,
            &[s.strips as u64, (sr * s.tn) as u64],
        ),
        c_ub: b.buffer("c_ub", Tier::Ub, tc, &[s.strips as u64, (sr * s.tn) as u64]),
    };
    let grid = Grid::new(mm, s.tm, s.tn, cores);
    let steps = s.steps(mm.k);
    let mine = grid.mine();
    let final_gap = if steps - s.last - 1 - 2 * (s.last - 1) >= 0 {
        2
    } else {
        1
    };
    let e = Emit {
        mm,
        s,
        n,
        grid,
        steps,
        sr,
        hr: s.tm / s.halves,
        m_tail16: round16(mm.m - (mm.m - 1) / s.tm * s.tm),
        main: (mine.clone() * steps - s.last).max(0),
        mine,
        final_from: steps - s.last - 1 - final_gap * (s.last - 1).max(0),
        final_gap,
    };
    e.free(&mut b, true);
    repeat(&mut b, "g", e.main.clone(), |b, g| {
        let step = e.step(g);
        e.load(b, &step);
        e.stage(b, &step);
        e.compute(b, &step);
        let done = step.st.clone().cmp(CmpOp::Eq, steps - 1);
        when(b, "tile_done", done, |b| {
            for p in 0..s.strips {
                e.drain(b, &step.tile, &step.last_row, p, &[(p, 0, sr)]);
            }
        });
    });
    if s.last > 0 {
        when(&mut b, "has_tiles", positive(&e.mine), |b| e.last_steps(b));
    }
    e.free(&mut b, false);
    Ok(b)
}

impl Emit<'_> {
    /// Step `g` of the first loop.
    fn step(&self, g: Expr) -> Step {
        self.step_of(g.clone() / self.steps, g.clone() % self.steps, g)
    }

    /// Step `st` of the core's tile `tt`, the core's `g`-th.
    fn step_of(&self, tt: Expr, st: Expr, g: Expr) -> Step {
        let idx = self.grid.index(&tt);
        let mt = (self.mm.m + self.s.tm - 1) / self.s.tm;
        Step {
            tile: self.grid.tile(self.mm, idx.clone()),
            band: self.grid.new_band(&tt),
            last_row: (idx / self.grid.nt % mt).cmp(CmpOp::Eq, mt - 1),
            tt,
            st,
            g,
        }
    }

    /// The depth of step `st` rounded to fractals (the last step's may be shallower).
    fn depth(&self, st: &Expr) -> Two {
        let tail = round16(self.mm.k) - (self.steps - 1) * self.s.tk;
        Two::new(st.clone().cmp(CmpOp::Eq, self.steps - 1), tail, self.s.tk)
    }

    /// The width of a tile rounded to fractals (the last column's may be narrower).
    fn width(&self, tile: &Tile) -> Two {
        let tail = round16(self.mm.n - (self.grid.nt - 1) * self.s.tn);
        Two::new(tile.last_col.clone(), tail, self.s.tn)
    }

    /// Fractal rows of a tile from fractal row `from`, at most `count`.
    fn fractal_rows(&self, last_row: &Expr, from: i64, count: i64) -> Expr {
        let rows = |height: i64| (height / F - from).clamp(0, count);
        let (tail, whole) = (rows(self.m_tail16), rows(self.s.tm));
        if tail == whole {
            c(whole)
        } else {
            last_row.clone().select(tail, whole)
        }
    }

    /// The "free" flags: set once before the program (`set`), or waited for at its end. The
    /// waits of MTE3 -> V go in the order of their last sets, so that V's last wait is for
    /// the last store.
    fn free(&self, b: &mut Builder, set: bool) {
        let parts = self.s.parts(c_row_bytes(self.mm)).len() as i64;
        let drains = self.s.strips.max(parts);
        let pairs = [
            (Pipe::Mte1, Pipe::Mte2, self.s.ring, 0),
            (Pipe::M, Pipe::Mte1, 2, 0),
            (Pipe::V, Pipe::M, self.s.strips, 0),
            (
                Pipe::Mte3,
                Pipe::V,
                drains,
                if self.s.last > 0 { parts } else { 0 },
            ),
        ];
        for (src, dst, ids, first) in pairs {
            for i in 0..ids {
                b.flag(set, src, dst, (first + i) % ids);
            }
        }
    }

    /// MTE2, one step: A's chunk (half by half) when the tile loads A and the step starts a
    /// chunk, one of the last tile's final B pieces when due, and the step's B piece.
    fn load(&self, b: &mut Builder, st: &Step) {
        let s = self.s;
        let slot = st.g.clone() % s.ring;
        let chunk_start = (st.st.clone() % s.chunk).cmp(CmpOp::Eq, 0);
        let load_a = st.band.clone().select(chunk_start, 0);
        // another band after this core's first: its A rows overwrite the band that MTE1 may
        // still be staging from
        let first_step = st.st.clone().cmp(CmpOp::Eq, 0);
        let reload =
            (st.band.clone()).select(first_step.select(st.tt.clone().cmp(CmpOp::Gt, 0), 0), 0);
        when(b, "reload", reload, |b| {
            wait(b, Pipe::Mte1, Pipe::Mte2, s.ring)
        });
        self.a_half(b, st, &load_a, 0);
        self.final_piece(b, st);
        wait(b, Pipe::Mte1, Pipe::Mte2, slot.clone());
        self.b_piece(b, st, st.st.clone(), slot.clone());
        set(b, Pipe::Mte2, Pipe::Mte1, slot);
        for h in 1..s.halves {
            self.a_half(b, st, &load_a, h);
        }
    }

    /// MTE2: half `h` of the step's A chunk, ND -> NZ into the band's place in L1.
    fn a_half(&self, b: &mut Builder, st: &Step, load_a: &Expr, h: i64) {
        let (mm, s) = (self.mm, self.s);
        let kc = s.chunk * s.tk;
        when(b, "a", load_a.clone(), |b| {
            let rows = clamp(minus(&st.tile.rows, h * self.hr), self.hr);
            when(b, "rows", positive(&rows), |b| {
                let k0 = st.st.clone() / s.chunk * kc;
                let len = if mm.k % kc == 0 {
                    c(kc)
                } else {
                    (c(mm.k) - k0.clone()).min(kc)
                };
                let row = st.tile.row0.clone() + h * self.hr;
                let src = at(b, self.n.a, index(&mm.a, &st.tile.batch, row, k0.clone()));
                // NZ with TM rows per fractal column: column k0 at k0 * TM, row r at r * 16
                let dst = at(b, self.n.a_l1, [k0 * s.tm + h * self.hr * F]);
                push(
                    b,
                    "A band, ND -> NZ",
                    Dma::new(dst, src, rows, len)
                        .strides(row_stride(&mm.a), s.tm)
                        .mode(DmaMode::Nd2nz),
                );
            });
            set(b, Pipe::Mte2, Pipe::Mte1, s.ring + h);
        });
    }

    /// MTE2: the B piece of step `k` of the tile (`TK x TN`, ND -> NZ) into L1 slot `slot`.
    fn b_piece(&self, b: &mut Builder, st: &Step, k: Expr, slot: Expr) {
        let (mm, s) = (self.mm, self.s);
        let k0 = k * s.tk;
        let rows = if mm.k % s.tk == 0 {
            c(s.tk)
        } else {
            (c(mm.k) - k0.clone()).min(s.tk)
        };
        let src = at(
            b,
            self.n.b,
            index(&mm.b, &st.tile.batch, k0, st.tile.col0.clone()),
        );
        let dst = at(b, self.n.b_l1, [slot, c(0)]);
        push(
            b,
            "B piece, ND -> NZ",
            Dma::new(dst, src, rows, st.tile.cols.clone())
                .strides(row_stride(&mm.b), s.tk)
                .mode(DmaMode::Nd2nz),
        );
    }

    /// MTE2: in the core's last tile, final piece j (of step `steps - last + j`) into slot
    /// `ring + j` at step `final_from + j * final_gap`, before the step's own piece, whose
    /// "full" flag then covers it (a flag fires after every earlier instruction of its pipe).
    fn final_piece(&self, b: &mut Builder, st: &Step) {
        let s = self.s;
        if s.last == 0 {
            return;
        }
        let t = st.st.clone() - self.final_from;
        let last_tile = st.tt.clone().cmp(CmpOp::Eq, self.mine.clone() - 1);
        let due = (t.clone() % self.final_gap).cmp(CmpOp::Eq, 0);
        let due = last_tile.select(t.clone().cmp(CmpOp::Ge, 0).select(due, 0), 0);
        when(b, "final", due, |b| {
            let j = t / self.final_gap;
            self.b_piece(b, st, j.clone() + (self.steps - s.last), j + s.ring);
        });
    }

    /// MTE1, one step: A's slice half by half (each half after its chunk's flag when the
    /// tile loads A) and B's piece into L0 slot `g % 2`; the ring slot handed back as soon
    /// as B is out of it; "A's band is free" after the tile's last step when the next tile
    /// loads another band.
    fn stage(&self, b: &mut Builder, st: &Step) {
        let s = self.s;
        let (l0, slot) = (st.g.clone() % 2, st.g.clone() % s.ring);
        let chunk_start = (st.st.clone() % s.chunk).cmp(CmpOp::Eq, 0);
        let load_a = st.band.clone().select(chunk_start, 0);
        let depth = self.depth(&st.st);
        let width = self.width(&st.tile);
        wait(b, Pipe::M, Pipe::Mte1, l0.clone());
        for h in 0..s.halves {
            when(b, "ready", load_a.clone(), |b| {
                wait(b, Pipe::Mte2, Pipe::Mte1, s.ring + h)
            });
            let rows = self.fractal_rows(&st.last_row, h * self.hr / F, self.hr / F);
            self.stage_a(b, &l0, &st.st, &depth, h * self.hr / F, rows);
            if h == 0 {
                wait(b, Pipe::Mte2, Pipe::Mte1, slot.clone());
                self.stage_b(b, &l0, slot.clone(), &depth, &width);
                set(b, Pipe::Mte1, Pipe::Mte2, slot.clone());
            }
            // half by half in a tile that loads A, else the slot as a whole
            let slot_id = l0.clone() * s.halves;
            if h + 1 < s.halves {
                let id = slot_id + h;
                when(b, "half", st.band.clone(), |b| {
                    set(b, Pipe::Mte1, Pipe::M, id)
                });
            } else if h == 0 {
                set(b, Pipe::Mte1, Pipe::M, slot_id);
            } else {
                set(
                    b,
                    Pipe::Mte1,
                    Pipe::M,
                    slot_id + st.band.clone().select(h, 0),
                );
            }
        }
        let idx = self.grid.index(&st.tt);
        let next_band = (idx + 1) % self.grid.nt;
        let next_mine = (st.tt.clone() + 1).cmp(CmpOp::Lt, self.mine.clone());
        let tile_done = st.st.clone().cmp(CmpOp::Eq, self.steps - 1);
        let free = tile_done.select(next_mine.select(next_band.cmp(CmpOp::Eq, 0), 0), 0);
        when(b, "band_free", free, |b| {
            set(b, Pipe::Mte1, Pipe::Mte2, s.ring)
        });
    }

    /// MTE1: `count` fractal rows of A's slice for step `st` from fractal row `from`, NZ (in
    /// the band) -> zZ (in L0 slot `l0`), one load per K fractal.
    fn stage_a(&self, b: &mut Builder, l0: &Expr, st: &Expr, depth: &Two, from: i64, count: Expr) {
        let s = self.s;
        when(b, "rows", positive(&count), |b| {
            repeat(b, "fk", depth.expr() / F, |b, fk| {
                // zZ: fractal (row r, K fractal f) at (r * depth/16 + f) * 256
                let dst = at(
                    b,
                    self.n.a_l0,
                    [l0.clone(), depth.times(c(from * F)) + fk.clone() * FRACTAL],
                );
                // NZ band: fractal (row r, K fractal f) at (f * TM/16 + r) * 256
                let col = st.clone() * (s.tk / F) + fk;
                let src = at(b, self.n.a_l1, [col * (s.tm * F) + from * FRACTAL]);
                push(
                    b,
                    "A slice, NZ -> zZ",
                    Dma::new(dst, src, count, FRACTAL).strides(FRACTAL, depth.times(c(F))),
                );
            });
        });
    }

    /// MTE1: B's slice of the given depth and width from L1 slot `slot` (NZ, `TK` rows per
    /// fractal column) to L0 slot `l0` (nZ), one transposing load per K fractal.
    fn stage_b(&self, b: &mut Builder, l0: &Expr, slot: Expr, depth: &Two, width: &Two) {
        let s = self.s;
        repeat(b, "bk", depth.expr() / F, |b, bk| {
            let dst = at(b, self.n.b_l0, [l0.clone(), width.times(bk.clone() * F)]);
            let src = at(b, self.n.b_l1, [slot.clone(), bk * FRACTAL]);
            push(
                b,
                "B slice, NZ -> nZ (transposing)",
                Dma::new(dst, src, width.expr() / F, FRACTAL)
                    .strides(s.tk * F, FRACTAL)
                    .mode(DmaMode::Transpose),
            );
        });
    }

    /// M, one step: one `mmad` per strip; a tile's first step overwrites, after the strip's
    /// drain; its last hands the strip to V. In a tile that loads A the strips of each half
    /// wait for that half.
    fn compute(&self, b: &mut Builder, st: &Step) {
        let s = self.s;
        let l0 = st.g.clone() % 2;
        let first = st.st.clone().cmp(CmpOp::Eq, 0);
        let done = st.st.clone().cmp(CmpOp::Eq, self.steps - 1);
        let per_half = s.strips / s.halves;
        for q in 0..s.strips {
            when(b, "fresh", first.clone(), |b| wait(b, Pipe::V, Pipe::M, q));
            if q == 0 {
                wait(b, Pipe::Mte1, Pipe::M, l0.clone() * s.halves);
            } else if q % per_half == 0 {
                let id = l0.clone() * s.halves + q / per_half;
                when(b, "ready", st.band.clone(), |b| {
                    wait(b, Pipe::Mte1, Pipe::M, id)
                });
            }
            self.mmad(b, st, &l0, q, first.clone());
            when(b, "done", done.clone(), |b| set(b, Pipe::M, Pipe::V, q));
        }
        set(b, Pipe::M, Pipe::Mte1, l0);
    }

    /// M: the `mmad` of strip `q` from L0 slot `l0`.
    fn mmad(&self, b: &mut Builder, st: &Step, l0: &Expr, q: i64, init: Expr) {
        let rows = self.fractal_rows(&st.last_row, q * self.sr / F, self.sr / F);
        let depth = self.depth(&st.st);
        let width = self.width(&st.tile);
        when(b, "strip", positive(&rows), |b| {
            let cc = at(b, self.n.c_l0, [c(q), c(0)]);
            let a = at(b, self.n.a_l0, [l0.clone(), depth.times(c(q * self.sr))]);
            let bb = at(b, self.n.b_l0, [l0.clone(), c(0)]);
            b.origin(Some("C[m, n] += A[m, k] * B[k, n]"));
            let sizes = (fold(rows * F), depth.expr(), width.expr());
            b.mmad(cc, a, bb, sizes, fold(init));
            b.origin(None);
        });
    }

    /// The core's last tile's final steps, strip by strip: per strip and step, the strip's
    /// slice of A and the step's B slice (from its final piece) into an L0 slot, one `mmad`;
    /// then the strip drains in parts.
    fn last_steps(&self, b: &mut Builder) {
        let s = self.s;
        let tt = self.mine.clone() - 1;
        let parts = s.parts(c_row_bytes(self.mm));
        // the tile (its step and place in the loop do not matter to the drains)
        let step = self.step_of(tt.clone(), c(0), c(0));
        for q in 0..s.strips {
            repeat(b, "u", c(s.last), |b, k| {
                let g = self.main.clone() + q * s.last + k.clone();
                let st = self.step_of(tt.clone(), k.clone() + (self.steps - s.last), g);
                let l0 = st.g.clone() % 2;
                let depth = self.depth(&st.st);
                // MTE1
                wait(b, Pipe::M, Pipe::Mte1, l0.clone());
                let rows = self.fractal_rows(&st.last_row, q * self.sr / F, self.sr / F);
                self.stage_a(b, &l0, &st.st, &depth, q * self.sr / F, rows);
                let width = self.width(&st.tile);
                self.stage_b(b, &l0, k + s.ring, &depth, &width);
                set(b, Pipe::Mte1, Pipe::M, l0.clone() * s.halves);
                // M
                wait(b, Pipe::Mte1, Pipe::M, l0.clone() * s.halves);
                self.mmad(b, &st, &l0, q, c(0));
                set(b, Pipe::M, Pipe::Mte1, l0);
            });
            set(b, Pipe::M, Pipe::V, q);
            let mut from = 0;
            let spans: Vec<(i64, i64, i64)> = (0..)
                .zip(&parts)
                .map(|(j, &rows)| {
                    from += rows;
                    (j, from - rows, rows)
                })
                .collect();
            self.drain(b, &step.tile, &step.last_row, q, &spans);
        }
    }

    /// V and MTE3: strip `p` of a tile, in spans (flag id, first row, rows): each converted
    /// L0C (NZ f32) -> UB (ND, C's type, the epilogue applied) and stored, V waiting for the
    /// previous store with the span's id before writing UB.
    fn drain(
        &self,
        b: &mut Builder,
        tile: &Tile,
        last_row: &Expr,
        p: i64,
        spans: &[(i64, i64, i64)],
    ) {
        let (mm, s, sr) = (self.mm, self.s, self.sr);
        wait(b, Pipe::M, Pipe::V, p);
        let pitch = self.fractal_rows(last_row, p * sr / F, sr / F) * F;
        for &(id, r, n) in spans {
            wait(b, Pipe::Mte3, Pipe::V, id);
            let rows = clamp(minus(&tile.rows, p * sr + r), n);
            when(b, "rows", positive(&rows), |b| {
                let dst = at(b, self.n.c_ub, [c(p), c(r * s.tn)]);
                // row r of an NZ block is at r * 16
                let src = at(b, self.n.c_l0, [c(p), c(r * F)]);
                push(
                    b,
                    "C strip, L0C NZ -> UB ND",
                    super::out_of_l0c(
                        mm,
                        (dst, src),
                        (rows.clone(), tile.cols.clone()),
                        (pitch.clone(), c(s.tn)),
                    ),
                );
            });
            set(b, Pipe::V, Pipe::Mte3, id);
            wait(b, Pipe::V, Pipe::Mte3, id);
            when(b, "rows", positive(&rows), |b| {
                let row = tile.row0.clone() + (p * sr + r);
                let dst = at(
                    b,
                    self.n.c,
                    index(&mm.c, &tile.batch, row, tile.col0.clone()),
                );
                let src = at(b, self.n.c_ub, [c(p), c(r * s.tn)]);
                push(
                    b,
                    "C store",
                    Dma::new(dst, src, rows.clone(), tile.cols.clone())
                        .strides(s.tn, row_stride(&mm.c)),
                );
            });
            set(b, Pipe::Mte3, Pipe::V, id);
        }
        set(b, Pipe::V, Pipe::M, p);
    }
}
