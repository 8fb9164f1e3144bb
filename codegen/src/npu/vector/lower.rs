//! Expression trees to vector operations ([`Graph`] nodes), in the kernel's types: each
//! operation of the tree becomes one vector operation that rounds to the operation's type,
//! as the interpreter does, so that element-wise results are the same bits (transcendental
//! functions aside, whose last bit may differ: `docs/npu.md`).
//!
//! The caller says what each array element read is ([`Lowerer::expr`]'s `leaf`): any
//! value in UB with a [`Layout`] (a tile with its pitch, a per-row or per-column value, a
//! splat). A per-row value combined with a tile is spread over a repeat of lanes first
//! (`vbcast`); constants become immediates where the instruction has a scalar form
//! (`vadds`, `vmuls`, `vmaxs`, `vmins`) and splats otherwise. What the vector unit cannot do
//! exactly is refused with the reason: integer arithmetic (it wraps in the kernel language
//! and saturates on the vector unit), integer division, conversions to integers, `tanh`,
//! `pow`, logic on truth values.

use super::graph::{Graph, Imm, Layout, Op, Val};
use crate::npu::matmul::dtype;
use frontend::ir::{Access, BinOp, ElemType, Expr, ExprKind, Func, Type};
use npu_sim::program::{BinaryOp, CmpOp, DType, ReduceOp, ScalarOp, UnaryOp};

/// What lowering needs to know of the rows and the vector unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Elements per row of a tile in UB (its pitch; the columns rounded up to whole
    /// alignment blocks).
    pub width: i64,
    /// Bytes of the widest operand per repeat.
    pub bytes_per_repeat: i64,
    /// Most repeats per instruction.
    pub max_repeat: i64,
    /// Alignment of UB operands, in bytes.
    pub align: i64,
}

impl Frame {
    /// The frame of rows `width` elements wide on `machine`'s vector unit, UB operands on
    /// the larger of the tier's alignment and GM's 32-byte blocks.
    pub fn of(machine: &npu_sim::Machine, width: i64) -> Frame {
        let ub = machine
            .tier(npu_sim::program::Tier::Ub)
            .map_or(0, |t| t.align as i64);
        Frame {
            width,
            bytes_per_repeat: machine.vector.bytes_per_repeat as i64,
            max_repeat: machine.vector.max_repeat as i64,
            align: ub.max(npu_sim::hazards::BLOCK as i64),
        }
    }

    /// Lanes of an instruction whose widest operand is `d`.
    pub fn lanes(&self, d: DType) -> i64 {
        self.bytes_per_repeat / d.size() as i64
    }
    /// `n` elements of `d` rounded up to the UB alignment.
    pub fn aligned(&self, d: DType, n: i64) -> i64 {
        let per = (self.align / d.size() as i64).max(1);
        (n + per - 1) / per * per
    }
}

/// Builds graph nodes from expression trees.
pub struct Lowerer<'g> {
    /// The graph the nodes go into.
    pub graph: &'g mut Graph,
    /// The rows' frame.
    pub frame: Frame,
}

/// The type of a numeric expression on the NPU.
fn elem(ty: Type) -> Result<DType, String> {
    match ty {
        Type::Elem(e) => dtype(e).map_err(|e| e.to_string()),
        Type::Bool => Err("a truth value is used as a number".into()),
    }
}

/// The vector binary operation of a kernel operator, refusing what is inexact on integers.
pub fn binary(op: BinOp, d: DType) -> Result<BinaryOp, String> {
    if d.is_int() {
        return Err(match op {
            BinOp::Div => "divides integers; the vector unit has no integer division".into(),
            _ => format!(
                "computes `{}` on {d}, which wraps in the kernel language and saturates on the vector unit",
                match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                }
            ),
        });
    }
    Ok(match op {
        BinOp::Add => BinaryOp::Add,
        BinOp::Sub => BinaryOp::Sub,
        BinOp::Mul => BinaryOp::Mul,
        BinOp::Div => BinaryOp::Div,
    })
}

/// The element-wise operation that combines two partial results of a reduction.
pub fn combining(op: ReduceOp) -> BinaryOp {
    match op {
        ReduceOp::Sum => BinaryOp::Add,
        ReduceOp::Max => BinaryOp::Max,
        ReduceOp::Min => BinaryOp::Min,
    }
}

/// The layout of an element-wise result from its operands' (`width` the tile pitch): a
/// tile's is the frame's whatever its operands' pitches (a tile loaded whole with rows in
/// column chunks is wider).
fn join(a: Layout, b: Layout, width: i64) -> Layout {
    match (a, b) {
        (Layout::Tile { .. }, _) | (_, Layout::Tile { .. }) => Layout::Tile { pitch: width },
        (Layout::Splat, x) | (x, Layout::Splat) => x,
        (x, y) if x == y => x,
        _ => Layout::Tile { pitch: width },
    }
}

impl Lowerer<'_> {
    fn node(&self, v: Val) -> (DType, Layout) {
        let n = &self.graph.nodes[v];
        (n.dtype, n.layout)
    }

    /// The element-wise operation `make(operands)` of type `d`: the operands' joint layout,
    /// per-row operands spread when the result is a tile.
    pub fn elementwise(
        &mut self,
        d: DType,
        operands: &[Val],
        make: impl FnOnce(&[Val]) -> Op,
    ) -> Val {
        let width = self.frame.width;
        let layout = (operands.iter())
            .map(|&v| self.node(v).1)
            .fold(Layout::Splat, |a, b| join(a, b, width));
        let ops: Vec<Val> = (operands.iter())
            .map(|&v| match (layout, self.node(v)) {
                (Layout::Tile { .. }, (vd, Layout::Row)) => {
                    self.graph.add(Op::Spread(v), vd, Layout::Spread)
                }
                _ => v,
            })
            .collect();
        self.graph.add(make(&ops), d, layout)
    }

    /// A constant of type `d` as a splat.
    pub fn constant(&mut self, d: DType, v: f64) -> Val {
        self.graph.add(Op::Dup(Imm::new(v)), d, Layout::Splat)
    }

    /// `v` as a value of `layout` (a copy, or `v` itself when it has it).
    pub fn to_layout(&mut self, v: Val, layout: Layout) -> Val {
        let (d, have) = self.node(v);
        if have == layout {
            return v;
        }
        let src = match (layout, have) {
            (Layout::Tile { .. }, Layout::Row) => self.graph.add(Op::Spread(v), d, Layout::Spread),
            _ => v,
        };
        self.graph.fresh(Op::Unary(UnaryOp::Mov, src), d, layout)
    }

    /// `v` copied into a new value (so that it can be stored into a home of its own).
    pub fn copy(&mut self, v: Val) -> Val {
        let (d, layout) = self.node(v);
        self.graph.fresh(Op::Unary(UnaryOp::Mov, v), d, layout)
    }

    /// The reduction of the first `len` elements of each row of `src` (a tile or partial
    /// results) into one value per row: repeat by repeat into partial results, level by
    /// level, the last repeat of a row that is not whole folded on its own and combined.
    pub fn reduce_rows(&mut self, op: ReduceOp, src: Val, len: i64) -> Result<Val, String> {
        let (d, layout) = self.node(src);
        if d == DType::I8 || (d.is_int() && op == ReduceOp::Sum) {
            return Err(format!(
                "reduces {d} values with `{op}`, which the vector unit cannot do exactly"
            ));
        }
        let lanes = self.frame.lanes(d);
        if len <= lanes {
            let fold = Op::Fold {
                op,
                src,
                start: 0,
                len,
            };
            return Ok(self.graph.add(fold, d, Layout::Row));
        }
        let pitch = match layout {
            Layout::Tile { pitch } | Layout::Part { pitch } => pitch,
            other => return Err(format!("reduces a value laid out as {other:?}")),
        };
        let (full, tail) = (len / lanes, len % lanes);
        // Rows that follow each other without a gap reduce as one run of repeats, their
        // results back to back unless the next level reads those row by row from blocks
        // they do not start on (a run of its own over rows that do not end on whole repeats
        // of it); otherwise each row's partial results start on an aligned block.
        let next_by_rows = full > lanes && full % lanes != 0;
        let on_blocks = (full * d.size() as i64) % self.frame.align == 0;
        let part = if pitch == full * lanes && (on_blocks || !next_by_rows) {
            full
        } else {
            self.frame.aligned(d, full)
        };
        let partials = Op::Partials {
            op,
            src,
            len: full * lanes,
        };
        let p = self.graph.add(partials, d, Layout::Part { pitch: part });
        let mut v = self.reduce_rows(op, p, full)?;
        if tail > 0 {
            let fold = Op::Fold {
                op,
                src,
                start: full * lanes,
                len: tail,
            };
            let t = self.graph.add(fold, d, Layout::Row);
            v = self
                .graph
                .add(Op::Binary(combining(op), v, t), d, Layout::Row);
        }
        Ok(v)
    }

    /// The value of `e`, with `leaf` giving the value of every array element read.
    pub fn expr(
        &mut self,
        e: &Expr,
        leaf: &mut dyn FnMut(&mut Graph, &Access) -> Result<Val, String>,
    ) -> Result<Val, String> {
        match &e.kind {
            ExprKind::Literal(v) => Ok(self.constant(elem(e.ty)?, *v)),
            ExprKind::Read(a) => leaf(self.graph, a),
            ExprKind::Index(_) => Err("uses an index value that was not folded".into()),
            ExprKind::Neg(a) => {
                let d = elem(e.ty)?;
                if d.is_int() {
                    return Err(format!("negates {d}, which wraps in the kernel language"));
                }
                let x = self.expr(a, leaf)?;
                Ok(self.elementwise(d, &[x], |o| {
                    Op::Scalar(ScalarOp::Muls, o[0], Imm::new(-1.0))
                }))
            }
            ExprKind::Binary(op, a, b) => {
                let d = elem(e.ty)?;
                let op = binary(*op, d)?;
                self.binary(d, op, a, b, leaf)
            }
            ExprKind::Call(f, args) => self.call(e, *f, args, leaf),
            ExprKind::Cast(a) => self.cast(e, a, leaf),
            ExprKind::Compare(op, a, b) => {
                let d = elem(a.ty)?;
                if d == DType::I8 {
                    return Err("compares i8 values; the vector unit has no i8 arithmetic".into());
                }
                let (x, y) = (self.expr(a, leaf)?, self.expr(b, leaf)?);
                let op = cmp(*op);
                Ok(self.elementwise(d, &[x, y], |o| Op::Cmp(op, o[0], o[1])))
            }
            ExprKind::Select(c, a, b) => {
                let d = elem(e.ty)?;
                if d == DType::I8 {
                    return Err("selects i8 values; the vector unit has no i8 arithmetic".into());
                }
                let cond = self.truth(c, d, leaf)?;
                let (x, y) = (self.expr(a, leaf)?, self.expr(b, leaf)?);
                Ok(self.elementwise(d, &[cond, x, y], |o| Op::Select(o[0], o[1], o[2])))
            }
            ExprKind::Logic(..) | ExprKind::Not(_) => {
                Err("combines truth values with `and`/`or`/`not`, which the vector path does not compile".into())
            }
        }
    }

    /// A truth value as 1 or 0 in type `d`.
    fn truth(
        &mut self,
        c: &Expr,
        d: DType,
        leaf: &mut dyn FnMut(&mut Graph, &Access) -> Result<Val, String>,
    ) -> Result<Val, String> {
        let v = self.expr(c, leaf)?;
        let (have, _) = self.node(v);
        Ok(if have == d {
            v
        } else {
            self.elementwise(d, &[v], |o| Op::Conv(o[0]))
        })
    }

    /// `a op b`, with an immediate where the instruction has a scalar form.
    fn binary(
        &mut self,
        d: DType,
        op: BinaryOp,
        a: &Expr,
        b: &Expr,
        leaf: &mut dyn FnMut(&mut Graph, &Access) -> Result<Val, String>,
    ) -> Result<Val, String> {
        let literal = |x: &Expr| match x.kind {
            ExprKind::Literal(v) if v.is_finite() => Some(v),
            _ => None,
        };
        // x op c (and c op x where op commutes): the same rounding as with the constant in a
        // vector (x - c is x + (-c) exactly)
        let scalar = |op: BinaryOp, c: f64, right: bool| match op {
            BinaryOp::Add => Some((ScalarOp::Adds, c)),
            BinaryOp::Sub if right => Some((ScalarOp::Adds, -c)),
            BinaryOp::Mul => Some((ScalarOp::Muls, c)),
            BinaryOp::Max => Some((ScalarOp::Maxs, c)),
            BinaryOp::Min => Some((ScalarOp::Mins, c)),
            _ => None,
        };
        let with_imm = match (literal(a), literal(b)) {
            (_, Some(c)) => scalar(op, c, true).map(|s| (a, s)),
            (Some(c), None) => scalar(op, c, false).map(|s| (b, s)),
            _ => None,
        };
        if let Some((x, (sop, c))) = with_imm {
            let x = self.expr(x, leaf)?;
            return Ok(self.elementwise(d, &[x], |o| Op::Scalar(sop, o[0], Imm::new(c))));
        }
        let (x, y) = (self.expr(a, leaf)?, self.expr(b, leaf)?);
        Ok(self.elementwise(d, &[x, y], |o| Op::Binary(op, o[0], o[1])))
    }

    fn call(
        &mut self,
        e: &Expr,
        f: Func,
        args: &[Expr],
        leaf: &mut dyn FnMut(&mut Graph, &Access) -> Result<Val, String>,
    ) -> Result<Val, String> {
        let d = elem(e.ty)?;
        let unary = match f {
            Func::Exp => UnaryOp::Exp,
            Func::Log => UnaryOp::Ln,
            Func::Sqrt => UnaryOp::Sqrt,
            Func::Abs => UnaryOp::Abs,
            Func::Max | Func::Min => {
                if d == DType::I8 {
                    return Err(
                        "takes max/min of i8 values; the vector unit has no i8 arithmetic".into(),
                    );
                }
                let op = if f == Func::Max {
                    BinaryOp::Max
                } else {
                    BinaryOp::Min
                };
                return self.binary(d, op, &args[0], &args[1], leaf);
            }
            Func::Tanh | Func::Pow | Func::Floor => {
                return Err(format!(
                    "calls `{}`, for which the vector unit has no instruction",
                    f.name()
                ))
            }
        };
        if d.is_int() {
            return Err(format!(
                "calls `{}` on {d}{}",
                f.name(),
                if f == Func::Abs {
                    ", which wraps at the smallest integer in the kernel language"
                } else {
                    ""
                }
            ));
        }
        let x = self.expr(&args[0], leaf)?;
        Ok(self.elementwise(d, &[x], |o| Op::Unary(unary, o[0])))
    }

    fn cast(
        &mut self,
        e: &Expr,
        a: &Expr,
        leaf: &mut dyn FnMut(&mut Graph, &Access) -> Result<Val, String>,
    ) -> Result<Val, String> {
        let to = elem(e.ty)?;
        if let Type::Bool = a.ty {
            return self.truth(a, to, leaf);
        }
        let from = elem(a.ty)?;
        let exact_widening = matches!(
            (a.ty, e.ty),
            (Type::Elem(ElemType::I8), Type::Elem(ElemType::I32))
        );
        if to.is_int() && !exact_widening && from != to {
            return Err(format!(
                "converts {from} to {to}; the kernel language truncates and wraps where the vector unit rounds and saturates"
            ));
        }
        let x = self.expr(a, leaf)?;
        Ok(if from == to {
            x
        } else {
            self.elementwise(to, &[x], |o| Op::Conv(o[0]))
        })
    }
}

fn cmp(op: frontend::ir::CmpOp) -> CmpOp {
    use frontend::ir::CmpOp as C;
    match op {
        C::Lt => CmpOp::Lt,
        C::Le => CmpOp::Le,
        C::Gt => CmpOp::Gt,
        C::Ge => CmpOp::Ge,
        C::Eq => CmpOp::Eq,
        C::Ne => CmpOp::Ne,
    }
}
