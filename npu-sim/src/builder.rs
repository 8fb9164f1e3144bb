//! A Rust API to build programs (what the compiler uses to emit NPU code).
//!
//! ```
//! use npu_sim::builder::Builder;
//! use npu_sim::program::*;
//! let mut b = Builder::new();
//! let x = b.tensor("x", DType::F16, &[4, 128], Direction::In);
//! let y = b.tensor("y", DType::F16, &[4, 128], Direction::Out);
//! let a = b.buffer("a", Tier::Ub, DType::F16, &[128]);
//! b.for_loop("i", 0.into(), 4.into(), 1, |b, i| {
//!     b.origin(Some("y[i, :] = x[i, :]"));
//!     b.dma(b.at(a, [0.into()]), b.at(x, [i.clone(), 0.into()]), 1, 128);
//!     b.flag(true, Pipe::Mte2, Pipe::Mte3, 0);
//!     b.flag(false, Pipe::Mte2, Pipe::Mte3, 0);
//!     // Every option has a helper: here strides, in elements between burst starts.
//!     b.push(Dma::new(b.at(y, [i, 0.into()]), b.at(a, [0.into()]), 2, 64).strides(64, 64));
//!     b.barrier(BarrierScope::All);
//! });
//! let program = b.finish().unwrap();
//! let text = npu_sim::print(&program);
//! assert!(text.contains("loop i in 0..4"));
//! assert!(text.contains("# y[i, :] = x[i, :]"));
//! ```
//!
//! Sizes, strides, repeats, masks and flag ids are expressions ([`Expr`]), so that a partial
//! tile is `min(64, n - i)` rather than a copy of the loop: `Expr::min`, `Expr::select` and
//! the comparison helpers build them.

use crate::diag::Diagnostic;
use crate::program::*;
use std::ops;

/// Builds a [`Program`] statement by statement.
#[derive(Debug, Default)]
pub struct Builder {
    prog: Program,
    open: Vec<Vec<Stmt>>,
    origin: Origin,
}

impl From<i64> for Expr {
    fn from(c: i64) -> Expr {
        Expr::Const(c)
    }
}

impl ops::Add for Expr {
    type Output = Expr;
    fn add(self, rhs: Expr) -> Expr {
        Expr::Add(Box::new(self), Box::new(rhs))
    }
}

impl ops::Sub for Expr {
    type Output = Expr;
    fn sub(self, rhs: Expr) -> Expr {
        Expr::Sub(Box::new(self), Box::new(rhs))
    }
}

impl ops::Add<i64> for Expr {
    type Output = Expr;
    fn add(self, c: i64) -> Expr {
        self + Expr::Const(c)
    }
}

impl ops::Sub<i64> for Expr {
    type Output = Expr;
    fn sub(self, c: i64) -> Expr {
        self - Expr::Const(c)
    }
}

impl ops::Mul<i64> for Expr {
    type Output = Expr;
    fn mul(self, c: i64) -> Expr {
        Expr::Mul(c, Box::new(self))
    }
}

impl Expr {
    /// `min(self, other)`.
    pub fn min(self, other: impl Into<Expr>) -> Expr {
        Expr::Min(Box::new(self), Box::new(other.into()))
    }
    /// `max(self, other)`.
    pub fn max(self, other: impl Into<Expr>) -> Expr {
        Expr::Max(Box::new(self), Box::new(other.into()))
    }
    /// `self OP other`: 1 where it holds, else 0.
    pub fn cmp(self, op: CmpOp, other: impl Into<Expr>) -> Expr {
        Expr::Cmp(op, Box::new(self), Box::new(other.into()))
    }
    /// `select(self, a, b)`: `a` where `self` is non-zero, else `b`.
    pub fn select(self, a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
        Expr::Select(Box::new(self), Box::new(a.into()), Box::new(b.into()))
    }
}

impl ops::Div<i64> for Expr {
    type Output = Expr;
    /// Floor division by a positive constant.
    fn div(self, c: i64) -> Expr {
        Expr::Div(Box::new(self), c)
    }
}

impl ops::Rem<i64> for Expr {
    type Output = Expr;
    /// Non-negative remainder by a positive constant.
    fn rem(self, c: i64) -> Expr {
        Expr::Mod(Box::new(self), c)
    }
}

impl Dma {
    /// `count` contiguous bursts of `len` elements, no option set.
    pub fn new(dst: MemRef, src: MemRef, count: impl Into<Expr>, len: impl Into<Expr>) -> Dma {
        let len = len.into();
        Dma {
            dst,
            src,
            sizes: DmaSizes {
                count: count.into(),
                src_stride: len.clone(),
                dst_stride: len.clone(),
                len,
            },
            mode: DmaMode::Plain,
            relu: false,
            atomic: false,
        }
    }
    /// Elements between burst starts in the source and in the destination.
    pub fn strides(mut self, src: impl Into<Expr>, dst: impl Into<Expr>) -> Dma {
        self.sizes.src_stride = src.into();
        self.sizes.dst_stride = dst.into();
        self
    }
    /// A layout conversion: `transpose`, `nd2nz` or `nz2nd` ([`DmaMode`]).
    pub fn mode(mut self, mode: DmaMode) -> Dma {
        self.mode = mode;
        self
    }
    /// `relu`: negative values become zero on the way (out of L0C).
    pub fn with_relu(mut self) -> Dma {
        self.relu = true;
        self
    }
    /// `atomic`: add into GM instead of writing (UB -> GM).
    pub fn atomic_add(mut self) -> Dma {
        self.atomic = true;
        self
    }
}

impl Vector {
    /// `op` into `dst` over `repeat` repeats, every lane active, default strides.
    pub fn new(op: VecOp, dst: MemRef, repeat: impl Into<Expr>) -> Vector {
        Vector {
            op,
            dst,
            sizes: VectorSizes::repeats(repeat),
        }
    }
    /// `mask=`: the first `lanes` lanes of each repeat are active.
    pub fn mask(mut self, lanes: impl Into<Expr>) -> Vector {
        self.sizes.mask = Some(lanes.into());
        self
    }
    /// `dst_rs=`: elements between the destination's repeats.
    pub fn dst_stride(mut self, elements: impl Into<Expr>) -> Vector {
        self.sizes.dst_rs = Some(elements.into());
        self
    }
    /// `srcK_rs=`: elements between the repeats of source `k` (0-based).
    pub fn src_stride(mut self, k: usize, elements: impl Into<Expr>) -> Vector {
        self.sizes.src_rs[k] = Some(elements.into());
        self
    }
}

impl From<Dma> for Op {
    fn from(d: Dma) -> Op {
        Op::Dma(d)
    }
}
impl From<Vector> for Op {
    fn from(v: Vector) -> Op {
        Op::Vector(v)
    }
}
impl From<Load3d> for Op {
    fn from(l: Load3d) -> Op {
        Op::Load3d(l)
    }
}
impl From<Mmad> for Op {
    fn from(m: Mmad) -> Op {
        Op::Mmad(m)
    }
}

/// Something a memory reference can point at.
pub trait IntoTarget {
    /// The target.
    fn target(self) -> Target;
}
impl IntoTarget for TensorId {
    fn target(self) -> Target {
        Target::Tensor(self)
    }
}
impl IntoTarget for BufferId {
    fn target(self) -> Target {
        Target::Buffer(self)
    }
}

impl Builder {
    /// An empty program.
    pub fn new() -> Builder {
        Builder {
            prog: Program::default(),
            open: vec![vec![]],
            origin: Origin::default(),
        }
    }

    /// The note the instructions pushed from now on carry (the kernel statement they
    /// implement, say); diagnostics and traces show it, the printer writes it as a comment.
    pub fn origin(&mut self, note: Option<&str>) {
        self.origin = Origin(note.map(Into::into));
    }

    /// Declares a GM tensor.
    pub fn tensor(&mut self, name: &str, dtype: DType, shape: &[u64], dir: Direction) -> TensorId {
        self.prog.tensors.push(TensorDecl {
            name: name.into(),
            dtype,
            shape: shape.to_vec(),
            dir,
            span: Span::default(),
        });
        TensorId(self.prog.tensors.len() as u32 - 1)
    }

    /// Declares a buffer placed after the previous one of its tier.
    pub fn buffer(&mut self, name: &str, tier: Tier, dtype: DType, shape: &[u64]) -> BufferId {
        self.buffer_placed(name, tier, dtype, shape, Placement::Auto)
    }

    /// Declares a buffer with an explicit placement.
    pub fn buffer_placed(
        &mut self,
        name: &str,
        tier: Tier,
        dtype: DType,
        shape: &[u64],
        placement: Placement,
    ) -> BufferId {
        let span = Span::default();
        self.prog.buffers.push(BufferDecl {
            name: name.into(),
            tier,
            dtype,
            shape: shape.to_vec(),
            placement,
            span,
        });
        BufferId(self.prog.buffers.len() as u32 - 1)
    }

    /// A reference to element `index` of a tensor or buffer.
    pub fn at(&self, target: impl IntoTarget, index: impl IntoIterator<Item = Expr>) -> MemRef {
        MemRef {
            target: target.target(),
            index: index.into_iter().collect(),
            span: Span::default(),
        }
    }

    /// `loop name in lo..hi step step { body }`; the body gets the loop variable.
    pub fn for_loop(
        &mut self,
        name: &str,
        lo: Expr,
        hi: Expr,
        step: u64,
        body: impl FnOnce(&mut Builder, Expr),
    ) {
        let var = VarId(self.prog.vars.len() as u32);
        self.prog.vars.push(name.into());
        self.open.push(vec![]);
        body(self, Expr::Var(var));
        let stmts = self.open.pop().unwrap_or_default();
        self.stmt(Stmt::Loop(Loop {
            var,
            lo,
            hi,
            step,
            body: stmts,
            span: Span::default(),
        }));
    }

    /// `loop name in 0..cond { body }`: the body runs once where `cond` is 1 (a comparison)
    /// and never where it is 0, the idiom for a conditional block.
    pub fn when(&mut self, name: &str, cond: Expr, body: impl FnOnce(&mut Builder)) {
        self.for_loop(name, 0.into(), cond, 1, |b, _| body(b));
    }

    fn stmt(&mut self, s: Stmt) {
        if let Some(body) = self.open.last_mut() {
            body.push(s);
        }
    }

    /// Appends any instruction.
    pub fn push(&mut self, op: impl Into<Op>) {
        self.stmt(Stmt::Instr(Box::new(Instr {
            op: op.into(),
            span: Span::default(),
            origin: self.origin.clone(),
        })));
    }

    /// `dma dst, src, count=, len=` with contiguous bursts ([`Dma::new`] for the options).
    pub fn dma(&mut self, dst: MemRef, src: MemRef, count: impl Into<Expr>, len: impl Into<Expr>) {
        self.push(Dma::new(dst, src, count, len));
    }

    /// `load3d dst, src` with its sizes.
    pub fn load3d(&mut self, dst: MemRef, src: MemRef, sizes: Load3dSizes<Expr>) {
        self.push(Load3d { dst, src, sizes });
    }

    /// `mmad c, a, b, m=, k=, n=, init=` (overwrites where `init` is non-zero).
    pub fn mmad(
        &mut self,
        c: MemRef,
        a: MemRef,
        b: MemRef,
        (m, k, n): (impl Into<Expr>, impl Into<Expr>, impl Into<Expr>),
        init: impl Into<Expr>,
    ) {
        let sizes = MmadSizes {
            m: m.into(),
            k: k.into(),
            n: n.into(),
        };
        self.push(Mmad {
            c,
            a,
            b,
            sizes,
            init: init.into(),
        });
    }

    /// A vector instruction over `repeat` full repeats ([`Vector::new`] for the options).
    pub fn vector(&mut self, op: VecOp, dst: MemRef, repeat: impl Into<Expr>) {
        self.push(Vector::new(op, dst, repeat));
    }

    /// `set_flag` (when `set`) or `wait_flag`.
    pub fn flag(&mut self, set: bool, src: Pipe, dst: Pipe, id: impl Into<Expr>) {
        let f = Flag {
            src,
            dst,
            id: id.into(),
        };
        self.push(if set { Op::SetFlag(f) } else { Op::WaitFlag(f) });
    }

    /// `set_flag src, dst, id`.
    pub fn set_flag(&mut self, src: Pipe, dst: Pipe, id: impl Into<Expr>) {
        self.flag(true, src, dst, id);
    }

    /// `wait_flag src, dst, id`.
    pub fn wait_flag(&mut self, src: Pipe, dst: Pipe, id: impl Into<Expr>) {
        self.flag(false, src, dst, id);
    }

    /// `loop name in 0..n { body }`.
    pub fn repeat(
        &mut self,
        name: &str,
        n: impl Into<Expr>,
        body: impl FnOnce(&mut Builder, Expr),
    ) {
        self.for_loop(name, Expr::Const(0), n.into(), 1, body);
    }

    /// `barrier`.
    pub fn barrier(&mut self, scope: BarrierScope) {
        self.push(Op::Barrier(scope));
    }

    /// `sync_all`: a barrier across every core.
    pub fn sync_all(&mut self) {
        self.push(Op::SyncAll);
    }

    /// The program, its expressions simplified ([`crate::simplify`]), checked by the
    /// assembler's rules (it must print and parse back to itself).
    /// Its spans point into its printed text ([`crate::print`]), so that diagnostics can show
    /// the line of an instruction in the text a user would read.
    pub fn finish(mut self) -> Result<Program, Diagnostic> {
        self.prog.body = self.open.swap_remove(0);
        reassemble(self.prog)
    }
}

/// A program built or rewritten in memory, made as [`Builder::finish`] makes one: its
/// expressions simplified, printed and parsed back (it must parse to itself), its spans
/// pointing into the printed text and its origins kept.
pub fn reassemble(mut prog: Program) -> Result<Program, Diagnostic> {
    crate::simplify::simplify(&mut prog);
    let text = crate::print(&prog);
    let parsed = crate::assemble(&text)?;
    if parsed != prog {
        let first = |p: &Program| format!("{:?}", p.body);
        let (want, got) = (first(&prog), first(&parsed));
        let at = want
            .chars()
            .zip(got.chars())
            .take_while(|(a, b)| a == b)
            .count();
        return Err(Diagnostic::global(
            crate::diag::Code::Syntax,
            "the built program does not survive printing (a name declared twice or shadowed?)",
        )
        .with_note(format!(
            "built:  ...{}",
            &want[at.saturating_sub(80)..(at + 80).min(want.len())]
        ))
        .with_note(format!(
            "parsed: ...{}",
            &got[at.saturating_sub(80)..(at + 80).min(got.len())]
        )));
    }
    let mut parsed = parsed;
    transfer_origins(&prog.body, &mut parsed.body);
    Ok(parsed)
}

/// Copies the origins of `from` onto the same statements of `to` (an equal program).
fn transfer_origins(from: &[Stmt], to: &mut [Stmt]) {
    for (f, t) in from.iter().zip(to) {
        match (f, t) {
            (Stmt::Instr(f), Stmt::Instr(t)) => t.origin = f.origin.clone(),
            (Stmt::Loop(f), Stmt::Loop(t)) => transfer_origins(&f.body, &mut t.body),
            _ => {}
        }
    }
}
