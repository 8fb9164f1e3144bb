//! Vector instructions for graph nodes, given where every value lives in UB.
//!
//! An element-wise operation runs over its result's layout:
//! - *flat* when every operand is contiguous like the result or a splat: the whole region
//!   as one run of repeats (in chunks of the most repeats an instruction takes, the last
//!   repeat masked when the region is not whole repeats);
//! - a tile with per-row (spread) or per-column operands runs *row by row* (one instruction
//!   per row, `src_rs = 0` for the spread row) or *column chunk by column chunk* (one
//!   instruction per lane-wide chunk, the rows as repeats with `src_rs = pitch`, the last
//!   chunk masked), whichever costs fewer cycles for a full group of rows.
//!
//! Reductions run `vreduce` per repeat into partial results, then fold them per row.
//! Instructions of the vector pipe that touch a buffer another one wrote (or write one
//! another read) since the last barrier get a `barrier V` first: the strict semantics
//! order nothing within a pipe.

use super::graph::{Graph, Layout, Op, Val};
use super::lower::Frame;
use npu_sim::builder::Builder;
use npu_sim::program::{
    BarrierScope, BufferId, CmpOp as ECmp, DType, Expr, MemRef, Pipe, UnaryOp, VecOp, Vector,
};
use std::collections::HashSet;

/// Where a value lives: a UB buffer and the element its value starts at.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// The buffer.
    pub buf: BufferId,
    /// The first element.
    pub offset: Expr,
}

/// The rows of the group being computed: how many (an expression of the group) and at most.
#[derive(Clone, Debug, PartialEq)]
pub struct Rows {
    /// The rows of this group.
    pub count: Expr,
    /// The most rows a group has.
    pub max: i64,
}

/// A number of elements or repeats known as an expression and by its static bounds.
#[derive(Clone, Debug)]
struct Count {
    expr: Expr,
    min: i64,
    max: i64,
    /// Every value is a multiple of this.
    unit: i64,
}

impl Count {
    fn fixed(n: i64) -> Count {
        Count {
            expr: Expr::Const(n),
            min: n,
            max: n,
            unit: n,
        }
    }
    fn rows(rows: &Rows, per: i64) -> Count {
        if let Expr::Const(c) = rows.count {
            return Count::fixed(c * per);
        }
        Count {
            expr: scaled(&rows.count, per),
            min: per,
            max: rows.max * per,
            unit: per,
        }
    }
}

/// One instruction's share of a run of repeats: its first repeat (counted from the run's
/// start), its repeats and, for a last partial repeat, its active lanes.
#[derive(Clone, Debug)]
struct Run {
    first: Expr,
    repeat: Expr,
    mask: Option<Expr>,
}

/// An operand of one instruction.
#[derive(Clone, Debug)]
struct Opnd {
    place: Place,
    layout: Layout,
}

/// How an element-wise operation over a tile is swept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sweep {
    Flat,
    ByRow,
    ByChunk,
}

/// The vector unit's figures the emission and its cost need.
#[derive(Clone, Copy, Debug)]
pub struct Unit {
    /// The rows' frame.
    pub frame: Frame,
    /// Cycles added to every vector instruction.
    pub startup: f64,
}

impl Unit {
    /// `machine`'s vector unit over rows `width` elements wide ([`Frame::of`]).
    pub fn of(machine: &npu_sim::Machine, width: i64) -> Unit {
        Unit {
            frame: Frame::of(machine, width),
            startup: machine.vector.startup,
        }
    }

    fn lanes_of(&self, g: &Graph, i: Val) -> i64 {
        let n = &g.nodes[i];
        let widest = (n.op.operands().iter())
            .map(|&a| g.nodes[a].dtype.size())
            .chain([n.dtype.size()])
            .max()
            .unwrap_or(1);
        self.frame.bytes_per_repeat / widest as i64
    }

    /// The most repeats of one partial-reduction instruction: each repeat writes one
    /// result, so that the next instruction's results start on an aligned block.
    fn partial_chunk(&self, d: DType) -> i64 {
        let per_block = (self.frame.align / d.size() as i64).max(1);
        (self.frame.max_repeat / per_block * per_block).max(1)
    }

    /// How an element-wise node over a tile is swept, with the layouts of its operands.
    fn sweep(&self, dst: Layout, srcs: &[Layout], lanes: i64, rows: i64) -> Sweep {
        let width = self.frame.width;
        let contiguous = |l: &Layout| match l {
            Layout::Tile { pitch } => *pitch == width,
            Layout::Splat => true,
            _ => false,
        };
        if !matches!(dst, Layout::Tile { .. }) || (contiguous(&dst) && srcs.iter().all(contiguous))
        {
            return Sweep::Flat;
        }
        let per_row = width / lanes;
        let by_row = (width % lanes == 0 && per_row <= self.frame.max_repeat)
            .then_some(rows as f64 * (self.startup + per_row as f64));
        let chunks = (width + lanes - 1) / lanes;
        let by_chunk = chunks as f64 * (self.startup + rows as f64);
        match by_row {
            Some(r) if r <= by_chunk => Sweep::ByRow,
            _ => Sweep::ByChunk,
        }
    }

    /// The elements a flat sweep of `layout` covers.
    fn region(&self, layout: Layout, rows: &Rows, lanes: i64) -> Count {
        match layout {
            Layout::Tile { pitch } | Layout::Part { pitch } => Count::rows(rows, pitch),
            Layout::Row => Count::rows(rows, 1),
            Layout::Spread => Count::rows(rows, lanes),
            Layout::Col => Count::fixed(self.frame.width),
            Layout::Splat => Count::fixed(lanes),
            Layout::One => Count::fixed(1),
        }
    }

    /// Cycles of the vector unit for node `i` over a group of `rows` rows (as the emission
    /// will do it; barriers not counted).
    pub fn cycles(&self, g: &Graph, i: Val, rows: i64) -> f64 {
        let n = &g.nodes[i];
        let lanes = self.lanes_of(g, i);
        let maxrep = self.frame.max_repeat;
        let runs = |elements: i64, maxrep: i64| -> f64 {
            let (full, tail) = (elements / lanes, elements % lanes);
            let instrs = (full + maxrep - 1) / maxrep + (tail > 0) as i64;
            instrs as f64 * self.startup + (full + (tail > 0) as i64) as f64
        };
        let r = Rows {
            count: Expr::Const(rows),
            max: rows,
        };
        let flat = |layout: Layout| runs(self.region(layout, &r, lanes).max, maxrep);
        match n.op {
            Op::Given => 0.0,
            Op::Dup(v) => flat(n.layout) * if v.value().is_finite() { 1.0 } else { 2.0 },
            Op::Spread(_) | Op::Fold { .. } => self.startup + rows as f64,
            Op::Partials { src, len, .. } => {
                let full = len / lanes;
                match (n.layout, g.nodes[src].layout) {
                    (
                        Layout::Part { pitch },
                        Layout::Tile { pitch: sp } | Layout::Part { pitch: sp },
                    ) if pitch == full && sp == len => {
                        runs(rows * len, self.partial_chunk(n.dtype))
                    }
                    // row by row, a row's repeats in runs of at most a chunk
                    _ => rows as f64 * runs(full * lanes, self.partial_chunk(n.dtype)),
                }
            }
            _ => {
                let srcs: Vec<Layout> = (n.op.operands().iter())
                    .map(|&a| g.nodes[a].layout)
                    .collect();
                let width = self.frame.width;
                match self.sweep(n.layout, &srcs, lanes, rows) {
                    Sweep::Flat => flat(n.layout),
                    Sweep::ByRow => rows as f64 * (self.startup + (width / lanes) as f64),
                    Sweep::ByChunk => {
                        ((width + lanes - 1) / lanes) as f64 * (self.startup + rows as f64)
                    }
                }
            }
        }
    }
}

/// Emits vector instructions through a builder, with the barriers they need.
pub struct Emitter<'b> {
    /// The builder.
    pub b: &'b mut Builder,
    /// The vector unit.
    pub unit: Unit,
    written: HashSet<BufferId>,
    read: HashSet<BufferId>,
}

/// `Some(v)` unless `v` is the option's default.
fn opt(v: Expr, default: i64) -> Option<Expr> {
    (v != Expr::Const(default)).then_some(v)
}

impl<'b> Emitter<'b> {
    /// An emitter with nothing pending.
    pub fn new(b: &'b mut Builder, unit: Unit) -> Emitter<'b> {
        Emitter {
            b,
            unit,
            written: HashSet::new(),
            read: HashSet::new(),
        }
    }

    /// `barrier V`: everything emitted so far finishes before what follows starts.
    pub fn barrier(&mut self) {
        self.b.barrier(BarrierScope::Pipe(Pipe::V));
        self.written.clear();
        self.read.clear();
    }

    /// Before the instructions of one node (which touch disjoint parts of their
    /// destination): a barrier if they read a buffer written, or write one touched, since
    /// the last barrier.
    fn guard(&mut self, dst: BufferId, srcs: &[BufferId]) {
        let conflict = srcs.iter().any(|s| self.written.contains(s))
            || self.written.contains(&dst)
            || self.read.contains(&dst);
        if conflict {
            self.barrier();
        }
        self.read.extend(srcs.iter().copied());
        self.written.insert(dst);
    }

    fn push(&mut self, v: Vector) {
        self.b.push(v);
    }

    fn at(&self, p: &Place, plus: Expr) -> MemRef {
        let index = if plus == Expr::Const(0) {
            p.offset.clone()
        } else if p.offset == Expr::Const(0) {
            plus
        } else {
            p.offset.clone() + plus
        };
        self.b.at(p.buf, [index])
    }

    /// Emits node `i`, every value placed by `place`, over the group's `rows`.
    pub fn node(&mut self, g: &Graph, i: Val, place: &dyn Fn(Val) -> Place, rows: &Rows) {
        let n = &g.nodes[i];
        let lanes = self.unit.lanes_of(g, i);
        let dst = Opnd {
            place: place(i),
            layout: n.layout,
        };
        let opnd = |a: Val| Opnd {
            place: place(a),
            layout: g.nodes[a].layout,
        };
        if n.op != Op::Given {
            let srcs: Vec<BufferId> = n.op.operands().iter().map(|&a| place(a).buf).collect();
            self.guard(dst.place.buf, &srcs);
        }
        match n.op {
            Op::Given => {}
            Op::Dup(v) => self.dup(&dst, v.value(), lanes, rows),
            Op::Unary(op, a) => {
                self.elementwise(&dst, &[opnd(a)], lanes, rows, &move |s| VecOp::Unary {
                    op,
                    a: s[0].clone(),
                })
            }
            Op::Binary(op, a, b) => {
                self.elementwise(&dst, &[opnd(a), opnd(b)], lanes, rows, &move |s| {
                    VecOp::Binary {
                        op,
                        a: s[0].clone(),
                        b: s[1].clone(),
                    }
                })
            }
            Op::Scalar(op, a, c) => {
                self.elementwise(&dst, &[opnd(a)], lanes, rows, &move |s| VecOp::Scalar {
                    op,
                    a: s[0].clone(),
                    value: c.value(),
                })
            }
            Op::Cmp(op, a, b) => {
                self.elementwise(&dst, &[opnd(a), opnd(b)], lanes, rows, &move |s| {
                    VecOp::Cmp {
                        op,
                        a: s[0].clone(),
                        b: s[1].clone(),
                    }
                })
            }
            Op::Select(c, a, b) => {
                self.elementwise(&dst, &[opnd(c), opnd(a), opnd(b)], lanes, rows, &|s| {
                    VecOp::Select {
                        cond: s[0].clone(),
                        a: s[1].clone(),
                        b: s[2].clone(),
                    }
                })
            }
            Op::Conv(a) => self.elementwise(&dst, &[opnd(a)], lanes, rows, &|s| VecOp::Conv {
                a: s[0].clone(),
            }),
            Op::Spread(a) => {
                let src = opnd(a);
                let repeat = match src.layout {
                    Layout::One => Expr::Const(1),
                    _ => rows.count.clone(),
                };
                let v = Vector::new(
                    VecOp::Bcast {
                        a: self.at(&src.place, Expr::Const(0)),
                    },
                    self.at(&dst.place, Expr::Const(0)),
                    repeat,
                );
                self.push(v);
            }
            Op::Fold {
                op,
                src,
                start,
                len,
            } => {
                let s = opnd(src);
                let pitch = match s.layout {
                    Layout::Tile { pitch } | Layout::Part { pitch } => pitch,
                    _ => lanes,
                };
                let mut v = Vector::new(
                    VecOp::Reduce {
                        op,
                        a: self.at(&s.place, Expr::Const(start)),
                    },
                    self.at(&dst.place, Expr::Const(0)),
                    rows.count.clone(),
                );
                v.sizes.src_rs[0] = opt(Expr::Const(pitch), lanes);
                if len < lanes {
                    v = v.mask(len);
                }
                self.push(v);
            }
            Op::Partials { op, src, len } => {
                self.partials(&dst, &opnd(src), op, (len, lanes, n.dtype), rows)
            }
        }
    }

    /// A constant in every lane of a splat. Infinities and NaN have no immediate in the
    /// program text: they are computed (`ln 0`, `1/0`, `sqrt -1`).
    fn dup(&mut self, dst: &Opnd, v: f64, lanes: i64, rows: &Rows) {
        let (seed, then) = match v {
            v if v.is_finite() => (v, None),
            v if v.is_nan() => (-1.0, Some(UnaryOp::Sqrt)),
            v if v > 0.0 => (0.0, Some(UnaryOp::Rec)),
            _ => (0.0, Some(UnaryOp::Ln)),
        };
        self.elementwise(dst, &[], lanes, rows, &|_| VecOp::Dup { value: seed });
        if let Some(op) = then {
            self.barrier();
            self.guard(dst.place.buf, &[dst.place.buf]);
            let src = dst.clone();
            self.elementwise(dst, &[src], lanes, rows, &move |s| VecOp::Unary {
                op,
                a: s[0].clone(),
            });
        }
    }

    /// Repeat-by-repeat partial reductions of each row's first `len` elements.
    fn partials(
        &mut self,
        dst: &Opnd,
        src: &Opnd,
        op: npu_sim::program::ReduceOp,
        (len, lanes, dtype): (i64, i64, DType),
        rows: &Rows,
    ) {
        let full = len / lanes;
        let (Layout::Part { pitch }, Layout::Tile { pitch: sp } | Layout::Part { pitch: sp }) =
            (dst.layout, src.layout)
        else {
            return;
        };
        // (first repeat, repeats, elements between rows of the source and of the results)
        // one instruction: `repeat` repeats from source element `from`, results from `to`
        let reduce = |e: &mut Emitter<'_>, from: Expr, to: Expr, repeat: Expr| {
            let v = Vector::new(
                VecOp::Reduce {
                    op,
                    a: e.at(&src.place, from),
                },
                e.at(&dst.place, to),
                repeat,
            );
            e.push(v);
        };
        // (each instruction's results start on an aligned block)
        let chunk = self.unit.partial_chunk(dtype);
        if pitch == full && sp == len {
            // rows back to back: one run of repeats, one partial result each
            let n = Count::rows(rows, len);
            self.runs(&n, lanes, chunk, &mut |e, run| {
                reduce(e, scaled(&run.first, lanes), run.first, run.repeat)
            });
        } else {
            // row by row, each row's results on an aligned block, a row's repeats in
            // instructions of at most `chunk`
            self.each("row", rows.count.clone(), rows.max == 1, &mut |e, row| {
                for first in (0..full).step_by(chunk as usize) {
                    let from = scaled(&row, sp) + first * lanes;
                    let to = scaled(&row, pitch) + first;
                    reduce(e, from, to, Expr::Const((full - first).min(chunk)));
                }
            });
        }
    }

    /// `body(emitter, index)` for `index` in `0..count`: a loop, or the body once with index
    /// 0 when `once` (the count is 1).
    fn each(
        &mut self,
        name: &str,
        count: Expr,
        once: bool,
        body: &mut dyn FnMut(&mut Emitter<'_>, Expr),
    ) {
        if once {
            return body(self, Expr::Const(0));
        }
        self.nested(|b, inner| b.repeat(name, count, |b, v| inner(b, &mut |e| body(e, v.clone()))));
    }

    /// `body(emitter)` where `cond` holds.
    fn when(&mut self, cond: Expr, body: &mut dyn FnMut(&mut Emitter<'_>)) {
        self.nested(|b, inner| b.when("tail", cond, |b| inner(b, body)));
    }

    /// Runs `open`, which opens a block of the builder and calls its second argument inside
    /// it: the barrier bookkeeping carries into the block and out of it.
    fn nested(
        &mut self,
        open: impl FnOnce(&mut Builder, &mut dyn FnMut(&mut Builder, &mut dyn FnMut(&mut Emitter<'_>))),
    ) {
        let unit = self.unit;
        let mut written = std::mem::take(&mut self.written);
        let mut read = std::mem::take(&mut self.read);
        let mut inner = |b: &mut Builder, body: &mut dyn FnMut(&mut Emitter<'_>)| {
            let mut e = Emitter {
                b,
                unit,
                written: std::mem::take(&mut written),
                read: std::mem::take(&mut read),
            };
            body(&mut e);
            written = e.written;
            read = e.read;
        };
        open(self.b, &mut inner);
        self.written = written;
        self.read = read;
    }

    /// Runs of repeats over `n` elements: `body(emitter, first repeat, repeats, mask)` for
    /// each chunk of at most `max_repeat` whole repeats, then the masked last repeat if the
    /// elements are not whole repeats.
    /// Chunks hold at most `chunk` repeats (a chunk's first repeat must start its operands
    /// on aligned elements).
    fn runs(
        &mut self,
        n: &Count,
        lanes: i64,
        chunk: i64,
        body: &mut dyn FnMut(&mut Emitter<'_>, Run),
    ) {
        let maxrep = chunk;
        let fixed = n.min == n.max;
        let full = match &n.expr {
            Expr::Const(c) => Expr::Const(c / lanes),
            e => e.clone() / lanes,
        };
        let (full_min, full_max) = (n.min / lanes, n.max / lanes);
        if n.max < lanes && n.min >= 1 {
            // one repeat, part of it
            return body(
                self,
                Run {
                    first: Expr::Const(0),
                    repeat: Expr::Const(1),
                    mask: Some(n.expr.clone()),
                },
            );
        }
        if full_min >= 1 && full_max <= maxrep {
            body(
                self,
                Run {
                    first: Expr::Const(0),
                    repeat: full.clone(),
                    mask: None,
                },
            );
        } else if full_max > 0 {
            let chunks = match &full {
                Expr::Const(c) => Expr::Const((c + maxrep - 1) / maxrep),
                f => (f.clone() + (maxrep - 1)) / maxrep,
            };
            let f = full.clone();
            self.each("q", chunks, false, &mut |e, q| {
                let repeat = (f.clone() - q.clone() * maxrep).min(maxrep);
                body(
                    e,
                    Run {
                        first: q * maxrep,
                        repeat,
                        mask: None,
                    },
                );
            });
        }
        if n.unit % lanes == 0 {
            return;
        }
        if fixed {
            body(
                self,
                Run {
                    first: full,
                    repeat: Expr::Const(1),
                    mask: Some(Expr::Const(n.max % lanes)),
                },
            );
        } else {
            let tail = n.expr.clone() % lanes;
            self.when(tail.clone().cmp(ECmp::Gt, 0), &mut |e| {
                body(
                    e,
                    Run {
                        first: full.clone(),
                        repeat: Expr::Const(1),
                        mask: Some(tail.clone()),
                    },
                )
            });
        }
    }

    /// An element-wise instruction over `dst`'s layout, `make` building it from its sources.
    fn elementwise(
        &mut self,
        dst: &Opnd,
        srcs: &[Opnd],
        lanes: i64,
        rows: &Rows,
        make: &dyn Fn(&[MemRef]) -> VecOp,
    ) {
        let layouts: Vec<Layout> = srcs.iter().map(|s| s.layout).collect();
        let width = self.unit.frame.width;
        match self.unit.sweep(dst.layout, &layouts, lanes, rows.max) {
            Sweep::Flat => {
                let n = self.unit.region(dst.layout, rows, lanes);
                let chunk = self.unit.frame.max_repeat;
                self.runs(&n, lanes, chunk, &mut |e, run| {
                    let step = |l: Layout| if l == Layout::Splat { 0 } else { lanes };
                    let refs: Vec<MemRef> = (srcs.iter())
                        .map(|s| e.at(&s.place, scaled(&run.first, step(s.layout))))
                        .collect();
                    let dst_at = e.at(&dst.place, scaled(&run.first, lanes));
                    let mut v = Vector::new(make(&refs), dst_at, run.repeat);
                    for (k, s) in srcs.iter().enumerate() {
                        v.sizes.src_rs[k] = opt(Expr::Const(step(s.layout)), lanes);
                    }
                    if let Some(m) = run.mask {
                        v = v.mask(m);
                    }
                    e.push(v);
                });
            }
            Sweep::ByRow => {
                let per_row = width / lanes;
                self.each("row", rows.count.clone(), rows.max == 1, &mut |e, row| {
                    // (start of row `row`, repeat stride) of an operand
                    let at = |l: Layout| match l {
                        Layout::Tile { pitch } => (scaled(&row, pitch), lanes),
                        Layout::Spread => (scaled(&row, lanes), 0),
                        Layout::Splat => (Expr::Const(0), 0),
                        _ => (Expr::Const(0), lanes),
                    };
                    let refs: Vec<MemRef> = (srcs.iter())
                        .map(|s| e.at(&s.place, at(s.layout).0))
                        .collect();
                    let mut v =
                        Vector::new(make(&refs), e.at(&dst.place, at(dst.layout).0), per_row);
                    for (k, s) in srcs.iter().enumerate() {
                        v.sizes.src_rs[k] = opt(Expr::Const(at(s.layout).1), lanes);
                    }
                    e.push(v);
                });
            }
            Sweep::ByChunk => {
                let chunks = (width + lanes - 1) / lanes;
                self.each("j", Expr::Const(chunks), chunks == 1, &mut |e, j| {
                    // (start of chunk `j`, repeat stride) of an operand
                    let at = |l: Layout| match l {
                        Layout::Tile { pitch } => (scaled(&j, lanes), pitch),
                        Layout::Spread => (Expr::Const(0), lanes),
                        Layout::Col => (scaled(&j, lanes), 0),
                        _ => (Expr::Const(0), 0),
                    };
                    let refs: Vec<MemRef> = (srcs.iter())
                        .map(|s| e.at(&s.place, at(s.layout).0))
                        .collect();
                    let (d_at, d_rs) = at(dst.layout);
                    let mut v =
                        Vector::new(make(&refs), e.at(&dst.place, d_at), rows.count.clone());
                    v.sizes.dst_rs = opt(Expr::Const(d_rs), lanes);
                    for (k, s) in srcs.iter().enumerate() {
                        v.sizes.src_rs[k] = opt(Expr::Const(at(s.layout).1), lanes);
                    }
                    if width % lanes != 0 {
                        let left = Expr::Const(width) - j.clone() * lanes;
                        v = v.mask(if chunks == 1 {
                            Expr::Const(width)
                        } else {
                            left.min(lanes)
                        });
                    }
                    e.push(v);
                });
            }
        }
    }
}

/// `x * k` (0 when `k` is 0).
fn scaled(x: &Expr, k: i64) -> Expr {
    match (x, k) {
        (_, 0) | (Expr::Const(0), _) => Expr::Const(0),
        (Expr::Const(c), k) => Expr::Const(c * k),
        (x, 1) => x.clone(),
        (x, k) => x.clone() * k,
    }
}

impl Emitter<'_> {
    /// Zeroes `elements` elements of type `dtype` at `place` (so that padding the loads leave
    /// unwritten reads as written).
    pub fn fill(&mut self, place: &Place, dtype: DType, elements: i64) {
        let lanes = self.unit.frame.lanes(dtype);
        self.guard(place.buf, &[]);
        let chunk = self.unit.frame.max_repeat;
        self.runs(&Count::fixed(elements), lanes, chunk, &mut |e, run| {
            let at = e.at(place, scaled(&run.first, lanes));
            let mut v = Vector::new(VecOp::Dup { value: 0.0 }, at, run.repeat);
            if let Some(m) = run.mask {
                v = v.mask(m);
            }
            e.push(v);
        });
    }
}
