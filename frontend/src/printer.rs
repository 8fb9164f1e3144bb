//! Pretty-printer of the surface syntax tree. Its output parses back to the same tree
//! (up to spans): parentheses are emitted exactly where precedence needs them.

use crate::ast::*;
use crate::ir::LogicOp;
use crate::parser::{NEG_OPERAND, NOT_OPERAND};
use std::fmt::Write;

/// Prints a whole file.
pub fn print_file(file: &File) -> String {
    let mut out = String::new();
    for (k, kernel) in file.kernels.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        print_kernel(&mut out, kernel);
    }
    out
}

/// Prints one expression.
pub fn print_expr(e: &Expr) -> String {
    expr_at(e, 0)
}

fn print_kernel(out: &mut String, k: &KernelDecl) {
    let args: Vec<String> = k
        .args
        .iter()
        .map(|a| match a.qualifier {
            Some(q) => decl_with(&a.decl, &format!("{} ", q.keyword())),
            None => decl_with(&a.decl, ""),
        })
        .collect();
    let _ = write!(
        out,
        "{} {}({})",
        k.kind.keyword(),
        k.name.name,
        args.join(", ")
    );
    if !k.outputs.is_empty() {
        let outs: Vec<String> = k.outputs.iter().map(|d| decl_with(d, "")).collect();
        let _ = write!(out, " -> ({})", outs.join(", "));
    }
    if !k.params.is_empty() {
        let params: Vec<String> = k
            .params
            .iter()
            .map(|p| match p.default {
                Some(v) => format!("{} = {v}", p.name.name),
                None => p.name.name.clone(),
            })
            .collect();
        let _ = write!(out, "\n  params {}", params.join(", "));
        if let Some(c) = &k.constraint {
            let _ = write!(out, " where {}", print_expr(c));
        }
    }
    out.push_str(" {\n");
    print_items(out, &k.body, 1);
    out.push_str("}\n");
}

fn decl_with(d: &ArrayDecl, qualifier: &str) -> String {
    let mut s = format!("{}: {qualifier}{}", d.name.name, d.elem);
    if !d.dims.is_empty() {
        let _ = write!(s, "[{}]", list(&d.dims));
    }
    if let Some(t) = &d.tier {
        let _ = write!(s, " @ {}", t.name);
    }
    s
}

fn list(es: &[Expr]) -> String {
    es.iter().map(print_expr).collect::<Vec<_>>().join(", ")
}

fn print_items(out: &mut String, items: &[Item], level: usize) {
    for item in items {
        print_item(out, item, level);
    }
}

fn indent(out: &mut String, level: usize) {
    out.push_str(&"  ".repeat(level));
}

fn print_item(out: &mut String, item: &Item, level: usize) {
    indent(out, level);
    match item {
        Item::Let(d) => {
            let _ = writeln!(out, "let {};", decl_with(d, ""));
        }
        Item::For(l) => {
            let range = if l.reverse {
                format!("({}..{}).rev()", print_expr(&l.lower), print_expr(&l.upper))
            } else {
                format!("{}..{}", print_expr(&l.lower), print_expr(&l.upper))
            };
            let _ = write!(out, "for {} in {range}", l.var.name);
            if let Some((s, _)) = l.step {
                let _ = write!(out, " step {s}");
            }
            out.push_str(" {\n");
            print_items(out, &l.body, level + 1);
            indent(out, level);
            out.push_str("}\n");
        }
        Item::If(i) => {
            print_if(out, i, level);
            out.push('\n');
        }
        Item::Stmt(s) => {
            if let Some(l) = &s.label {
                let _ = write!(out, "{}: ", l.name);
            }
            out.push_str(&s.target.name);
            if !s.indices.is_empty() {
                let _ = write!(out, "[{}]", list(&s.indices));
            }
            let _ = writeln!(out, " {} {};", s.op.symbol(), print_expr(&s.rhs));
        }
    }
}

fn print_if(out: &mut String, i: &IfItem, level: usize) {
    let _ = writeln!(out, "if {} {{", print_expr(&i.cond));
    print_items(out, &i.then, level + 1);
    indent(out, level);
    out.push('}');
    match &i.otherwise {
        None => {}
        Some(Else::Block(items)) => {
            out.push_str(" else {\n");
            print_items(out, items, level + 1);
            indent(out, level);
            out.push('}');
        }
        Some(Else::If(inner)) => {
            out.push_str(" else ");
            print_if(out, inner, level);
        }
    }
}

/// How tightly an expression binds (the parser's binding powers; 9 for primaries).
fn precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Reduce(..) => 0,
        ExprKind::Select(..) => 1,
        ExprKind::Logic(LogicOp::Or, ..) => 2,
        ExprKind::Logic(LogicOp::And, ..) => 3,
        ExprKind::Not(_) => NOT_OPERAND,
        ExprKind::Compare(..) => 5,
        ExprKind::Arith(ArithOp::Add | ArithOp::Sub, ..) => 6,
        ExprKind::Arith(..) => 7,
        ExprKind::Neg(_) => NEG_OPERAND,
        _ => 9,
    }
}

/// Prints `e` where the parser would accept operators binding at least as tightly as `min`.
fn expr_at(e: &Expr, min: u8) -> String {
    if precedence(e) < min {
        return format!("({})", expr_at(e, 0));
    }
    match &e.kind {
        ExprKind::Int(n) => n.to_string(),
        ExprKind::Float(x) => format!("{x:?}"),
        ExprKind::Name(n) => n.clone(),
        ExprKind::Index(a, idx) => format!("{}[{}]", a.name, list(idx)),
        ExprKind::Call(f, args) => format!("{}({})", f.name, list(args)),
        ExprKind::Neg(x) => format!("-{}", expr_at(x, NEG_OPERAND)),
        ExprKind::Not(x) => format!("not {}", expr_at(x, NOT_OPERAND)),
        ExprKind::Arith(op, a, b) => {
            let bp = precedence(e);
            format!("{} {} {}", expr_at(a, bp), op.symbol(), expr_at(b, bp + 1))
        }
        ExprKind::Compare(op, a, b) => {
            format!("{} {} {}", expr_at(a, 6), op.symbol(), expr_at(b, 6))
        }
        ExprKind::Logic(op, a, b) => {
            let bp = precedence(e);
            let word = match op {
                LogicOp::And => "and",
                LogicOp::Or => "or",
            };
            format!("{} {word} {}", expr_at(a, bp), expr_at(b, bp + 1))
        }
        ExprKind::Select(c, a, b) => {
            format!("{} ? {} : {}", expr_at(c, 2), expr_at(a, 0), expr_at(b, 1))
        }
        ExprKind::Reduce(op, vars, body) => {
            let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
            let mut b = expr_at(body, 0);
            if b.starts_with('-') {
                b = format!("({b})");
            }
            format!("{}({}) {b}", op.keyword(), names.join(", "))
        }
    }
}
