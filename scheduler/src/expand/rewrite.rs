//! The kernel with each planned web given an array of its own.

use super::analysis::{CopyOut, Plan, Web};
use frontend::ir::{
    Access, AffExpr, Array, ArrayId, AssignOp, Expr, ExprKind, If, Kernel, Loop, Node, Role, Stmt,
    Type, Var,
};
use std::fmt;

/// One array a web was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expansion {
    /// The array expanded.
    pub array: String,
    /// The web's new array.
    pub into: String,
    /// The loops along which it was expanded, outermost first.
    pub along: Vec<String>,
    /// Whether the array's final contents are copied back from the new one after the loops.
    pub copied_out: bool,
}

impl fmt::Display for Expansion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` expanded along ({}) into `{}`",
            self.array,
            self.along.join(", "),
            self.into
        )?;
        if self.copied_out {
            write!(
                f,
                ", its final contents copied back from the last iteration"
            )?;
        }
        Ok(())
    }
}

/// `kernel` with the webs of `plans` rewritten to arrays of their own, named from `prefix`
/// (a prefix no name of the kernel begins with).
pub fn rewrite(kernel: &Kernel, plans: &[Plan], prefix: &str) -> (Kernel, Vec<Expansion>) {
    let mut out = kernel.clone();
    let mut done = Vec::new();
    for plan in plans {
        let decl = kernel.array(plan.array).clone();
        for (n, web) in plan.webs.iter().enumerate() {
            let id = ArrayId(out.arrays.len());
            let into = format!("{prefix}{}_{n}", decl.name);
            let mut dims = web.extents.clone();
            dims.extend(decl.dims.iter().cloned());
            out.arrays.push(Array {
                name: into.clone(),
                dims,
                role: Role::Temp,
                ..decl.clone()
            });
            redirect(&mut out.body, plan.array, web, id);
            if let Some(c) = &plan.copy_out {
                out.body.push(copy_back(&decl, plan.array, id, c, prefix));
            }
            done.push(Expansion {
                array: decl.name.clone(),
                into,
                along: web.along.clone(),
                copied_out: plan.copy_out.is_some(),
            });
        }
    }
    (out, done)
}

/// Every access to `array` by a statement of `web` redirected to `into`, indexed first by
/// the web's iteration of its common loops.
fn redirect(nodes: &mut [Node], array: ArrayId, web: &Web, into: ArrayId) {
    for node in nodes {
        match node {
            Node::Loop(l) => redirect(&mut l.body, array, web, into),
            Node::If(i) => redirect(&mut i.then, array, web, into),
            Node::Stmt(s) if web.statements.contains(&s.name) => {
                let mut access = |a: &mut Access| {
                    if a.array == array {
                        a.array = into;
                        let mut indices = web.index.clone();
                        indices.append(&mut a.indices);
                        a.indices = indices;
                    }
                };
                access(&mut s.target);
                visit_reads(&mut s.rhs, &mut access);
            }
            Node::Stmt(_) => {}
        }
    }
}

fn visit_reads(e: &mut Expr, f: &mut impl FnMut(&mut Access)) {
    if let ExprKind::Read(a) = &mut e.kind {
        f(a);
    }
    e.children_mut().into_iter().for_each(|c| visit_reads(c, f));
}

/// `if (the loops ran) for e...: array[e] = into[last][e]`.
fn copy_back(decl: &Array, array: ArrayId, into: ArrayId, c: &CopyOut, prefix: &str) -> Node {
    let vars: Vec<String> = (0..decl.dims.len())
        .map(|k| format!("{prefix}e{k}"))
        .collect();
    let element: Vec<AffExpr> = vars
        .iter()
        .map(|v| AffExpr::Var(Var::Loop(v.clone())))
        .collect();
    let mut from = c.last.clone();
    from.extend(element.iter().cloned());
    let access = |array, indices| Access {
        array,
        indices,
        span: decl.span,
    };
    let mut node = Node::Stmt(Stmt {
        name: format!("{prefix}copy_{}", decl.name),
        target: access(array, element),
        op: AssignOp::Assign,
        rhs: Expr {
            kind: ExprKind::Read(access(into, from)),
            ty: Type::Elem(decl.elem),
        },
        span: decl.span,
    });
    for (v, (lower, upper)) in vars.iter().zip(&c.elements).rev() {
        node = Node::Loop(Loop {
            var: v.clone(),
            lower: lower.clone(),
            upper: upper.clone(),
            step: 1,
            reverse: false,
            body: vec![node],
            span: decl.span,
        });
    }
    Node::If(If {
        cond: c.nonempty.clone(),
        then: vec![node],
        span: decl.span,
    })
}
