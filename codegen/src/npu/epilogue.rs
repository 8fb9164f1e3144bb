//! What a matrix product does with its f32 sums before they reach GM.
//!
//! The copy out of L0C (`dma ... nz2nd`, L0C -> UB on the vector pipe) converts f32 to f16 or
//! bf16 and can zero negatives on the way, for free. A kernel asks for it with a temporary
//! accumulator and one element-wise statement after the product:
//!
//! ```text
//! let acc: f32[M, N];
//! acc[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]);
//! C[i, j] = f16(acc[i, j]);              // or max(acc[i, j], 0.0), f16(max(acc[i, j], 0.0))
//! ```
//!
//! Any other element-wise statement the vector path compiles over the accumulator,
//! per-column vectors and scalars (a bias, a scale, ReLU after a bias) is computed by the
//! vector unit on each tile in UB, after a plain f32 copy out of L0C (`vector`). Either
//! way the accumulator never exists in GM.

mod vector;

pub use vector::VectorEpilogue;

use super::recognise::Operand;
use super::NpuError;
use frontend::ir::{
    Access, AffExpr, AssignOp, ElemType, ExprKind, Func, Kernel, Role, StmtContext, Var,
};
use scheduler::mapping::qexpr::QExpr;
use scheduler::mapping::software::{Sizes, Software};
use std::collections::BTreeMap;

/// The element-wise step between the accumulator and the stored result.
#[derive(Clone, Debug, PartialEq)]
pub enum Epilogue {
    /// The result is the f32 sums themselves.
    None,
    /// The sums rounded to a 16-bit float type (f16 or bf16), to nearest even.
    Cast(ElemType),
    /// `max(sum, 0)` in the result's type (f32, or rounded to f16 or bf16).
    Relu(ElemType),
    /// An element-wise statement computed by the vector unit on each tile in UB.
    Vector(Box<VectorEpilogue>),
}

impl Epilogue {
    /// Whether the L0C -> UB copy zeroes negatives.
    pub fn relu(&self) -> bool {
        matches!(self, Epilogue::Relu(_))
    }

    /// The statement the vector unit computes, if any.
    pub fn vector(&self) -> Option<&VectorEpilogue> {
        match self {
            Epilogue::Vector(v) => Some(v),
            _ => None,
        }
    }

    /// What the program's header says about it.
    pub fn describe(&self) -> String {
        match self {
            Epilogue::None => "C holds the f32 sums.".to_string(),
            Epilogue::Cast(t) => format!("C = {}(sum), converted on the way out of L0C.", t.name()),
            Epilogue::Relu(t) => format!(
                "C = {}(max(sum, 0)), by the L0C -> UB copy's ReLU.",
                t.name()
            ),
            Epilogue::Vector(v) => {
                let seconds: Vec<String> = (v.second_tiles().iter().chain(&v.row_vectors()))
                    .map(|&a| format!("`{}`", v.kernel.array(a).name))
                    .collect();
                format!(
                    "Statement {} computed by the vector unit on each tile in UB, the f32 sums copied out of L0C as they are{}.",
                    v.statement,
                    match seconds.is_empty() {
                        true => String::new(),
                        false => format!(
                            ", each span of {} loaded GM -> UB beside it (a ring of two slots)",
                            seconds.join(" and ")
                        ),
                    }
                )
            }
        }
    }
}

/// The epilogue statement `ctx` applied to the accumulator `acc` (the product's result
/// operand): the stored result's operand and the epilogue, or why it is not one the back end
/// fuses.
pub fn recognise(
    kernel: &Kernel,
    ctx: &StmtContext,
    acc: &Operand,
    sizes: &BTreeMap<String, i64>,
) -> Result<(Operand, Epilogue), NpuError> {
    let stmt = ctx.stmt;
    let refuse = |why: &str| {
        Err(NpuError::Unsupported(format!(
            "statement {} after the product {why}",
            stmt.name
        )))
    };
    let out = kernel.array(stmt.target.array);
    if kernel.array(acc.tensor).role != Role::Temp {
        return refuse(&format!(
            "reads `{}`, which is not a temporary (`let`)",
            acc.name
        ));
    }
    if stmt.op != AssignOp::Assign || out.role != Role::Out {
        return refuse(&format!("does not write `{}` as an output", out.name));
    }
    let shape = super::recognise::extents(kernel, stmt.target.array, sizes)?;
    if shape != acc.shape {
        return refuse(&format!(
            "writes `{}`, whose shape is not the accumulator's",
            out.name
        ));
    }
    let epilogue = match copy_form(kernel, ctx, acc, sizes) {
        Ok(e) => e,
        Err(not_copy) => match VectorEpilogue::recognise(kernel, ctx, acc, sizes) {
            Ok(v) => Epilogue::Vector(Box::new(v)),
            Err(not_vector) => {
                return refuse(&format!(
                    "{not_copy}, which the copy out of L0C computes, and the vector unit does not compute it on the product's tiles: {not_vector}"
                ))
            }
        },
    };
    Ok((
        Operand {
            tensor: stmt.target.array,
            name: out.name.clone(),
            shape,
            dims: acc.dims.clone(),
            elem: out.elem,
        },
        epilogue,
    ))
}

/// The epilogue of `ctx` when the copy out of L0C computes it (`C[..] = f16(acc[..])`,
/// `max(acc[..], 0.0)` or both, element by element), or why it is not one.
fn copy_form(
    kernel: &Kernel,
    ctx: &StmtContext,
    acc: &Operand,
    sizes: &BTreeMap<String, i64>,
) -> Result<Epilogue, String> {
    let stmt = ctx.stmt;
    let out = kernel.array(stmt.target.array);
    let Some((read, epilogue)) = shape(&stmt.rhs, out.elem) else {
        return Err("is not a conversion or a ReLU of the accumulator".into());
    };
    if read.array != acc.tensor || read.indices != stmt.target.indices {
        return Err(format!(
            "does not read `{}` at the element it writes",
            acc.name
        ));
    }
    let sw = Software::new(kernel, ctx, Sizes::Concrete(sizes.clone()));
    let whole = sw.guards.is_empty()
        && sw.loops.len() == read.indices.len()
        && (read.indices.iter().zip(&acc.shape)).all(|(e, &extent)| {
            let AffExpr::Var(Var::Loop(v)) = e else {
                return false;
            };
            sw.loop_index(v)
                .and_then(|l| sw.rectangular(l))
                .is_some_and(|b| {
                    b.lower == QExpr::Const(0) && b.step == 1 && b.extent == QExpr::Const(extent)
                })
        });
    if !whole {
        return Err(format!(
            "does not cover every element of `{}` once, in loops from 0 with step 1",
            acc.name
        ));
    }
    Ok(epilogue)
}

/// The accumulator read and the epilogue of an expression of type `ty`, if it has one of
/// the shapes the L0C -> UB copy computes.
fn shape(e: &frontend::ir::Expr, ty: ElemType) -> Option<(&Access, Epilogue)> {
    let narrow = matches!(ty, ElemType::F16 | ElemType::BF16);
    match &e.kind {
        ExprKind::Read(a) if ty == ElemType::F32 => Some((a, Epilogue::None)),
        ExprKind::Cast(x) if narrow => match &x.kind {
            ExprKind::Read(a) => Some((a, Epilogue::Cast(ty))),
            _ => relu_of(x).map(|a| (a, Epilogue::Relu(ty))),
        },
        _ if ty == ElemType::F32 || narrow => {
            let inner = relu_of(e)?;
            Some((inner, Epilogue::Relu(ty)))
        }
        _ => None,
    }
}

/// The accumulator read `x` of `max(x, 0)` or `max(0, x)`, where `x` is the read itself or
/// its conversion to the expression's 16-bit type (rounding keeps the sign, so the order of
/// the two does not matter).
fn relu_of(e: &frontend::ir::Expr) -> Option<&Access> {
    let ExprKind::Call(Func::Max, args) = &e.kind else {
        return None;
    };
    let zero = |x: &frontend::ir::Expr| matches!(x.kind, ExprKind::Literal(v) if v == 0.0);
    let x = match args.as_slice() {
        [x, z] | [z, x] if zero(z) => x,
        _ => return None,
    };
    match &x.kind {
        ExprKind::Read(a) => Some(a),
        ExprKind::Cast(inner) => match &inner.kind {
            ExprKind::Read(a) => Some(a),
            _ => None,
        },
        _ => None,
    }
}
