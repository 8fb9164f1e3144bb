//! The names a region uses, and what each becomes in the kernel: a loop iterator, a
//! parameter (an integer scalar the region never writes), or an array (arrays, and scalars
//! as 0-d arrays: floating-point inputs and every scalar the region writes).

use super::ctype::{array_elem, CTy};
use crate::c::syntax::{BinOp, CType, Declarator, Expr, ExprKind, UnOp};
use crate::diagnostics::{AffineContext, Code, Construct, Diagnostic};
use crate::ir::{self, AffExpr, ArrayId, Role, Var};
use crate::span::Span;
use std::collections::{HashMap, HashSet};

/// Where a variable was declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Inside the region: a temporary of the kernel.
    Region,
    /// In the function, before the region.
    Local,
    /// A parameter of the function (its position).
    Parameter(usize),
    /// At file scope.
    Global,
}

/// What a name of the region is in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entity {
    /// The iterator of an enclosing loop, of the given type.
    Iterator(CTy),
    /// A parameter of the given type.
    Param(CTy),
    /// An array (a scalar is 0-d).
    Array(ArrayId),
}

/// Where the names of a region are declared, innermost scope last.
pub struct Scopes<'a> {
    /// The function's declarations before the region, outermost first.
    pub locals: &'a [Declarator],
    /// The function's parameters.
    pub params: &'a [Declarator],
    /// The file's variables.
    pub globals: &'a [Declarator],
}

/// The variables of a region as they become the kernel's parameters and arrays.
pub struct Vars<'a> {
    scopes: Scopes<'a>,
    /// Declarations made inside the region.
    region: HashMap<String, Declarator>,
    /// Names the region writes (assignments, `++`/`--`), loop steps excluded.
    pub written: HashSet<String>,
    /// Names that are the iterator of some loop of the region.
    pub iterators: HashSet<String>,
    /// The enclosing loops at the point being lowered: iterator and type, outermost first.
    pub loops: Vec<(String, CTy)>,
    /// The kernel's parameters so far.
    pub params: Vec<ir::Param>,
    /// The kernel's arrays so far (roles are set by [`Vars::finish`]).
    pub arrays: Vec<ir::Array>,
    /// Where each array's variable was declared.
    pub origins: Vec<Origin>,
    resolved: HashMap<String, Entity>,
}

impl<'a> Vars<'a> {
    /// The variables of a region whose names are declared in `scopes`, which writes
    /// `written` and has loops over `iterators`.
    pub fn new(scopes: Scopes<'a>, written: HashSet<String>, iterators: HashSet<String>) -> Self {
        Vars {
            scopes,
            region: HashMap::new(),
            written,
            iterators,
            loops: Vec::new(),
            params: Vec::new(),
            arrays: Vec::new(),
            origins: Vec::new(),
            resolved: HashMap::new(),
        }
    }

    /// Declares a variable inside the region.
    pub fn declare(&mut self, d: &Declarator) -> Result<(), Diagnostic> {
        // Loops of the region may each declare their iterator (`for (int i = ...)`).
        let iterator = self.iterators.contains(&d.name);
        if !iterator && (self.region.contains_key(&d.name) || self.resolved.contains_key(&d.name)) {
            return Err(Diagnostic::new(
                Code::Outside(Construct::Declaration),
                format!(
                    "`{}` is declared in the region but also names another variable used in it",
                    d.name
                ),
                d.name_span,
                "declared again here",
            )
            .with_note("give the region's variables names of their own"));
        }
        self.region.insert(d.name.clone(), d.clone());
        Ok(())
    }

    /// The declaration of `name` visible in the region, and where it was made.
    pub fn declaration(&self, name: &str) -> Option<(&Declarator, Origin)> {
        if let Some(d) = self.region.get(name) {
            return Some((d, Origin::Region));
        }
        if let Some(d) = self.scopes.locals.iter().rev().find(|d| d.name == name) {
            return Some((d, Origin::Local));
        }
        if let Some((k, d)) = (self.scopes.params.iter().enumerate()).find(|(_, d)| d.name == name)
        {
            return Some((d, Origin::Parameter(k)));
        }
        (self.scopes.globals.iter().rev())
            .find(|g| g.name == name)
            .map(|g| (g, Origin::Global))
    }

    /// What `name`, used at `span`, is.
    pub fn resolve(&mut self, name: &str, span: Span) -> Result<Entity, Diagnostic> {
        if let Some((_, ty)) = self.loops.iter().rev().find(|(n, _)| n == name) {
            return Ok(Entity::Iterator(*ty));
        }
        if self.iterators.contains(name) {
            return Err(Diagnostic::new(
                Code::Outside(Construct::IteratorUse),
                format!("`{name}` is read outside the loops it is the iterator of"),
                span,
                "the value it has after its loop",
            )
            .with_note("the optimised loops do not leave the iterators with their final values; use a variable of its own"));
        }
        if let Some(e) = self.resolved.get(name) {
            return Ok(*e);
        }
        let Some((decl, origin)) = self.declaration(name) else {
            return Err(Diagnostic::new(
                Code::UnknownName,
                format!("unknown name `{name}`"),
                span,
                "no declaration of it is visible here",
            )
            .with_note("the region may use the function's parameters and variables and the file's variables, declared with basic types"));
        };
        let (decl, ty) = (decl.clone(), decl.ty.clone());
        let decl_span = decl.name_span;
        if ty.pointers > 0 {
            return Err(Diagnostic::new(
                Code::Outside(Construct::Pointer),
                format!("`{name}` is a pointer"),
                span,
                "its extent and what it points to are unknown",
            )
            .with_secondary(decl_span, "declared here")
            .with_note("declare arrays with their extents, `double A[N][M]` (a C99 parameter `double A[n][m]` too)"));
        }
        let cty = CTy::of(ty.base).ok_or_else(|| type_error(name, &ty, span, decl_span))?;
        let written = self.written.contains(name);
        let entity = if ty.dims.is_empty() && !written && cty.is_integer() {
            self.params.push(ir::Param {
                name: name.to_owned(),
                default: None,
                span: decl_span,
            });
            Entity::Param(cty)
        } else {
            let elem = array_elem(cty).ok_or_else(|| type_error(name, &ty, span, decl_span))?;
            let mut dims = Vec::new();
            for (d, dim) in ty.dims.iter().enumerate() {
                let Some(dim) = dim else {
                    return Err(Diagnostic::new(
                        Code::Outside(Construct::Extent),
                        format!("the extent of dimension {d} of `{name}` is not given"),
                        span,
                        "array of unknown extent",
                    )
                    .with_secondary(decl_span, "declared here")
                    .with_note("give every extent, `double A[N][M]`"));
                };
                dims.push(self.extent(dim, name)?);
            }
            let id = ArrayId(self.arrays.len());
            self.arrays.push(ir::Array {
                name: name.to_owned(),
                elem,
                dims,
                role: Role::In,
                span: decl_span,
            });
            self.origins.push(origin);
            Entity::Array(id)
        };
        self.resolved.insert(name.to_owned(), entity);
        Ok(entity)
    }

    /// An array extent as an affine expression in the parameters: integer constants and
    /// integer variables the region does not write, under `+`, `-`, `*` by a constant.
    fn extent(&mut self, e: &Expr, array: &str) -> Result<AffExpr, Diagnostic> {
        let bad = |why: &str| {
            Diagnostic::new(
                Code::NonAffine(AffineContext::Extent),
                format!("an extent of `{array}` is not affine in the parameters: {why}"),
                e.span,
                why.to_owned(),
            )
        };
        Ok(match &e.kind {
            ExprKind::Int(v) => {
                AffExpr::Const(i64::try_from(v.value).map_err(|_| bad("too large"))?)
            }
            ExprKind::Char(v) => AffExpr::Const(*v),
            ExprKind::Ident(n) => match self.resolve(n, e.span)? {
                Entity::Param(_) => AffExpr::Var(Var::Param(n.clone())),
                _ => return Err(bad(&format!("`{n}` is not an integer parameter"))),
            },
            ExprKind::Unary(UnOp::Plus, x) => self.extent(x, array)?,
            ExprKind::Unary(UnOp::Neg, x) => AffExpr::Neg(Box::new(self.extent(x, array)?)),
            ExprKind::Cast(t, x)
                if CTy::of(t.base).is_some_and(CTy::is_integer) && t.pointers == 0 =>
            {
                self.extent(x, array)?
            }
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) => {
                let (a, b) = (self.extent(a, array)?, self.extent(b, array)?);
                match (op, a, b) {
                    (BinOp::Add, a, b) => AffExpr::Add(Box::new(a), Box::new(b)),
                    (BinOp::Sub, a, b) => AffExpr::Sub(Box::new(a), Box::new(b)),
                    (_, AffExpr::Const(c), x) | (_, x, AffExpr::Const(c)) => {
                        AffExpr::Mul(c, Box::new(x))
                    }
                    _ => return Err(bad("a product of two variables")),
                }
            }
            _ => {
                return Err(bad(
                    "only integer constants and parameters under `+`, `-` and `*` by a constant",
                ))
            }
        })
    }

    /// Sets each array's role: temporaries for the region's own variables, inputs for those
    /// it only reads, inputs updated for the others.
    pub fn finish(&mut self) {
        for (a, origin) in self.arrays.iter_mut().zip(&self.origins) {
            a.role = if *origin == Origin::Region {
                Role::Temp
            } else if self.written.contains(&a.name) {
                Role::InOut
            } else {
                Role::In
            };
        }
    }
}

fn type_error(name: &str, ty: &CType, span: Span, decl_span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::Outside(Construct::Type),
        format!("`{name}` has type `{}`, outside the C subset", ty.base.name()),
        span,
        "unsupported type",
    )
    .with_secondary(decl_span, "declared here")
    .with_note("arrays and scalars written in the region may be `double`, `float`, `int` or `char`; `long` is accepted for iterators and parameters")
}
