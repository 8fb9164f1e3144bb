//! Test-case reduction: a failing kernel made as small as it can be while it still fails.
//!
//! [`shrink`] works on the surface syntax tree (parsed and printed back by the front end), as
//! C-Reduce does on C, greedily: it tries one smaller variant after another and keeps the
//! first that still compiles and still fails, until none does. The variants, largest cut
//! first:
//! - an item (statement, loop, guard) removed; a loop or guard replaced by its body (the
//!   `else` block for a guard's second try); an `else` dropped;
//! - a right-hand side sub-expression replaced by one of its operands, a literal by `1`;
//! - a parameter's default lowered (halved, then by one);
//! - an argument or output no statement uses removed.
//!
//! Every variant is checked by the front end before the predicate sees it, so a predicate
//! only ever runs valid kernels. The result is a local minimum: no single variant of it
//! fails.

use frontend::ast::{Else, Expr, ExprKind, File, IfItem, Item, KernelDecl};
use frontend::SourceFile;

/// The smallest kernel reached from `text` for which `fails` holds (`text` itself, printed
/// back, when no variant fails; `text` unchanged when it does not parse). `fails` is called
/// on printed kernels that the front end accepts; `budget` bounds how many times.
pub fn shrink(text: &str, budget: usize, mut fails: impl FnMut(&str) -> bool) -> String {
    let Ok(mut file) = frontend::parse(&SourceFile::new("shrink.pk", text)) else {
        return text.to_string();
    };
    let mut calls = 0;
    'improve: loop {
        for candidate in variants(&file) {
            let printed = frontend::printer::print_file(&candidate);
            if frontend::compile(&SourceFile::new("shrink.pk", printed.as_str())).is_err() {
                continue;
            }
            if calls == budget {
                break 'improve;
            }
            calls += 1;
            if fails(&printed) {
                file = candidate;
                continue 'improve;
            }
        }
        break;
    }
    frontend::printer::print_file(&file)
}

/// Every one-step-smaller variant of a file's first kernel.
fn variants(file: &File) -> Vec<File> {
    let Some(k) = file.kernels.first() else {
        return Vec::new();
    };
    let with = |k: KernelDecl| File { kernels: vec![k] };
    let mut out: Vec<File> = (item_lists(&k.body).into_iter())
        .map(|body| with(KernelDecl { body, ..k.clone() }))
        .collect();
    for (p, param) in k.params.iter().enumerate() {
        let Some(d) = param.default else { continue };
        for lower in [d / 2, d - 1] {
            if lower >= 1 && lower < d {
                let mut smaller = k.clone();
                smaller.params[p].default = Some(lower);
                out.push(with(smaller));
            }
        }
    }
    for a in 0..k.args.len() {
        let mut fewer = k.clone();
        fewer.args.remove(a);
        out.push(with(fewer));
    }
    for o in 0..k.outputs.len() {
        let mut fewer = k.clone();
        fewer.outputs.remove(o);
        out.push(with(fewer));
    }
    out
}

/// The one-step-smaller variants of a list of items.
fn item_lists(items: &[Item]) -> Vec<Vec<Item>> {
    let mut out = Vec::new();
    let spliced = |i: usize, middle: &[Item]| -> Vec<Item> {
        (items[..i].iter())
            .chain(middle)
            .chain(&items[i + 1..])
            .cloned()
            .collect()
    };
    for (i, item) in items.iter().enumerate() {
        out.push(spliced(i, &[]));
        match item {
            Item::For(l) => out.push(spliced(i, &l.body)),
            Item::If(g) => {
                out.push(spliced(i, &g.then));
                if let Some(Else::Block(b)) = &g.otherwise {
                    out.push(spliced(i, b));
                }
            }
            Item::Let(_) | Item::Stmt(_) => {}
        }
        for smaller in item_variants(item) {
            out.push(spliced(i, &[smaller]));
        }
    }
    out
}

/// The one-step-smaller variants of one item, the item kept.
fn item_variants(item: &Item) -> Vec<Item> {
    match item {
        Item::Let(_) => Vec::new(),
        Item::For(l) => (item_lists(&l.body).into_iter())
            .map(|body| Item::For(frontend::ast::ForLoop { body, ..l.clone() }))
            .collect(),
        Item::If(g) => if_variants(g).into_iter().map(Item::If).collect(),
        Item::Stmt(s) => (expr_variants(&s.rhs).into_iter())
            .map(|rhs| {
                let mut s = s.clone();
                s.rhs = rhs;
                Item::Stmt(s)
            })
            .collect(),
    }
}

fn if_variants(g: &IfItem) -> Vec<IfItem> {
    let mut out: Vec<IfItem> = (item_lists(&g.then).into_iter())
        .map(|then| IfItem { then, ..g.clone() })
        .collect();
    match &g.otherwise {
        None => {}
        Some(e) => {
            out.push(IfItem {
                otherwise: None,
                ..g.clone()
            });
            let inner: Vec<Else> = match e {
                Else::Block(b) => item_lists(b).into_iter().map(Else::Block).collect(),
                Else::If(inner) => (if_variants(inner).into_iter())
                    .map(|i| Else::If(Box::new(i)))
                    .collect(),
            };
            out.extend(inner.into_iter().map(|e| IfItem {
                otherwise: Some(e),
                ..g.clone()
            }));
        }
    }
    out
}

/// The one-step-smaller variants of an expression: an operand in its place, a literal
/// made `1`, or one operand replaced by one of its own variants.
fn expr_variants(e: &Expr) -> Vec<Expr> {
    let mut out: Vec<Expr> = children(e).into_iter().cloned().collect();
    match &e.kind {
        ExprKind::Int(v) if *v != 1 => out.push(Expr {
            kind: ExprKind::Int(1),
            span: e.span,
        }),
        ExprKind::Float(v) if *v != 1.0 => out.push(Expr {
            kind: ExprKind::Float(1.0),
            span: e.span,
        }),
        _ => {}
    }
    for c in 0..children(e).len() {
        for smaller in expr_variants(children(e)[c]) {
            let mut copy = e.clone();
            *children_mut(&mut copy).remove(c) = smaller;
            out.push(copy);
        }
    }
    out
}

fn children(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Name(_) => Vec::new(),
        ExprKind::Index(_, args) | ExprKind::Call(_, args) => args.iter().collect(),
        ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Reduce(_, _, x) => vec![x],
        ExprKind::Arith(_, a, b) | ExprKind::Compare(_, a, b) | ExprKind::Logic(_, a, b) => {
            vec![a, b]
        }
        ExprKind::Select(c, a, b) => vec![c, a, b],
    }
}

fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match &mut e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Name(_) => Vec::new(),
        ExprKind::Index(_, args) | ExprKind::Call(_, args) => args.iter_mut().collect(),
        ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Reduce(_, _, x) => vec![x],
        ExprKind::Arith(_, a, b) | ExprKind::Compare(_, a, b) | ExprKind::Logic(_, a, b) => {
            vec![a, b]
        }
        ExprKind::Select(c, a, b) => vec![c, a, b],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the statements of a printed kernel.
    fn statements(text: &str) -> usize {
        text.lines().filter(|l| l.trim_end().ends_with(';')).count()
    }

    #[test]
    fn a_program_shrinks_to_the_statement_that_fails() {
        let text = crate::generate(11);
        // "fails" when some statement still writes A1 with a subtraction
        let fails = |t: &str| t.lines().any(|l| l.contains("A1[") && l.contains("-="));
        assert!(fails(&text) && statements(&text) > 3, "{text}");
        let small = shrink(&text, 10_000, fails);
        assert!(fails(&small), "{small}");
        assert_eq!(statements(&small), 1, "{small}");
        // a local minimum: the one statement's right-hand side is as small as it gets
        let line = small.lines().find(|l| l.contains("-=")).unwrap();
        assert!(line.trim().len() < 30, "{small}");
        frontend::compile(&SourceFile::new("s.pk", small.as_str())).expect("valid");
    }

    #[test]
    fn the_budget_bounds_the_predicates_calls() {
        let mut calls = 0;
        let text = crate::generate(3);
        let out = shrink(&text, 5, |_| {
            calls += 1;
            false
        });
        assert_eq!(calls, 5);
        assert_eq!(
            out,
            frontend::printer::print_file(
                &frontend::parse(&SourceFile::new("s.pk", text.as_str())).unwrap()
            )
        );
    }
}
