//! What the NPU back end can compile today: a matrix product, found and proved by the
//! mapping layer, with an optional element-wise epilogue (`epilogue`).
//!
//! A kernel qualifies when its statements are an initialisation `C[...] = 0` and an update
//! `C[...] += f32(A[...]) * f32(B[...])` that matches the target's matrix intrinsic, with a
//! proved mapping that gives each intrinsic loop one software loop (rows `i1`, columns `i2`,
//! reduction `r1`) and leaves the others (batches) outside; every operand must be read
//! row-major (its column the tensor's last dimension) and every loop must start at 0. A third
//! statement may convert the (then temporary) accumulator into the output.

use super::epilogue::{self, Epilogue};
use super::NpuError;
use frontend::ir::{ArrayId, AssignOp, ElemType, ExprKind, Kernel};
use scheduler::mapping::intrinsic::{bind, Intrinsic};
use scheduler::mapping::physical::Mapping;
use scheduler::mapping::qexpr::QExpr;
use scheduler::mapping::software::{Sizes, Software};
use scheduler::mapping::verify::Options;
use scheduler::mapping::{enumerate, library, text};
use scheduler::target::Target;
use std::collections::BTreeMap;

/// How one operand's tensor is indexed by a call's batch, row and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operand {
    /// The tensor.
    pub tensor: ArrayId,
    /// Its name.
    pub name: String,
    /// Its shape.
    pub shape: Vec<i64>,
    /// For each tensor dimension: a batch loop (index into [`Product::batch`]), the operand's
    /// row, or its column.
    pub dims: Vec<Dim>,
    /// Its element type.
    pub elem: ElemType,
}

/// What indexes one tensor dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A batch loop.
    Batch(usize),
    /// The operand's row.
    Row,
    /// The operand's column (the last, contiguous dimension unless the operand is read
    /// transposed).
    Col,
}

/// A matrix product as the back end compiles it: `C[b, m, n] = sum(k) A[b, m, k] * B[b, k, n]`
/// up to how each tensor orders its dimensions (every operand read row-major), with what
/// becomes of its sums.
#[derive(Clone, Debug)]
pub struct Matmul {
    /// The product statement and its proved mapping.
    pub product: Product,
    /// The stored result, `m x n`: the accumulator, or the epilogue's output.
    pub c: Operand,
    /// What becomes of the f32 sums on their way out of L0C.
    pub epilogue: Epilogue,
}

/// Finds the matrix product in `kernel` and proves its mapping onto `target`'s matrix
/// intrinsic at the given sizes.
pub fn matmul(
    kernel: &Kernel,
    sizes: &BTreeMap<String, i64>,
    target: &Target,
) -> Result<Matmul, NpuError> {
    let stmts = kernel.statements();
    let unsupported = |why: String| Err(NpuError::Unsupported(why));
    if !(2..=3).contains(&stmts.len()) {
        return unsupported(format!(
            "{} statements; the NPU back end compiles a matrix product (an initialisation to 0 and one multiply-accumulate), optionally followed by an element-wise epilogue",
            stmts.len()
        ));
    }
    let p = product(kernel, (&stmts[0], &stmts[1]), sizes, target)?;
    for op in [&p.a, &p.b, &p.acc] {
        if op.dims.last() != Some(&Dim::Col) {
            return unsupported(format!(
                "`{}` is read transposed (its last dimension is not the operand's column)",
                op.name
            ));
        }
    }
    let (c, epilogue) = match stmts.get(2) {
        Some(ctx) => epilogue::recognise(kernel, ctx, &p.acc, sizes)?,
        None => (p.acc.clone(), Epilogue::None),
    };
    Ok(Matmul {
        product: p,
        c,
        epilogue,
    })
}

/// A product statement with its proved mapping: `acc[b, m, n] += A[b, m, k] * B[b, k, n]`
/// up to how each tensor orders its dimensions (an operand may be read transposed: its
/// `dims` say where its row and column are).
#[derive(Clone, Debug)]
pub struct Product {
    /// The batch loops (name, extent), outermost first.
    pub batch: Vec<(String, i64)>,
    /// Rows of the result.
    pub m: i64,
    /// Columns of the result.
    pub n: i64,
    /// The reduction's length.
    pub k: i64,
    /// The left operand, `m x k`.
    pub a: Operand,
    /// The right operand, `k x n`.
    pub b: Operand,
    /// The accumulator, `m x n`.
    pub acc: Operand,
    /// The proved mapping, in the text format.
    pub mapping: String,
}

/// The product of an initialisation `init` (`C[...] = 0`) and an update `update` (`C[...] +=
/// f32(A[...]) * f32(B[...])`), its mapping onto `target`'s matrix intrinsic proved at the
/// given sizes, one software loop per intrinsic loop.
pub fn product(
    kernel: &Kernel,
    (init, update): (&frontend::ir::StmtContext, &frontend::ir::StmtContext),
    sizes: &BTreeMap<String, i64>,
    target: &Target,
) -> Result<Product, NpuError> {
    let unsupported = |why: String| Err(NpuError::Unsupported(why));
    let zero = matches!(init.stmt.rhs.kind, ExprKind::Literal(v) if v == 0.0);
    if init.stmt.op != AssignOp::Assign || !zero || init.stmt.target != update.stmt.target {
        return unsupported(format!(
            "statement {} does not set {}'s element to 0 before {} accumulates into it",
            init.stmt.name,
            kernel.array(update.stmt.target.array).name,
            update.stmt.name
        ));
    }
    let (intr, binding) = mmad(kernel, update, target)?;
    let intr = &intr;
    let sw = Software::new(kernel, update, Sizes::Concrete(sizes.clone()));
    let groups = enumerate::mappings(&sw, intr, &binding)
        .into_iter()
        .find(|g| g.iter().all(|l| l.len() == 1))
        .ok_or_else(|| {
            NpuError::Unsupported(format!(
                "statement {} has no mapping with one loop per intrinsic loop",
                update.stmt.name
            ))
        })?;
    let mapping = Mapping::derive(&sw, intr, &binding, groups)
        .map_err(|e| NpuError::Unsupported(e.to_string()))?;
    prove(&sw, intr, &binding, &mapping, target)?;
    let layout = scheduler::mapping::physical::Layout::new(&sw, &mapping.groups)
        .map_err(|e| NpuError::Internal(e.to_string()))?;
    let extent = |x: usize| -> Result<i64, NpuError> {
        match &layout.extents[x] {
            QExpr::Const(e) => Ok(*e),
            other => Err(NpuError::Internal(format!(
                "extent {other} is not a constant"
            ))),
        }
    };
    let batch: Vec<(String, i64)> = (layout.outer.iter())
        .map(|&l| {
            let b = sw.rectangular(l).ok_or_else(|| {
                NpuError::Unsupported(format!(
                    "loop `{}` has bounds that depend on other loops",
                    sw.loops[l].var
                ))
            })?;
            match (b.lower, b.extent, b.step) {
                (QExpr::Const(0), QExpr::Const(e), 1) => Ok((sw.loops[l].var.clone(), e)),
                _ => Err(NpuError::Unsupported(format!(
                    "loop `{}` must run over 0..N with step 1",
                    sw.loops[l].var
                ))),
            }
        })
        .collect::<Result<_, _>>()?;
    let operand = |o: usize| operand(kernel, intr, &mapping, &batch, o, sizes);
    Ok(Product {
        m: extent(0)?,
        n: extent(1)?,
        k: extent(2)?,
        a: operand(0)?,
        b: operand(1)?,
        acc: operand(2)?,
        batch,
        mapping: text::print(&sw, intr, &mapping),
    })
}

/// The target's matrix intrinsic `update` matches, with the statement's accesses bound to
/// its operands (A, B, C).
pub(crate) fn mmad(
    kernel: &Kernel,
    update: &frontend::ir::StmtContext,
    target: &Target,
) -> Result<(Intrinsic, Vec<frontend::ir::Access>), NpuError> {
    let library = library::builtin(target).map_err(|e| NpuError::Internal(e.to_string()))?;
    (library.into_iter())
        .filter(|i| i.name == "mmad_f16")
        .find_map(|i| bind(&i, update.stmt, kernel).map(|b| (i, b)))
        .ok_or_else(|| {
            NpuError::Unsupported(format!(
                "statement {} matches no matrix intrinsic of `{}` (it must be `C[..] += f32(A[..]) * f32(B[..])` with f16 operands and an f32 result)",
                update.stmt.name, target.name
            ))
        })
}

/// Every condition of the mapping proved, or the refutation as the reason.
pub(crate) fn prove(
    sw: &Software,
    intr: &Intrinsic,
    binding: &[frontend::ir::Access],
    mapping: &Mapping,
    target: &Target,
) -> Result<(), NpuError> {
    let report = scheduler::mapping::check(
        sw,
        intr,
        binding,
        mapping,
        target,
        true,
        &Options::default(),
    )
    .map_err(|e| NpuError::Unsupported(e.to_string()))?;
    if report.proved() {
        return Ok(());
    }
    let why: Vec<String> = (report.verdicts.iter())
        .filter(|v| v.outcome != scheduler::mapping::verify::Outcome::Proved)
        .map(|v| match &v.outcome {
            scheduler::mapping::verify::Outcome::Refuted(c) => {
                format!("{}: {}", v.condition, c.text)
            }
            other => format!("{}: {other:?}", v.condition),
        })
        .collect();
    Err(NpuError::Unsupported(format!(
        "the mapping of statement {} onto `{}` is not proved: {}",
        sw.stmt.name,
        intr.name,
        why.join("; ")
    )))
}

/// How intrinsic operand `o`'s tensor is indexed.
fn operand(
    kernel: &Kernel,
    intr: &Intrinsic,
    mapping: &Mapping,
    batch: &[(String, i64)],
    o: usize,
    sizes: &BTreeMap<String, i64>,
) -> Result<Operand, NpuError> {
    let map = &mapping.operands[o];
    let array = kernel.array(map.tensor);
    let loops = &intr.operands[o].dims;
    let (row, col) = match loops.as_slice() {
        [Some(r), Some(c)] => (&intr.loops[*r].name, &intr.loops[*c].name),
        _ => {
            return Err(NpuError::Internal(format!(
                "operand {} is not a matrix",
                intr.operands[o].name
            )))
        }
    };
    let dims = (map.index.iter())
        .map(|e| match e {
            QExpr::Var(v) if v == row => Ok(Dim::Row),
            QExpr::Var(v) if v == col => Ok(Dim::Col),
            QExpr::Var(v) => batch
                .iter()
                .position(|(b, _)| b == v)
                .map(Dim::Batch)
                .ok_or_else(|| NpuError::Unsupported(format!("`{}` is indexed by `{v}`", array.name))),
            other => Err(NpuError::Unsupported(format!(
                "`{}` is indexed by `{other}`: the NPU back end reads whole rows and columns from 0",
                array.name
            ))),
        })
        .collect::<Result<Vec<Dim>, _>>()?;
    Ok(Operand {
        tensor: map.tensor,
        name: array.name.clone(),
        shape: extents(kernel, map.tensor, sizes)?,
        dims,
        elem: array.elem,
    })
}

/// The extents of `tensor` at the given sizes.
pub(super) fn extents(
    kernel: &Kernel,
    tensor: ArrayId,
    sizes: &BTreeMap<String, i64>,
) -> Result<Vec<i64>, NpuError> {
    let array = kernel.array(tensor);
    (array.dims.iter())
        .map(|e| {
            QExpr::from_aff(e, &|v| {
                sizes
                    .get(v.name())
                    .map_or(QExpr::var(v.name()), |&c| QExpr::Const(c))
            })
            // every size is given, so the extent folds to a constant
            .and_then(|q| match q {
                QExpr::Const(c) => Some(c),
                _ => None,
            })
            .ok_or_else(|| {
                NpuError::Internal(format!("an extent of `{}` has no value", array.name))
            })
        })
        .collect()
}
