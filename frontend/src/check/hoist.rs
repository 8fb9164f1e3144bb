//! Reductions nested inside expressions, lowered through temporaries.
//!
//! `C[i, j] = alpha * sum(k) A[i, k] * B[k, j];` is rewritten, before checking, into
//!
//! ```text
//! let C_sum0: f64[NI, NJ];          // at the kernel's top level
//! C_sum0[i, j] = sum(k) A[i, k] * B[k, j];
//! C[i, j] = alpha * C_sum0[i, j];
//! ```
//!
//! The temporary is indexed by the statement's spatial variables that the reduction uses
//! (with the extents of the target dimensions they index) and placed just before the
//! statement, inside the same loops and guards; its element type is the reduction body's
//! own. A reduction inside the new statement's reduction is hoisted again when that
//! statement is rewritten in turn. A statement is left as written (and the checker reports
//! E0501) when the reduction reads the array the statement writes (computing it first would
//! change what it reads) or uses a variable of the statement that is not a bare index of
//! the target.

use super::scope::Scope;
use super::value::ValueChecker;
use crate::ast::{ArrayDecl, Else, Expr, ExprKind, Ident, IfItem, Item, KernelDecl, StmtDecl};
use crate::ir::{Array, Role, Type};
use std::borrow::Cow;
use std::collections::HashSet;

/// `k` with every nested reduction of its statements hoisted into a temporary (borrowed
/// unchanged when there is none).
pub fn nested_reductions(k: &KernelDecl) -> Cow<'_, KernelDecl> {
    let decls: Vec<&ArrayDecl> = (k.args.iter().map(|a| &a.decl))
        .chain(&k.outputs)
        .chain(lets(&k.body))
        .collect();
    // The element types are all inference needs; extents and roles do not matter here.
    let arrays: Vec<Array> = (decls.iter())
        .map(|d| Array {
            name: d.name.name.clone(),
            elem: d.elem,
            dims: Vec::new(),
            role: Role::Temp,
            span: d.span,
        })
        .collect();
    let mut hoister = Hoister {
        decls: &decls,
        arrays: &arrays,
        params: k.params.iter().map(|p| p.name.name.clone()).collect(),
        taken: names(k),
        temps: Vec::new(),
    };
    let body = hoister.items(&k.body, &[]);
    if hoister.temps.is_empty() {
        return Cow::Borrowed(k);
    }
    let mut out = k.clone();
    out.body = body;
    out.body.extend(hoister.temps.into_iter().map(Item::Let));
    Cow::Owned(out)
}

/// The `let` declarations anywhere in `items`.
fn lets(items: &[Item]) -> Vec<&ArrayDecl> {
    let mut found = Vec::new();
    crate::ast::walk_items(items, &mut |item| {
        if let Item::Let(d) = item {
            found.push(d);
        }
    });
    found
}

/// Every name written anywhere in `k` (declarations, parameters, loop variables, labels and
/// names in expressions), so that a temporary's name clashes with none.
fn names(k: &KernelDecl) -> HashSet<String> {
    let mut taken: HashSet<String> = (k.args.iter().map(|a| &a.decl.name))
        .chain(k.outputs.iter().map(|d| &d.name))
        .chain(k.params.iter().map(|p| &p.name))
        .map(|i| i.name.clone())
        .collect();
    let mut add = |e: &Expr| {
        e.walk(&mut |x| match &x.kind {
            ExprKind::Name(n) => {
                taken.insert(n.clone());
            }
            ExprKind::Index(a, _) | ExprKind::Call(a, _) => {
                taken.insert(a.name.clone());
            }
            ExprKind::Reduce(_, vars, _) => taken.extend(vars.iter().map(|v| v.name.clone())),
            _ => {}
        })
    };
    let mut exprs: Vec<&Expr> = Vec::new();
    let mut idents: Vec<&Ident> = Vec::new();
    crate::ast::walk_items(&k.body, &mut |item| match item {
        Item::Let(d) => idents.push(&d.name),
        Item::For(l) => {
            idents.push(&l.var);
            exprs.extend([&l.lower, &l.upper]);
        }
        Item::If(i) => exprs.push(&i.cond),
        Item::Stmt(s) => {
            idents.extend(s.label.iter().chain([&s.target]));
            exprs.extend(s.indices.iter().chain([&s.rhs]));
        }
    });
    exprs.into_iter().for_each(&mut add);
    taken.extend(idents.into_iter().map(|i| i.name.clone()));
    taken
}

/// Rewrites statements, collecting the temporaries' declarations.
struct Hoister<'a> {
    decls: &'a [&'a ArrayDecl],
    arrays: &'a [Array],
    params: Vec<String>,
    taken: HashSet<String>,
    temps: Vec<ArrayDecl>,
}

impl Hoister<'_> {
    /// `items` rewritten; `loops` are the variables of the enclosing `for`s.
    fn items(&mut self, items: &[Item], loops: &[String]) -> Vec<Item> {
        let mut out = Vec::new();
        for item in items {
            match item {
                Item::Let(_) => out.push(item.clone()),
                Item::Stmt(s) => self.stmt(s, loops, &mut out),
                Item::For(l) => {
                    let mut inner = loops.to_vec();
                    inner.push(l.var.name.clone());
                    let mut l = l.clone();
                    l.body = self.items(&l.body, &inner);
                    out.push(Item::For(l));
                }
                Item::If(i) => out.push(Item::If(self.if_item(i, loops))),
            }
        }
        out
    }

    fn if_item(&mut self, i: &IfItem, loops: &[String]) -> IfItem {
        IfItem {
            cond: i.cond.clone(),
            then: self.items(&i.then, loops),
            otherwise: i.otherwise.as_ref().map(|e| match e {
                Else::Block(b) => Else::Block(self.items(b, loops)),
                Else::If(inner) => Else::If(Box::new(self.if_item(inner, loops))),
            }),
            span: i.span,
        }
    }

    /// Pushes `s`, preceded by the statements computing its nested reductions.
    fn stmt(&mut self, s: &StmtDecl, loops: &[String], out: &mut Vec<Item>) {
        let written = s;
        let mut s = s.clone();
        let spatial = self.spatial(written, loops);
        // A top-level reduction stays; only reductions inside its body or inside an
        // expression are hoisted.
        let rhs = match &mut s.rhs.kind {
            ExprKind::Reduce(_, _, body) => body.as_mut(),
            _ => &mut s.rhs,
        };
        let mut before = Vec::new();
        self.expr(rhs, written, &spatial, loops, &mut before);
        for t in before {
            // the temporary's statement may hold reductions nested deeper
            self.stmt(&t, loops, out);
        }
        out.push(Item::Stmt(s));
    }

    /// The statement's spatial variables: bare target indices that are not enclosing loop
    /// variables, parameters or arrays, with the target dimension each indexes first.
    fn spatial(&self, s: &StmtDecl, loops: &[String]) -> Vec<(String, usize)> {
        let mut found: Vec<(String, usize)> = Vec::new();
        for (d, ix) in s.indices.iter().enumerate() {
            if let ExprKind::Name(n) = &ix.kind {
                let bound = loops.contains(n)
                    || self.params.contains(n)
                    || self.arrays.iter().any(|a| &a.name == n);
                if !bound && !found.iter().any(|(m, _)| m == n) {
                    found.push((n.clone(), d));
                }
            }
        }
        found
    }

    /// Replaces every hoistable reduction in `e` by a read of its temporary, pushing the
    /// temporary's statement to `before`.
    fn expr(
        &mut self,
        e: &mut Expr,
        s: &StmtDecl,
        spatial: &[(String, usize)],
        loops: &[String],
        before: &mut Vec<StmtDecl>,
    ) {
        if let ExprKind::Reduce(..) = &e.kind {
            if let Some((temp, read)) = self.hoist(e, s, spatial, loops) {
                before.push(temp);
                *e = read;
                return;
            }
        }
        match &mut e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Name(_) => {}
            ExprKind::Index(_, args) | ExprKind::Call(_, args) => {
                (args.iter_mut()).for_each(|a| self.expr(a, s, spatial, loops, before))
            }
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Reduce(_, _, x) => {
                self.expr(x, s, spatial, loops, before)
            }
            ExprKind::Arith(_, a, b) | ExprKind::Compare(_, a, b) | ExprKind::Logic(_, a, b) => {
                self.expr(a, s, spatial, loops, before);
                self.expr(b, s, spatial, loops, before);
            }
            ExprKind::Select(c, a, b) => {
                for x in [c, a, b] {
                    self.expr(x, s, spatial, loops, before);
                }
            }
        }
    }

    /// The statement computing reduction `r` into a new temporary, and the temporary's read
    /// that replaces it; `None` when hoisting would change the meaning (see the module doc).
    fn hoist(
        &mut self,
        r: &Expr,
        s: &StmtDecl,
        spatial: &[(String, usize)],
        loops: &[String],
    ) -> Option<(StmtDecl, Expr)> {
        let ExprKind::Reduce(op, vars, body) = &r.kind else {
            return None;
        };
        let target = self.decls.iter().find(|d| d.name.name == s.target.name)?;
        let mut used: Vec<String> = Vec::new();
        let mut reads_target = false;
        body.walk(&mut |x| match &x.kind {
            ExprKind::Name(n) => used.push(n.clone()),
            ExprKind::Index(a, _) => reads_target |= a.name == s.target.name,
            _ => {}
        });
        if reads_target || used.contains(&s.target.name) {
            return None;
        }
        let free = |n: &String| {
            !vars.iter().any(|v| &v.name == n)
                && !loops.contains(n)
                && !self.params.contains(n)
                && !self.arrays.iter().any(|a| &a.name == n)
        };
        let free: Vec<String> = used.into_iter().filter(free).collect();
        if free.iter().any(|n| !spatial.iter().any(|(m, _)| m == n)) {
            return None;
        }
        // the temporary's dimensions: the spatial variables it uses, in target order
        let dims: Vec<&(String, usize)> =
            (spatial.iter()).filter(|(n, _)| free.contains(n)).collect();
        let scope = Scope::new(&[], self.arrays);
        let elem = match (ValueChecker { scope: &scope }).infer(body) {
            Some(Type::Elem(e)) => e,
            _ => target.elem,
        };
        let name = self.fresh(&format!("{}_{}", s.target.name, op.keyword()));
        let ident = Ident {
            name: name.clone(),
            span: r.span,
        };
        let index = |n: &str| Expr {
            kind: ExprKind::Name(n.to_string()),
            span: r.span,
        };
        let indices: Vec<Expr> = dims.iter().map(|(n, _)| index(n)).collect();
        // a target of the wrong rank is reported by the checker, on the statement as written
        let extents = (dims.iter())
            .map(|(_, d)| target.dims.get(*d).cloned())
            .collect::<Option<Vec<Expr>>>()?;
        self.temps.push(ArrayDecl {
            name: ident.clone(),
            elem,
            dims: extents,
            tier: None,
            span: r.span,
        });
        let read = Expr {
            kind: if indices.is_empty() {
                ExprKind::Name(name.clone())
            } else {
                ExprKind::Index(ident.clone(), indices.clone())
            },
            span: r.span,
        };
        let temp = StmtDecl {
            label: (s.label.as_ref()).map(|l| Ident {
                name: self.fresh(&format!("{}_{}", l.name, op.keyword())),
                span: l.span,
            }),
            target: ident,
            indices,
            op: crate::ir::AssignOp::Assign,
            rhs: r.clone(),
            span: r.span,
        };
        Some((temp, read))
    }

    /// `base` followed by the first number that makes a name used nowhere in the kernel.
    fn fresh(&mut self, base: &str) -> String {
        let name = (0..)
            .map(|k| format!("{base}{k}"))
            .find(|n| !self.taken.contains(n))
            .expect("an unbounded range has a free name");
        self.taken.insert(name.clone());
        name
    }
}
