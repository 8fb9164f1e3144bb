//! The checker: resolves names, checks types, shapes and affinity, and lowers each kernel
//! of a parsed file to the checked [`ir::Kernel`].

mod affine;
pub(crate) mod cond;
mod hoist;
mod intrinsic;
mod names;
mod scope;
mod stmt;
mod value;

use crate::ast::{self, Else, IfItem, Item, KernelDecl, Qualifier};
use crate::diagnostics::{AffineContext, Code, Diagnostic};
use crate::ir::{self, Array, Kernel, Node, Param, Role};
use crate::printer::print_expr;
use crate::span::Span;
use intrinsic::decl_kinds;
use names::Namer;
use scope::{Resolved, Scope};
use std::collections::HashMap;

/// Checks every kernel of `file` (whose text is `text_len` bytes long); returns the kernels
/// and the errors found (the kernels are only meaningful if there are none).
pub fn check_file(file: &ast::File, text_len: usize) -> (Vec<Kernel>, Vec<Diagnostic>) {
    let (kernels, mut diags) = check_decls(file, text_len);
    diags.extend(decl_kinds(file, ast::DeclKind::Kernel));
    (kernels, diags)
}

/// Checks an intrinsic file: every declaration an `intrinsic`, each lowered like a kernel
/// and paired with the tiers of its operands.
pub fn check_intrinsics(
    file: &ast::File,
    text_len: usize,
) -> (Vec<ir::Intrinsic>, Vec<Diagnostic>) {
    let (kernels, mut diags) = check_decls(file, text_len);
    diags.extend(decl_kinds(file, ast::DeclKind::Intrinsic));
    let (intrinsics, more) = intrinsic::with_tiers(file, kernels);
    diags.extend(more);
    (intrinsics, diags)
}

fn check_decls(file: &ast::File, text_len: usize) -> (Vec<Kernel>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    if file.kernels.is_empty() {
        diags.push(Diagnostic::new(
            Code::NoKernel,
            "the file contains no kernel",
            Span::new(text_len, text_len),
            "expected `kernel NAME(...) { ... }`",
        ));
    }
    let mut kernels = Vec::new();
    for (k, decl) in file.kernels.iter().enumerate() {
        if let Some(first) = file.kernels[..k]
            .iter()
            .find(|d| d.name.name == decl.name.name)
        {
            diags.push(
                Diagnostic::new(
                    Code::Duplicate,
                    format!("kernel `{}` is defined twice", decl.name.name),
                    decl.name.span,
                    "second definition",
                )
                .with_secondary(first.name.span, "first definition"),
            );
        }
        let mut checker = KernelChecker { diags: Vec::new() };
        let kernel = checker.kernel(decl);
        diags.append(&mut checker.diags);
        kernels.push(kernel);
    }
    (kernels, diags)
}

struct KernelChecker {
    diags: Vec<Diagnostic>,
}

impl KernelChecker {
    fn kernel(&mut self, k: &KernelDecl) -> Kernel {
        let k = &*hoist::nested_reductions(k);
        let params: Vec<Param> = k
            .params
            .iter()
            .map(|p| Param {
                name: p.name.name.clone(),
                default: p.default,
                span: p.name.span,
            })
            .collect();
        // Misplaced (nested) lets are reported but still declared, to avoid cascades.
        let mut lets = Vec::new();
        ast::walk_items(&k.body, &mut |item| {
            if let Item::Let(d) = item {
                lets.push((d, Role::Temp));
            }
        });
        let decls: Vec<(&ast::ArrayDecl, Role)> = k
            .args
            .iter()
            .map(|a| {
                let role = match a.qualifier {
                    None | Some(Qualifier::In) => Role::In,
                    Some(Qualifier::Out) => Role::Out,
                    Some(Qualifier::InOut) => Role::InOut,
                };
                (&a.decl, role)
            })
            .chain(k.outputs.iter().map(|d| (d, Role::Out)))
            .chain(lets)
            .collect();
        let mut arrays: Vec<Array> = decls
            .iter()
            .map(|(d, role)| Array {
                name: d.name.name.clone(),
                elem: d.elem,
                dims: Vec::new(),
                role: *role,
                span: d.span,
            })
            .collect();
        let names = k.params.iter().map(|p| &p.name);
        self.duplicates(
            names.chain(decls.iter().map(|(d, _)| &d.name)),
            Code::Duplicate,
            "name",
        );
        let dims: Vec<Vec<ir::AffExpr>> = {
            let scope = Scope::new(&params, &arrays);
            decls
                .iter()
                .map(|(d, _)| {
                    d.dims
                        .iter()
                        .filter_map(|e| {
                            let what = format!("extent `{}` of `{}`", print_expr(e), d.name.name);
                            self.ok(affine::affine(e, &scope, AffineContext::Extent, &what))
                        })
                        .collect()
                })
                .collect()
        };
        for (a, d) in arrays.iter_mut().zip(dims) {
            a.dims = d;
        }
        let scope = Scope::new(&params, &arrays);
        let param_constraints = k
            .constraint
            .iter()
            .filter_map(|c| self.ok(cond::condition(c, &scope, AffineContext::Constraint)))
            .collect();
        let mut namer = Namer::new(self.labels(&k.body));
        let mut scope = scope;
        let body = self.items(&k.body, &mut scope, &mut namer, true);
        Kernel {
            name: k.name.name.clone(),
            params: params.clone(),
            param_constraints,
            arrays: arrays.clone(),
            body,
        }
    }

    /// Reports every name of `names` that repeats an earlier one.
    fn duplicates<'a>(
        &mut self,
        names: impl Iterator<Item = &'a ast::Ident>,
        code: Code,
        what: &str,
    ) {
        let mut first: HashMap<&str, &ast::Ident> = HashMap::new();
        for name in names {
            match first.get(name.name.as_str()) {
                Some(earlier) => self.diags.push(
                    Diagnostic::new(
                        code,
                        format!("{what} `{}` is declared twice", name.name),
                        name.span,
                        "second declaration",
                    )
                    .with_secondary(earlier.span, "first declaration"),
                ),
                None => {
                    first.insert(&name.name, name);
                }
            }
        }
    }

    fn ok<T>(&mut self, r: Result<T, Diagnostic>) -> Option<T> {
        r.map_err(|d| self.diags.push(d)).ok()
    }

    /// The explicit labels, in textual order; reports duplicates.
    fn labels(&mut self, items: &[Item]) -> Vec<String> {
        let mut found: Vec<&ast::Ident> = Vec::new();
        ast::walk_items(items, &mut |item| {
            if let Item::Stmt(s) = item {
                found.extend(&s.label);
            }
        });
        self.duplicates(found.iter().copied(), Code::DuplicateLabel, "label");
        found.iter().map(|l| l.name.clone()).collect()
    }

    fn items(
        &mut self,
        items: &[Item],
        scope: &mut Scope,
        namer: &mut Namer,
        top: bool,
    ) -> Vec<Node> {
        let mut nodes = Vec::new();
        for item in items {
            match item {
                Item::Let(d) if !top => self.diags.push(Diagnostic::new(
                    Code::NestedLet,
                    format!("`let {}` must be at the kernel's top level", d.name.name),
                    d.span,
                    "inside a loop or guard",
                )),
                Item::Let(_) => {}
                Item::Stmt(s) => match stmt::check_stmt(s, scope, namer) {
                    Ok(mut n) => nodes.append(&mut n),
                    Err(mut d) => self.diags.append(&mut d),
                },
                Item::For(l) => nodes.extend(self.for_loop(l, scope, namer)),
                Item::If(i) => nodes.extend(self.if_item(i, scope, namer)),
            }
        }
        nodes
    }

    fn for_loop(&mut self, l: &ast::ForLoop, scope: &mut Scope, namer: &mut Namer) -> Option<Node> {
        let shadowed = match scope.resolve(&l.var.name) {
            Resolved::Unknown => None,
            Resolved::Loop => Some("an enclosing loop variable"),
            Resolved::Param => Some("a parameter"),
            Resolved::Array(_) => Some("an array"),
        };
        if let Some(what) = shadowed {
            self.diags.push(Diagnostic::new(
                Code::Shadowing,
                format!("loop variable `{}` shadows {what}", l.var.name),
                l.var.span,
                format!("`{}` is already {what}", l.var.name),
            ));
        }
        let bound = |e: &ast::Expr| format!("loop bound `{}`", print_expr(e));
        let lower = self.ok(affine::affine(
            &l.lower,
            scope,
            AffineContext::Bound,
            &bound(&l.lower),
        ));
        let upper = self.ok(affine::affine(
            &l.upper,
            scope,
            AffineContext::Bound,
            &bound(&l.upper),
        ));
        let step = match l.step {
            None => Some(1),
            Some((s, _)) if s > 0 => Some(s),
            Some((_, span)) => {
                self.diags.push(Diagnostic::new(
                    Code::BadStep,
                    "the loop step must be a positive integer",
                    span,
                    "not positive",
                ));
                None
            }
        };
        scope.loops.push(l.var.name.clone());
        let body = self.items(&l.body, scope, namer, false);
        scope.loops.pop();
        Some(Node::Loop(ir::Loop {
            var: l.var.name.clone(),
            lower: lower?,
            upper: upper?,
            step: step?,
            reverse: l.reverse,
            body,
            span: l.span,
        }))
    }

    fn if_item(&mut self, i: &IfItem, scope: &mut Scope, namer: &mut Namer) -> Vec<Node> {
        let cond = self.ok(cond::condition(&i.cond, scope, AffineContext::Guard));
        let then = self.items(&i.then, scope, namer, false);
        let otherwise = match &i.otherwise {
            None => None,
            Some(Else::Block(b)) => Some(self.items(b, scope, namer, false)),
            Some(Else::If(inner)) => Some(self.if_item(inner, scope, namer)),
        };
        let Some(cond) = cond else {
            return Vec::new();
        };
        let mut nodes = vec![Node::If(ir::If {
            cond: cond.clone(),
            then,
            span: i.span,
        })];
        if let Some(otherwise) = otherwise {
            nodes.push(Node::If(ir::If {
                cond: cond::negate(cond),
                then: otherwise,
                span: i.span,
            }));
        }
        nodes
    }
}
