//! Statements compiled once into closure trees over precomputed array addresses.
//!
//! Executing an instance first computes the address of every access of the statement (the
//! target first) from its affine indices, checking each index against its dimension's extent,
//! then evaluates the right-hand side, whose reads only look the addresses up, and finally
//! combines the value into the target.

use super::affine::{AffFn, Binding};
use super::arith::{arith, compare};
use super::error::{Fault, InterpError};
use super::eval::{computed, constant, map1, map2, Env, Operand};
use super::memory::ArrayValues;
use super::params::{unbound, ParamValues};
use frontend::ir::{
    Access, AssignOp, BinOp, ElemType, Expr, ExprKind, Func, Kernel, LogicOp, StmtContext, Type,
    Var,
};

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

    /// How much the address changes when entry `slot` of the iteration vector grows by one,
    /// if every index is linear.
    fn delta(&self, slot: usize) -> Option<i64> {
        self.dims
            .iter()
            .try_fold(0i64, |acc, dim| match &dim.index {
                AffFn::Linear(l) => {
                    let coeff = l.terms.iter().find(|t| t.0 == slot).map_or(0, |t| t.1);
                    Some(acc.wrapping_add(coeff.wrapping_mul(dim.stride as i64)))
                }
                _ => None,
            })
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
    /// The value stored into the target (compound assignments included).
    rhs: Operand,
    /// See [`CompiledStmt::innermost_deltas`].
    innermost_deltas: Option<Vec<i64>>,
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
        // `t op= e` is `t = t op e`, the target read through its own (first) access.
        let a = arith(elem);
        let target = || read(stmt.target.array.0, 0);
        let rhs = match stmt.op {
            AssignOp::Assign => rhs,
            AssignOp::Add => a.binary(BinOp::Add, target(), rhs),
            AssignOp::Sub => a.binary(BinOp::Sub, target(), rhs),
            AssignOp::Mul => a.binary(BinOp::Mul, target(), rhs),
            AssignOp::Div => a.binary(BinOp::Div, target(), rhs),
            AssignOp::Max => a
                .call(Func::Max, vec![target(), rhs])
                .map_err(|r| c.unsupported(r))?,
            AssignOp::Min => a
                .call(Func::Min, vec![target(), rhs])
                .map_err(|r| c.unsupported(r))?,
        };
        let innermost_deltas = match loop_vars.len() {
            0 => None,
            depth => c.accesses.iter().map(|a| a.delta(depth - 1)).collect(),
        };
        Ok(CompiledStmt {
            name: stmt.name.clone(),
            accesses: c.accesses,
            loop_vars,
            rhs,
            innermost_deltas,
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
        self.addresses(iv, addrs)?;
        self.evaluate(iv, arrays, addrs)
    }

    /// Computes the address of every access at `iv` into `addrs`, checking every index.
    #[inline]
    pub(crate) fn addresses(&self, iv: &[i64], addrs: &mut [usize]) -> Result<(), Fault> {
        for (k, (access, addr)) in self.accesses.iter().zip(addrs.iter_mut()).enumerate() {
            *addr = access
                .address(iv)
                .map_err(|(dim, index)| Fault::OutOfBounds {
                    access: k,
                    dim,
                    index,
                })?;
        }
        Ok(())
    }

    /// Executes the instance `iv` whose access addresses are `addrs`.
    #[inline(always)]
    pub(crate) fn evaluate(
        &self,
        iv: &[i64],
        arrays: &mut [ArrayValues],
        addrs: &[usize],
    ) -> Result<(), Fault> {
        let env = Env::new(iv, addrs, arrays);
        let value = self.rhs.get(&env);
        if let Some(fault) = env.fault() {
            return Err(fault);
        }
        arrays[self.accesses[0].array].values[addrs[0]] = value;
        Ok(())
    }

    /// How much each access's address changes when the innermost enclosing loop variable
    /// grows by one, if every index is linear (otherwise addresses must be recomputed).
    pub(crate) fn innermost_deltas(&self) -> Option<&[i64]> {
        self.innermost_deltas.as_deref()
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

    fn expr(&mut self, e: &Expr) -> Result<Operand, InterpError> {
        Ok(match &e.kind {
            ExprKind::Literal(v) => constant(match e.ty {
                Type::Elem(t) => arith(t).round(*v),
                Type::Bool => f64::from(*v != 0.0),
            }),
            ExprKind::Index(index) => {
                let a = arith(self.elem(e)?);
                let f = self.affine(index)?;
                computed(move |env| a.index_value(f.eval(env.iv)))
            }
            ExprKind::Read(access) => read(access.array.0, self.access(access)?),
            ExprKind::Neg(x) => {
                let a = arith(self.elem(e)?);
                a.neg(self.expr(x)?)
            }
            ExprKind::Binary(op, x, y) => {
                let a = arith(self.elem(e)?);
                a.binary(*op, self.expr(x)?, self.expr(y)?)
            }
            ExprKind::Compare(op, x, y) => {
                let f = compare(*op);
                map2(self.expr(x)?, self.expr(y)?, move |a, b| f64::from(f(a, b)))
            }
            ExprKind::Logic(op, x, y) => {
                let (x, y) = (self.expr(x)?, self.expr(y)?);
                // Short-circuit, as in C: the second operand may fault.
                match op {
                    LogicOp::And => {
                        computed(move |env| if x.get(env) == 0.0 { 0.0 } else { y.get(env) })
                    }
                    LogicOp::Or => {
                        computed(move |env| if x.get(env) != 0.0 { 1.0 } else { y.get(env) })
                    }
                }
            }
            ExprKind::Not(x) => map1(self.expr(x)?, |v| 1.0 - v),
            ExprKind::Select(c, x, y) => {
                let (c, x, y) = (self.expr(c)?, self.expr(x)?, self.expr(y)?);
                computed(move |env| {
                    if c.get(env) != 0.0 {
                        x.get(env)
                    } else {
                        y.get(env)
                    }
                })
            }
            ExprKind::Call(func, args) => {
                let a = arith(self.elem(e)?);
                let args = args
                    .iter()
                    .map(|x| self.expr(x))
                    .collect::<Result<Vec<_>, _>>()?;
                a.call(*func, args).map_err(|r| self.unsupported(r))?
            }
            ExprKind::Cast(x) => {
                let from_float = matches!(x.ty, Type::Elem(t) if t.is_float());
                let a = arith(self.elem(e)?);
                a.cast(from_float, self.expr(x)?)
            }
        })
    }
}

/// The element of `array` at the address of access number `slot`.
fn read(array: usize, slot: usize) -> Operand {
    Operand::Read { array, slot }
}
