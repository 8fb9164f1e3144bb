//! The strips schedule's program (see the parent module for the schedule).

use super::{c_row_bytes, Strips};
use crate::npu::matmul::fold::{at, clamp, fold, minus, positive, push, repeat, set, wait, when};
use crate::npu::matmul::tail::{Buffers, SpanAt, Tail};
use crate::npu::matmul::Names;
use crate::npu::matmul::{c, dtype, index, round16, row_stride, Grid, Tile, F, FRACTAL};
use crate::npu::recognise::Matmul;
use crate::npu::vector::emit::{Place, Rows};
use crate::npu::NpuError;
use npu_sim::builder::Builder;
use npu_sim::program::{CmpOp, DType, Dma, DmaMode, Expr, Pipe, Tier};

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

/// Everything the emitting functions share.
struct Emit<'a> {
    mm: &'a Matmul,
    s: Strips,
    n: Names,
    /// The vector epilogue with its buffers, if any.
    epilogue: Option<(&'a Tail<'a>, &'a Buffers)>,
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
pub(in crate::npu::matmul) fn program(
    mm: &Matmul,
    cores: i64,
    flag_ids: i64,
    s: Strips,
    tail: Option<&Tail>,
) -> Result<Builder, NpuError> {
    s.check(mm, cores, flag_ids)
        .map_err(|why| NpuError::Internal(format!("{s:?}: {why}")))?;
    let mut b = Builder::new();
    let (a, bt, ct) = crate::npu::matmul::tensors(&mut b, mm)?;
    let (ta, tb) = (dtype(mm.product.a.elem)?, dtype(mm.product.b.elem)?);
    let sr = s.strip_rows();
    let (c_ub, c_out, bufs) = crate::npu::matmul::c_buffers(&mut b, mm, tail, s.c_tiles(), false)?;
    let n = Names {
        a,
        b: bt,
        c: ct,
        a_l1: b.buffer(
            "a_l1",
            Tier::L1,
            ta,
            &[(s.tm * round16(mm.product.k)) as u64],
        ),
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
        c_ub,
        c_out,
    };
    let grid = Grid::new(mm, s.tm, s.tn, cores);
    let steps = s.steps(mm.product.k);
    let mine = grid.mine();
    let (final_from, final_gap) = s.final_loads(steps);
    let e = Emit {
        mm,
        s,
        n,
        epilogue: tail.zip(bufs.as_ref()),
        grid,
        steps,
        sr,
        hr: s.tm / s.halves,
        m_tail16: round16(mm.product.m - (mm.product.m - 1) / s.tm * s.tm),
        main: (mine.clone() * steps - s.last).max(0),
        mine,
        final_from,
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
    if let Some((tail, bufs)) = e.epilogue {
        tail.finish(&mut b, bufs);
    }
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
        let mt = (self.mm.product.m + self.s.tm - 1) / self.s.tm;
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
        let tail = round16(self.mm.product.k) - (self.steps - 1) * self.s.tk;
        Two::new(st.clone().cmp(CmpOp::Eq, self.steps - 1), tail, self.s.tk)
    }

    /// The width of a tile rounded to fractals (the last column's may be narrower).
    fn width(&self, tile: &Tile) -> Two {
        let tail = round16(self.mm.product.n - (self.grid.nt - 1) * self.s.tn);
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
                let len = if mm.product.k % kc == 0 {
                    c(kc)
                } else {
                    (c(mm.product.k) - k0.clone()).min(kc)
                };
                let row = st.tile.row0.clone() + h * self.hr;
                let src = at(
                    b,
                    self.n.a,
                    index(&mm.product.a, &st.tile.batch, row, k0.clone()),
                );
                // NZ with TM rows per fractal column: column k0 at k0 * TM, row r at r * 16
                let dst = at(b, self.n.a_l1, [k0 * s.tm + h * self.hr * F]);
                push(
                    b,
                    "A band, ND -> NZ",
                    Dma::new(dst, src, rows, len)
                        .strides(row_stride(&mm.product.a), s.tm)
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
        let rows = if mm.product.k % s.tk == 0 {
            c(s.tk)
        } else {
            (c(mm.product.k) - k0.clone()).min(s.tk)
        };
        let src = at(
            b,
            self.n.b,
            index(&mm.product.b, &st.tile.batch, k0, st.tile.col0.clone()),
        );
        let dst = at(b, self.n.b_l1, [slot, c(0)]);
        push(
            b,
            "B piece, ND -> NZ",
            Dma::new(dst, src, rows, st.tile.cols.clone())
                .strides(row_stride(&mm.product.b), s.tk)
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

    /// The index in C (and in every input of its shape) of row `row` of `tile`, at its
    /// first column.
    fn span_index(&self, tile: &Tile, row: i64) -> Vec<Expr> {
        let row = tile.row0.clone() + row;
        index(&self.mm.c, &tile.batch, row, tile.col0.clone())
    }

    /// V and MTE3: strip `p` of a tile, in spans (flag id, first row, rows): each converted
    /// L0C (NZ f32) -> UB (ND, C's type, the epilogue applied; f32 before a vector
    /// epilogue, which V then computes) and stored, V waiting for the previous store with
    /// the span's id before writing UB.
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
        for (i, &(id, r, n)) in spans.iter().enumerate() {
            wait(b, Pipe::Mte3, Pipe::V, id);
            let rows = clamp(minus(&tile.rows, p * sr + r), n);
            // the span's first element in C's results in UB, and in its sums (one strip's
            // slot with a vector epilogue)
            let first = p * sr * s.tn + r * s.tn;
            let sums = if self.epilogue.is_some() {
                r * s.tn
            } else {
                first
            };
            when(b, "rows", positive(&rows), |b| {
                let dst = at(b, self.n.c_ub, [c(sums)]);
                // row r of an NZ block is at r * 16
                let src = at(b, self.n.c_l0, [c(p), c(r * F)]);
                push(
                    b,
                    "C strip, L0C NZ -> UB ND",
                    crate::npu::matmul::out_of_l0c(
                        mm,
                        (dst, src),
                        (rows.clone(), tile.cols.clone()),
                        (pitch.clone(), c(s.tn)),
                    ),
                );
            });
            if let Some((tail, bufs)) = self.epilogue {
                // the strip's L0C block is free once its last span is out of it: the next
                // tile need not wait for the vector unit's epilogue
                if i + 1 == spans.len() {
                    set(b, Pipe::V, Pipe::M, p);
                }
                when(b, "rows", positive(&rows), |b| {
                    let place = |buf, at| Place { buf, offset: c(at) };
                    let span = Rows {
                        count: rows.clone(),
                        max: n,
                    };
                    let gm = SpanAt {
                        index: self.span_index(tile, p * sr + r),
                        cols: tile.cols.clone(),
                        row_stride: row_stride(&mm.c),
                        // a tile's spans alternate (its strips, or the last tile's
                        // parts)
                        slot: c(id % 2),
                    };
                    let (sums, out) = (place(self.n.c_ub, sums), place(self.n.c_out, first));
                    tail.span(b, bufs, (&sums, &out), (span, &gm), &tile.col0);
                });
            }
            set(b, Pipe::V, Pipe::Mte3, id);
            wait(b, Pipe::V, Pipe::Mte3, id);
            when(b, "rows", positive(&rows), |b| {
                let dst = at(b, self.n.c, self.span_index(tile, p * sr + r));
                let src = at(b, self.n.c_out, [c(first)]);
                push(
                    b,
                    "C store",
                    Dma::new(dst, src, rows.clone(), tile.cols.clone())
                        .strides(s.tn, row_stride(&mm.c)),
                );
            });
            set(b, Pipe::Mte3, Pipe::V, id);
        }
        if self.epilogue.is_none() {
            set(b, Pipe::V, Pipe::M, p);
        }
    }
}
