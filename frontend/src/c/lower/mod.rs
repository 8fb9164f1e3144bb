//! A region's statements lowered to the checked IR ([`ir::Kernel`]), the same IR the kernel
//! language produces.
//!
//! - `vars`: what each name becomes (iterator, parameter, array; scalars the region writes
//!   are 0-d arrays), and the arrays' roles;
//! - `ctype`: the C types of values and C's conversions;
//! - `value`: expressions, with C's conversions as explicit casts;
//! - `control`: `for` loops, `if`s, affine conditions and bounds;
//! - this module: statements (assignments, declarations) and the kernel.

mod control;
pub mod ctype;
mod value;
pub mod vars;

use crate::c::syntax::{BinOp, Declaration, Expr, ExprKind, ForInit, Jump, Stmt, StmtKind};
use crate::diagnostics::{Code, Construct, Diagnostic};
use crate::ir::{self, Access, AssignOp, Kernel, Node, Type};
use crate::span::Span;
use ctype::CTy;
use std::collections::HashSet;
use value::{outside, to_ir, Val};
use vars::{Entity, Origin, Scopes, Vars};

/// The result of lowering one construct.
pub(crate) type LResult<T> = Result<T, Diagnostic>;

/// A region to lower.
pub struct Region<'a> {
    /// The kernel's name.
    pub name: String,
    /// Its statements.
    pub stmts: &'a [Stmt],
    /// Where its names are declared.
    pub scopes: Scopes<'a>,
    /// The original file's text (for messages).
    pub text: &'a str,
}

/// A region lowered: the kernel, and where each of its arrays was declared.
pub struct Lowered {
    /// The kernel.
    pub kernel: Kernel,
    /// For each array of the kernel, where its variable is declared.
    pub origins: Vec<Origin>,
}

/// Lowers a region's statements to a kernel, or says why they are outside the subset.
pub fn lower(region: Region<'_>) -> Result<Lowered, Vec<Diagnostic>> {
    let mut written = HashSet::new();
    let mut iterators = HashSet::new();
    for s in region.stmts {
        collect_writes(s, &mut written, &mut iterators);
    }
    let mut lowerer = Lowerer {
        vars: Vars::new(region.scopes, written, iterators),
        text: region.text,
        diags: Vec::new(),
        statements: 0,
    };
    let mut body = Vec::new();
    for s in region.stmts {
        lowerer.statement(s, &mut body);
    }
    if !lowerer.diags.is_empty() {
        return Err(lowerer.diags);
    }
    lowerer.vars.finish();
    Ok(Lowered {
        kernel: Kernel {
            name: region.name,
            params: lowerer.vars.params,
            param_constraints: Vec::new(),
            arrays: lowerer.vars.arrays,
            body,
        },
        origins: lowerer.vars.origins,
    })
}

/// Lowers the statements of one region.
pub struct Lowerer<'a> {
    /// The region's variables.
    pub vars: Vars<'a>,
    text: &'a str,
    diags: Vec<Diagnostic>,
    /// How many statements were lowered (the `k` of the next `S<k>`).
    statements: usize,
}

impl Lowerer<'_> {
    /// The original text at `span`, its whitespace runs collapsed, for messages.
    pub fn text(&self, span: Span) -> String {
        let raw = self.text.get(span.start..span.end).unwrap_or("");
        raw.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Lowers `s` into `out`; what lies outside the subset is recorded as a diagnostic.
    pub fn statement(&mut self, s: &Stmt, out: &mut Vec<Node>) {
        if let Err(d) = self.try_statement(s, out) {
            self.diags.push(d);
        }
    }

    fn try_statement(&mut self, s: &Stmt, out: &mut Vec<Node>) -> LResult<()> {
        match &s.kind {
            StmtKind::Empty | StmtKind::Pragma(_) => Ok(()),
            StmtKind::Block(items) => {
                for item in items {
                    self.statement(item, out);
                }
                Ok(())
            }
            StmtKind::Expr(e) => self.expression_statement(e, out),
            StmtKind::Decl(d) => self.declaration(d, out),
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                let node = self.for_loop(init, cond.as_ref(), step.as_ref(), body, s.span)?;
                out.push(node);
                Ok(())
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_statement(cond, then, otherwise.as_deref(), s.span, out),
            StmtKind::Jump(jump, span) => {
                let (construct, what) = match jump {
                    Jump::While => (Construct::While, "`while` loops are"),
                    Jump::Break => (Construct::Break, "`break` is"),
                    Jump::Continue => (Construct::Continue, "`continue` is"),
                    Jump::Goto => (Construct::Goto, "`goto` and labels are"),
                    Jump::Return => (Construct::Return, "`return` is"),
                    Jump::Switch => (Construct::Switch, "`switch` is"),
                };
                Err(outside(
                    construct,
                    format!("{what} outside the C subset"),
                    *span,
                    "not a static control statement",
                )
                .with_note("a region holds `for` loops, `if`s and assignments whose control depends on iterators and parameters only"))
            }
        }
    }

    fn expression_statement(&mut self, e: &Expr, out: &mut Vec<Node>) -> LResult<()> {
        match &e.kind {
            ExprKind::Assign(op, target, rhs) => {
                self.assignment(*op, target, rhs, e.span, out)?;
                Ok(())
            }
            ExprKind::IncDec(target, inc, _) => {
                let op = if *inc { BinOp::Add } else { BinOp::Sub };
                let one = Val::Aff(ir::AffExpr::Const(1), CTy::Int);
                self.store(Some(op), target, one, e.span, out)?;
                Ok(())
            }
            ExprKind::Call(..) => {
                self.value(e)?;
                Err(outside(
                    Construct::Call,
                    "a call whose value is not used has no effect the subset can express".into(),
                    e.span,
                    "call as a statement",
                ))
            }
            // An expression without effect.
            _ => self.value(e).map(|_| ()),
        }
    }

    /// `target op= rhs` (chained assignments `a = b = c` are lowered inner first); returns
    /// the element written and its type.
    fn assignment(
        &mut self,
        op: Option<BinOp>,
        target: &Expr,
        rhs: &Expr,
        span: Span,
        out: &mut Vec<Node>,
    ) -> LResult<(Access, CTy)> {
        let value = match &rhs.kind {
            ExprKind::Assign(inner_op, inner_target, inner_rhs) => {
                let (access, ty) =
                    self.assignment(*inner_op, inner_target, inner_rhs, rhs.span, out)?;
                let elem = self.vars.arrays[access.array.0].elem;
                Val::Ir(
                    ir::Expr {
                        kind: ir::ExprKind::Read(access),
                        ty: Type::Elem(elem),
                    },
                    ty,
                )
            }
            _ => self.value(rhs)?,
        };
        self.store(op, target, value, span, out)
    }

    /// The statement `target op= value`.
    fn store(
        &mut self,
        op: Option<BinOp>,
        target: &Expr,
        value: Val,
        span: Span,
        out: &mut Vec<Node>,
    ) -> LResult<(Access, CTy)> {
        let access = self.target(target)?;
        let elem = self.vars.arrays[access.array.0].elem;
        let ty = CTy::from_elem(elem);
        let read = || {
            Val::Ir(
                ir::Expr {
                    kind: ir::ExprKind::Read(access.clone()),
                    ty: Type::Elem(elem),
                },
                ty,
            )
        };
        let (op, rhs) = match op {
            None => (AssignOp::Assign, to_ir(value, elem)),
            // The IR's compound assignment computes in the target's type: C's when the usual
            // arithmetic conversions give that type.
            Some(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div))
                if CTy::usual(ty, value.ty()) == ty =>
            {
                let op = match op {
                    BinOp::Add => AssignOp::Add,
                    BinOp::Sub => AssignOp::Sub,
                    BinOp::Mul => AssignOp::Mul,
                    _ => AssignOp::Div,
                };
                (op, to_ir(value, elem))
            }
            Some(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod)) => {
                let result = self.arith(op, read(), value, span)?;
                (AssignOp::Assign, to_ir(result, elem))
            }
            Some(op) => {
                return Err(outside(
                    Construct::Operator,
                    format!("`{}=` is outside the C subset", op.symbol()),
                    span,
                    "bitwise assignment",
                ))
            }
        };
        let name = format!("S{}", self.statements);
        self.statements += 1;
        out.push(Node::Stmt(ir::Stmt {
            name,
            target: access.clone(),
            op,
            rhs,
            span,
        }));
        Ok((access, ty))
    }

    /// The element an assignment writes.
    fn target(&mut self, target: &Expr) -> LResult<Access> {
        match &target.kind {
            ExprKind::Ident(n) => match self.vars.resolve(n, target.span)? {
                Entity::Array(id) if self.vars.arrays[id.0].dims.is_empty() => Ok(Access {
                    array: id,
                    indices: Vec::new(),
                    span: target.span,
                }),
                Entity::Array(_) => Err(outside(
                    Construct::Pointer,
                    format!("array `{n}` is assigned as a whole"),
                    target.span,
                    "an array without its indices",
                )),
                Entity::Iterator(_) => Err(outside(
                    Construct::IteratorUse,
                    format!("the iterator `{n}` is written in its loop"),
                    target.span,
                    "written here",
                )),
                Entity::Param(_) => Err(Diagnostic::new(
                    Code::NotAnArray,
                    format!("`{n}` cannot be assigned here"),
                    target.span,
                    "a parameter",
                )),
            },
            ExprKind::Index(..) => self.access(target),
            _ => Err(outside(
                Construct::Pointer,
                "only variables and array elements can be assigned in the C subset".into(),
                target.span,
                "not a variable or an array element",
            )),
        }
    }

    fn declaration(&mut self, d: &Declaration, out: &mut Vec<Node>) -> LResult<()> {
        if d.is_typedef || d.is_static || d.is_extern {
            // Declared all the same, so that their uses are not reported as unknown.
            for decl in &d.declarators {
                self.vars.declare(decl)?;
            }
            return Err(outside(
                Construct::Declaration,
                "`static`, `extern` and `typedef` declarations are outside the C subset".into(),
                d.span,
                "not a plain variable",
            ));
        }
        for decl in &d.declarators {
            self.vars.declare(decl)?;
            if decl.braced {
                return Err(outside(
                    Construct::Declaration,
                    format!("`{}` is initialised with a list", decl.name),
                    decl.name_span,
                    "initialiser list",
                )
                .with_note("initialise it with assignments"));
            }
            if let Some(init) = &decl.init {
                let target = Expr {
                    kind: ExprKind::Ident(decl.name.clone()),
                    span: decl.name_span,
                };
                self.assignment(None, &target, init, d.span, out)?;
            } else {
                // Declared without a value: resolving it checks its type.
                self.vars.resolve(&decl.name, decl.name_span)?;
            }
        }
        Ok(())
    }
}

/// The variable an assignment target names (`A` of `A[i][j]`).
fn base_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Ident(n) => Some(n),
        ExprKind::Index(x, _) => base_name(x),
        _ => None,
    }
}

/// Adds to `written` the names `s` writes (loop steps of iterators excluded) and to
/// `iterators` the iterators of its loops.
fn collect_writes(s: &Stmt, written: &mut HashSet<String>, iterators: &mut HashSet<String>) {
    match &s.kind {
        StmtKind::Expr(e) => collect_expr(e, written),
        StmtKind::Decl(d) => {
            for decl in &d.declarators {
                if let Some(init) = &decl.init {
                    written.insert(decl.name.clone());
                    collect_expr(init, written);
                }
            }
        }
        StmtKind::Block(items) => {
            for item in items {
                collect_writes(item, written, iterators);
            }
        }
        StmtKind::For {
            init,
            cond,
            step,
            body,
        } => {
            let iterator = match init {
                ForInit::Expr(Expr {
                    kind: ExprKind::Assign(None, target, value),
                    ..
                }) if matches!(target.kind, ExprKind::Ident(_)) => {
                    collect_expr(value, written);
                    base_name(target)
                }
                ForInit::Decl(d) if d.declarators.len() == 1 => {
                    d.declarators[0]
                        .init
                        .iter()
                        .for_each(|e| collect_expr(e, written));
                    Some(d.declarators[0].name.as_str())
                }
                ForInit::Expr(e) => {
                    collect_expr(e, written);
                    None
                }
                _ => None,
            };
            if let Some(i) = iterator {
                iterators.insert(i.to_owned());
            }
            cond.iter().for_each(|e| collect_expr(e, written));
            if let Some(step) = step {
                let mut step_writes = HashSet::new();
                collect_expr(step, &mut step_writes);
                step_writes.retain(|n| Some(n.as_str()) != iterator);
                written.extend(step_writes);
            }
            collect_writes(body, written, iterators);
        }
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => {
            collect_expr(cond, written);
            collect_writes(then, written, iterators);
            if let Some(o) = otherwise {
                collect_writes(o, written, iterators);
            }
        }
        StmtKind::Empty | StmtKind::Jump(..) | StmtKind::Pragma(_) => {}
    }
}

fn collect_expr(e: &Expr, written: &mut HashSet<String>) {
    match &e.kind {
        ExprKind::Assign(_, target, rhs) => {
            written.extend(base_name(target).map(str::to_owned));
            collect_expr(target, written);
            collect_expr(rhs, written);
        }
        ExprKind::IncDec(target, ..) => {
            written.extend(base_name(target).map(str::to_owned));
            collect_expr(target, written);
        }
        ExprKind::Unary(_, x) | ExprKind::Cast(_, x) | ExprKind::Member(x, _) => {
            collect_expr(x, written)
        }
        ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) | ExprKind::Comma(a, b) => {
            collect_expr(a, written);
            collect_expr(b, written);
        }
        ExprKind::Cond(c, a, b) => {
            collect_expr(c, written);
            collect_expr(a, written);
            collect_expr(b, written);
        }
        ExprKind::Call(f, args) => {
            collect_expr(f, written);
            args.iter().for_each(|a| collect_expr(a, written));
        }
        _ => {}
    }
}
