//! Which kernels the vector path compiles, and what each statement and array is to it.
//!
//! A kernel qualifies when its statements share an outer *row* space (the first `k` loops of
//! every statement, the same extents in the same order) and, optionally, one inner *column*
//! loop, every loop running over `0..N` with step 1 and no guard. Every array is read and
//! written at exactly one index pattern, which gives its [`Kind`]: `[rows.., col]` a tile,
//! `[rows..]` one value per row, `[col]` one value per column, `[]` a scalar. A statement
//! with the column loop whose target has only the row indices is a reduction over the
//! columns (`+=`, `max=`, `min=`). Statements without loops compute kernel-level scalars;
//! those that depend only on parameters are folded (`fold`), the others refused. Rows never
//! depend on each other, so the rows can be processed in any grouping and on any core.

use super::fold::Folder;
use crate::npu::NpuError;
use frontend::ir::{
    AffExpr, ArrayId, AssignOp, Enclosing, Expr, ExprKind, Kernel, StmtContext, Var,
};
use npu_sim::program::ReduceOp;
use std::collections::BTreeMap;

/// How an array spans the rows and columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// One value per row and column, `A[rows.., col]`.
    Tile,
    /// One value per row, `A[rows..]`.
    Row,
    /// One value per column, `A[col]`: the same for every row.
    Col,
    /// A single value, `A[]`.
    Scalar,
}

/// A statement as the vector path executes it, for every row of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The statement's name (`S3`).
    pub name: String,
    /// The array written.
    pub target: ArrayId,
    /// The assignment operator.
    pub op: AssignOp,
    /// `Some` when the statement reduces its right-hand side over the columns into one value
    /// per row (the target combined with the reduction's result by `op`).
    pub reduce: Option<ReduceOp>,
    /// The right-hand side, every subexpression that depends only on parameters and literals
    /// folded into a literal.
    pub rhs: Expr,
}

/// A kernel the vector path compiles.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorKernel {
    /// The extents of the row loops, outermost first (rows are numbered row-major).
    pub rows: Vec<i64>,
    /// The extent of the column loop, if any statement has one.
    pub cols: Option<i64>,
    /// The kind of every array the row statements read or write.
    pub arrays: BTreeMap<ArrayId, Kind>,
    /// The row statements in program order (kernel-level scalars are folded into them).
    pub stmts: Vec<Statement>,
}

impl VectorKernel {
    /// The number of rows.
    pub fn row_count(&self) -> i64 {
        self.rows.iter().product()
    }
    /// Whether any statement reduces (and so needs the user's permission to reorder).
    pub fn reduces(&self) -> bool {
        self.stmts.iter().any(|s| s.reduce.is_some())
    }
}

/// The value of an affine expression over parameters only (`None` when it uses a loop
/// variable or a parameter without a value).
pub fn aff_value(e: &AffExpr, params: &BTreeMap<String, i64>) -> Option<i64> {
    let v = |e: &AffExpr| aff_value(e, params);
    Some(match e {
        AffExpr::Const(c) => *c,
        AffExpr::Var(Var::Param(p)) => *params.get(p)?,
        AffExpr::Var(Var::Loop(_)) => return None,
        AffExpr::Add(a, b) => v(a)?.checked_add(v(b)?)?,
        AffExpr::Sub(a, b) => v(a)?.checked_sub(v(b)?)?,
        AffExpr::Neg(a) => v(a)?.checked_neg()?,
        AffExpr::Mul(c, a) => c.checked_mul(v(a)?)?,
        AffExpr::FloorDiv(a, c) => v(a)?.div_euclid(*c),
        AffExpr::CeilDiv(a, c) => -(-v(a)?).div_euclid(*c),
        AffExpr::Mod(a, c) => v(a)?.rem_euclid(*c),
        AffExpr::Min(a, b) => v(a)?.min(v(b)?),
        AffExpr::Max(a, b) => v(a)?.max(v(b)?),
    })
}

/// A statement's loops, checked to be `0..N` with step 1 and no guard: their variables and
/// extents.
fn loops(ctx: &StmtContext, params: &BTreeMap<String, i64>) -> Result<Vec<(String, i64)>, String> {
    let mut out = Vec::new();
    for e in &ctx.enclosing {
        let l = match e {
            Enclosing::If(_) => {
                return Err("is guarded by a condition; the vector path runs whole rows".into())
            }
            Enclosing::Loop(l) => l,
        };
        let lower = aff_value(&l.lower, params);
        let upper = aff_value(&l.upper, params);
        match (lower, upper) {
            (Some(0), Some(n)) if l.step == 1 && !l.reverse && n > 0 => out.push((l.var.clone(), n)),
            (Some(0), Some(_)) if l.step == 1 && !l.reverse => {
                return Err(format!("loop `{}` runs no iteration", l.var))
            }
            _ => {
                return Err(format!(
                    "loop `{}` is not rectangular from 0 with step 1 (the vector path needs `for {} in 0..N`)",
                    l.var, l.var
                ))
            }
        }
    }
    Ok(out)
}

/// Finds the vector form of `kernel` at the sizes `params`, or the reason it has none, naming
/// the statement.
pub fn recognise(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
) -> Result<VectorKernel, NpuError> {
    let ctxs = kernel.statements();
    let refuse =
        |name: &str, why: String| NpuError::Unsupported(format!("statement {name}: {why}"));
    let nests = (ctxs.iter())
        .map(|c| loops(c, params).map_err(|why| refuse(&c.stmt.name, why)))
        .collect::<Result<Vec<_>, _>>()?;
    let deepest = (ctxs.iter().zip(&nests))
        .max_by_key(|(_, n)| n.len())
        .ok_or_else(|| NpuError::Unsupported("the kernel has no statements".into()))?;
    let depth = deepest.1.len();
    if depth == 0 {
        return Err(NpuError::Unsupported(
            "no statement has a loop: there are no rows to compute".into(),
        ));
    }
    // A column loop exists when some statement has two loops or more, or reduces its only loop.
    let reduces_last = |c: &StmtContext, n: usize| c.stmt.target.indices.len() + 1 == n;
    let has_col = depth >= 2
        || (ctxs.iter().zip(&nests)).any(|(c, n)| n.len() == depth && reduces_last(c, depth));
    let k = if has_col { depth - 1 } else { depth };
    let rows: Vec<i64> = deepest.1[..k].iter().map(|(_, e)| *e).collect();
    let cols = has_col.then(|| deepest.1[k].1);
    let mut shape = Shape {
        kernel,
        params,
        rows: &rows,
        cols,
        arrays: BTreeMap::new(),
    };
    let mut folder = Folder::new(kernel, params);
    let mut stmts = Vec::new();
    for (ctx, nest) in ctxs.iter().zip(&nests) {
        let s = ctx.stmt;
        let why = |w: String| refuse(&s.name, w);
        // (with no row loop, as in `s = sum(i) x[i]`, the kernel is one row)
        if nest.is_empty() && k > 0 {
            folder.scalar_statement(s).map_err(why)?;
            continue;
        }
        let extents: Vec<i64> = nest.iter().map(|(_, e)| *e).collect();
        let with_col = match nest.len() {
            n if n == k && extents == rows => false,
            n if has_col && n == k + 1 && extents[..k] == rows[..] && Some(extents[k]) == cols => {
                true
            }
            _ => {
                return Err(why(format!(
                    "its loops cover {extents:?}; the other statements' rows are {rows:?}{}",
                    cols.map_or(String::new(), |c| format!(" with {c} columns"))
                )))
            }
        };
        let vars: Vec<&str> = nest.iter().map(|(v, _)| v.as_str()).collect();
        let target = shape.access(&vars, &s.target).map_err(why)?;
        let reduce = match (with_col, target) {
            (true, Kind::Tile) | (false, Kind::Row) => None,
            (true, Kind::Row) => Some(reduction(s.op).map_err(why)?),
            (_, kind) => {
                return Err(why(format!(
                    "writes `{}`, which is {}; the vector path writes tiles and per-row values",
                    kernel.array(s.target.array).name,
                    kind_name(kind)
                )))
            }
        };
        // (a kernel never writes its inputs; the attention program's softmax does: its
        // scores, given by the cube, are scaled, and the new values live in UB)
        shape.reads(&vars, &s.rhs).map_err(why)?;
        if reduce.is_some() && reads_array(&s.rhs, s.target.array) {
            return Err(why(format!(
                "reads its own accumulator `{}` inside the reduction",
                kernel.array(s.target.array).name
            )));
        }
        let rhs = folder.fold(&s.rhs).map_err(why)?;
        stmts.push(Statement {
            name: s.name.clone(),
            target: s.target.array,
            op: s.op,
            reduce,
            rhs,
        });
    }
    if stmts.is_empty() {
        return Err(NpuError::Unsupported(
            "no statement computes rows (only kernel-level scalars)".into(),
        ));
    }
    // Every output is stored per group of rows.
    for (i, a) in kernel.arrays.iter().enumerate() {
        let kind = shape.arrays.get(&ArrayId(i));
        if a.role.is_output() && !matches!(kind, Some(Kind::Tile | Kind::Row)) {
            return Err(NpuError::Unsupported(format!(
                "output `{}` is {}; the vector path stores tiles and per-row values",
                a.name,
                kind.map_or("never written by a row statement", |k| kind_name(*k))
            )));
        }
    }
    // Folded scalars are literals now; the arrays left are the ones the rows read and write.
    let mut arrays = shape.arrays;
    arrays.retain(|a, kind| *kind != Kind::Scalar || !folder.is_folded(*a));
    Ok(VectorKernel {
        rows,
        cols,
        arrays,
        stmts,
    })
}

/// The vector reduction of an accumulating operator.
fn reduction(op: AssignOp) -> Result<ReduceOp, String> {
    match op {
        AssignOp::Add => Ok(ReduceOp::Sum),
        AssignOp::Max => Ok(ReduceOp::Max),
        AssignOp::Min => Ok(ReduceOp::Min),
        AssignOp::Mul => Err("reduces with `*=`; the vector unit has no product reduction".into()),
        other => Err(format!(
            "writes one value per row at every column with `{}` (only `+=`, `max=` and `min=` reduce over the columns)",
            other.symbol()
        )),
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Tile => "a tile",
        Kind::Row => "one value per row",
        Kind::Col => "one value per column",
        Kind::Scalar => "a scalar",
    }
}

/// Whether `e` reads `array`.
fn reads_array(e: &Expr, array: ArrayId) -> bool {
    let mut found = false;
    visit(e, &mut |e| {
        if let ExprKind::Read(a) = &e.kind {
            found |= a.array == array;
        }
    });
    found
}

/// Calls `f` on `e` and every subexpression.
pub fn visit(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    e.children().into_iter().for_each(|c| visit(c, f));
}

/// The kinds of the arrays seen so far, checked against their shapes.
struct Shape<'a> {
    kernel: &'a Kernel,
    params: &'a BTreeMap<String, i64>,
    rows: &'a [i64],
    cols: Option<i64>,
    arrays: BTreeMap<ArrayId, Kind>,
}

impl Shape<'_> {
    /// The kind of one access in a statement with loop variables `vars` (rows first, then
    /// the column if the statement has one), checked against the array's other accesses and
    /// its shape.
    fn access(&mut self, vars: &[&str], a: &frontend::ir::Access) -> Result<Kind, String> {
        let array = self.kernel.array(a.array);
        let k = self.rows.len();
        let positions: Option<Vec<usize>> = (a.indices.iter())
            .map(|i| match i {
                AffExpr::Var(Var::Loop(v)) => vars.iter().position(|w| w == v),
                _ => None,
            })
            .collect();
        let printed: Vec<String> = a.indices.iter().map(print_aff).collect();
        let kind = match positions.as_deref() {
            Some(p) if p.iter().copied().eq(0..k) => Kind::Row,
            Some(p) if vars.len() == k + 1 && p.iter().copied().eq(0..=k) => Kind::Tile,
            Some([c]) if vars.len() == k + 1 && *c == k => Kind::Col,
            Some([]) => Kind::Scalar,
            _ => {
                return Err(format!(
                    "`{}` is indexed [{}]: the vector path reads and writes rows in order with the column last and contiguous (no transposed, shifted, strided or partial access)",
                    array.name,
                    printed.join(", ")
                ))
            }
        };
        let want: Vec<i64> = match kind {
            Kind::Tile => self.rows.iter().copied().chain(self.cols).collect(),
            Kind::Row => self.rows.to_vec(),
            Kind::Col => self.cols.into_iter().collect(),
            Kind::Scalar => vec![],
        };
        let dims: Vec<Option<i64>> = array
            .dims
            .iter()
            .map(|d| aff_value(d, self.params))
            .collect();
        if dims != want.iter().map(|&w| Some(w)).collect::<Vec<_>>() {
            return Err(format!(
                "`{}` has extents {:?} but is used as {} of {want:?}; the vector path needs the loops to cover whole arrays",
                array.name,
                dims.iter().map(|d| d.unwrap_or(-1)).collect::<Vec<_>>(),
                kind_name(kind)
            ));
        }
        match self.arrays.insert(a.array, kind) {
            Some(before) if before != kind => Err(format!(
                "`{}` is used as {} here and as {} elsewhere",
                array.name,
                kind_name(kind),
                kind_name(before)
            )),
            _ => Ok(kind),
        }
    }

    /// Checks every read of `e` and refuses the values of loop variables.
    fn reads(&mut self, vars: &[&str], e: &Expr) -> Result<(), String> {
        let mut err = Ok(());
        visit(e, &mut |e| {
            if err.is_err() {
                return;
            }
            match &e.kind {
                ExprKind::Read(a) => err = self.access(vars, a).map(|_| ()),
                ExprKind::Index(i) if aff_value(i, self.params).is_none() => {
                    err = Err(format!(
                        "uses the value of a loop variable ({}) as a number; the vector unit has no index vectors",
                        print_aff(i)
                    ))
                }
                _ => {}
            }
        });
        err
    }
}

/// An affine expression as written.
fn print_aff(e: &AffExpr) -> String {
    match e {
        AffExpr::Const(c) => c.to_string(),
        AffExpr::Var(v) => v.name().to_string(),
        AffExpr::Add(a, b) => format!("{} + {}", print_aff(a), print_aff(b)),
        AffExpr::Sub(a, b) => format!("{} - {}", print_aff(a), print_aff(b)),
        AffExpr::Neg(a) => format!("-{}", print_aff(a)),
        AffExpr::Mul(c, a) => format!("{c}*{}", print_aff(a)),
        AffExpr::FloorDiv(a, c) => format!("floor({} / {c})", print_aff(a)),
        AffExpr::CeilDiv(a, c) => format!("ceil({} / {c})", print_aff(a)),
        AffExpr::Mod(a, c) => format!("{} % {c}", print_aff(a)),
        AffExpr::Min(a, b) => format!("min({}, {})", print_aff(a), print_aff(b)),
        AffExpr::Max(a, b) => format!("max({}, {})", print_aff(a), print_aff(b)),
    }
}
