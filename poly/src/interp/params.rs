//! Parameter values: from `-D` overrides, else inferred from the shapes of given inputs, else
//! the kernel's defaults; then checked against the constraints and the given shapes.

use super::affine::{AffFn, Binding};
use super::error::InterpError;
use frontend::ir::{Kernel, Var};
use std::collections::BTreeMap;
use std::fmt;

/// The most elements one array may have (2^31, i.e. 16 GiB of `f64`).
const MAX_ELEMENTS: u64 = 1 << 31;

/// The value of every parameter of a kernel, in declaration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamValues {
    names: Vec<String>,
    values: Vec<i64>,
}

impl ParamValues {
    /// Resolves the kernel's parameters. Each takes, in order of precedence, its value in
    /// `overrides` (`-D N=64`), a value implied by `shapes` (the shapes of the input arrays
    /// given, by name: an extent `P + c` or `a*P + c` of a parameter `P` not yet known is
    /// solved for `P`, repeatedly until nothing changes), or its default. Then every
    /// constraint must hold, every extent must be non-negative and every given shape must match
    /// exactly.
    pub fn resolve(
        kernel: &Kernel,
        overrides: &BTreeMap<String, i64>,
        shapes: &BTreeMap<String, Vec<u64>>,
    ) -> Result<ParamValues, InterpError> {
        let names: Vec<String> = kernel.params.iter().map(|p| p.name.clone()).collect();
        let mut known: Vec<Option<i64>> = vec![None; names.len()];
        for (name, &value) in overrides {
            let k =
                names
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| InterpError::UnknownParam {
                        name: name.clone(),
                        known: names.join(", "),
                    })?;
            known[k] = Some(value);
        }
        let given = given_shapes(kernel, shapes)?;
        infer_from_shapes(kernel, &names, &given, &mut known)?;
        let values = known
            .iter()
            .zip(&kernel.params)
            .map(|(v, p)| {
                v.or(p.default).ok_or_else(|| InterpError::MissingParam {
                    name: p.name.clone(),
                })
            })
            .collect::<Result<Vec<i64>, _>>()?;
        let params = ParamValues { names, values };
        params.check_constraints(kernel)?;
        let extents = array_extents(kernel, &params)?;
        for (array, shape) in given {
            for (dim, (&expected, &found)) in extents[array].iter().zip(shape).enumerate() {
                if expected as u64 != found {
                    return Err(InterpError::ShapeMismatch {
                        array: kernel.arrays[array].name.clone(),
                        dim,
                        expected: expected as i64,
                        found,
                    });
                }
            }
        }
        Ok(params)
    }

    /// The value of a parameter.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|k| self.values[k])
    }

    /// `(name, value)` of every parameter, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.values.iter().copied())
    }

    /// Binds parameters to their values (and nothing else).
    pub(crate) fn bind(&self, v: &Var) -> Option<Binding> {
        match v {
            Var::Param(name) => self.get(name).map(Binding::Value),
            Var::Loop(_) => None,
        }
    }

    fn check_constraints(&self, kernel: &Kernel) -> Result<(), InterpError> {
        for c in &kernel.param_constraints {
            let f = super::affine::CondFn::compile(c, &|v| self.bind(v))
                .map_err(|v| unbound("parameter constraints", &v))?;
            if !f.holds(&[]) {
                return Err(InterpError::ConstraintViolated {
                    constraint: c.to_string(),
                    values: self.to_string(),
                });
            }
        }
        Ok(())
    }
}

impl fmt::Display for ParamValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (name, value)) in self.iter().enumerate() {
            let sep = if k == 0 { "" } else { ", " };
            write!(f, "{sep}{name}={value}")?;
        }
        Ok(())
    }
}

/// The error for a name an affine expression uses but its context does not define.
pub(crate) fn unbound(context: &str, v: &Var) -> InterpError {
    InterpError::Unsupported {
        context: context.to_string(),
        reason: format!("`{}` is not defined here", v.name()),
    }
}

/// The given shapes by array index, after checking names and ranks.
fn given_shapes<'s>(
    kernel: &Kernel,
    shapes: &'s BTreeMap<String, Vec<u64>>,
) -> Result<Vec<(usize, &'s [u64])>, InterpError> {
    shapes
        .iter()
        .map(|(name, shape)| {
            let id = kernel
                .array_by_name(name)
                .ok_or_else(|| InterpError::UnknownArray { name: name.clone() })?;
            let expected = kernel.array(id).dims.len();
            if expected != shape.len() {
                return Err(InterpError::RankMismatch {
                    array: name.clone(),
                    expected,
                    found: shape.len(),
                });
            }
            Ok((id.0, shape.as_slice()))
        })
        .collect()
}

/// Solves extents that are linear in a single unknown parameter, until a fixpoint.
fn infer_from_shapes(
    kernel: &Kernel,
    names: &[String],
    given: &[(usize, &[u64])],
    known: &mut [Option<i64>],
) -> Result<(), InterpError> {
    loop {
        let mut progress = false;
        for &(array, shape) in given {
            for (dim, &found) in kernel.arrays[array].dims.iter().zip(shape) {
                let bind = |v: &Var| match v {
                    Var::Param(name) => {
                        let k = names.iter().position(|n| n == name)?;
                        Some(known[k].map_or(Binding::Slot(k), Binding::Value))
                    }
                    Var::Loop(_) => None,
                };
                let f = AffFn::compile(dim, &bind)
                    .map_err(|v| unbound(&format!("array `{}`", kernel.arrays[array].name), &v))?;
                if let AffFn::Linear(l) = f {
                    if let [(k, a)] = l.terms[..] {
                        let rest = (found as i64).wrapping_sub(l.constant);
                        if let Some(v) = rest.checked_div(a).filter(|v| v.wrapping_mul(a) == rest) {
                            known[k] = Some(v);
                            progress = true;
                        }
                    }
                }
            }
        }
        if !progress {
            return Ok(());
        }
    }
}

/// The extent of every dimension of every array, checked to be non-negative and not too large.
pub(crate) fn array_extents(
    kernel: &Kernel,
    params: &ParamValues,
) -> Result<Vec<Vec<usize>>, InterpError> {
    kernel
        .arrays
        .iter()
        .map(|a| {
            let mut elements: u64 = 1;
            a.dims
                .iter()
                .enumerate()
                .map(|(dim, e)| {
                    let f = AffFn::compile(e, &|v| params.bind(v))
                        .map_err(|v| unbound(&format!("array `{}`", a.name), &v))?;
                    let extent = f.eval(&[]);
                    let bad = |reason| InterpError::BadExtent {
                        array: a.name.clone(),
                        dim,
                        extent,
                        reason,
                    };
                    if extent < 0 {
                        return Err(bad("negative"));
                    }
                    elements = elements.saturating_mul(extent as u64);
                    if elements > MAX_ELEMENTS {
                        return Err(bad("too large (the array would exceed 2^31 elements)"));
                    }
                    Ok(extent as usize)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontend::ir::{AffExpr, Array, CmpOp, Cond, ElemType, Param, Role};
    use frontend::span::Span;

    fn p(name: &str) -> AffExpr {
        AffExpr::Var(Var::Param(name.into()))
    }

    /// `A: f32[N + 1, M]`, `B: f32[2*N]`, params `N = 8, M`, `where N >= 2`.
    fn kernel() -> Kernel {
        let array = |name: &str, dims| Array {
            name: name.into(),
            elem: ElemType::F32,
            dims,
            role: Role::In,
            span: Span::default(),
        };
        Kernel {
            name: "k".into(),
            params: vec![
                Param {
                    name: "N".into(),
                    default: Some(8),
                    span: Span::default(),
                },
                Param {
                    name: "M".into(),
                    default: None,
                    span: Span::default(),
                },
            ],
            param_constraints: vec![Cond::Cmp(p("N"), CmpOp::Ge, AffExpr::Const(2))],
            arrays: vec![
                array(
                    "A",
                    vec![
                        AffExpr::Add(Box::new(p("N")), Box::new(AffExpr::Const(1))),
                        p("M"),
                    ],
                ),
                array("B", vec![AffExpr::Mul(2, Box::new(p("N")))]),
            ],
            body: vec![],
        }
    }

    fn resolve(
        overrides: &[(&str, i64)],
        shapes: &[(&str, &[u64])],
    ) -> Result<String, InterpError> {
        let overrides = overrides.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let shapes = shapes
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_vec()))
            .collect();
        ParamValues::resolve(&kernel(), &overrides, &shapes).map(|p| p.to_string())
    }

    #[test]
    fn overrides_then_shapes_then_defaults() {
        assert_eq!(resolve(&[("M", 3)], &[]), Ok("N=8, M=3".into()));
        assert_eq!(resolve(&[], &[("A", &[5, 7])]), Ok("N=4, M=7".into()));
        assert_eq!(
            resolve(&[], &[("B", &[6]), ("A", &[4, 1])]),
            Ok("N=3, M=1".into())
        );
        assert_eq!(
            resolve(&[("N", 3), ("M", 1)], &[("A", &[4, 1])]),
            Ok("N=3, M=1".into())
        );
    }

    #[test]
    fn each_failure_is_reported() {
        assert_eq!(
            resolve(&[], &[]),
            Err(InterpError::MissingParam { name: "M".into() })
        );
        assert!(matches!(
            resolve(&[("K", 1)], &[]),
            Err(InterpError::UnknownParam { .. })
        ));
        assert!(matches!(
            resolve(&[("M", 1)], &[("Z", &[1])]),
            Err(InterpError::UnknownArray { .. })
        ));
        assert_eq!(
            resolve(&[], &[("A", &[5])]),
            Err(InterpError::RankMismatch {
                array: "A".into(),
                expected: 2,
                found: 1
            })
        );
        // B's odd extent cannot be 2*N: N keeps its default, and the shape is reported.
        assert_eq!(
            resolve(&[("M", 1)], &[("B", &[7])]),
            Err(InterpError::ShapeMismatch {
                array: "B".into(),
                dim: 0,
                expected: 16,
                found: 7
            })
        );
        assert_eq!(
            resolve(&[("N", 3)], &[("A", &[5, 7])]),
            Err(InterpError::ShapeMismatch {
                array: "A".into(),
                dim: 0,
                expected: 4,
                found: 5
            })
        );
        let violated = resolve(&[("N", 1), ("M", 1)], &[]).unwrap_err();
        assert_eq!(
            violated.to_string(),
            "parameter constraint `N >= 2` does not hold with N=1, M=1"
        );
        assert!(matches!(
            resolve(&[("M", -1)], &[]),
            Err(InterpError::BadExtent {
                dim: 1,
                extent: -1,
                ..
            })
        ));
        assert!(matches!(
            resolve(&[("M", 1 << 40)], &[]),
            Err(InterpError::BadExtent { dim: 1, .. })
        ));
    }
}
