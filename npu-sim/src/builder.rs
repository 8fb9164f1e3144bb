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
//!     b.dma(b.at(a, [0.into()]), b.at(x, [i.clone(), 0.into()]), 1, 128);
//!     b.flag(true, Pipe::Mte2, Pipe::Mte3, 0);
//!     b.flag(false, Pipe::Mte2, Pipe::Mte3, 0);
//!     b.dma(b.at(y, [i, 0.into()]), b.at(a, [0.into()]), 1, 128);
//!     b.barrier(BarrierScope::All);
//! });
//! let program = b.finish().unwrap();
//! assert!(npu_sim::print(&program).contains("loop i in 0..4"));
//! ```

use crate::diag::Diagnostic;
use crate::program::*;
use std::ops;

/// Builds a [`Program`] statement by statement.
#[derive(Debug, Default)]
pub struct Builder {
    prog: Program,
    open: Vec<Vec<Stmt>>,
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

impl ops::Mul<i64> for Expr {
    type Output = Expr;
    fn mul(self, c: i64) -> Expr {
        Expr::Mul(c, Box::new(self))
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
        }
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

    fn stmt(&mut self, s: Stmt) {
        if let Some(body) = self.open.last_mut() {
            body.push(s);
        }
    }

    /// Appends any instruction.
    pub fn push(&mut self, op: Op) {
        self.stmt(Stmt::Instr(Instr {
            op,
            span: Span::default(),
        }));
    }

    /// `dma dst, src, count=, len=` with contiguous bursts.
    pub fn dma(&mut self, dst: MemRef, src: MemRef, count: u64, len: u64) {
        self.dma_strided(dst, src, count, len, len, len);
    }

    /// `dma dst, src` with explicit strides (elements between burst starts).
    pub fn dma_strided(
        &mut self,
        dst: MemRef,
        src: MemRef,
        count: u64,
        len: u64,
        src_stride: u64,
        dst_stride: u64,
    ) {
        let d = Dma {
            dst,
            src,
            count,
            len,
            src_stride,
            dst_stride,
            transpose: false,
            relu: false,
            atomic: false,
        };
        self.push(Op::Dma(d));
    }

    /// `mmad c, a, b, m=, k=, n=, init=` (overwrites where `init` is non-zero).
    pub fn mmad(
        &mut self,
        c: MemRef,
        a: MemRef,
        b: MemRef,
        (m, k, n): (u64, u64, u64),
        init: Expr,
    ) {
        self.push(Op::Mmad(Mmad {
            c,
            a,
            b,
            m,
            k,
            n,
            init,
        }));
    }

    /// A vector instruction over `repeat` full repeats.
    pub fn vector(&mut self, op: VecOp, dst: MemRef, repeat: u64) {
        self.push(Op::Vector(Vector {
            op,
            dst,
            repeat,
            mask: None,
            dst_rs: None,
            src_rs: [None; 3],
        }));
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

    /// `barrier`.
    pub fn barrier(&mut self, scope: BarrierScope) {
        self.push(Op::Barrier(scope));
    }

    /// `sync_all`: a barrier across every core.
    pub fn sync_all(&mut self) {
        self.push(Op::SyncAll);
    }

    /// The program, checked by the assembler's rules (it must print and parse back to itself).
    pub fn finish(mut self) -> Result<Program, Diagnostic> {
        self.prog.body = self.open.swap_remove(0);
        let text = crate::print(&self.prog);
        let parsed = crate::assemble(&text)?;
        if parsed != self.prog {
            let first = |p: &Program| format!("{:?}", p.body);
            let (want, got) = (first(&self.prog), first(&parsed));
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
        Ok(self.prog)
    }
}
