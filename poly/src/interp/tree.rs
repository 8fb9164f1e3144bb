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
    /// The statements of the body, if it holds nothing else (an innermost loop).
    leaf_stmts: Option<Vec<usize>>,
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
                    let body = body?;
                    let leaf_stmts = body
                        .iter()
                        .map(|n| match n {
                            Node::Stmt(k) => Some(*k),
                            _ => None,
                        })
                        .collect();
                    Node::Loop(Loop {
                        depth,
                        leaf_stmts,
                        lower,
                        upper,
                        step: l.step,
                        reverse: l.reverse,
                        body,
                    })
                }
            })
        })
        .collect()
}

/// The values a loop takes, in visiting order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoopValues {
    /// The smallest value.
    lower: i64,
    /// The step, at least 1.
    step: i64,
    /// How many values, at least 1.
    pub(crate) count: u64,
    /// Whether they are visited from the largest down.
    reverse: bool,
}

impl LoopValues {
    /// The `n`-th value visited.
    #[inline]
    pub(crate) fn nth(&self, n: u64) -> i64 {
        let k = if self.reverse { self.count - 1 - n } else { n };
        (self.lower as i128 + k as i128 * self.step as i128) as i64
    }

    /// The difference between consecutive visited values.
    pub(crate) fn stride(&self) -> i64 {
        if self.reverse {
            -self.step
        } else {
            self.step
        }
    }
}

/// What a walk of the loop tree does with the statement instances it meets.
pub(crate) trait Visitor {
    /// What stops the walk.
    type Error;

    /// One instance of statement `stmt`.
    fn instance(&mut self, stmt: usize, iv: &[i64]) -> Result<(), Self::Error>;

    /// All instances of an innermost loop whose body is the statements `stmts`: for each
    /// value of `values` (stored in the last entry of `iv`), each statement in turn.
    fn innermost(
        &mut self,
        stmts: &[usize],
        iv: &mut [i64],
        values: LoopValues,
    ) -> Result<(), Self::Error> {
        each_instance(self, stmts, iv, values)
    }
}

/// The plain way of [`Visitor::innermost`]: one [`Visitor::instance`] call per instance.
pub(crate) fn each_instance<V: Visitor + ?Sized>(
    visitor: &mut V,
    stmts: &[usize],
    iv: &mut [i64],
    values: LoopValues,
) -> Result<(), V::Error> {
    let last = iv.len() - 1;
    for n in 0..values.count {
        iv[last] = values.nth(n);
        for &k in stmts {
            visitor.instance(k, iv)?;
        }
    }
    Ok(())
}

/// Visits every statement instance under `nodes` in the original order (`iv` holds the
/// enclosing loops' values on entry, and is restored on successful return).
pub(crate) fn walk<V: Visitor>(
    nodes: &[Node],
    iv: &mut Vec<i64>,
    visitor: &mut V,
) -> Result<(), V::Error> {
    for node in nodes {
        match node {
            Node::Stmt(k) => visitor.instance(*k, iv)?,
            Node::If(cond, body) => {
                if cond.holds(iv) {
                    walk(body, iv, visitor)?;
                }
            }
            Node::Loop(l) => {
                let (lo, hi) = (l.lower.eval(iv), l.upper.eval(iv));
                if lo >= hi {
                    continue;
                }
                let values = LoopValues {
                    lower: lo,
                    step: l.step,
                    count: ((hi as i128 - lo as i128 - 1) / l.step as i128 + 1) as u64,
                    reverse: l.reverse,
                };
                iv.push(0);
                debug_assert_eq!(iv.len(), l.depth + 1);
                match &l.leaf_stmts {
                    // An empty loop does nothing, however many values it has.
                    Some(stmts) if stmts.is_empty() => {}
                    Some(stmts) => visitor.innermost(stmts, iv, values)?,
                    None => {
                        for n in 0..values.count {
                            iv[l.depth] = values.nth(n);
                            walk(&l.body, iv, visitor)?;
                        }
                    }
                }
                iv.pop();
            }
        }
    }
    Ok(())
}
