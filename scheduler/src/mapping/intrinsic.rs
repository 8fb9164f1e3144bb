//! Intrinsics as data: a hardware instruction described as a one-statement kernel whose
//! arrays are its operands, each in a tier of the machine.

use super::software::{collect_reads, LoopKind};
use crate::target::Memory;
use frontend::ir::{ArrayId, AssignOp, BinOp, ElemType, Expr, ExprKind, Kernel, Stmt};
use std::fmt;

/// A loop of an intrinsic: `0..extent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntrinsicLoop {
    /// Its name in the intrinsic's text.
    pub name: String,
    /// Number of iterations (the size of one call along it).
    pub extent: i64,
    /// Spatial (indexes the output operand) or reduction.
    pub kind: LoopKind,
}

/// An operand of an intrinsic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operand {
    /// The array standing for it in the intrinsic's kernel.
    pub array: ArrayId,
    /// Its name.
    pub name: String,
    /// Its element type.
    pub elem: ElemType,
    /// The tier it lives in.
    pub tier: Memory,
    /// For each dimension, the intrinsic loop that indexes it (`None`: a constant index 0).
    pub dims: Vec<Option<usize>>,
    /// Its extents.
    pub extents: Vec<i64>,
}

/// A checked intrinsic.
#[derive(Clone, Debug)]
pub struct Intrinsic {
    /// Its name.
    pub name: String,
    /// The intrinsic as a kernel (one statement).
    pub kernel: Kernel,
    /// Its loops, outermost first.
    pub loops: Vec<IntrinsicLoop>,
    /// Its operands, in declaration order.
    pub operands: Vec<Operand>,
    /// The operand written.
    pub output: usize,
    /// Operands any of which, when padded with the operation's identity element (zero for
    /// a factor of a product under `+=`, the identity itself for a lone operand), makes a
    /// point contribute nothing.
    pub annihilators: Vec<usize>,
}

/// Why an intrinsic description is not usable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntrinsicError {
    /// It must hold exactly one statement.
    StatementCount(usize),
    /// A loop is not `0..constant` with step 1, or is reversed.
    LoopShape(String),
    /// A guard: intrinsics compute on whole tiles.
    Guard,
    /// An operand index is not a single loop variable or the constant 0.
    Index(String),
    /// One operand is indexed differently in two places.
    TwoIndexings(String),
    /// An extent is not a constant.
    Extent(String),
    /// An operand of the description is never used by its statement.
    Unused(String),
    /// An operand was given no tier.
    NoTier(String),
}

impl fmt::Display for IntrinsicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntrinsicError::StatementCount(n) => {
                write!(f, "an intrinsic holds exactly one statement, this one {n}")
            }
            IntrinsicError::LoopShape(l) => write!(
                f,
                "loop `{l}` must run forwards over 0..constant with step 1"
            ),
            IntrinsicError::Guard => f.write_str("an intrinsic cannot hold an `if`"),
            IntrinsicError::Index(o) => write!(
                f,
                "every index of operand `{o}` must be one loop variable or 0"
            ),
            IntrinsicError::TwoIndexings(o) => {
                write!(f, "operand `{o}` is indexed in two different ways")
            }
            IntrinsicError::Extent(o) => {
                write!(f, "operand `{o}` has an extent that is not a constant")
            }
            IntrinsicError::Unused(o) => write!(f, "operand `{o}` is not used by the statement"),
            IntrinsicError::NoTier(o) => write!(f, "operand `{o}` has no tier"),
        }
    }
}

impl Intrinsic {
    /// Checks an intrinsic given as a kernel and the tier of each of its arrays.
    pub fn new(kernel: Kernel, tiers: &[Memory]) -> Result<Intrinsic, IntrinsicError> {
        let stmts = kernel.statements();
        if stmts.len() != 1 {
            return Err(IntrinsicError::StatementCount(stmts.len()));
        }
        let ctx = &stmts[0];
        if ctx.enclosing.len() != ctx.loops().count() {
            return Err(IntrinsicError::Guard);
        }
        let stmt: &Stmt = ctx.stmt;
        let mut loops = Vec::new();
        for l in ctx.loops() {
            let extent = match (&l.lower, &l.upper) {
                (frontend::ir::AffExpr::Const(0), frontend::ir::AffExpr::Const(n))
                    if l.step == 1 && !l.reverse =>
                {
                    *n
                }
                _ => return Err(IntrinsicError::LoopShape(l.var.clone())),
            };
            loops.push(IntrinsicLoop {
                name: l.var.clone(),
                extent,
                kind: LoopKind::Spatial,
            });
        }
        let loop_of = |e: &frontend::ir::AffExpr| match e {
            frontend::ir::AffExpr::Var(frontend::ir::Var::Loop(n)) => {
                loops.iter().position(|l| &l.name == n).map(Some)
            }
            frontend::ir::AffExpr::Const(0) => Some(None),
            _ => None,
        };
        let mut dims: Vec<Option<Vec<Option<usize>>>> = vec![None; kernel.arrays.len()];
        let mut accesses = vec![&stmt.target];
        collect_reads(&stmt.rhs, &mut accesses);
        for a in accesses {
            let name = &kernel.array(a.array).name;
            let d: Option<Vec<Option<usize>>> = a.indices.iter().map(loop_of).collect();
            let d = d.ok_or_else(|| IntrinsicError::Index(name.clone()))?;
            match &dims[a.array.0] {
                Some(prev) if *prev != d => return Err(IntrinsicError::TwoIndexings(name.clone())),
                _ => dims[a.array.0] = Some(d),
            }
        }
        let mut operands = Vec::new();
        for (k, array) in kernel.arrays.iter().enumerate() {
            let d = dims[k]
                .clone()
                .ok_or_else(|| IntrinsicError::Unused(array.name.clone()))?;
            let extents: Option<Vec<i64>> = (array.dims.iter())
                .map(|e| match e {
                    frontend::ir::AffExpr::Const(c) => Some(*c),
                    _ => None,
                })
                .collect();
            operands.push(Operand {
                array: ArrayId(k),
                name: array.name.clone(),
                elem: array.elem,
                tier: *tiers
                    .get(k)
                    .ok_or_else(|| IntrinsicError::NoTier(array.name.clone()))?,
                dims: d,
                extents: extents.ok_or_else(|| IntrinsicError::Extent(array.name.clone()))?,
            });
        }
        let output = stmt.target.array.0;
        for (k, l) in loops.iter_mut().enumerate() {
            if !operands[output].dims.contains(&Some(k)) {
                l.kind = LoopKind::Reduction;
            }
        }
        let annihilators = annihilators(stmt).into_iter().map(|a| a.0).collect();
        Ok(Intrinsic {
            name: kernel.name.clone(),
            kernel,
            loops,
            operands,
            output,
            annihilators,
        })
    }

    /// The statement it computes.
    pub fn stmt(&self) -> &Stmt {
        self.kernel.statements()[0].stmt
    }

    /// The loop indices that index operand `o`.
    pub fn loops_of(&self, o: usize) -> impl Iterator<Item = usize> + '_ {
        self.operands[o].dims.iter().flatten().copied()
    }
}

/// The operands whose identity padding makes a point's contribution vanish: the factors
/// of a product accumulated with `+=`, or the lone operand of an accumulation.
fn annihilators(stmt: &Stmt) -> Vec<ArrayId> {
    fn strip(e: &Expr) -> &Expr {
        match &e.kind {
            ExprKind::Cast(a) => strip(a),
            _ => e,
        }
    }
    fn factors(e: &Expr, out: &mut Vec<ArrayId>) {
        match &strip(e).kind {
            ExprKind::Binary(BinOp::Mul, a, b) => {
                factors(a, out);
                factors(b, out)
            }
            ExprKind::Read(a) => out.push(a.array),
            _ => {}
        }
    }
    let mut out = Vec::new();
    match stmt.op {
        AssignOp::Add | AssignOp::Sub => factors(&stmt.rhs, &mut out),
        AssignOp::Max | AssignOp::Min | AssignOp::Mul => {
            if let ExprKind::Read(a) = &strip(&stmt.rhs).kind {
                out.push(a.array)
            }
        }
        AssignOp::Assign | AssignOp::Div => {}
    }
    out
}

/// The software accesses an intrinsic's operands stand for, when a statement computes what
/// the intrinsic computes (same operator, same expression shape, same types at every node).
pub fn bind(intr: &Intrinsic, stmt: &Stmt, kernel: &Kernel) -> Option<Vec<frontend::ir::Access>> {
    let istmt = intr.stmt();
    if istmt.op != stmt.op {
        return None;
    }
    let mut bound: Vec<Option<frontend::ir::Access>> = vec![None; intr.operands.len()];
    let mut bind_one = |io: ArrayId, sw: &frontend::ir::Access| {
        if intr.operands[io.0].elem != kernel.array(sw.array).elem {
            return false;
        }
        match &bound[io.0] {
            Some(prev) => prev.array == sw.array && prev.indices == sw.indices,
            None => {
                bound[io.0] = Some(sw.clone());
                true
            }
        }
    };
    if !bind_one(istmt.target.array, &stmt.target) {
        return None;
    }
    if !same_shape(&istmt.rhs, &stmt.rhs, &mut bind_one) {
        return None;
    }
    bound.into_iter().collect()
}

fn same_shape(
    i: &Expr,
    s: &Expr,
    bind: &mut dyn FnMut(ArrayId, &frontend::ir::Access) -> bool,
) -> bool {
    if i.ty != s.ty {
        return false;
    }
    match (&i.kind, &s.kind) {
        (ExprKind::Read(a), ExprKind::Read(b)) => bind(a.array, b),
        (ExprKind::Literal(a), ExprKind::Literal(b)) => a == b,
        (ExprKind::Neg(a), ExprKind::Neg(b))
        | (ExprKind::Not(a), ExprKind::Not(b))
        | (ExprKind::Cast(a), ExprKind::Cast(b)) => same_shape(a, b, bind),
        (ExprKind::Binary(o, a1, b1), ExprKind::Binary(p, a2, b2)) => {
            o == p && same_shape(a1, a2, bind) && same_shape(b1, b2, bind)
        }
        (ExprKind::Compare(o, a1, b1), ExprKind::Compare(p, a2, b2)) => {
            o == p && same_shape(a1, a2, bind) && same_shape(b1, b2, bind)
        }
        (ExprKind::Logic(o, a1, b1), ExprKind::Logic(p, a2, b2)) => {
            o == p && same_shape(a1, a2, bind) && same_shape(b1, b2, bind)
        }
        (ExprKind::Select(c1, a1, b1), ExprKind::Select(c2, a2, b2)) => {
            same_shape(c1, c2, bind) && same_shape(a1, a2, bind) && same_shape(b1, b2, bind)
        }
        (ExprKind::Call(f, xs), ExprKind::Call(g, ys)) => {
            f == g && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_shape(x, y, bind))
        }
        _ => false,
    }
}
