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

impl Operand {
    /// The tier it lives in (None for GM).
    pub fn tier(&self) -> Option<Tier> {
        match self.space {
            Space::Gm(_) => None,
            Space::Tier(t) => Some(t),
        }
    }
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
        /// Bursts on the GM side of a DMA (one for on-chip transfers and `load3d`).
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
    /// The data operation with its sizes evaluated for this execution.
    pub exec: Exec<'p>,
    /// For `set_flag` and `wait_flag`: the flag, its id evaluated.
    pub flag: Option<FlagKey>,
}

/// A data instruction as one execution sees it: the static instruction and its evaluated sizes.
#[derive(Clone, Debug)]
pub enum Exec<'p> {
    /// A `dma`.
    Dma(&'p Dma, DmaSizes<u64>),
    /// A `load3d`.
    Load3d(&'p Load3d, Load3dSizes<u64>),
    /// An `mmad`, and whether this execution overwrites the accumulators.
    Mmad(&'p Mmad, MmadSizes<u64>, bool),
    /// A vector instruction.
    Vector(&'p Vector, VectorSizes<u64>),
    /// A flag, barrier or `sync_all`: moves no data.
    Control,
}

/// The fractal grid of an `mmad`: fractal columns of A (`ka`, 32 bytes' worth), and the
/// number of fractals along m, k and n.
#[derive(Clone, Copy, Debug)]
pub struct Fractals {
    /// Columns of an A fractal (rows of a B fractal).
    pub ka: u64,
    /// Fractals along m (16 rows each).
    pub m1: u64,
    /// Fractals along k (`ka` each).
    pub k1: u64,
    /// Fractals along n (16 columns each).
    pub n1: u64,
}

impl Fractals {
    /// The grid of an `mmad` with inputs of `dtype`.
    pub fn of(z: &MmadSizes<u64>, dtype: DType) -> Fractals {
        let ka = fractal_cols(dtype, None);
        Fractals {
            ka,
            m1: z.m.div_ceil(FRACTAL_ROWS),
            k1: z.k.div_ceil(ka),
            n1: z.n.div_ceil(FRACTAL_ROWS),
        }
    }
}

/// Largest value a size, stride, repeat or mask may take.
pub const MAX_SIZE: u64 = 1 << 32;

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
        active: vec![],
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
    /// The loops around the current statement, outermost first.
    active: Vec<VarId>,
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
                    self.active.push(l.var);
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
                    self.active.pop();
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
        let (pipe, operands, accesses, cost, exec) = match &i.op {
            Op::Dma(d) => {
                let z = d.sizes.eval(|name, e| self.size(i, name, e))?;
                self.check(i, z.count >= 1 && z.len >= 1, || {
                    "`count` and `len` must be positive".into()
                })?;
                let (dst, src) = (self.operand(&d.dst)?, self.operand(&d.src)?);
                let (sp, dp) = self.dma_patterns(i, d, &z, &src, &dst)?;
                let path = self.path(&d.src, &d.dst);
                let bytes = (sp.count * sp.len).max(dp.count * dp.len);
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
                        bursts: gm_side.map_or(1, |g| g.count),
                    },
                    Exec::Dma(d, z),
                )
            }
            Op::Load3d(op) => {
                let z = op.sizes.eval(|name, e| self.size(i, name, e))?;
                let (dst, src) = (self.operand(&op.dst)?, self.operand(&op.src)?);
                self.check_load3d(i, &z, src.dtype)?;
                let size = src.dtype.size();
                let sp = Pattern::run(src.addr, z.h * z.w * z.c * size);
                let bytes = z.m_ext * z.k_ext * size;
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
                    Exec::Load3d(op, z),
                )
            }
            Op::Mmad(op) => {
                let z = op.sizes.eval(|name, e| self.size(i, name, e))?;
                self.check(i, z.m >= 1 && z.k >= 1 && z.n >= 1, || {
                    "`m`, `k` and `n` must be positive".into()
                })?;
                let (c, a, b) = (
                    self.operand(&op.c)?,
                    self.operand(&op.a)?,
                    self.operand(&op.b)?,
                );
                let int8 = a.dtype == DType::I8;
                let f = Fractals::of(&z, a.dtype);
                let cp = Pattern::run(c.addr, f.m1 * f.n1 * 256 * c.dtype.size());
                let (a_len, b_len) = (f.m1 * f.k1 * 16 * f.ka, f.k1 * f.n1 * f.ka * 16);
                let mut acc = vec![
                    read(&a, 1, Pattern::run(a.addr, a_len * a.dtype.size())),
                    read(&b, 2, Pattern::run(b.addr, b_len * b.dtype.size())),
                ];
                let init = self.eval(&op.init) != 0;
                if !init {
                    acc.push(read(&c, 0, cp));
                }
                acc.push(write(&c, 0, cp));
                let cube = &m.cube;
                let k0 = if int8 { cube.k0_i8 } else { cube.k0 };
                let steps = z.m.div_ceil(cube.m0) * z.k.div_ceil(k0) * z.n.div_ceil(cube.n0);
                (
                    Pipe::M,
                    vec![c, a, b],
                    acc,
                    Cost::Fixed(cube.startup + steps as f64),
                    Exec::Mmad(op, z, init),
                )
            }
            Op::Vector(v) => {
                let z = v.sizes.eval(|name, e| self.size(i, name, e))?;
                let lanes = lanes(self.p, m, v);
                self.check(i, (1..=m.vector.max_repeat).contains(&z.repeat), || {
                    format!(
                        "repeat={} is outside 1..={}, the machine's repeats per instruction",
                        z.repeat, m.vector.max_repeat
                    )
                })?;
                let active = z.mask.unwrap_or(lanes);
                self.check(i, (1..=lanes).contains(&active), || {
                    format!("mask={active} is outside 1..={lanes}, the lanes of this instruction")
                })?;
                let dst = self.operand(&v.dst)?;
                let mut operands = vec![dst];
                let mut acc = vec![];
                for (k, r) in v.op.sources().into_iter().enumerate() {
                    let o = self.operand(r)?;
                    let single = matches!(v.op, VecOp::Bcast { .. });
                    let rs = z.src_rs[k].unwrap_or(if single { 1 } else { lanes });
                    let len = if single { 1 } else { active };
                    let size = o.dtype.size();
                    acc.push(read(
                        &o,
                        k + 1,
                        Pattern {
                            start: o.addr,
                            count: z.repeat,
                            len: len * size,
                            stride: rs * size,
                        },
                    ));
                    operands.push(o);
                }
                let reduce = matches!(v.op, VecOp::Reduce { .. });
                let rs = z.dst_rs.unwrap_or(if reduce { 1 } else { lanes });
                let len = if reduce { 1 } else { active };
                let size = dst.dtype.size();
                acc.push(write(
                    &dst,
                    0,
                    Pattern {
                        start: dst.addr,
                        count: z.repeat,
                        len: len * size,
                        stride: rs * size,
                    },
                ));
                let cost = Cost::Fixed(m.vector.startup + z.repeat as f64);
                (Pipe::V, operands, acc, cost, Exec::Vector(v, z))
            }
            Op::SetFlag(f) => (
                f.src,
                vec![],
                vec![],
                Cost::Fixed(flag_cycles),
                Exec::Control,
            ),
            Op::WaitFlag(f) => (f.dst, vec![], vec![], Cost::Wait, Exec::Control),
            Op::Barrier(BarrierScope::Pipe(p)) => {
                (*p, vec![], vec![], Cost::Fixed(flag_cycles), Exec::Control)
            }
            Op::Barrier(BarrierScope::All) => {
                (Pipe::S, vec![], vec![], Cost::BarrierAll, Exec::Control)
            }
            Op::SyncAll => (Pipe::S, vec![], vec![], Cost::SyncAll, Exec::Control),
        };
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
            exec,
        };
        self.check_accesses(&inst)?;
        Ok(inst)
    }

    /// The bytes a `dma` reads and writes, by its mode.
    fn dma_patterns(
        &self,
        i: &Instr,
        d: &Dma,
        z: &DmaSizes<u64>,
        src: &Operand,
        dst: &Operand,
    ) -> Result<(Pattern, Pattern), Diagnostic> {
        let bursts = |o: &Operand, stride: u64| Pattern {
            start: o.addr,
            count: z.count,
            len: z.len * o.dtype.size(),
            stride: stride * o.dtype.size(),
        };
        // An NZ side: `count` rows (rounded up to whole fractals when written) of every
        // fractal column, the columns `rows` rows apart.
        let nz = |o: &Operand, rows: u64, what: &str, write: bool| {
            let c0 = fractal_cols(o.dtype, o.tier());
            self.check(i, rows.is_multiple_of(FRACTAL_ROWS) && rows >= z.count, || {
                format!(
                    "`{what}` = {rows} rows per fractal column must be a multiple of 16 and at least count = {}",
                    z.count
                )
            })?;
            let height = if write {
                z.count.next_multiple_of(FRACTAL_ROWS)
            } else {
                z.count
            };
            Ok(Pattern {
                start: o.addr,
                count: z.len.div_ceil(c0),
                len: height * c0 * o.dtype.size(),
                stride: rows * c0 * o.dtype.size(),
            })
        };
        Ok(match d.mode {
            DmaMode::Plain => (bursts(src, z.src_stride), bursts(dst, z.dst_stride)),
            DmaMode::Transpose => {
                let fractal = FRACTAL_ROWS * fractal_cols(dst.dtype, None);
                self.check(i, z.len == fractal, || {
                    format!(
                        "a transposing load moves whole {fractal}-element fractals, not len={}",
                        z.len
                    )
                })?;
                (bursts(src, z.src_stride), bursts(dst, z.dst_stride))
            }
            DmaMode::Nd2nz => (
                bursts(src, z.src_stride),
                nz(dst, z.dst_stride, "dst_stride", true)?,
            ),
            DmaMode::Nz2nd => (
                nz(src, z.src_stride, "src_stride", false)?,
                bursts(dst, z.dst_stride),
            ),
        })
    }

    /// The sizes of a `load3d` fit its image and the fractal grid.
    fn check_load3d(
        &self,
        i: &Instr,
        z: &Load3dSizes<u64>,
        dtype: DType,
    ) -> Result<(), Diagnostic> {
        let c0 = fractal_cols(dtype, None);
        let positive = [z.h, z.w, z.c, z.kh, z.kw, z.stride, z.m_ext, z.k_ext];
        self.check(i, positive.iter().all(|&v| v >= 1), || {
            "`h`, `w`, `c`, `kh`, `kw`, `stride`, `m_ext` and `k_ext` must be positive".into()
        })?;
        self.check(
            i,
            z.kh <= z.h + z.pad_top + z.pad_bottom && z.kw <= z.w + z.pad_left + z.pad_right,
            || "the kernel does not fit the padded image".into(),
        )?;
        let grid = [z.c, z.k_start, z.k_ext]
            .iter()
            .all(|v| v.is_multiple_of(c0))
            && z.m_ext.is_multiple_of(FRACTAL_ROWS);
        self.check(i, grid, || {
            format!("`c`, `k_start` and `k_ext` must be multiples of {c0} and `m_ext` of 16 (whole fractals)")
        })?;
        let columns = z.c * z.kh * z.kw;
        self.check(i, z.k_start + z.k_ext <= columns, || {
            format!(
                "columns {}..{} are outside the {columns} columns of the matrix",
                z.k_start,
                z.k_start + z.k_ext
            )
        })
    }

    /// One size, stride, repeat or mask of this execution: a value in `0..=MAX_SIZE`.
    fn size(&self, i: &Instr, name: &str, e: &Expr) -> Result<u64, Diagnostic> {
        let v = self.eval(e);
        u64::try_from(v)
            .ok()
            .filter(|v| *v <= MAX_SIZE)
            .ok_or_else(|| {
                Diagnostic::new(
                    Code::BadValue,
                    i.span,
                    format!(
                        "`{name}` evaluates to {v} on core {}{}, outside 0..=2^32",
                        self.core,
                        self.where_()
                    ),
                )
            })
    }

    /// E0012 at the instruction unless `ok`, saying where it executes.
    fn check(&self, i: &Instr, ok: bool, why: impl FnOnce() -> String) -> Result<(), Diagnostic> {
        if ok {
            return Ok(());
        }
        let at = format!(" (core {}{})", self.core, self.where_());
        Err(Diagnostic::new(Code::BadValue, i.span, why() + &at))
    }

    /// ` at i = 3, j = 0`: the values of the enclosing loops' variables, if any.
    fn where_(&self) -> String {
        let vals: Vec<String> = (self.active.iter())
            .map(|v| {
                format!(
                    "{} = {}",
                    self.p.vars[v.0 as usize], self.vars[v.0 as usize]
                )
            })
            .collect();
        if vals.is_empty() {
            String::new()
        } else {
            format!(" at {}", vals.join(", "))
        }
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
        Op::Load3d(i) => vec![&i.dst, &i.src],
        Op::Mmad(m) => vec![&m.c, &m.a, &m.b],
        Op::Vector(v) => std::iter::once(&v.dst).chain(v.op.sources()).collect(),
        Op::SetFlag(_) | Op::WaitFlag(_) | Op::Barrier(_) | Op::SyncAll => vec![],
    }
}
