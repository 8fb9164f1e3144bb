//! A kernel read at concrete sizes: array indices as linear forms of the loops, array
//! shapes and loop extents as numbers. Shared by the recognisers of kernels whose shape the
//! back end matches statement by statement (convolutions, window reductions).

use crate::npu::conv::Tensor;
use crate::npu::NpuError;
use frontend::ir::{Access, AffExpr, ArrayId, Kernel, StmtContext, Var};
use scheduler::mapping::qexpr::QExpr;
use scheduler::mapping::software::linear_coefficients;
use std::collections::BTreeMap;

/// An index as loop coefficients plus a constant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linear {
    /// The coefficient of each loop it mentions.
    pub coefs: BTreeMap<String, i64>,
    /// The constant, parameters replaced by their values.
    pub constant: i64,
}

impl Linear {
    /// The loop this index is, bare (coefficient 1, constant 0).
    pub fn bare(&self) -> Option<&str> {
        match (self.coefs.len(), self.constant) {
            (1, 0) => (self.coefs.iter())
                .find(|(_, &c)| c == 1)
                .map(|(l, _)| l.as_str()),
            _ => None,
        }
    }
}

/// A refusal with its reason.
pub fn refuse<T>(why: String) -> Result<T, NpuError> {
    Err(NpuError::Unsupported(why))
}

/// A kernel and the sizes it is read at.
pub struct Reader<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Its parameters' values.
    pub sizes: &'a BTreeMap<String, i64>,
}

impl Reader<'_> {
    /// `e` as a linear form of the loops, if it is one.
    pub fn linear(&self, e: &AffExpr) -> Option<Linear> {
        let coefs = linear_coefficients(e)?;
        let constant = QExpr::from_aff(e, &|v| match v {
            Var::Param(p) => QExpr::Const(self.sizes.get(p).copied().unwrap_or(0)),
            Var::Loop(_) => QExpr::Const(0),
        })?
        .eval(&|_| 0);
        Some(Linear { coefs, constant })
    }

    /// The indices of `a`, if each is linear.
    pub fn indices(&self, a: &Access) -> Option<Vec<Linear>> {
        a.indices.iter().map(|e| self.linear(e)).collect()
    }

    /// The extents of array `id`.
    pub fn shape(&self, id: ArrayId) -> Result<Vec<i64>, NpuError> {
        let array = self.kernel.array(id);
        (array.dims.iter())
            .map(|e| {
                QExpr::from_aff(e, &|v| {
                    QExpr::Const(self.sizes.get(v.name()).copied().unwrap_or(0))
                })
                .map(|q| q.eval(&|_| 0))
                .ok_or_else(|| {
                    NpuError::Internal(format!("an extent of `{}` has no value", array.name))
                })
            })
            .collect()
    }

    /// The name of array `id`.
    pub fn name(&self, id: ArrayId) -> &str {
        &self.kernel.array(id).name
    }

    /// Array `id` as a tensor of the program.
    pub fn tensor(&self, id: ArrayId) -> Result<Tensor, NpuError> {
        Ok(Tensor {
            id,
            name: self.name(id).to_string(),
            shape: self.shape(id)?,
        })
    }

    /// Every loop around `ctx` with its extent: `0..E` step 1, or a refusal.
    pub fn extents(&self, ctx: &StmtContext) -> Result<BTreeMap<String, i64>, NpuError> {
        let mut out = BTreeMap::new();
        for l in ctx.loops() {
            let lower = self.linear(&l.lower).filter(|x| x.coefs.is_empty());
            let upper = self.linear(&l.upper).filter(|x| x.coefs.is_empty());
            match (lower, upper) {
                (Some(lo), Some(hi)) if lo.constant == 0 && l.step == 1 && !l.reverse => {
                    out.insert(l.var.clone(), hi.constant);
                }
                _ => {
                    return refuse(format!(
                        "loop `{}` around statement {} must run over 0..N with step 1",
                        l.var, ctx.stmt.name
                    ))
                }
            }
        }
        if ctx.enclosing.len() != out.len() {
            return refuse(format!("statement {} is guarded", ctx.stmt.name));
        }
        Ok(out)
    }
}
