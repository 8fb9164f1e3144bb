//! Type checking of value expressions (statement right-hand sides) and their translation
//! to [`ir::Expr`](crate::ir::Expr).

use super::affine::{affine, to_aff};
use super::scope::{Resolved, Scope};
use crate::ast::{ArithOp, Expr, ExprKind, Ident};
use crate::diagnostics::{AffineContext, Code, Diagnostic};
use crate::ir::{self, Access, AffExpr, BinOp, ElemType, ExprKind as K, Func, Type, Var};
use crate::printer::print_expr;
use crate::span::Span;

type CResult<T> = Result<T, Diagnostic>;

const FUNCS: [Func; 9] = [
    Func::Exp,
    Func::Log,
    Func::Sqrt,
    Func::Abs,
    Func::Tanh,
    Func::Max,
    Func::Min,
    Func::Pow,
    Func::Floor,
];

/// Whether `f` is only defined on floating-point types.
fn float_only(f: Func) -> bool {
    !matches!(f, Func::Abs | Func::Max | Func::Min)
}

fn type_name(t: Type) -> String {
    match t {
        Type::Elem(e) => e.name().to_string(),
        Type::Bool => "bool".to_string(),
    }
}

/// Checks value expressions in one scope.
pub struct ValueChecker<'s, 'k> {
    /// The names visible.
    pub scope: &'s Scope<'k>,
}

impl ValueChecker<'_, '_> {
    /// The type `e` has by itself, or `None` if it adopts the context's type (literals, index
    /// variables, and expressions made only of them).
    pub fn infer(&self, e: &Expr) -> Option<Type> {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) => None,
            ExprKind::Name(n) => match self.scope.resolve(n) {
                Resolved::Array(id) => Some(Type::Elem(self.scope.array(id).elem)),
                _ => None,
            },
            ExprKind::Index(a, _) => match self.scope.resolve(&a.name) {
                Resolved::Array(id) => Some(Type::Elem(self.scope.array(id).elem)),
                _ => None,
            },
            ExprKind::Call(f, args) => match cast_target(&f.name) {
                Some(t) => Some(Type::Elem(t)),
                None => args.iter().find_map(|a| self.infer(a)),
            },
            ExprKind::Neg(x) | ExprKind::Reduce(_, _, x) => self.infer(x),
            ExprKind::Arith(_, a, b) | ExprKind::Select(_, a, b) => {
                self.infer(a).or_else(|| self.infer(b))
            }
            ExprKind::Compare(..) | ExprKind::Logic(..) | ExprKind::Not(_) => Some(Type::Bool),
        }
    }

    /// Checks `e` where a value of type `want` is needed (`None`: any type), and translates it.
    pub fn check(&self, e: &Expr, want: Option<Type>) -> CResult<ir::Expr> {
        let expr = self.check_inner(e, want)?;
        if let Some(w) = want {
            if expr.ty != w {
                return Err(mismatch(e, w, expr.ty));
            }
        }
        Ok(expr)
    }

    fn check_inner(&self, e: &Expr, want: Option<Type>) -> CResult<ir::Expr> {
        if let Some(value) = self.index_value(e, want) {
            return value;
        }
        match &e.kind {
            ExprKind::Int(n) => literal(*n as f64, true, e, want),
            ExprKind::Float(x) => literal(*x, false, e, want),
            ExprKind::Neg(x) => match x.kind {
                ExprKind::Float(v) => literal(-v, false, e, want),
                _ => {
                    let ty = self.numeric_type(e, &[x], want)?;
                    let inner = self.check(x, Some(ty))?;
                    Ok(ir::Expr {
                        kind: K::Neg(Box::new(inner)),
                        ty,
                    })
                }
            },
            ExprKind::Name(n) => match self.scope.resolve(n) {
                Resolved::Loop | Resolved::Param => {
                    let ty = want.unwrap_or(Type::Elem(ElemType::I32));
                    if ty == Type::Bool {
                        return Err(not_a_condition(e, "an integer"));
                    }
                    let var = if self.scope.resolve(n) == Resolved::Loop {
                        Var::Loop(n.clone())
                    } else {
                        Var::Param(n.clone())
                    };
                    Ok(ir::Expr {
                        kind: K::Index(AffExpr::Var(var)),
                        ty,
                    })
                }
                Resolved::Array(_) => self.read(
                    &Ident {
                        name: n.clone(),
                        span: e.span,
                    },
                    &[],
                    e.span,
                ),
                Resolved::Unknown => Err(Diagnostic::new(
                    Code::UnknownName,
                    format!("unknown name `{n}`"),
                    e.span,
                    "not a parameter, array or loop variable",
                )),
            },
            ExprKind::Index(a, idx) => self.read(a, idx, e.span),
            ExprKind::Call(f, args) => self.call(f, args, e, want),
            ExprKind::Arith(ArithOp::Mod, ..) => Err(Diagnostic::new(
                Code::AffineOnlyOperator,
                "`%` is only allowed in affine expressions (indices, bounds, guards)",
                e.span,
                "remainder of a value",
            )),
            ExprKind::Arith(op, a, b) => {
                let ty = self.numeric_type(e, &[a, b], want)?;
                let op = match op {
                    ArithOp::Add => BinOp::Add,
                    ArithOp::Sub => BinOp::Sub,
                    ArithOp::Mul => BinOp::Mul,
                    _ => BinOp::Div,
                };
                let (a, b) = (self.check(a, Some(ty))?, self.check(b, Some(ty))?);
                Ok(ir::Expr {
                    kind: K::Binary(op, Box::new(a), Box::new(b)),
                    ty,
                })
            }
            ExprKind::Compare(op, a, b) => {
                let ty = self.numeric_type(e, &[a, b], None)?;
                let (a, b) = (self.check(a, Some(ty))?, self.check(b, Some(ty))?);
                Ok(ir::Expr {
                    kind: K::Compare(*op, Box::new(a), Box::new(b)),
                    ty: Type::Bool,
                })
            }
            ExprKind::Logic(op, a, b) => {
                let a = self.check(a, Some(Type::Bool))?;
                let b = self.check(b, Some(Type::Bool))?;
                Ok(ir::Expr {
                    kind: K::Logic(*op, Box::new(a), Box::new(b)),
                    ty: Type::Bool,
                })
            }
            ExprKind::Not(x) => Ok(ir::Expr {
                kind: K::Not(Box::new(self.check(x, Some(Type::Bool))?)),
                ty: Type::Bool,
            }),
            ExprKind::Select(c, a, b) => {
                let c = self.check(c, Some(Type::Bool))?;
                let ty = self.numeric_type(e, &[a, b], want)?;
                let (a, b) = (self.check(a, Some(ty))?, self.check(b, Some(ty))?);
                Ok(ir::Expr {
                    kind: K::Select(Box::new(c), Box::new(a), Box::new(b)),
                    ty,
                })
            }
            // Statements reject nested reductions before typing; kept total for safety.
            ExprKind::Reduce(..) => Err(Diagnostic::new(
                Code::ReductionNotWhole,
                "a reduction must be the whole right-hand side",
                e.span,
                "nested inside an expression",
            )),
        }
    }

    /// An arithmetic expression on index values only (`i + 2 * j`, `N - 1`) is computed
    /// exactly as an affine integer, then converted to the needed type once.
    fn index_value(&self, e: &Expr, want: Option<Type>) -> Option<CResult<ir::Expr>> {
        if !matches!(e.kind, ExprKind::Arith(..) | ExprKind::Neg(_)) || self.infer(e).is_some() {
            return None;
        }
        let aff = to_aff(e, self.scope, false).ok()?;
        Some(match (aff, want) {
            (AffExpr::Const(c), _) => literal(c as f64, true, e, want),
            (_, Some(Type::Bool)) => Err(not_a_condition(e, "an integer")),
            (aff, _) => Ok(ir::Expr {
                kind: K::Index(aff),
                ty: want.unwrap_or(Type::Elem(ElemType::I32)),
            }),
        })
    }

    /// The common numeric type of `operands` of `e`: the first one they have by themselves,
    /// else `want`, else `i32`. Two operands with different types are an error.
    fn numeric_type(&self, e: &Expr, operands: &[&Expr], want: Option<Type>) -> CResult<Type> {
        let typed: Vec<(&Expr, Type)> = operands
            .iter()
            .filter_map(|o| self.infer(o).map(|t| (*o, t)))
            .collect();
        if let [(a, ta), (b, tb), ..] = typed.as_slice() {
            if ta != tb {
                return Err(Diagnostic::new(
                    Code::TypeMismatch,
                    format!(
                        "operands of `{}` have different types {} and {}",
                        print_expr(e),
                        type_name(*ta),
                        type_name(*tb)
                    ),
                    b.span,
                    format!("this is {}", type_name(*tb)),
                )
                .with_secondary(a.span, format!("this is {}", type_name(*ta)))
                .with_note("there are no implicit conversions; write a cast such as `f32(x)`"));
            }
        }
        let ty = typed
            .first()
            .map(|(_, t)| *t)
            .or(want.filter(|w| *w != Type::Bool))
            .unwrap_or(Type::Elem(ElemType::I32));
        if ty == Type::Bool {
            return Err(Diagnostic::new(
                Code::BoolNumber,
                format!("`{}` needs numbers, found conditions", print_expr(e)),
                e.span,
                "operands are bool",
            ));
        }
        Ok(ty)
    }

    fn read(&self, a: &Ident, idx: &[Expr], span: Span) -> CResult<ir::Expr> {
        let id = match self.scope.resolve(&a.name) {
            Resolved::Array(id) => id,
            Resolved::Unknown => {
                return Err(Diagnostic::new(
                    Code::UnknownName,
                    format!("unknown array `{}`", a.name),
                    a.span,
                    "not declared",
                ))
            }
            _ => {
                return Err(Diagnostic::new(
                    Code::NotAnArray,
                    format!("`{}` is not an array and cannot be indexed", a.name),
                    a.span,
                    "a loop variable or parameter",
                ))
            }
        };
        let array = self.scope.array(id);
        Ok(ir::Expr {
            kind: K::Read(access(self.scope, id, a, idx, span)?),
            ty: Type::Elem(array.elem),
        })
    }

    fn call(&self, f: &Ident, args: &[Expr], e: &Expr, want: Option<Type>) -> CResult<ir::Expr> {
        let arity = |n: usize| -> CResult<()> {
            if args.len() == n {
                Ok(())
            } else {
                Err(Diagnostic::new(
                    Code::Arity,
                    format!(
                        "`{}` takes {n} argument{}, found {}",
                        f.name,
                        if n == 1 { "" } else { "s" },
                        args.len()
                    ),
                    e.span,
                    "wrong number of arguments",
                ))
            }
        };
        if let Some(target) = cast_target(&f.name) {
            arity(1)?;
            let ty = Type::Elem(target);
            return match self.infer(&args[0]) {
                None => self.check(&args[0], Some(ty)),
                Some(Type::Bool) => Err(Diagnostic::new(
                    Code::BoolNumber,
                    format!("cannot convert a condition to {target}"),
                    args[0].span,
                    "this is bool",
                )),
                Some(inner) if inner == ty => self.check(&args[0], Some(ty)),
                Some(inner) => Ok(ir::Expr {
                    kind: K::Cast(Box::new(self.check(&args[0], Some(inner))?)),
                    ty,
                }),
            };
        }
        // `floor` of a float value is a value function; of an integer, an affine operator.
        let float_floor = f.name == "floor"
            && matches!(args, [x] if matches!(self.infer(x), Some(Type::Elem(t)) if t.is_float()));
        if matches!(f.name.as_str(), "floor" | "ceil") && !float_floor {
            return Err(Diagnostic::new(
                Code::AffineOnlyOperator,
                format!(
                    "`{}` is only allowed in affine expressions (indices, bounds, guards)",
                    f.name
                ),
                f.span,
                "not a value function",
            ));
        }
        let Some(func) = FUNCS.into_iter().find(|g| g.name() == f.name) else {
            return Err(Diagnostic::new(
                Code::UnknownFunction,
                format!("unknown function `{}`", f.name),
                f.span,
                "not a built-in function or type",
            )
            .with_note(
                "functions: exp log sqrt abs tanh max min pow floor; casts: f16 bf16 f32 f64 i8 i32",
            ));
        };
        arity(func.arity())?;
        let operands: Vec<&Expr> = args.iter().collect();
        let default = want.or(float_only(func).then_some(Type::Elem(ElemType::F64)));
        let ty = self.numeric_type(e, &operands, default)?;
        if let Type::Elem(t) = ty {
            if float_only(func) && !t.is_float() {
                return Err(Diagnostic::new(
                    Code::FunctionType,
                    format!("`{}` is not defined for {t}", func.name()),
                    e.span,
                    format!("argument is {t}"),
                )
                .with_note("convert the argument to a float type first, e.g. `f32(x)`"));
            }
        }
        let args = args
            .iter()
            .map(|a| self.check(a, Some(ty)))
            .collect::<CResult<Vec<_>>>()?;
        Ok(ir::Expr {
            kind: K::Call(func, args),
            ty,
        })
    }
}

/// Checks an access `a[idx]`: `a` names an array (resolved to `id`), the index count is its
/// rank, every index is affine.
pub fn access(
    scope: &Scope,
    id: ir::ArrayId,
    a: &Ident,
    idx: &[Expr],
    span: Span,
) -> CResult<Access> {
    let array = scope.array(id);
    if idx.len() != array.dims.len() {
        return Err(Diagnostic::new(
            Code::Rank,
            format!(
                "array `{}` has {} dimension{} but {} ind{} given",
                a.name,
                array.dims.len(),
                if array.dims.len() == 1 { "" } else { "s" },
                idx.len(),
                if idx.len() == 1 { "ex is" } else { "ices are" }
            ),
            span,
            "wrong number of indices",
        )
        .with_secondary(array.span, "declared here"));
    }
    let text = if idx.is_empty() {
        a.name.clone()
    } else {
        format!(
            "{}[{}]",
            a.name,
            idx.iter().map(print_expr).collect::<Vec<_>>().join(", ")
        )
    };
    let indices = idx
        .iter()
        .map(|i| affine(i, scope, AffineContext::Index, &format!("index {text}")))
        .collect::<CResult<Vec<_>>>()?;
    Ok(Access {
        array: id,
        indices,
        span,
    })
}

/// The element type a cast `name(x)` converts to, if `name` is a type.
fn cast_target(name: &str) -> Option<ElemType> {
    ElemType::ALL.into_iter().find(|t| t.name() == name)
}

fn mismatch(e: &Expr, want: Type, found: Type) -> Diagnostic {
    if want == Type::Bool || found == Type::Bool {
        return Diagnostic::new(
            Code::BoolNumber,
            format!("expected {}, found {}", type_name(want), type_name(found)),
            e.span,
            format!("this is {}", type_name(found)),
        );
    }
    let d = Diagnostic::new(
        Code::TypeMismatch,
        format!(
            "type mismatch: expected {}, found {}",
            type_name(want),
            type_name(found)
        ),
        e.span,
        format!("this is {}", type_name(found)),
    );
    d.with_note(format!(
        "there are no implicit conversions; write `{}(...)` to convert",
        type_name(want)
    ))
}

fn not_a_condition(e: &Expr, found: &str) -> Diagnostic {
    Diagnostic::new(
        Code::BoolNumber,
        format!("expected a condition, found {found}"),
        e.span,
        "not a bool",
    )
}

/// A literal of the needed type, rounded to it; errors if it does not fit.
fn literal(v: f64, integral: bool, e: &Expr, want: Option<Type>) -> CResult<ir::Expr> {
    let default = if integral {
        ElemType::I32
    } else {
        ElemType::F64
    };
    let t = match want {
        None => default,
        Some(Type::Elem(t)) => t,
        Some(Type::Bool) => return Err(not_a_condition(e, "a number")),
    };
    let text = print_expr(e);
    let out_of_range = || {
        Diagnostic::new(
            Code::LiteralType,
            format!("literal `{text}` does not fit in {t}"),
            e.span,
            format!("out of range for {t}"),
        )
    };
    let value = match t {
        ElemType::I8 | ElemType::I32 => {
            if !integral {
                return Err(Diagnostic::new(
                    Code::LiteralType,
                    format!("float literal `{text}` where {t} is needed"),
                    e.span,
                    format!("expected {t}"),
                ));
            }
            let (lo, hi) = if t == ElemType::I8 {
                (i8::MIN as f64, i8::MAX as f64)
            } else {
                (i32::MIN as f64, i32::MAX as f64)
            };
            if v < lo || v > hi {
                return Err(out_of_range());
            }
            v
        }
        ElemType::F16 => half::f16::from_f64(v).to_f64(),
        ElemType::BF16 => half::bf16::from_f64(v).to_f64(),
        ElemType::F32 => v as f32 as f64,
        ElemType::F64 => v,
    };
    if !value.is_finite() {
        return Err(out_of_range());
    }
    Ok(ir::Expr {
        kind: K::Literal(value),
        ty: Type::Elem(t),
    })
}
