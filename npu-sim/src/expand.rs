//! Expansion: the scalar unit's walk of the program on one core, turning each executed
//! instruction into an [`Inst`] with resolved addresses, byte-level accesses, its pipe and its
//! cost, and checking every access's bounds and alignment.

use crate::diag::{Code, Diagnostic};
use crate::layout::{lanes, Layout};
use crate::machine::Machine;
use crate::program::*;

/// Bursts of a DMA in an on-chip tier start on blocks of this many bytes.
pub const BURST_ALIGN: u64 = 32;

/// Most instructions all cores together may execute (a guard against runaway loops).
pub const MAX_INSTANCES: usize = 2_000_000;
/// Most loop iterations all cores together may run.
pub const MAX_ITERATIONS: u64 = 10_000_000;

/// An address space: one GM tensor (shared by all cores) or one tier of the executing core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// A GM tensor.
    Gm(TensorId),
    /// An on-chip tier.
    Tier(Tier),
}

/// Bytes `start + i*stride .. + len` for `i` in `0..count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// First byte.
    pub start: u64,
    /// Number of runs.
    pub count: u64,
    /// Bytes per run.
    pub len: u64,
    /// Distance between run starts.
    pub stride: u64,
}

impl Pattern {
    /// A single contiguous run.
    pub fn run(start: u64, len: u64) -> Pattern {
        Pattern {
            start,
            count: 1,
            len,
            stride: len,
        }
    }
    /// One past the last byte touched.
    pub fn end(&self) -> u64 {
        self.start + (self.count - 1) * self.stride + self.len
    }
    /// The runs as byte ranges.
    pub fn runs(&self) -> impl Iterator<Item = std::ops::Range<u64>> + '_ {
        (0..self.count).map(|i| {
            let s = self.start + i * self.stride;
            s..s + self.len
        })
    }
}

/// One operand access of an instruction.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    /// Where.
    pub space: Space,
    /// Which bytes.
    pub pattern: Pattern,
    /// Written (else read).
    pub write: bool,
    /// Index of the operand in [`Inst::operands`].
    pub operand: usize,
}

/// A resolved operand: where its first element is, and its type.
#[derive(Clone, Copy, Debug)]
pub struct Operand {
    /// Where.
    pub space: Space,
    /// Byte address of the first element in the space.
    pub addr: u64,
    /// Element type.
    pub dtype: DType,
}

/// What an instruction costs on its pipe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cost {
    /// A fixed number of cycles.
    Fixed(f64),
    /// A transfer on a data path: latency, then (on a GM path) `bursts` times the machine's
    /// `gm.burst_cycles`, then `charged` bytes at the path's bandwidth.
    Transfer {
        /// Index into the machine's paths.
        path: usize,
        /// Bytes moved (the larger of the source and destination sizes).
        bytes: u64,
        /// Bytes the transfer costs: on a GM path every GM segment each burst touches, whole;
        /// elsewhere `bytes`.
        charged: u64,
        /// Bursts (a DMA's `count`; one for `im2col`).
        bursts: u64,
    },
    /// Wait until the matching set has completed, then the flag cost.
    Wait,
    /// Wait until every other pipe of the core has drained, then the flag cost.
    BarrierAll,
    /// Wait until every core has reached its matching `sync_all` with its pipes drained.
    SyncAll,
}

/// One executed instruction on one core.
#[derive(Clone, Debug)]
pub struct Inst<'p> {
    /// The static instruction.
    pub instr: &'p Instr,
    /// The executing pipe.
    pub pipe: Pipe,
    /// Operands: destination first, then sources (for `mmad`: C, A, B).
    pub operands: Vec<Operand>,
    /// Byte accesses, reads before writes.
    pub accesses: Vec<Access>,
    /// Cycles the scalar unit spends before issuing it (loop steps and the issue itself).
    pub scalar_cost: f64,
    /// Its cost on its pipe.
    pub cost: Cost,
    /// For `mmad`: whether this execution overwrites the accumulators (false otherwise).
    pub init: bool,
    /// For `set_flag` and `wait_flag`: the flag, its id evaluated.
    pub flag: Option<FlagKey>,
}

/// Walks the program for one core.
pub fn expand<'p>(
    p: &'p Program,
    m: &Machine,
    layout: &Layout,
    core: u32,
    budget: &mut Budget,
) -> Result<Vec<Inst<'p>>, Diagnostic> {
    let mut w = Walker {
        p,
        m,
        layout,
        core,
        vars: vec![0; p.vars.len()],
        out: vec![],
        pending: 0.0,
        budget,
    };
    w.stmts(&p.body)?;
    Ok(w.out)
}

/// What is left of the instruction and iteration limits across cores.
#[derive(Debug)]
pub struct Budget {
    /// Instructions left.
    pub instances: usize,
    /// Iterations left.
    pub iterations: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            instances: MAX_INSTANCES,
            iterations: MAX_ITERATIONS,
        }
    }
}

struct Walker<'p, 'a> {
    p: &'p Program,
    m: &'a Machine,
    layout: &'a Layout,
    core: u32,
    vars: Vec<i64>,
    out: Vec<Inst<'p>>,
    pending: f64,
    budget: &'a mut Budget,
}

impl<'p> Walker<'p, '_> {
    fn eval(&self, e: &Expr) -> i64 {
        e.eval(&self.vars, self.core as i64, self.m.cores as i64)
    }

    fn stmts(&mut self, body: &'p [Stmt]) -> Result<(), Diagnostic> {
        for s in body {
            match s {
                Stmt::Loop(l) => {
                    let (lo, hi) = (self.eval(&l.lo), self.eval(&l.hi));
                    let mut v = lo;
                    while v < hi {
                        if self.budget.iterations == 0 {
                            return Err(Diagnostic::new(
                                Code::TooLong,
                                l.span,
                                format!(
                                    "the program runs more than {MAX_ITERATIONS} loop iterations"
                                ),
                            ));
                        }
                        self.budget.iterations -= 1;
                        self.vars[l.var.0 as usize] = v;
                        self.pending += self.m.scalar.loop_cycles;
                        self.stmts(&l.body)?;
                        v += l.step as i64;
                    }
                }
                Stmt::Instr(i) => {
                    if self.budget.instances == 0 {
                        return Err(Diagnostic::new(
                            Code::TooLong,
                            i.span,
                            format!("the program executes more than {MAX_INSTANCES} instructions"),
                        ));
                    }
                    self.budget.instances -= 1;
                    let inst = self.instr(i)?;
                    self.out.push(inst);
                }
            }
        }
        Ok(())
    }

    fn operand(&self, r: &MemRef) -> Result<Operand, Diagnostic> {
        let (name, dtype, shape) = self.p.target_info(r.target);
        let mut flat: i64 = 0;
        let mut stride: i64 = 1;
        for (e, &d) in r.index.iter().zip(shape).rev() {
            flat = flat.saturating_add(self.eval(e).saturating_mul(stride));
            stride = stride.saturating_mul(d as i64);
        }
        let bytes = flat.saturating_mul(dtype.size() as i64);
        let (space, base, code) = match r.target {
            Target::Tensor(t) => (Space::Gm(t), 0, Code::GmBounds),
            Target::Buffer(b) => (
                Space::Tier(self.p.buffer(b).tier),
                self.layout.base[b.0 as usize],
                Code::BufferBounds,
            ),
        };
        if bytes < 0 {
            return Err(Diagnostic::new(
                code,
                r.span,
                format!("`{name}` is indexed at element {flat}, before its start"),
            ));
        }
        Ok(Operand {
            space,
            addr: base + bytes as u64,
            dtype,
        })
    }

    fn instr(&mut self, i: &'p Instr) -> Result<Inst<'p>, Diagnostic> {
        let m = self.m;
        let scalar_cost = std::mem::take(&mut self.pending) + m.scalar.issue_cycles;
        let flag_cycles = m.scalar.flag_cycles;
        let read = |o: &Operand, operand, pattern| Access {
            space: o.space,
            pattern,
            write: false,
            operand,
        };
        let write = |o: &Operand, operand, pattern| Access {
            space: o.space,
            pattern,
            write: true,
            operand,
        };
        let (pipe, operands, accesses, cost) = match &i.op {
            Op::Dma(d) => {
                let (dst, src) = (self.operand(&d.dst)?, self.operand(&d.src)?);
                let (ss, ds) = (src.dtype.size(), dst.dtype.size());
                let sp = Pattern {
                    start: src.addr,
                    count: d.count,
                    len: d.len * ss,
                    stride: d.src_stride * ss,
                };
                let dp = if d.transpose {
                    Pattern::run(dst.addr, d.count * d.len * ds)
                } else {
                    Pattern {
                        start: dst.addr,
                        count: d.count,
                        len: d.len * ds,
                        stride: d.dst_stride * ds,
                    }
                };
                let path = self.path(&d.src, &d.dst);
                let bytes = d.count * d.len * ss.max(ds);
                let gm_side = match (src.space, dst.space) {
                    (Space::Gm(_), _) => Some(sp),
                    (_, Space::Gm(_)) => Some(dp),
                    _ => None,
                };
                let charged = gm_side.map_or(bytes, |g| {
                    g.runs()
                        .map(|r| m.gm.charged(r.start, r.end - r.start))
                        .sum()
                });
                (
                    m.paths[path].pipe,
                    vec![dst, src],
                    vec![read(&src, 1, sp), write(&dst, 0, dp)],
                    Cost::Transfer {
                        path,
                        bytes,
                        charged,
                        bursts: d.count,
                    },
                )
            }
            Op::Im2col(op) => {
                let (dst, src) = (self.operand(&op.dst)?, self.operand(&op.src)?);
                let size = src.dtype.size();
                let (oh, ow) = op.out_hw();
                let sp = Pattern::run(src.addr, op.h * op.w * op.c * size);
                let bytes = oh * ow * op.kh * op.kw * op.c * size;
                let path = self.path(&op.src, &op.dst);
                let acc = vec![
                    read(&src, 1, sp),
                    write(&dst, 0, Pattern::run(dst.addr, bytes)),
                ];
                (
                    m.paths[path].pipe,
                    vec![dst, src],
                    acc,
                    Cost::Transfer {
                        path,
                        bytes,
                        charged: bytes,
                        bursts: 1,
                    },
                )
            }
            Op::Mmad(op) => {
                let (c, a, b) = (
                    self.operand(&op.c)?,
                    self.operand(&op.a)?,
                    self.operand(&op.b)?,
                );
                let int8 = a.dtype == DType::I8;
                let cp = Pattern::run(c.addr, op.m * op.n * c.dtype.size());
                let mut acc = vec![
                    read(&a, 1, Pattern::run(a.addr, op.m * op.k * a.dtype.size())),
                    read(&b, 2, Pattern::run(b.addr, op.k * op.n * b.dtype.size())),
                ];
                if self.eval(&op.init) == 0 {
                    acc.push(read(&c, 0, cp));
                }
                acc.push(write(&c, 0, cp));
                let cube = &m.cube;
                let k0 = if int8 { cube.k0_i8 } else { cube.k0 };
                let steps = op.m.div_ceil(cube.m0) * op.k.div_ceil(k0) * op.n.div_ceil(cube.n0);
                (
                    Pipe::M,
                    vec![c, a, b],
                    acc,
                    Cost::Fixed(cube.startup + steps as f64),
                )
            }
            Op::Vector(v) => {
                let lanes = lanes(self.p, m, v);
                let active = v.mask.unwrap_or(lanes);
                let dst = self.operand(&v.dst)?;
                let mut operands = vec![dst];
                let mut acc = vec![];
                for (k, r) in v.op.sources().into_iter().enumerate() {
                    let o = self.operand(r)?;
                    let single = matches!(v.op, VecOp::Bcast { .. });
                    let rs = v.src_rs[k].unwrap_or(if single { 1 } else { lanes });
                    let len = if single { 1 } else { active };
                    let size = o.dtype.size();
                    acc.push(read(
                        &o,
                        k + 1,
                        Pattern {
                            start: o.addr,
                            count: v.repeat,
                            len: len * size,
                            stride: rs * size,
                        },
                    ));
                    operands.push(o);
                }
                let reduce = matches!(v.op, VecOp::Reduce { .. });
                let rs = v.dst_rs.unwrap_or(if reduce { 1 } else { lanes });
                let len = if reduce { 1 } else { active };
                let size = dst.dtype.size();
                acc.push(write(
                    &dst,
                    0,
                    Pattern {
                        start: dst.addr,
                        count: v.repeat,
                        len: len * size,
                        stride: rs * size,
                    },
                ));
                (
                    Pipe::V,
                    operands,
                    acc,
                    Cost::Fixed(m.vector.startup + v.repeat as f64),
                )
            }
            Op::SetFlag(f) => (f.src, vec![], vec![], Cost::Fixed(flag_cycles)),
            Op::WaitFlag(f) => (f.dst, vec![], vec![], Cost::Wait),
            Op::Barrier(BarrierScope::Pipe(p)) => (*p, vec![], vec![], Cost::Fixed(flag_cycles)),
            Op::Barrier(BarrierScope::All) => (Pipe::S, vec![], vec![], Cost::BarrierAll),
            Op::SyncAll => (Pipe::S, vec![], vec![], Cost::SyncAll),
        };
        let init = matches!(&i.op, Op::Mmad(op) if self.eval(&op.init) != 0);
        let flag = match &i.op {
            Op::SetFlag(f) | Op::WaitFlag(f) => Some(FlagKey {
                src: f.src,
                dst: f.dst,
                id: crate::layout::check_flag_id(self.eval(&f.id), m, i.span)?,
            }),
            _ => None,
        };
        let inst = Inst {
            flag,
            instr: i,
            pipe,
            operands,
            accesses,
            scalar_cost,
            cost,
            init,
        };
        self.check_accesses(&inst)?;
        Ok(inst)
    }

    fn path(&self, src: &MemRef, dst: &MemRef) -> usize {
        let (from, to) = (
            crate::layout::mem_of(self.p, src),
            crate::layout::mem_of(self.p, dst),
        );
        self.m
            .path(from, to)
            .expect("paths are checked by the layout")
    }

    /// Bounds and alignment of every access, against the referenced tensor or buffer.
    fn check_accesses(&self, inst: &Inst) -> Result<(), Diagnostic> {
        let refs = operand_refs(&inst.instr.op);
        for (o, r) in inst.operands.iter().zip(refs) {
            let (name, _, _) = self.p.target_info(r.target);
            let (lo, hi, align, code, what) = match r.target {
                Target::Tensor(t) => {
                    let t = self.p.tensor(t);
                    (
                        0,
                        elements(&t.shape) * t.dtype.size(),
                        self.m.gm.align,
                        Code::GmBounds,
                        "GM tensor",
                    )
                }
                Target::Buffer(b) => {
                    let base = self.layout.base[b.0 as usize];
                    let tier = self.p.buffer(b).tier;
                    let align = self.m.tier(tier).map_or(1, |t| t.align);
                    (
                        base,
                        base + Layout::size(self.p, b),
                        align,
                        Code::BufferBounds,
                        "buffer",
                    )
                }
            };
            for a in inst
                .accesses
                .iter()
                .filter(|a| std::ptr::eq(&inst.operands[a.operand], o))
            {
                if a.pattern.end() > hi {
                    return Err(Diagnostic::new(
                        code,
                        r.span,
                        format!(
                            "{} bytes {}..{} of {what} `{name}`, which has {} bytes",
                            if a.write { "writes" } else { "reads" },
                            a.pattern.start - lo,
                            a.pattern.end() - lo,
                            hi - lo
                        ),
                    ));
                }
            }
            if o.addr % align != 0 {
                return Err(Diagnostic::new(
                    Code::Misaligned,
                    r.span,
                    format!(
                        "operand at byte {} of `{name}` (address {}) is not aligned to {align} bytes",
                        o.addr - lo,
                        o.addr
                    ),
                ));
            }
        }
        if let Op::Dma(d) = &inst.instr.op {
            self.check_burst_alignment(d, inst)?;
        }
        Ok(())
    }

    /// Every burst of an on-chip side of a DMA starts on a 32-byte block (the operand itself
    /// on the tier's alignment).
    fn check_burst_alignment(&self, d: &Dma, inst: &Inst) -> Result<(), Diagnostic> {
        for (r, a) in [(&d.src, &inst.accesses[0]), (&d.dst, &inst.accesses[1])] {
            if let Space::Tier(t) = a.space {
                if a.pattern.count > 1 && a.pattern.stride % BURST_ALIGN != 0 {
                    return Err(Diagnostic::new(
                        Code::Misaligned,
                        r.span,
                        format!(
                            "bursts {} bytes apart in {t} do not start on {BURST_ALIGN}-byte blocks",
                            a.pattern.stride
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The memory references of an instruction in operand order (destination first).
pub fn operand_refs(op: &Op) -> Vec<&MemRef> {
    match op {
        Op::Dma(d) => vec![&d.dst, &d.src],
        Op::Im2col(i) => vec![&i.dst, &i.src],
        Op::Mmad(m) => vec![&m.c, &m.a, &m.b],
        Op::Vector(v) => std::iter::once(&v.dst).chain(v.op.sources()).collect(),
        Op::SetFlag(_) | Op::WaitFlag(_) | Op::Barrier(_) | Op::SyncAll => vec![],
    }
}
