//! C expressions as typed IR expressions, with C's conversions made explicit.
//!
//! Integer expressions over iterators, parameters and constants stay affine as long as they
//! can ([`Val::Aff`]): they are computed exactly and converted once where a value of another
//! type is needed, as C computes them when nothing overflows. Everything else follows C's
//! rules: integer promotions, the usual arithmetic conversions, conversion on assignment,
//! each a `Cast` node where C converts.

use super::ctype::CTy;
use super::vars::Entity;
use super::{LResult, Lowerer};
use crate::c::syntax::{BinOp, CType, Expr, ExprKind, FloatKind, IntLit, UnOp};
use crate::diagnostics::{AffineContext, Code, Construct, Diagnostic};
use crate::ir::{
    self, Access, AffExpr, BinOp as IrBinOp, CmpOp, ElemType, ExprKind as K, Func, LogicOp, Type,
    Var,
};
use crate::span::Span;

/// A lowered C value.
#[derive(Clone, Debug)]
pub enum Val {
    /// An affine integer expression of the given C type.
    Aff(AffExpr, CTy),
    /// An IR expression of the given C type (never `long`).
    Ir(ir::Expr, CTy),
}

impl Val {
    /// The value's C type.
    pub fn ty(&self) -> CTy {
        match self {
            Val::Aff(_, t) | Val::Ir(_, t) => *t,
        }
    }
}

/// A value expression of an IR type.
fn typed(kind: K, elem: ElemType) -> ir::Expr {
    ir::Expr {
        kind,
        ty: Type::Elem(elem),
    }
}

/// The literal `c` converted to `elem` as C converts an integer.
fn int_literal_of(c: i64, elem: ElemType) -> ir::Expr {
    let v = match elem {
        ElemType::I32 => f64::from(c as i32),
        ElemType::I8 => f64::from(c as i8),
        ElemType::F32 | ElemType::F16 | ElemType::BF16 => f64::from(c as f32),
        ElemType::F64 => c as f64,
    };
    typed(K::Literal(v), elem)
}

/// `value` converted to `elem` as C converts on assignment or in a cast.
pub fn to_ir(value: Val, elem: ElemType) -> ir::Expr {
    match value {
        Val::Aff(AffExpr::Const(c), _) => int_literal_of(c, elem),
        Val::Aff(a, _) => typed(K::Index(a), elem),
        Val::Ir(e, CTy::Bool) => typed(
            K::Select(
                Box::new(e),
                Box::new(int_literal_of(1, elem)),
                Box::new(int_literal_of(0, elem)),
            ),
            elem,
        ),
        Val::Ir(e, _) if e.ty == Type::Elem(elem) => e,
        Val::Ir(e, _) => typed(K::Cast(Box::new(e)), elem),
    }
}

/// The IR type a comparison of values of type `t` is made in (`long` affine values are
/// compared as doubles, exact below 2^53).
fn comparison_elem(t: CTy) -> ElemType {
    t.elem().unwrap_or(ElemType::F64)
}

/// `value` as a condition: C's "compares unequal to 0".
pub fn to_bool(value: Val) -> ir::Expr {
    match value {
        Val::Ir(e, CTy::Bool) => e,
        v => {
            let elem = comparison_elem(v.ty().promoted());
            let x = to_ir(v, elem);
            ir::Expr {
                kind: K::Compare(CmpOp::Ne, Box::new(x), Box::new(int_literal_of(0, elem))),
                ty: Type::Bool,
            }
        }
    }
}

/// A diagnostic for a construct outside the subset.
pub fn outside(construct: Construct, message: String, span: Span, label: &str) -> Diagnostic {
    Diagnostic::new(Code::Outside(construct), message, span, label.to_owned())
}

/// The math functions of the subset: name, function, type of arguments and result.
const MATH: [(&str, Func, CTy); 19] = [
    ("sqrt", Func::Sqrt, CTy::Double),
    ("sqrtf", Func::Sqrt, CTy::Float),
    ("exp", Func::Exp, CTy::Double),
    ("expf", Func::Exp, CTy::Float),
    ("log", Func::Log, CTy::Double),
    ("logf", Func::Log, CTy::Float),
    ("tanh", Func::Tanh, CTy::Double),
    ("tanhf", Func::Tanh, CTy::Float),
    ("pow", Func::Pow, CTy::Double),
    ("powf", Func::Pow, CTy::Float),
    ("fabs", Func::Abs, CTy::Double),
    ("fabsf", Func::Abs, CTy::Float),
    ("floor", Func::Floor, CTy::Double),
    ("floorf", Func::Floor, CTy::Float),
    ("fmax", Func::Max, CTy::Double),
    ("fmaxf", Func::Max, CTy::Float),
    ("fmin", Func::Min, CTy::Double),
    ("fminf", Func::Min, CTy::Float),
    ("abs", Func::Abs, CTy::Int),
];

impl Lowerer<'_> {
    /// The value of `e`.
    pub fn value(&mut self, e: &Expr) -> LResult<Val> {
        let span = e.span;
        match &e.kind {
            ExprKind::Ident(n) => match self.vars.resolve(n, span)? {
                Entity::Iterator(t) => Ok(Val::Aff(AffExpr::Var(Var::Loop(n.clone())), t)),
                Entity::Param(t) => Ok(Val::Aff(AffExpr::Var(Var::Param(n.clone())), t)),
                Entity::Array(id) => {
                    let a = &self.vars.arrays[id.0];
                    if !a.dims.is_empty() {
                        return Err(outside(
                            Construct::Pointer,
                            format!("array `{n}` is used as a value (a pointer)"),
                            span,
                            "an array without all its indices",
                        ));
                    }
                    let elem = a.elem;
                    let read = Access {
                        array: id,
                        indices: Vec::new(),
                        span,
                    };
                    Ok(Val::Ir(typed(K::Read(read), elem), CTy::from_elem(elem)))
                }
            },
            ExprKind::Int(v) => int_literal(v, span),
            ExprKind::Char(c) => Ok(Val::Aff(AffExpr::Const(*c), CTy::Int)),
            ExprKind::Float(f) => match f.kind {
                FloatKind::Float => Ok(Val::Ir(
                    typed(K::Literal(f.value), ElemType::F32),
                    CTy::Float,
                )),
                FloatKind::Double => Ok(Val::Ir(
                    typed(K::Literal(f.value), ElemType::F64),
                    CTy::Double,
                )),
                FloatKind::LongDouble => Err(outside(
                    Construct::Type,
                    "`long double` literals are outside the C subset".into(),
                    span,
                    "long double",
                )),
            },
            ExprKind::Str => Err(outside(
                Construct::Operator,
                "strings are outside the C subset".into(),
                span,
                "a string",
            )),
            ExprKind::Unary(op, x) => self.unary(*op, x, span),
            ExprKind::IncDec(..) | ExprKind::Assign(..) => Err(outside(
                Construct::SideEffect,
                "an assignment inside an expression is outside the C subset".into(),
                span,
                "side effect",
            )
            .with_note("write each assignment as a statement of its own")),
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, span),
            ExprKind::Cond(c, a, b) => {
                let c = to_bool(self.value(c)?);
                let (a, b) = (self.value(a)?, self.value(b)?);
                let t = CTy::usual(a.ty(), b.ty());
                let elem = self.arithmetic_elem(t, span)?;
                Ok(Val::Ir(
                    typed(
                        K::Select(
                            Box::new(c),
                            Box::new(to_ir(a, elem)),
                            Box::new(to_ir(b, elem)),
                        ),
                        elem,
                    ),
                    t,
                ))
            }
            ExprKind::Cast(t, x) => self.cast(t, x, span),
            ExprKind::Call(f, args) => self.call(f, args, span),
            ExprKind::Index(..) => {
                let access = self.access(e)?;
                let elem = self.vars.arrays[access.array.0].elem;
                Ok(Val::Ir(typed(K::Read(access), elem), CTy::from_elem(elem)))
            }
            ExprKind::Member(..) => Err(outside(
                Construct::Operator,
                "structure members are outside the C subset".into(),
                span,
                "member access",
            )),
            ExprKind::Comma(..) => Err(outside(
                Construct::Operator,
                "the comma operator is outside the C subset".into(),
                span,
                "comma operator",
            )),
            ExprKind::SizeOf => Err(outside(
                Construct::Operator,
                "`sizeof` is outside the C subset".into(),
                span,
                "sizeof",
            )),
        }
    }

    /// The IR type arithmetic of C type `t` is computed in.
    fn arithmetic_elem(&self, t: CTy, span: Span) -> LResult<ElemType> {
        t.elem().ok_or_else(|| {
            outside(
                Construct::Type,
                "arithmetic on `long` values outside affine expressions is outside the C subset"
                    .into(),
                span,
                "long arithmetic",
            )
            .with_note("`long` iterators and parameters may be used in affine expressions (indices, bounds, conditions) and converted to other types")
        })
    }

    fn unary(&mut self, op: UnOp, x: &Expr, span: Span) -> LResult<Val> {
        match op {
            UnOp::Plus => Ok(match self.value(x)? {
                Val::Ir(e, t) if t.promoted() != t => {
                    Val::Ir(to_ir(Val::Ir(e, t), ElemType::I32), CTy::Int)
                }
                v => v,
            }),
            UnOp::Neg => match self.value(x)? {
                Val::Aff(AffExpr::Const(c), t) => Ok(Val::Aff(
                    AffExpr::Const(c.checked_neg().ok_or_else(|| overflow(span))?),
                    t,
                )),
                Val::Aff(a, t) => Ok(Val::Aff(AffExpr::Neg(Box::new(a)), t)),
                v => {
                    let t = v.ty().promoted();
                    let elem = self.arithmetic_elem(t, span)?;
                    Ok(Val::Ir(typed(K::Neg(Box::new(to_ir(v, elem))), elem), t))
                }
            },
            UnOp::Not => Ok(Val::Ir(
                ir::Expr {
                    kind: K::Not(Box::new(to_bool(self.value(x)?))),
                    ty: Type::Bool,
                },
                CTy::Bool,
            )),
            UnOp::BitNot => Err(outside(
                Construct::Operator,
                "bitwise operators are outside the C subset".into(),
                span,
                "bitwise not",
            )),
            UnOp::Deref | UnOp::AddrOf => Err(outside(
                Construct::Pointer,
                "pointers are outside the C subset".into(),
                span,
                if op == UnOp::Deref {
                    "dereference"
                } else {
                    "address"
                },
            )),
        }
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, span: Span) -> LResult<Val> {
        match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => {
                let (x, y) = (self.value(a)?, self.value(b)?);
                self.arith(op, x, y, span)
            }
            BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
                let (x, y) = (self.value(a)?, self.value(b)?);
                let elem = comparison_elem(CTy::usual(x.ty(), y.ty()));
                Ok(Val::Ir(
                    ir::Expr {
                        kind: K::Compare(
                            cmp_op(op),
                            Box::new(to_ir(x, elem)),
                            Box::new(to_ir(y, elem)),
                        ),
                        ty: Type::Bool,
                    },
                    CTy::Bool,
                ))
            }
            BinOp::And | BinOp::Or => {
                let (x, y) = (to_bool(self.value(a)?), to_bool(self.value(b)?));
                let op = if op == BinOp::And {
                    LogicOp::And
                } else {
                    LogicOp::Or
                };
                Ok(Val::Ir(
                    ir::Expr {
                        kind: K::Logic(op, Box::new(x), Box::new(y)),
                        ty: Type::Bool,
                    },
                    CTy::Bool,
                ))
            }
            BinOp::Shl | BinOp::Shr | BinOp::BitAnd | BinOp::BitXor | BinOp::BitOr => Err(outside(
                Construct::Operator,
                format!("`{}` is outside the C subset", op.symbol()),
                span,
                "bitwise operator",
            )),
        }
    }

    /// `x op y` for an arithmetic operator.
    pub fn arith(&mut self, op: BinOp, x: Val, y: Val, span: Span) -> LResult<Val> {
        if let (Val::Aff(a, ta), Val::Aff(b, tb)) = (&x, &y) {
            if let Some(v) = affine_arith(op, a, b, span)? {
                return Ok(Val::Aff(v, CTy::usual(*ta, *tb)));
            }
        }
        let t = CTy::usual(x.ty(), y.ty());
        let elem = self.arithmetic_elem(t, span)?;
        let (x, y) = (to_ir(x, elem), to_ir(y, elem));
        let bin =
            |op, a: ir::Expr, b: ir::Expr| typed(K::Binary(op, Box::new(a), Box::new(b)), elem);
        let e = match op {
            BinOp::Add => bin(IrBinOp::Add, x, y),
            BinOp::Sub => bin(IrBinOp::Sub, x, y),
            BinOp::Mul => bin(IrBinOp::Mul, x, y),
            BinOp::Div => bin(IrBinOp::Div, x, y),
            _ if !t.is_integer() => {
                return Err(Diagnostic::new(
                    Code::TypeMismatch,
                    "`%` needs integer operands",
                    span,
                    "floating-point remainder",
                ))
            }
            // C's remainder: x - (x / y) * y, with the truncating division.
            _ => bin(
                IrBinOp::Sub,
                x.clone(),
                bin(IrBinOp::Mul, bin(IrBinOp::Div, x, y.clone()), y),
            ),
        };
        Ok(Val::Ir(e, t))
    }

    fn cast(&mut self, t: &CType, x: &Expr, span: Span) -> LResult<Val> {
        if t.pointers > 0 || !t.dims.is_empty() {
            return Err(outside(
                Construct::Pointer,
                "a cast to a pointer is outside the C subset".into(),
                span,
                "pointer cast",
            ));
        }
        let target = CTy::of(t.base).ok_or_else(|| {
            outside(
                Construct::Type,
                format!("a cast to `{}` is outside the C subset", t.base.name()),
                span,
                "unsupported type",
            )
        })?;
        Ok(match (self.value(x)?, target) {
            (Val::Aff(a, _), CTy::Int | CTy::Long) => Val::Aff(a, target),
            (v, target) => {
                let elem = self.arithmetic_elem(target, span)?;
                Val::Ir(to_ir(v, elem), target)
            }
        })
    }

    fn call(&mut self, f: &Expr, args: &[Expr], span: Span) -> LResult<Val> {
        let name = match &f.kind {
            ExprKind::Ident(n) => n.as_str(),
            _ => {
                return Err(outside(
                    Construct::Call,
                    "a call through an expression is outside the C subset".into(),
                    span,
                    "indirect call",
                ))
            }
        };
        let Some(&(_, func, ty)) = MATH.iter().find(|(n, ..)| *n == name) else {
            return Err(outside(
                Construct::Call,
                format!("the call of `{name}` may have side effects"),
                f.span,
                "not a math function of the subset",
            )
            .with_note("the subset calls only sqrt exp log tanh pow fabs floor fmax fmin (and their `f` versions) and abs"));
        };
        if args.len() != func.arity() {
            return Err(Diagnostic::new(
                Code::Arity,
                format!(
                    "`{name}` takes {} argument{}, found {}",
                    func.arity(),
                    if func.arity() == 1 { "" } else { "s" },
                    args.len()
                ),
                span,
                "wrong number of arguments",
            ));
        }
        let elem = ty.elem().unwrap_or(ElemType::F64);
        let mut lowered = Vec::new();
        for a in args {
            let v = self.value(a)?;
            lowered.push(to_ir(v, elem));
        }
        Ok(Val::Ir(typed(K::Call(func, lowered), elem), ty))
    }

    /// The array element `e` (`A[i][j]`) designates.
    pub fn access(&mut self, e: &Expr) -> LResult<Access> {
        let mut indices = Vec::new();
        let mut base = e;
        while let ExprKind::Index(x, i) = &base.kind {
            indices.push(i.as_ref());
            base = x;
        }
        indices.reverse();
        let ExprKind::Ident(name) = &base.kind else {
            return Err(outside(
                Construct::Pointer,
                "only named arrays can be indexed in the C subset".into(),
                base.span,
                "not an array name",
            ));
        };
        let id = match self.vars.resolve(name, base.span)? {
            Entity::Array(id) => id,
            _ => {
                return Err(Diagnostic::new(
                    Code::NotAnArray,
                    format!("`{name}` is not an array and cannot be indexed"),
                    base.span,
                    "a scalar",
                ))
            }
        };
        let rank = self.vars.arrays[id.0].dims.len();
        if indices.len() < rank && !indices.is_empty() {
            return Err(outside(
                Construct::Pointer,
                format!(
                    "`{name}` has {rank} dimensions but {} indices are given: the element is a pointer",
                    indices.len()
                ),
                e.span,
                "a row used as a value",
            ));
        }
        if indices.len() != rank {
            return Err(Diagnostic::new(
                Code::Rank,
                format!(
                    "array `{name}` has {rank} dimension{} but {} ind{} given",
                    if rank == 1 { "" } else { "s" },
                    indices.len(),
                    if indices.len() == 1 {
                        "ex is"
                    } else {
                        "ices are"
                    }
                ),
                e.span,
                "wrong number of indices",
            ));
        }
        let what = format!("index of `{}`", self.text(e.span));
        let indices = indices
            .into_iter()
            .map(|i| self.affine(i, AffineContext::Index, &what))
            .collect::<LResult<Vec<_>>>()?;
        Ok(Access {
            array: id,
            indices,
            span: e.span,
        })
    }

    /// `e` as an affine expression, in a context that needs one.
    pub fn affine(&mut self, e: &Expr, ctx: AffineContext, what: &str) -> LResult<AffExpr> {
        match self.value(e)? {
            Val::Aff(a, _) => Ok(a),
            Val::Ir(..) => Err(self.not_affine(e, ctx, what)),
        }
    }

    /// Why `e`, needed affine as `what`, is not.
    fn not_affine(&mut self, e: &Expr, ctx: AffineContext, what: &str) -> Diagnostic {
        if let Some((name, span)) = self.array_read(e) {
            return Diagnostic::new(
                Code::DataDependent(ctx),
                format!("{what} depends on array data: it reads `{name}`"),
                span,
                "data-dependent",
            );
        }
        let (reason, span) = why_not_affine(e).unwrap_or(("not affine", e.span));
        Diagnostic::new(
            Code::NonAffine(ctx),
            format!("{what} is not affine: `{}` is {reason}", self.text(span)),
            span,
            reason,
        )
        .with_note("affine: integer constants, iterators and integer parameters under `+`, `-`, and `*` by a constant")
    }

    /// The first array `e` reads, if any.
    fn array_read(&mut self, e: &Expr) -> Option<(String, Span)> {
        match &e.kind {
            ExprKind::Ident(n) => match self.vars.resolve(n, e.span) {
                Ok(Entity::Array(_)) => Some((n.clone(), e.span)),
                _ => None,
            },
            ExprKind::Index(x, i) => self.array_read(x).or_else(|| self.array_read(i)),
            ExprKind::Unary(_, x) | ExprKind::Cast(_, x) | ExprKind::IncDec(x, ..) => {
                self.array_read(x)
            }
            ExprKind::Binary(_, a, b) | ExprKind::Assign(_, a, b) | ExprKind::Comma(a, b) => {
                self.array_read(a).or_else(|| self.array_read(b))
            }
            ExprKind::Cond(c, a, b) => self
                .array_read(c)
                .or_else(|| self.array_read(a))
                .or_else(|| self.array_read(b)),
            ExprKind::Call(_, args) => args.iter().find_map(|a| self.array_read(a)),
            _ => None,
        }
    }
}

/// The first part of `e` that makes it not affine, and why.
fn why_not_affine(e: &Expr) -> Option<(&'static str, Span)> {
    let constant = |x: &Expr| matches!(x.kind, ExprKind::Int(_) | ExprKind::Char(_));
    match &e.kind {
        ExprKind::Float(_) => Some(("not an integer", e.span)),
        ExprKind::Call(..) => Some(("a call", e.span)),
        ExprKind::Cond(..) => Some(("a conditional", e.span)),
        ExprKind::Cast(t, x) => {
            if CTy::of(t.base).is_some_and(CTy::is_integer) {
                why_not_affine(x)
            } else {
                Some(("not an integer", e.span))
            }
        }
        ExprKind::Binary(BinOp::Div | BinOp::Mod, ..) => Some((
            "a division (C's `/` and `%` truncate, which is not affine)",
            e.span,
        )),
        ExprKind::Binary(BinOp::Mul, a, b) => {
            why_not_affine(a).or_else(|| why_not_affine(b)).or_else(|| {
                (!constant(a) && !constant(b)).then_some(("a product of two variables", e.span))
            })
        }
        ExprKind::Binary(op, ..)
            if op.symbol().len() > 1 || matches!(op, BinOp::Lt | BinOp::Gt) =>
        {
            Some(("a condition, not an integer", e.span))
        }
        ExprKind::Binary(_, a, b) => why_not_affine(a).or_else(|| why_not_affine(b)),
        ExprKind::Unary(UnOp::Not, _) => Some(("a condition, not an integer", e.span)),
        ExprKind::Unary(_, x) => why_not_affine(x),
        _ => None,
    }
}

fn overflow(span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::ConstantOverflow,
        "integer overflow in a constant expression",
        span,
        "overflows",
    )
}

/// `a op b` as an affine expression, if it is one (`None`: not affine, to be computed).
fn affine_arith(op: BinOp, a: &AffExpr, b: &AffExpr, span: Span) -> LResult<Option<AffExpr>> {
    let checked = |v: Option<i64>| v.ok_or_else(|| overflow(span));
    let boxed = |x: &AffExpr| Box::new(x.clone());
    Ok(Some(match (op, a, b) {
        (BinOp::Add, AffExpr::Const(p), AffExpr::Const(q)) => {
            AffExpr::Const(checked(p.checked_add(*q))?)
        }
        (BinOp::Sub, AffExpr::Const(p), AffExpr::Const(q)) => {
            AffExpr::Const(checked(p.checked_sub(*q))?)
        }
        (BinOp::Mul, AffExpr::Const(p), AffExpr::Const(q)) => {
            AffExpr::Const(checked(p.checked_mul(*q))?)
        }
        (BinOp::Div | BinOp::Mod, AffExpr::Const(_), AffExpr::Const(0)) => {
            return Err(Diagnostic::new(
                Code::ConstantOverflow,
                "division by zero in a constant expression",
                span,
                "divides by zero",
            ))
        }
        // C truncates toward zero, as Rust does.
        (BinOp::Div, AffExpr::Const(p), AffExpr::Const(q)) => {
            AffExpr::Const(checked(p.checked_div(*q))?)
        }
        (BinOp::Mod, AffExpr::Const(p), AffExpr::Const(q)) => {
            AffExpr::Const(checked(p.checked_rem(*q))?)
        }
        (BinOp::Add, x, y) => AffExpr::Add(boxed(x), boxed(y)),
        (BinOp::Sub, x, y) => AffExpr::Sub(boxed(x), boxed(y)),
        (BinOp::Mul, AffExpr::Const(c), x) | (BinOp::Mul, x, AffExpr::Const(c)) => {
            AffExpr::Mul(*c, boxed(x))
        }
        _ => return Ok(None),
    }))
}

/// The value of an integer literal: `int` if it fits (and has no suffix), else `long`.
fn int_literal(v: &IntLit, span: Span) -> LResult<Val> {
    // C gives a hexadecimal or octal literal that does not fit an `int` but fits an
    // `unsigned int` that type.
    let unsigned_int =
        v.based && !v.long && v.value > i32::MAX as u64 && v.value <= u64::from(u32::MAX);
    if v.unsigned || unsigned_int {
        return Err(outside(
            Construct::Type,
            "unsigned literals are outside the C subset".into(),
            span,
            "unsigned",
        ));
    }
    let value = i64::try_from(v.value).map_err(|_| {
        outside(
            Construct::Type,
            "this literal does not fit a `long`".into(),
            span,
            "too large",
        )
    })?;
    let ty = if v.long || i32::try_from(value).is_err() {
        CTy::Long
    } else {
        CTy::Int
    };
    Ok(Val::Aff(AffExpr::Const(value), ty))
}

/// The IR comparison of a C comparison operator.
pub fn cmp_op(op: BinOp) -> CmpOp {
    match op {
        BinOp::Lt => CmpOp::Lt,
        BinOp::Gt => CmpOp::Gt,
        BinOp::Le => CmpOp::Le,
        BinOp::Ge => CmpOp::Ge,
        BinOp::Eq => CmpOp::Eq,
        _ => CmpOp::Ne,
    }
}
