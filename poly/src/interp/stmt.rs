//! Statements compiled once into closure trees over precomputed array addresses.
//!
//! Executing an instance first computes the address of every access of the statement (the
//! target first) from its affine indices, checking each index against its dimension's extent,
//! then evaluates the right-hand side, whose reads only look the addresses up, and finally
//! combines the value into the target.

use super::affine::{AffFn, Binding};
use super::arith::{arith, compare, BinaryFn, Callee};
use super::error::{Fault, InterpError};
use super::memory::ArrayValues;
use super::params::{unbound, ParamValues};
use frontend::ir::{
    Access, AssignOp, BinOp, ElemType, Expr, ExprKind, Func, Kernel, LogicOp, StmtContext, Type,
    Var,
};

/// What a right-hand side can see while it is evaluated.
pub(crate) struct Env<'a> {
    iv: &'a [i64],
    addrs: &'a [usize],
    arrays: &'a [ArrayValues],
}

/// A compiled value expression.
type Eval = Box<dyn Fn(&Env<'_>) -> Result<f64, Fault> + Send + Sync>;

/// One dimension of an access: its index function, extent and C-order stride.
struct Dim {
    index: AffFn,
    extent: i64,
    stride: usize,
}

/// An array access with its address function.
struct CompiledAccess {
    array: usize,
    dims: Vec<Dim>,
}

impl CompiledAccess {
    /// The flat address at `iv`, or the first out-of-bounds `(dimension, index)`.
    #[inline]
    fn address(&self, iv: &[i64]) -> Result<usize, (usize, i64)> {
        let mut addr = 0;
        for (d, dim) in self.dims.iter().enumerate() {
            let i = dim.index.eval(iv);
            if !(0..dim.extent).contains(&i) {
                return Err((d, i));
            }
            addr += i as usize * dim.stride;
        }
        Ok(addr)
    }
}

/// A statement ready to execute.
pub(crate) struct CompiledStmt {
    /// The statement's name.
    pub(crate) name: String,
    /// Its enclosing loops' variables, outermost first.
    pub(crate) loop_vars: Vec<String>,
    /// Every access, the target first.
    accesses: Vec<CompiledAccess>,
    rhs: Eval,
    /// How the value is combined into the target (`None` for `=`).
    combine: Option<BinaryFn>,
}

impl CompiledStmt {
    /// Compiles the statement `ctx` of `kernel`, whose arrays have the given extents.
    pub(crate) fn compile(
        ctx: &StmtContext<'_>,
        kernel: &Kernel,
        params: &ParamValues,
        extents: &[Vec<usize>],
    ) -> Result<CompiledStmt, InterpError> {
        let stmt = ctx.stmt;
        let loop_vars: Vec<String> = ctx.loops().map(|l| l.var.clone()).collect();
        let mut c = Compiler {
            stmt: &stmt.name,
            loop_vars: &loop_vars,
            params,
            extents,
            accesses: Vec::new(),
        };
        c.access(&stmt.target)?;
        let elem = kernel.array(stmt.target.array).elem;
        if stmt.rhs.ty != Type::Elem(elem) {
            return Err(c.unsupported(format!(
                "the right-hand side has type {}, the target {elem}",
                stmt.rhs.ty
            )));
        }
        let rhs = c.expr(&stmt.rhs)?;
        let a = arith(elem);
        let combine = match stmt.op {
            AssignOp::Assign => None,
            AssignOp::Add => Some(a.binary(BinOp::Add)),
            AssignOp::Sub => Some(a.binary(BinOp::Sub)),
            AssignOp::Mul => Some(a.binary(BinOp::Mul)),
            AssignOp::Div => Some(a.binary(BinOp::Div)),
            AssignOp::Max => Some(c.binary_func(elem, Func::Max)?),
            AssignOp::Min => Some(c.binary_func(elem, Func::Min)?),
        };
        Ok(CompiledStmt {
            name: stmt.name.clone(),
            accesses: c.accesses,
            loop_vars,
            rhs,
            combine,
        })
    }

    /// How many accesses the statement makes (the size of the address scratch it needs).
    pub(crate) fn access_count(&self) -> usize {
        self.accesses.len()
    }

    /// Executes the instance `iv`; `addrs` is scratch space of at least
    /// [`CompiledStmt::access_count`] entries.
    #[inline]
    pub(crate) fn execute(
        &self,
        iv: &[i64],
        arrays: &mut [ArrayValues],
        addrs: &mut [usize],
    ) -> Result<(), Fault> {
        for (k, (access, addr)) in self.accesses.iter().zip(addrs.iter_mut()).enumerate() {
            *addr = access
                .address(iv)
                .map_err(|(dim, index)| Fault::OutOfBounds {
                    access: k,
                    dim,
                    index,
                })?;
        }
        let value = (self.rhs)(&Env { iv, addrs, arrays })?;
        let target = &mut arrays[self.accesses[0].array].values[addrs[0]];
        *target = match self.combine {
            None => value,
            Some(f) => f(*target, value)?,
        };
        Ok(())
    }

    /// The error for `fault` at instance `iv`, naming arrays as in `arrays`.
    pub(crate) fn error(&self, fault: Fault, iv: &[i64], arrays: &[ArrayValues]) -> InterpError {
        let stmt = self.name.clone();
        let instance = self.show_instance(iv);
        match fault {
            Fault::DivisionByZero => InterpError::DivisionByZero { stmt, instance },
            Fault::BadConversion { value, target } => InterpError::BadConversion {
                stmt,
                instance,
                value,
                target,
            },
            Fault::OutOfBounds { access, dim, index } => {
                let access = &self.accesses[access];
                InterpError::OutOfBounds {
                    stmt,
                    instance,
                    array: arrays[access.array].name.clone(),
                    dim,
                    index,
                    extent: access.dims[dim].extent,
                }
            }
        }
    }

    /// `(i=1, j=2)`.
    fn show_instance(&self, iv: &[i64]) -> String {
        let parts: Vec<String> = self
            .loop_vars
            .iter()
            .zip(iv)
            .map(|(v, x)| format!("{v}={x}"))
            .collect();
        format!("({})", parts.join(", "))
    }
}

/// Compiles one statement's expressions, collecting its accesses.
struct Compiler<'a> {
    stmt: &'a str,
    loop_vars: &'a [String],
    params: &'a ParamValues,
    extents: &'a [Vec<usize>],
    accesses: Vec<CompiledAccess>,
}

impl Compiler<'_> {
    fn unsupported(&self, reason: String) -> InterpError {
        InterpError::Unsupported {
            context: format!("statement {}", self.stmt),
            reason,
        }
    }

    fn affine(&self, e: &frontend::ir::AffExpr) -> Result<AffFn, InterpError> {
        let bind = |v: &Var| match v {
            Var::Loop(name) => self
                .loop_vars
                .iter()
                .position(|l| l == name)
                .map(Binding::Slot),
            Var::Param(_) => self.params.bind(v),
        };
        AffFn::compile(e, &bind).map_err(|v| unbound(&format!("statement {}", self.stmt), &v))
    }

    /// Adds an access and returns its number.
    fn access(&mut self, access: &Access) -> Result<usize, InterpError> {
        let extents = &self.extents[access.array.0];
        if extents.len() != access.indices.len() {
            return Err(self.unsupported(format!(
                "an access has {} indices for {} dimensions",
                access.indices.len(),
                extents.len()
            )));
        }
        let mut stride = extents.iter().product::<usize>();
        let dims = access
            .indices
            .iter()
            .zip(extents)
            .map(|(index, &extent)| {
                stride /= extent.max(1);
                Ok(Dim {
                    index: self.affine(index)?,
                    extent: extent as i64,
                    stride,
                })
            })
            .collect::<Result<_, InterpError>>()?;
        self.accesses.push(CompiledAccess {
            array: access.array.0,
            dims,
        });
        Ok(self.accesses.len() - 1)
    }

    fn elem(&self, e: &Expr) -> Result<ElemType, InterpError> {
        match e.ty {
            Type::Elem(t) => Ok(t),
            Type::Bool => Err(self.unsupported("a boolean where a number is expected".into())),
        }
    }

    fn binary_func(&self, elem: ElemType, func: Func) -> Result<BinaryFn, InterpError> {
        match arith(elem).call(func) {
            Some(Callee::Binary(f)) => Ok(f),
            _ => Err(self.unsupported(format!("`{}` needs two arguments", func.name()))),
        }
    }

    fn expr(&mut self, e: &Expr) -> Result<Eval, InterpError> {
        Ok(match &e.kind {
            ExprKind::Literal(v) => {
                let v = match e.ty {
                    Type::Elem(t) => arith(t).round(*v),
                    Type::Bool => f64::from(*v != 0.0),
                };
                Box::new(move |_| Ok(v))
            }
            ExprKind::Index(index) => {
                let a = arith(self.elem(e)?);
                let f = self.affine(index)?;
                Box::new(move |env| Ok(a.index_value(f.eval(env.iv))))
            }
            ExprKind::Read(access) => {
                let array = access.array.0;
                let slot = self.access(access)?;
                Box::new(move |env| Ok(env.arrays[array].values[env.addrs[slot]]))
            }
            ExprKind::Neg(x) => {
                let f = arith(self.elem(e)?).neg();
                let x = self.expr(x)?;
                Box::new(move |env| f(x(env)?))
            }
            ExprKind::Binary(op, a, b) => {
                let f = arith(self.elem(e)?).binary(*op);
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                Box::new(move |env| f(a(env)?, b(env)?))
            }
            ExprKind::Compare(op, a, b) => {
                let f = compare(*op);
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                Box::new(move |env| Ok(f64::from(f(a(env)?, b(env)?))))
            }
            ExprKind::Logic(op, a, b) => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                // Short-circuit, as in C: the second operand may fault.
                match op {
                    LogicOp::And => {
                        Box::new(move |env| if a(env)? == 0.0 { Ok(0.0) } else { b(env) })
                    }
                    LogicOp::Or => {
                        Box::new(move |env| if a(env)? != 0.0 { Ok(1.0) } else { b(env) })
                    }
                }
            }
            ExprKind::Not(x) => {
                let x = self.expr(x)?;
                Box::new(move |env| Ok(1.0 - x(env)?))
            }
            ExprKind::Select(c, a, b) => {
                let (c, a, b) = (self.expr(c)?, self.expr(a)?, self.expr(b)?);
                Box::new(move |env| if c(env)? != 0.0 { a(env) } else { b(env) })
            }
            ExprKind::Call(func, args) => {
                let elem = self.elem(e)?;
                let callee = arith(elem).call(*func).ok_or_else(|| {
                    self.unsupported(format!("`{}` is not defined on {elem}", func.name()))
                })?;
                let mut args = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Result<Vec<_>, _>>()?;
                match (callee, args.len()) {
                    (Callee::Unary(f), 1) => {
                        let x = args.remove(0);
                        Box::new(move |env| f(x(env)?))
                    }
                    (Callee::Binary(f), 2) => {
                        let (x, y) = (args.remove(0), args.remove(0));
                        Box::new(move |env| f(x(env)?, y(env)?))
                    }
                    (_, n) => {
                        return Err(
                            self.unsupported(format!("`{}` with {n} arguments", func.name()))
                        )
                    }
                }
            }
            ExprKind::Cast(x) => {
                let from_float = matches!(x.ty, Type::Elem(t) if t.is_float());
                let f = arith(self.elem(e)?).cast_from(from_float);
                let x = self.expr(x)?;
                Box::new(move |env| f(x(env)?))
            }
        })
    }
}
