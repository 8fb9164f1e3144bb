//! The loop tree compiled for walking in the original order.

use super::affine::{AffFn, Binding, CondFn};
use super::error::InterpError;
use super::params::{unbound, ParamValues};
use frontend::ir::{self, Var};

/// A node of the compiled loop tree.
pub(crate) enum Node {
    /// A loop; its variable is entry `depth` of the iteration vector.
    Loop(Loop),
    /// A guard.
    If(CondFn, Vec<Node>),
    /// Statement number `k` in [`ir::Kernel::statements`] order.
    Stmt(usize),
}

/// A compiled loop.
pub(crate) struct Loop {
    depth: usize,
    lower: AffFn,
    upper: AffFn,
    step: i64,
    reverse: bool,
    body: Vec<Node>,
}

/// Compiles a loop tree; statements are numbered in textual order from `*next_stmt`.
pub(crate) fn compile(
    nodes: &[ir::Node],
    params: &ParamValues,
    loop_vars: &mut Vec<String>,
    next_stmt: &mut usize,
) -> Result<Vec<Node>, InterpError> {
    nodes
        .iter()
        .map(|node| {
            let vars: &[String] = loop_vars;
            let bind = |v: &Var| match v {
                Var::Loop(name) => vars.iter().position(|l| l == name).map(Binding::Slot),
                Var::Param(_) => params.bind(v),
            };
            Ok(match node {
                ir::Node::Stmt(_) => {
                    *next_stmt += 1;
                    Node::Stmt(*next_stmt - 1)
                }
                ir::Node::If(i) => {
                    let cond =
                        CondFn::compile(&i.cond, &bind).map_err(|v| unbound("a guard", &v))?;
                    Node::If(cond, compile(&i.then, params, loop_vars, next_stmt)?)
                }
                ir::Node::Loop(l) => {
                    let context = format!("the bounds of loop `{}`", l.var);
                    let lower =
                        AffFn::compile(&l.lower, &bind).map_err(|v| unbound(&context, &v))?;
                    let upper =
                        AffFn::compile(&l.upper, &bind).map_err(|v| unbound(&context, &v))?;
                    if l.step < 1 {
                        return Err(InterpError::Unsupported {
                            context: format!("loop `{}`", l.var),
                            reason: format!("step {} is not positive", l.step),
                        });
                    }
                    let depth = loop_vars.len();
                    loop_vars.push(l.var.clone());
                    let body = compile(&l.body, params, loop_vars, next_stmt);
                    loop_vars.pop();
                    Node::Loop(Loop {
                        depth,
                        lower,
                        upper,
                        step: l.step,
                        reverse: l.reverse,
                        body: body?,
                    })
                }
            })
        })
        .collect()
}

/// Visits every statement instance under `nodes` in the original order: `visit(k, iv)` with
/// the statement's number and its iteration vector (`iv` holds the enclosing loops' values on
/// entry, and is restored on successful return).
pub(crate) fn walk<E>(
    nodes: &[Node],
    iv: &mut Vec<i64>,
    visit: &mut impl FnMut(usize, &[i64]) -> Result<(), E>,
) -> Result<(), E> {
    for node in nodes {
        match node {
            Node::Stmt(k) => visit(*k, iv)?,
            Node::If(cond, body) => {
                if cond.holds(iv) {
                    walk(body, iv, visit)?;
                }
            }
            Node::Loop(l) => {
                let (lo, hi) = (l.lower.eval(iv), l.upper.eval(iv));
                if lo >= hi {
                    continue;
                }
                let count = ((hi as i128 - lo as i128 - 1) / l.step as i128 + 1) as u64;
                iv.push(0);
                debug_assert_eq!(iv.len(), l.depth + 1);
                for n in 0..count {
                    let k = if l.reverse { count - 1 - n } else { n };
                    iv[l.depth] = (lo as i128 + k as i128 * l.step as i128) as i64;
                    walk(&l.body, iv, visit)?;
                }
                iv.pop();
            }
        }
    }
    Ok(())
}
