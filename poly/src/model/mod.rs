//! The program model: a checked kernel lifted into isl objects.
//!
//! For each statement: its iteration domain (parametric), its read and write access relations
//! (already intersected with the domain), and whether it is a reduction update; for the whole
//! kernel: the parameter context and the original execution order as an isl schedule tree.

pub mod isl_text;
mod schedule_tree;

use crate::isl::{Ctx, IslResult, Map, Schedule, Set, UnionMap, UnionSet};
use frontend::ir::{ArrayId, AssignOp, Enclosing, ExprKind, Kernel, Stmt, StmtContext};
use isl_text::{aff, cond, isl_name};
use std::collections::BTreeMap;

/// One access of a statement to an array.
#[derive(Clone, Debug)]
pub struct Access {
    /// The array accessed.
    pub array: ArrayId,
    /// `{ S[i] -> A[f(i)] }`, restricted to the statement's domain.
    pub relation: Map,
}

/// A polyhedral statement.
#[derive(Clone, Debug)]
pub struct Statement {
    /// The statement's name (also its isl tuple name, see [`isl_name`]).
    pub name: String,
    /// The isl tuple name.
    pub tuple: String,
    /// Names of its enclosing loop variables, outermost first (its domain's dimensions).
    pub iterators: Vec<String>,
    /// Its iteration domain.
    pub domain: Set,
    /// Everything it reads (for a compound assignment `+=`, the target too).
    pub reads: Vec<Access>,
    /// The element it writes.
    pub write: Access,
    /// `Some(op)` when the statement is an associative, commutative update of its target
    /// (`+=`, `*=`, `max=`, `min=`) whose right-hand side does not read the target's array:
    /// its instances may be reordered among themselves when the user allows it.
    pub reduction: Option<AssignOp>,
}

/// A kernel lifted into the polyhedral model.
#[derive(Clone, Debug)]
pub struct Program {
    /// The isl context every object lives in.
    pub ctx: Ctx,
    /// The checked kernel.
    pub kernel: Kernel,
    /// Parameter values fixed by the user (`-D N=64`); other parameters stay symbolic.
    pub fixed: BTreeMap<String, i64>,
    /// Constraints on the parameters: the kernel's `where` clauses and the fixed values.
    pub context: Set,
    /// The statements, in textual order (the order of [`Kernel::statements`]).
    pub statements: Vec<Statement>,
    /// The original (textual) execution order.
    pub schedule: Schedule,
}

/// Why a kernel could not be lifted.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// `-D` named something that is not a parameter of the kernel.
    #[error("`{0}` is not a parameter of kernel `{1}` (its parameters: {2})")]
    UnknownParam(String, String, String),
    /// The fixed values contradict the kernel's parameter constraints.
    #[error("the parameter values {0} violate the kernel's constraints")]
    InfeasibleParams(String),
    /// isl failed.
    #[error(transparent)]
    Isl(#[from] crate::isl::IslError),
}

impl Program {
    /// Lifts a checked kernel, fixing the parameters named in `fixed`.
    pub fn build(
        ctx: &Ctx,
        kernel: &Kernel,
        fixed: &BTreeMap<String, i64>,
    ) -> Result<Program, ModelError> {
        let _analysis = ctx.analysis();
        for name in fixed.keys() {
            if !kernel.params.iter().any(|p| &p.name == name) {
                let all: Vec<_> = kernel.params.iter().map(|p| p.name.as_str()).collect();
                return Err(ModelError::UnknownParam(
                    name.clone(),
                    kernel.name.clone(),
                    all.join(", "),
                ));
            }
        }
        let prefix = param_prefix(kernel);
        let mut constraints: Vec<String> = kernel.param_constraints.iter().map(cond).collect();
        constraints.extend(fixed.iter().map(|(n, v)| format!("{} = {v}", isl_name(n))));
        let context = ctx.set(&format!("{prefix}{{ : {} }}", conjunction(&constraints)))?;
        if context.is_empty()? {
            let vals: Vec<_> = fixed.iter().map(|(n, v)| format!("{n}={v}")).collect();
            return Err(ModelError::InfeasibleParams(vals.join(", ")));
        }
        let statements = kernel
            .statements()
            .iter()
            .map(|sc| lift_statement(ctx, kernel, &prefix, &context, sc))
            .collect::<IslResult<Vec<_>>>()?;
        let schedule = schedule_tree::original(ctx, kernel, &statements)?;
        Ok(Program {
            ctx: ctx.clone(),
            kernel: kernel.clone(),
            fixed: fixed.clone(),
            context,
            statements,
            schedule,
        })
    }

    /// All iteration domains.
    pub fn domains(&self) -> IslResult<UnionSet> {
        union_of(
            &self.ctx,
            self.statements
                .iter()
                .map(|s| s.domain.apply(isl_rs::UnionSet::from_set)),
        )
    }
    /// All read relations.
    pub fn reads(&self) -> IslResult<UnionMap> {
        union_of(
            &self.ctx,
            self.statements
                .iter()
                .flat_map(|s| s.reads.iter())
                .map(Access::union_map),
        )
    }
    /// All write relations.
    pub fn writes(&self) -> IslResult<UnionMap> {
        union_of(
            &self.ctx,
            self.statements.iter().map(|s| s.write.union_map()),
        )
    }
    /// The statement whose isl tuple is `tuple`.
    pub fn statement_by_tuple(&self, tuple: &str) -> Option<&Statement> {
        self.statements.iter().find(|s| s.tuple == tuple)
    }
    /// The original schedule as a flat relation from instances to time vectors.
    pub fn schedule_map(&self) -> IslResult<UnionMap> {
        self.schedule.map()
    }
}

impl Access {
    fn union_map(&self) -> IslResult<UnionMap> {
        self.relation.apply(isl_rs::UnionMap::from_map)
    }
}

fn union_of<T>(
    ctx: &Ctx,
    parts: impl Iterator<Item = IslResult<crate::isl::Obj<T>>>,
) -> IslResult<crate::isl::Obj<T>>
where
    T: crate::isl::RawIsl,
    crate::isl::Obj<T>: Unionable,
{
    let mut acc: Option<crate::isl::Obj<T>> = None;
    for p in parts {
        let p = p?;
        acc = Some(match acc {
            None => p,
            Some(a) => a.union_with(&p)?,
        });
    }
    match acc {
        Some(a) => Ok(a),
        None => crate::isl::Obj::<T>::empty_in(ctx),
    }
}

/// Union types that can be folded by [`union_of`].
trait Unionable: Sized {
    fn union_with(&self, other: &Self) -> IslResult<Self>;
    fn empty_in(ctx: &Ctx) -> IslResult<Self>;
}

impl Unionable for UnionSet {
    fn union_with(&self, other: &Self) -> IslResult<Self> {
        self.union(other)
    }
    fn empty_in(ctx: &Ctx) -> IslResult<Self> {
        ctx.empty_union_set()
    }
}

impl Unionable for UnionMap {
    fn union_with(&self, other: &Self) -> IslResult<Self> {
        self.union(other)
    }
    fn empty_in(ctx: &Ctx) -> IslResult<Self> {
        ctx.empty_union_map()
    }
}

/// `[N, M] -> ` for a kernel with parameters, or nothing.
/// The `[N, M] -> ` prefix that declares the kernel's parameters in isl's notation (empty
/// when it has none).
pub fn param_prefix(kernel: &Kernel) -> String {
    if kernel.params.is_empty() {
        String::new()
    } else {
        let names: Vec<_> = kernel.params.iter().map(|p| isl_name(&p.name)).collect();
        format!("[{}] -> ", names.join(", "))
    }
}

fn conjunction(parts: &[String]) -> String {
    if parts.is_empty() {
        "true".into()
    } else {
        parts.join(" and ")
    }
}

/// The tuple `S[i, j]` of a statement.
pub(crate) fn tuple_text(tuple: &str, iterators: &[String]) -> String {
    let its: Vec<_> = iterators.iter().map(|i| isl_name(i)).collect();
    format!("{tuple}[{}]", its.join(", "))
}

fn lift_statement(
    ctx: &Ctx,
    kernel: &Kernel,
    prefix: &str,
    context: &Set,
    sc: &StmtContext<'_>,
) -> IslResult<Statement> {
    let iterators: Vec<String> = sc.loops().map(|l| l.var.clone()).collect();
    let tuple = isl_name(&sc.stmt.name);
    let mut constraints = Vec::new();
    for e in &sc.enclosing {
        match e {
            Enclosing::Loop(l) => {
                let v = isl_name(&l.var);
                constraints.push(format!("{} <= {v} < {}", aff(&l.lower), aff(&l.upper)));
                if l.step > 1 {
                    constraints.push(format!("({v} - {}) mod {} = 0", aff(&l.lower), l.step));
                }
            }
            Enclosing::If(i) => constraints.push(cond(&i.cond)),
        }
    }
    let head = tuple_text(&tuple, &iterators);
    let domain = ctx
        .set(&format!(
            "{prefix}{{ {head} : {} }}",
            conjunction(&constraints)
        ))?
        .intersect_params(context)?;
    let access = |a: &frontend::ir::Access| -> IslResult<Access> {
        let idx: Vec<_> = a.indices.iter().map(aff).collect();
        let name = isl_name(&kernel.array(a.array).name);
        let relation = ctx
            .map(&format!(
                "{prefix}{{ {head} -> {name}[{}] }}",
                idx.join(", ")
            ))?
            .intersect_domain(&domain)?;
        Ok(Access {
            array: a.array,
            relation,
        })
    };
    let stmt = sc.stmt;
    let mut reads = Vec::new();
    if stmt.op != AssignOp::Assign {
        reads.push(access(&stmt.target)?);
    }
    for r in rhs_reads(stmt) {
        reads.push(access(r)?);
    }
    let reads_target_array = rhs_reads(stmt).iter().any(|r| r.array == stmt.target.array);
    let reduction = (stmt.op.is_reduction() && !reads_target_array).then_some(stmt.op);
    let write = access(&stmt.target)?;
    Ok(Statement {
        name: stmt.name.clone(),
        tuple,
        iterators,
        domain,
        reads,
        write,
        reduction,
    })
}

/// The array reads of a statement's right-hand side, left to right.
pub fn rhs_reads(stmt: &Stmt) -> Vec<&frontend::ir::Access> {
    fn go<'a>(e: &'a frontend::ir::Expr, out: &mut Vec<&'a frontend::ir::Access>) {
        if let ExprKind::Read(a) = &e.kind {
            out.push(a);
        }
        e.children().into_iter().for_each(|c| go(c, out));
    }
    let mut out = Vec::new();
    go(&stmt.rhs, &mut out);
    out
}
