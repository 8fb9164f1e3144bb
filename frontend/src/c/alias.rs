//! Whether the arrays of a region may share memory.
//!
//! Arrays declared as such (file-scope, local) are distinct objects. An array parameter is
//! a pointer the caller chooses: two of them may overlap, and so may one of them and a
//! file-scope array the region also names. A pair of arrays of which the region writes one
//! is accepted when one of the two is declared `restrict`, or when every call of the function
//! in this file passes them distinct variables (`A`, `*A`, `&A[0]`, with casts) and these
//! are all its calls: the function is `static`, or the file is a whole program (it defines
//! `main`; PolyBench's kernels are not `static`). Distinct variables are taken to be
//! distinct objects. Otherwise the region is left unchanged.

use super::linemap::PpToken;
use super::lower::vars::Origin;
use super::syntax::{Expr, ExprKind, UnOp};
use super::unit::{calls_of, Function, Unit};
use crate::diagnostics::{Code, Construct, Diagnostic};
use crate::ir::Kernel;

/// An array of the region that could overlap another: a parameter or a global.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place<'k> {
    /// The function's parameter of that position.
    Parameter(usize),
    /// A file-scope array of that name.
    Global(&'k str),
}

/// Checks that no two arrays of `kernel` (lowered from a region of `function`, its arrays
/// declared at `origins`) may overlap where one is written.
pub fn check(
    toks: &[PpToken],
    unit: &Unit,
    function: &Function,
    kernel: &Kernel,
    origins: &[Origin],
) -> Result<(), Diagnostic> {
    let params = function.decl.params.as_deref().unwrap_or(&[]);
    let places: Vec<(usize, Place)> = (kernel.arrays.iter().enumerate())
        .filter(|(_, a)| !a.dims.is_empty())
        .filter_map(|(k, a)| match origins[k] {
            Origin::Parameter(p) => Some((k, Place::Parameter(p))),
            Origin::Global => Some((k, Place::Global(&a.name))),
            _ => None,
        })
        .collect();
    let mut calls = None;
    for (i, &(a, pa)) in places.iter().enumerate() {
        for &(b, pb) in &places[i + 1..] {
            let (x, y) = (&kernel.arrays[a], &kernel.arrays[b]);
            if !x.role.is_output() && !y.role.is_output() {
                continue;
            }
            let restrict = |p: Place| matches!(p, Place::Parameter(k) if params[k].ty.restrict);
            let (param, other) = match (pa, pb) {
                (Place::Global(_), Place::Global(_)) => continue,
                _ if restrict(pa) || restrict(pb) => continue,
                (Place::Parameter(k), o) => (k, o),
                (o, Place::Parameter(k)) => (k, o),
            };
            let whole_program = unit.functions.iter().any(|f| f.decl.name == "main");
            let calls = calls.get_or_insert_with(|| {
                if function.is_static || whole_program {
                    calls_of(toks, unit, &function.decl.name)
                } else {
                    Err(None)
                }
            });
            let distinct = match calls {
                Ok(calls) => calls.iter().all(|args| {
                    let base = |k: usize| args.get(k).and_then(base_variable);
                    match other {
                        Place::Parameter(o) => {
                            matches!((base(param), base(o)), (Some(p), Some(q)) if p != q)
                        }
                        Place::Global(g) => base(param).is_some_and(|p| p != g),
                    }
                }),
                Err(_) => false,
            };
            if !distinct {
                let (pname, oname) = (
                    &params[param].name,
                    match other {
                        Place::Parameter(o) => params[o].name.as_str(),
                        Place::Global(g) => g,
                    },
                );
                let why = if function.is_static || whole_program {
                    "a call of the function may pass them overlapping arrays"
                } else {
                    "the function is not `static` and the file has no `main`: callers elsewhere may pass overlapping arrays"
                };
                return Err(Diagnostic::new(
                    Code::Outside(Construct::Aliasing),
                    format!("arrays `{pname}` and `{oname}` may share memory: {why}"),
                    params[param].name_span,
                    format!("may overlap `{oname}`"),
                )
                .with_note("declare the parameters `restrict`, or pass the function distinct arrays in every call (from this file: make it `static`, or give the file its `main`)"));
            }
        }
    }
    Ok(())
}

/// The variable an array argument designates (`A`, `*A`, `&A[0]`, `(T)A`), if it is one.
fn base_variable(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Ident(n) => Some(n),
        ExprKind::Cast(_, x) | ExprKind::Unary(UnOp::Deref, x) => base_variable(x),
        ExprKind::Unary(UnOp::AddrOf, x) => match &x.kind {
            ExprKind::Index(a, i) if matches!(i.kind, ExprKind::Int(v) if v.value == 0) => {
                base_variable(a)
            }
            _ => None,
        },
        _ => None,
    }
}
