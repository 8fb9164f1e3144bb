//! The typed program: what the assembler produces, the printer prints and the builder builds.
//!
//! Names are resolved: a memory reference points at a tensor or buffer by id, a variable by id.
//! Source positions ([`Span`]) are metadata: they never take part in equality, so a program
//! printed and parsed again compares equal to the original.

use std::fmt;

/// A byte range in the source text (`0..0` for programs made by the builder).
#[derive(Clone, Copy, Debug, Default)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// The span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}

/// Declares a closed set of keywords: an enum with its spelling in the assembly.
macro_rules! keywords {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vdoc])* $variant),+ }
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The spelling in the assembly.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            /// The value spelled `text`, if any.
            pub fn from_name(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

keywords! {
    /// An element type.
    DType {
        /// IEEE half precision.
        F16 = "f16",
        /// bfloat16.
        Bf16 = "bf16",
        /// IEEE single precision.
        F32 = "f32",
        /// Signed 8-bit integer.
        I8 = "i8",
        /// Signed 32-bit integer.
        I32 = "i32",
    }
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            DType::I8 => 1,
            DType::F16 | DType::Bf16 => 2,
            DType::F32 | DType::I32 => 4,
        }
    }
    /// Whether this is an integer type.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I8 | DType::I32)
    }
}

keywords! {
    /// An on-chip memory tier of one core (GM holds tensors, not buffers).
    Tier {
        /// The L1 buffer.
        L1 = "l1",
        /// Cube input A.
        L0a = "l0a",
        /// Cube input B.
        L0b = "l0b",
        /// Cube accumulators.
        L0c = "l0c",
        /// The unified buffer of the vector unit.
        Ub = "ub",
    }
}

keywords! {
    /// A pipe of a core: an in-order queue of instructions.
    Pipe {
        /// The scalar unit: walks the program and issues to the other pipes.
        S = "S",
        /// L1 -> L0A/L0B.
        Mte1 = "MTE1",
        /// GM -> L1/UB.
        Mte2 = "MTE2",
        /// UB -> GM/L1.
        Mte3 = "MTE3",
        /// The cube.
        M = "M",
        /// The vector unit.
        V = "V",
    }
}

impl Pipe {
    /// Number of pipes.
    pub const COUNT: usize = 6;
    /// Index of this pipe in `0..COUNT`.
    pub fn index(self) -> usize {
        self as usize
    }
}

keywords! {
    /// Whether a tensor is read, written or both by the program.
    Direction {
        /// An input: initialised before the run.
        In = "in",
        /// An output: written by the program, read back after the run.
        Out = "out",
        /// Both.
        InOut = "inout",
        /// A workspace: neither initialised before the run nor read back after it; the
        /// program writes what it reads (a read of bytes nothing has written is an error).
        Scratch = "scratch",
    }
}

impl Direction {
    /// Whether the tensor holds values before the run.
    pub fn is_input(self) -> bool {
        matches!(self, Direction::In | Direction::InOut)
    }
    /// Whether the tensor is read back after the run.
    pub fn is_output(self) -> bool {
        matches!(self, Direction::Out | Direction::InOut)
    }
}

/// Index of a tensor in [`Program::tensors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorId(pub u32);
/// Index of a buffer in [`Program::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferId(pub u32);
/// Index of a loop variable in [`Program::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VarId(pub u32);

/// A tensor in global memory.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDecl {
    /// Its name (also the `.npy` file name).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Shape, row-major.
    pub shape: Vec<u64>,
    /// In, out or both.
    pub dir: Direction,
    /// Where it is declared.
    pub span: Span,
}

/// Where a buffer sits in its tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// After the previous buffer of the tier, at the tier's alignment.
    Auto,
    /// At this byte offset.
    At(u64),
}

/// A named allocation in an on-chip tier.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecl {
    /// Its name.
    pub name: String,
    /// The tier it lives in.
    pub tier: Tier,
    /// Element type.
    pub dtype: DType,
    /// Shape, row-major.
    pub shape: Vec<u64>,
    /// Where it sits.
    pub placement: Placement,
    /// Where it is declared.
    pub span: Span,
}

/// Elements in a shape.
pub fn elements(shape: &[u64]) -> u64 {
    shape.iter().product()
}

/// What a memory reference points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A GM tensor.
    Tensor(TensorId),
    /// An on-chip buffer.
    Buffer(BufferId),
}

/// `name[i, j, ...]`: the element at this index of a tensor or buffer (the start of an operand).
#[derive(Clone, Debug, PartialEq)]
pub struct MemRef {
    /// The tensor or buffer.
    pub target: Target,
    /// One expression per dimension.
    pub index: Vec<Expr>,
    /// Where it is written.
    pub span: Span,
}

/// An integer expression over loop variables and the core index: quasi-affine terms, `min`,
/// `max`, comparisons and `select`, so that the size of a partial tile is an expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant.
    Const(i64),
    /// A loop variable.
    Var(VarId),
    /// The index of the core running the program.
    Core,
    /// The number of cores of the machine.
    Cores,
    /// Sum.
    Add(Box<Expr>, Box<Expr>),
    /// Difference.
    Sub(Box<Expr>, Box<Expr>),
    /// Constant times expression.
    Mul(i64, Box<Expr>),
    /// Floor division by a positive constant.
    Div(Box<Expr>, i64),
    /// Non-negative remainder by a positive constant.
    Mod(Box<Expr>, i64),
    /// The smaller of two.
    Min(Box<Expr>, Box<Expr>),
    /// The larger of two.
    Max(Box<Expr>, Box<Expr>),
    /// 1 if the comparison holds, else 0.
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    /// `select(c, a, b)`: `a` where `c` is non-zero, else `b`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Evaluates with the given variable values, core index and core count.
    pub fn eval(&self, vars: &[i64], core: i64, cores: i64) -> i64 {
        let ev = |e: &Expr| e.eval(vars, core, cores);
        match self {
            Expr::Const(c) => *c,
            Expr::Var(v) => vars[v.0 as usize],
            Expr::Core => core,
            Expr::Cores => cores,
            Expr::Add(a, b) => ev(a).wrapping_add(ev(b)),
            Expr::Sub(a, b) => ev(a).wrapping_sub(ev(b)),
            Expr::Mul(c, e) => c.wrapping_mul(ev(e)),
            Expr::Div(e, c) => ev(e).div_euclid(*c),
            Expr::Mod(e, c) => ev(e).rem_euclid(*c),
            Expr::Min(a, b) => ev(a).min(ev(b)),
            Expr::Max(a, b) => ev(a).max(ev(b)),
            Expr::Cmp(op, a, b) => op.holds(ev(a), ev(b)) as i64,
            Expr::Select(c, a, b) => {
                if ev(c) != 0 {
                    ev(a)
                } else {
                    ev(b)
                }
            }
        }
    }
    /// The direct subexpressions, left to right.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Const(_) | Expr::Var(_) | Expr::Core | Expr::Cores => vec![],
            Expr::Mul(_, a) | Expr::Div(a, _) | Expr::Mod(a, _) => vec![a],
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Min(a, b)
            | Expr::Max(a, b)
            | Expr::Cmp(_, a, b) => vec![a, b],
            Expr::Select(c, a, b) => vec![c, a, b],
        }
    }
    /// The same operation over new subexpressions (as many as [`Expr::children`] gives).
    pub fn with_children(&self, children: Vec<Expr>) -> Expr {
        let mut it = children.into_iter().map(Box::new);
        let mut next = || it.next().expect("one child per subexpression");
        match self {
            Expr::Const(_) | Expr::Var(_) | Expr::Core | Expr::Cores => self.clone(),
            Expr::Mul(c, _) => Expr::Mul(*c, next()),
            Expr::Div(_, c) => Expr::Div(next(), *c),
            Expr::Mod(_, c) => Expr::Mod(next(), *c),
            Expr::Add(..) => Expr::Add(next(), next()),
            Expr::Sub(..) => Expr::Sub(next(), next()),
            Expr::Min(..) => Expr::Min(next(), next()),
            Expr::Max(..) => Expr::Max(next(), next()),
            Expr::Cmp(op, ..) => Expr::Cmp(*op, next(), next()),
            Expr::Select(..) => Expr::Select(next(), next(), next()),
        }
    }
}

/// A structured loop `loop v in lo..hi step s { ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The loop variable.
    pub var: VarId,
    /// First value.
    pub lo: Expr,
    /// Bound (exclusive).
    pub hi: Expr,
    /// Positive step.
    pub step: u64,
    /// The body.
    pub body: Vec<Stmt>,
    /// The `loop` header.
    pub span: Span,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// A loop.
    Loop(Loop),
    /// An instruction (boxed: instructions are much larger than loops).
    Instr(Box<Instr>),
}

/// An instruction with its source position.
#[derive(Clone, Debug, PartialEq)]
pub struct Instr {
    /// What it does.
    pub op: Op,
    /// Where it is written.
    pub span: Span,
    /// What it was built from, if a compiler said so.
    pub origin: Origin,
}

/// What a built instruction comes from (a note such as the kernel statement it implements),
/// shown in diagnostics and in the trace. Metadata, like [`Span`]: it never takes part in
/// equality, and the printer writes it as a comment, which the parser skips.
#[derive(Clone, Debug, Default)]
pub struct Origin(pub Option<std::sync::Arc<str>>);

impl PartialEq for Origin {
    fn eq(&self, _: &Origin) -> bool {
        true
    }
}

impl Origin {
    /// The note, if any.
    pub fn note(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// The operation of an instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A strided copy on one data path.
    Dma(Dma),
    /// L1 -> L0A im2col window of a C1HWC0 feature map, in fractals.
    Load3d(Load3d),
    /// A cube matrix multiply-accumulate.
    Mmad(Mmad),
    /// A vector-unit instruction.
    Vector(Vector),
    /// `set_flag SRC, DST, ID`: executed on SRC once everything before it on SRC is done.
    SetFlag(Flag),
    /// `wait_flag SRC, DST, ID`: blocks DST until the matching set has happened.
    WaitFlag(Flag),
    /// `barrier PIPE` (in-order drain of one pipe) or `barrier ALL`.
    Barrier(BarrierScope),
    /// `sync_all`: every core waits until all cores have reached it with their pipes
    /// drained (Ascend's SyncAll); what precedes it on any core happens before what follows
    /// it on every core.
    SyncAll,
}

/// A vector instruction's references, mutably: `dst`, then the operation's sources.
fn vector_refs_mut<'a>(dst: &'a mut MemRef, op: &'a mut VecOp) -> Vec<&'a mut MemRef> {
    let mut out = vec![dst];
    match op {
        VecOp::Binary { a, b, .. } | VecOp::Cmp { a, b, .. } => out.extend([a, b]),
        VecOp::Select { cond, a, b } => out.extend([cond, a, b]),
        VecOp::Unary { a, .. }
        | VecOp::Scalar { a, .. }
        | VecOp::Bcast { a }
        | VecOp::Conv { a }
        | VecOp::Reduce { a, .. } => out.push(a),
        VecOp::Dup { .. } => {}
    }
    out
}

impl Op {
    /// Its memory references, mutably: the destination first, then the sources.
    pub fn refs_mut(&mut self) -> Vec<&mut MemRef> {
        match self {
            Op::Dma(d) => vec![&mut d.dst, &mut d.src],
            Op::Load3d(i) => vec![&mut i.dst, &mut i.src],
            Op::Mmad(m) => vec![&mut m.c, &mut m.a, &mut m.b],
            Op::Vector(v) => vector_refs_mut(&mut v.dst, &mut v.op),
            Op::SetFlag(_) | Op::WaitFlag(_) | Op::Barrier(_) | Op::SyncAll => vec![],
        }
    }

    /// Every expression it evaluates, mutably: its references' indices, then its sizes,
    /// options and flag id.
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        let mut sizes: Vec<&mut Expr> = Vec::new();
        let refs = match self {
            Op::Dma(d) => {
                let z = &mut d.sizes;
                sizes.extend([
                    &mut z.count,
                    &mut z.len,
                    &mut z.src_stride,
                    &mut z.dst_stride,
                ]);
                vec![&mut d.dst, &mut d.src]
            }
            Op::Load3d(i) => {
                let z = &mut i.sizes;
                sizes.extend([
                    &mut z.h,
                    &mut z.w,
                    &mut z.c,
                    &mut z.kh,
                    &mut z.kw,
                    &mut z.stride,
                    &mut z.pad_top,
                    &mut z.pad_bottom,
                    &mut z.pad_left,
                    &mut z.pad_right,
                    &mut z.m_start,
                    &mut z.m_ext,
                    &mut z.k_start,
                    &mut z.k_ext,
                ]);
                vec![&mut i.dst, &mut i.src]
            }
            Op::Mmad(m) => {
                let z = &mut m.sizes;
                sizes.extend([&mut z.m, &mut z.k, &mut z.n, &mut m.init]);
                vec![&mut m.c, &mut m.a, &mut m.b]
            }
            Op::Vector(v) => {
                let z = &mut v.sizes;
                sizes.push(&mut z.repeat);
                sizes.extend(z.mask.iter_mut());
                sizes.extend(z.dst_rs.iter_mut());
                sizes.extend(z.src_rs.iter_mut().flatten());
                vector_refs_mut(&mut v.dst, &mut v.op)
            }
            Op::SetFlag(f) | Op::WaitFlag(f) => {
                sizes.push(&mut f.id);
                vec![]
            }
            Op::Barrier(_) | Op::SyncAll => vec![],
        };
        let mut out: Vec<&mut Expr> = refs.into_iter().flat_map(|r| r.index.iter_mut()).collect();
        out.extend(sizes);
        out
    }

    /// The mnemonic.
    pub fn mnemonic(&self) -> String {
        match self {
            Op::Dma(_) => "dma".into(),
            Op::Load3d(_) => "load3d".into(),
            Op::Mmad(_) => "mmad".into(),
            Op::Vector(v) => v.op.mnemonic(),
            Op::SetFlag(_) => "set_flag".into(),
            Op::WaitFlag(_) => "wait_flag".into(),
            Op::Barrier(_) => "barrier".into(),
            Op::SyncAll => "sync_all".into(),
        }
    }
}

/// `dma DST, SRC`: `count` bursts of `len` elements; burst `i` reads at `src + i*src_stride`
/// and writes at `dst + i*dst_stride` (strides in elements), unless `mode` converts a layout
/// (see [`DmaMode`]). With `relu` (L0C -> UB only) negative values become zero. L0C -> UB
/// converts f32 to f16/bf16. With `atomic` (UB -> GM only) the burst is added into GM rather
/// than written (Ascend's SetAtomicAdd): atomic adds of different pipes or cores do not race
/// with each other.
#[derive(Clone, Debug, PartialEq)]
pub struct Dma {
    /// Destination.
    pub dst: MemRef,
    /// Source.
    pub src: MemRef,
    /// Burst count, length and strides.
    pub sizes: DmaSizes<Expr>,
    /// A plain copy or a layout conversion.
    pub mode: DmaMode,
    /// Apply ReLU on the way.
    pub relu: bool,
    /// Add into the destination (GM) instead of writing it.
    pub atomic: bool,
}

keywords! {
    /// What a `dma` does with the layout of its data. A fractal is the cube's unit block:
    /// 16 rows of 32 bytes (16 x 16 for 16-bit types, 16 x 32 for i8, 16 x 8 for f32), except
    /// in L0C, where it is 16 x 16 of the accumulator type. The NZ format stores a matrix as
    /// fractals in column-major order (a fractal column holds every row of 32 bytes' worth of
    /// columns), each fractal row-major.
    DmaMode {
        /// Copy the bursts as they are.
        Plain = "plain",
        /// L1 -> L0A/L0B, 16-bit types: every burst is one 16 x 16 fractal, written transposed
        /// (Ascend's LoadData2D with ifTranspose): NZ fractals of B become the column-major
        /// fractals of L0B.
        Transpose = "transpose",
        /// GM/UB -> L1: a row-major (ND) `count x len` matrix whose rows are `src_stride`
        /// apart becomes NZ in the destination, with `dst_stride` rows per fractal column (a
        /// multiple of 16, at least `count`); rows and columns beyond the matrix up to the
        /// fractal boundary are zero (Ascend's DataCopy with Nd2NzParams).
        Nd2nz = "nd2nz",
        /// L0C -> UB: the inverse: an NZ matrix with `src_stride` rows per fractal column
        /// becomes a row-major `count x len` matrix whose rows are `dst_stride` apart.
        Nz2nd = "nz2nd",
    }
}

/// Rows of a fractal.
pub const FRACTAL_ROWS: u64 = 16;
/// Bytes of one fractal row outside L0C.
pub const FRACTAL_ROW_BYTES: u64 = 32;

/// Columns of a fractal of `dtype` in `tier`: 16 in L0C, else 32 bytes' worth.
pub fn fractal_cols(dtype: DType, tier: Option<Tier>) -> u64 {
    if tier == Some(Tier::L0c) {
        16
    } else {
        FRACTAL_ROW_BYTES / dtype.size()
    }
}

/// The sizes of a `dma`, in elements: expressions in a program (`N = Expr`), numbers once an
/// instance executes (`N = u64`).
#[derive(Clone, Debug, PartialEq)]
pub struct DmaSizes<N> {
    /// Number of bursts.
    pub count: N,
    /// Elements per burst.
    pub len: N,
    /// Source distance between burst starts.
    pub src_stride: N,
    /// Destination distance between burst starts.
    pub dst_stride: N,
}

impl DmaSizes<Expr> {
    /// The sizes of one execution, each through `f` (which names the option it evaluates).
    pub fn eval<E>(
        &self,
        mut f: impl FnMut(&'static str, &Expr) -> Result<u64, E>,
    ) -> Result<DmaSizes<u64>, E> {
        Ok(DmaSizes {
            count: f("count", &self.count)?,
            len: f("len", &self.len)?,
            src_stride: f("src_stride", &self.src_stride)?,
            dst_stride: f("dst_stride", &self.dst_stride)?,
        })
    }
}

/// `load3d DST, SRC`: a window of the im2col matrix of one feature map, in the cube's fractal
/// layout (Ascend's LoadData3DV2). The source (L1) is C1HWC0: `c/c0` slices of `h x w x c0`
/// (c0 = the fractal's columns). The matrix has one row per output position (`oy*ow + ox`)
/// and one column per (c1, kernel row, kernel column, c0); rows `m_start..m_start+m_ext` and
/// columns `k_start..k_start+k_ext` are written to L0A as fractals in row-major order, each
/// row-major (zZ), zero where the kernel reads padding or the row is past the last position.
#[derive(Clone, Debug, PartialEq)]
pub struct Load3d {
    /// Destination (L0A).
    pub dst: MemRef,
    /// Source feature map (L1).
    pub src: MemRef,
    /// Image, kernel, stride, padding and window.
    pub sizes: Load3dSizes<Expr>,
}

/// The sizes of a `load3d`: expressions in a program, numbers once an instance executes.
#[derive(Clone, Debug, PartialEq)]
pub struct Load3dSizes<N> {
    /// Height.
    pub h: N,
    /// Width.
    pub w: N,
    /// Channels (a multiple of c0).
    pub c: N,
    /// Kernel height.
    pub kh: N,
    /// Kernel width.
    pub kw: N,
    /// Stride in both directions.
    pub stride: N,
    /// Zero rows above the image.
    pub pad_top: N,
    /// Zero rows below.
    pub pad_bottom: N,
    /// Zero columns left.
    pub pad_left: N,
    /// Zero columns right.
    pub pad_right: N,
    /// First matrix row (output position) written.
    pub m_start: N,
    /// Rows written (a multiple of 16).
    pub m_ext: N,
    /// First matrix column written (a multiple of c0).
    pub k_start: N,
    /// Columns written (a multiple of c0).
    pub k_ext: N,
}

impl Load3dSizes<Expr> {
    /// The sizes of one execution, each through `f` (which names the option it evaluates).
    pub fn eval<E>(
        &self,
        mut f: impl FnMut(&'static str, &Expr) -> Result<u64, E>,
    ) -> Result<Load3dSizes<u64>, E> {
        Ok(Load3dSizes {
            h: f("h", &self.h)?,
            w: f("w", &self.w)?,
            c: f("c", &self.c)?,
            kh: f("kh", &self.kh)?,
            kw: f("kw", &self.kw)?,
            stride: f("stride", &self.stride)?,
            pad_top: f("pad_top", &self.pad_top)?,
            pad_bottom: f("pad_bottom", &self.pad_bottom)?,
            pad_left: f("pad_left", &self.pad_left)?,
            pad_right: f("pad_right", &self.pad_right)?,
            m_start: f("m_start", &self.m_start)?,
            m_ext: f("m_ext", &self.m_ext)?,
            k_start: f("k_start", &self.k_start)?,
            k_ext: f("k_ext", &self.k_ext)?,
        })
    }
}

impl Load3dSizes<u64> {
    /// Output height and width (with the kernel inside the padded image).
    pub fn out_hw(&self) -> (u64, u64) {
        let oh = (self.h + self.pad_top + self.pad_bottom).saturating_sub(self.kh) / self.stride;
        let ow = (self.w + self.pad_left + self.pad_right).saturating_sub(self.kw) / self.stride;
        (oh + 1, ow + 1)
    }
}

/// `mmad C, A, B, m=, k=, n=`: `C[m x n] (+)= A[m x k] * B[k x n]` in the cube's fractal
/// layouts (Ascend's Mmad): A in L0A as fractals in row-major order, each row-major (zZ); B in
/// L0B as fractals in row-major order, each column-major (nZ); C in L0C as 16 x 16 fractals in
/// column-major order, each row-major (NZ). Shapes are padded to whole fractals; the padding
/// is read (it must have been written) and, with `init`, zeroed in C. f16/bf16 inputs
/// accumulate in f32, i8 in i32; `init` overwrites C.
#[derive(Clone, Debug, PartialEq)]
pub struct Mmad {
    /// Accumulators.
    pub c: MemRef,
    /// Left input.
    pub a: MemRef,
    /// Right input.
    pub b: MemRef,
    /// `m`, `k` and `n`.
    pub sizes: MmadSizes<Expr>,
    /// Overwrite rather than accumulate where this evaluates to non-zero (`init` alone is
    /// `init=1`; absent is `init=0`).
    pub init: Expr,
}

/// The sizes of an `mmad`: expressions in a program, numbers once an instance executes.
#[derive(Clone, Debug, PartialEq)]
pub struct MmadSizes<N> {
    /// Rows of A and C.
    pub m: N,
    /// Columns of A, rows of B.
    pub k: N,
    /// Columns of B and C.
    pub n: N,
}

impl MmadSizes<Expr> {
    /// The sizes of one execution, each through `f` (which names the option it evaluates).
    pub fn eval<E>(
        &self,
        mut f: impl FnMut(&'static str, &Expr) -> Result<u64, E>,
    ) -> Result<MmadSizes<u64>, E> {
        Ok(MmadSizes {
            m: f("m", &self.m)?,
            k: f("k", &self.k)?,
            n: f("n", &self.n)?,
        })
    }
}

/// Flag operands: the setting pipe, the waiting pipe and the flag id (an expression, so that
/// the slots of a ring can have an id each inside one loop).
#[derive(Clone, Debug, PartialEq)]
pub struct Flag {
    /// The pipe that sets.
    pub src: Pipe,
    /// The pipe that waits.
    pub dst: Pipe,
    /// The id.
    pub id: Expr,
}

/// One executed flag: the pipes and the evaluated id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlagKey {
    /// The pipe that sets.
    pub src: Pipe,
    /// The pipe that waits.
    pub dst: Pipe,
    /// The id.
    pub id: u32,
}

impl fmt::Display for FlagKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {} id {}", self.src, self.dst, self.id)
    }
}

/// What a barrier drains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierScope {
    /// One pipe: everything before it on the pipe completes before anything after it starts
    /// (Ascend's PipeBarrier; needed between dependent instructions of one pipe).
    Pipe(Pipe),
    /// Every pipe of the core: everything issued before completes before anything after.
    All,
}

/// A vector instruction: `repeat` repeats over up to `lanes` elements each (the vector width
/// divided by the widest element), the first `mask` lanes active; operand `x` of repeat `r`
/// starts `r * x_rs` elements after its reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Vector {
    /// Operation and sources.
    pub op: VecOp,
    /// Destination.
    pub dst: MemRef,
    /// Repeats, mask and repeat strides.
    pub sizes: VectorSizes<Expr>,
}

/// The sizes of a vector instruction: expressions in a program, numbers once an instance
/// executes.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorSizes<N> {
    /// Repeats (1..=max_repeat).
    pub repeat: N,
    /// Active lanes (all when absent).
    pub mask: Option<N>,
    /// Destination repeat stride in elements (lanes, or 1 for reductions, when absent).
    pub dst_rs: Option<N>,
    /// Source repeat strides in elements, one per source (lanes, or 1 for `vbcast`, when
    /// absent).
    pub src_rs: [Option<N>; 3],
}

impl VectorSizes<Expr> {
    /// Full repeats with every lane active and the default strides.
    pub fn repeats(repeat: impl Into<Expr>) -> VectorSizes<Expr> {
        VectorSizes {
            repeat: repeat.into(),
            mask: None,
            dst_rs: None,
            src_rs: [None, None, None],
        }
    }
    /// The sizes of one execution, each through `f` (which names the option it evaluates).
    pub fn eval<E>(
        &self,
        mut f: impl FnMut(&'static str, &Expr) -> Result<u64, E>,
    ) -> Result<VectorSizes<u64>, E> {
        let repeat = f("repeat", &self.repeat)?;
        let mut opt = |name, e: &Option<Expr>| e.as_ref().map(|e| f(name, e)).transpose();
        let [s0, s1, s2] = &self.src_rs;
        Ok(VectorSizes {
            repeat,
            mask: opt("mask", &self.mask)?,
            dst_rs: opt("dst_rs", &self.dst_rs)?,
            src_rs: [
                opt("src0_rs", s0)?,
                opt("src1_rs", s1)?,
                opt("src2_rs", s2)?,
            ],
        })
    }
}

keywords! {
    /// Element-wise binary operations.
    BinaryOp { /** a + b */ Add = "vadd", /** a - b */ Sub = "vsub", /** a * b */ Mul = "vmul",
        /** a / b */ Div = "vdiv", /** max(a, b) */ Max = "vmax", /** min(a, b) */ Min = "vmin" }
}
keywords! {
    /// Element-wise unary operations.
    UnaryOp { /** e^a */ Exp = "vexp", /** ln a */ Ln = "vln", /** sqrt a */ Sqrt = "vsqrt",
        /** 1/sqrt a */ Rsqrt = "vrsqrt", /** |a| */ Abs = "vabs", /** max(a, 0) */ Relu = "vrelu",
        /** 1/a */ Rec = "vrec", /** a */ Mov = "vmov" }
}
keywords! {
    /// Operations of an operand with a scalar immediate.
    ScalarOp { /** a + s */ Adds = "vadds", /** a * s */ Muls = "vmuls",
        /** max(a, s) */ Maxs = "vmaxs", /** min(a, s) */ Mins = "vmins" }
}
keywords! {
    /// Comparisons (`vcmp.OP`): 1 where true, 0 where false.
    CmpOp { /** < */ Lt = "lt", /** <= */ Le = "le", /** > */ Gt = "gt", /** >= */ Ge = "ge",
        /** == */ Eq = "eq", /** != */ Ne = "ne" }
}
impl CmpOp {
    /// Whether `a OP b`.
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
    /// The operator as written in an expression.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

keywords! {
    /// Reductions of the active lanes of a repeat (`vreduce.OP`).
    ReduceOp { /** sum */ Sum = "sum", /** maximum */ Max = "max", /** minimum */ Min = "min" }
}

/// The operation of a vector instruction, with its sources.
#[derive(Clone, Debug, PartialEq)]
pub enum VecOp {
    /// `vadd D, A, B` and friends.
    Binary {
        /// Which.
        op: BinaryOp,
        /// Left.
        a: MemRef,
        /// Right.
        b: MemRef,
    },
    /// `vexp D, A` and friends.
    Unary {
        /// Which.
        op: UnaryOp,
        /// Source.
        a: MemRef,
    },
    /// `vadds D, A, 1.5` and friends.
    Scalar {
        /// Which.
        op: ScalarOp,
        /// Source.
        a: MemRef,
        /// The immediate.
        value: f64,
    },
    /// `vdup D, 1.5`: every active lane gets the immediate.
    Dup {
        /// The immediate.
        value: f64,
    },
    /// `vbcast D, A`: every active lane of repeat r gets element `A[r * src_rs]`.
    Bcast {
        /// Source.
        a: MemRef,
    },
    /// `vcmp.lt D, A, B`.
    Cmp {
        /// Which.
        op: CmpOp,
        /// Left.
        a: MemRef,
        /// Right.
        b: MemRef,
    },
    /// `vsel D, C, A, B`: A where C != 0, else B.
    Select {
        /// Condition.
        cond: MemRef,
        /// Where true.
        a: MemRef,
        /// Where false.
        b: MemRef,
    },
    /// `vconv D, A`: convert to the destination's type (round to nearest, saturate).
    Conv {
        /// Source.
        a: MemRef,
    },
    /// `vreduce.sum D, A`: one result per repeat.
    Reduce {
        /// Which.
        op: ReduceOp,
        /// Source.
        a: MemRef,
    },
}

impl VecOp {
    /// The mnemonic.
    pub fn mnemonic(&self) -> String {
        match self {
            VecOp::Binary { op, .. } => op.name().into(),
            VecOp::Unary { op, .. } => op.name().into(),
            VecOp::Scalar { op, .. } => op.name().into(),
            VecOp::Dup { .. } => "vdup".into(),
            VecOp::Bcast { .. } => "vbcast".into(),
            VecOp::Cmp { op, .. } => format!("vcmp.{op}"),
            VecOp::Select { .. } => "vsel".into(),
            VecOp::Conv { .. } => "vconv".into(),
            VecOp::Reduce { op, .. } => format!("vreduce.{op}"),
        }
    }
    /// The source operands, in order.
    pub fn sources(&self) -> Vec<&MemRef> {
        match self {
            VecOp::Binary { a, b, .. } | VecOp::Cmp { a, b, .. } => vec![a, b],
            VecOp::Select { cond, a, b } => vec![cond, a, b],
            VecOp::Unary { a, .. }
            | VecOp::Scalar { a, .. }
            | VecOp::Bcast { a }
            | VecOp::Conv { a }
            | VecOp::Reduce { a, .. } => vec![a],
            VecOp::Dup { .. } => vec![],
        }
    }
}

/// A whole program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// GM tensors.
    pub tensors: Vec<TensorDecl>,
    /// On-chip buffers.
    pub buffers: Vec<BufferDecl>,
    /// Names of loop variables, by [`VarId`].
    pub vars: Vec<String>,
    /// The top-level statements.
    pub body: Vec<Stmt>,
}

impl Program {
    /// The tensor with this id.
    pub fn tensor(&self, id: TensorId) -> &TensorDecl {
        &self.tensors[id.0 as usize]
    }
    /// The buffer with this id.
    pub fn buffer(&self, id: BufferId) -> &BufferDecl {
        &self.buffers[id.0 as usize]
    }
    /// Name, element type and shape of a reference's target.
    pub fn target_info(&self, target: Target) -> (&str, DType, &[u64]) {
        match target {
            Target::Tensor(t) => {
                let t = self.tensor(t);
                (&t.name, t.dtype, &t.shape)
            }
            Target::Buffer(b) => {
                let b = self.buffer(b);
                (&b.name, b.dtype, &b.shape)
            }
        }
    }
    /// Calls `f` on every instruction, depth first in program order.
    pub fn for_each_instr<'a>(&'a self, f: &mut impl FnMut(&'a Instr)) {
        fn walk<'a>(stmts: &'a [Stmt], f: &mut impl FnMut(&'a Instr)) {
            for s in stmts {
                match s {
                    Stmt::Loop(l) => walk(&l.body, f),
                    Stmt::Instr(i) => f(i),
                }
            }
        }
        walk(&self.body, f)
    }
}
