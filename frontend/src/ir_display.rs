//! A readable text form of the checked IR, for golden tests and debugging. Value expressions
//! are fully parenthesised and annotated with their types so that the lowering is visible.

use crate::ir::*;
use std::fmt::{self, Display, Formatter, Write};

impl Display for AffExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            AffExpr::Const(c) => write!(f, "{c}"),
            AffExpr::Var(v) => f.write_str(v.name()),
            AffExpr::Add(a, b) => write!(f, "({a} + {b})"),
            AffExpr::Sub(a, b) => write!(f, "({a} - {b})"),
            AffExpr::Neg(a) => write!(f, "-{a}"),
            AffExpr::Mul(c, a) => write!(f, "{c}*{a}"),
            AffExpr::FloorDiv(a, c) => write!(f, "floor({a} / {c})"),
            AffExpr::CeilDiv(a, c) => write!(f, "ceil({a} / {c})"),
            AffExpr::Mod(a, c) => write!(f, "({a} % {c})"),
            AffExpr::Min(a, b) => write!(f, "min({a}, {b})"),
            AffExpr::Max(a, b) => write!(f, "max({a}, {b})"),
        }
    }
}

impl Display for Cond {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Cond::Cmp(a, op, b) => write!(f, "{a} {} {b}", op.symbol()),
            Cond::And(a, b) => write!(f, "({a} and {b})"),
            Cond::Or(a, b) => write!(f, "({a} or {b})"),
        }
    }
}

impl Display for Type {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Type::Elem(e) => write!(f, "{e}"),
            Type::Bool => f.write_str("bool"),
        }
    }
}

/// An expression printed with the kernel's array names.
struct ShowExpr<'a>(&'a Kernel, &'a Expr);

/// An access printed with the kernel's array names.
struct ShowAccess<'a>(&'a Kernel, &'a Access);

impl Display for ShowAccess<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.array(self.1.array).name)?;
        if !self.1.indices.is_empty() {
            let idx: Vec<String> = self.1.indices.iter().map(|i| i.to_string()).collect();
            write!(f, "[{}]", idx.join(", "))?;
        }
        Ok(())
    }
}

impl Display for ShowExpr<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let k = self.0;
        let sub = |e| ShowExpr(k, e);
        match &self.1.kind {
            ExprKind::Literal(v) => match self.1.ty {
                Type::Elem(e) if !e.is_float() => write!(f, "{}:{e}", *v as i64),
                ty => write!(f, "{v:?}:{ty}"),
            },
            ExprKind::Index(a) => write!(f, "{a}:{}", self.1.ty),
            ExprKind::Read(a) => write!(f, "{}", ShowAccess(k, a)),
            ExprKind::Neg(a) => write!(f, "-{}", sub(a)),
            ExprKind::Binary(op, a, b) => {
                let op = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                };
                write!(f, "({} {op} {})", sub(a), sub(b))
            }
            ExprKind::Compare(op, a, b) => write!(f, "({} {} {})", sub(a), op.symbol(), sub(b)),
            ExprKind::Logic(op, a, b) => {
                let op = match op {
                    LogicOp::And => "and",
                    LogicOp::Or => "or",
                };
                write!(f, "({} {op} {})", sub(a), sub(b))
            }
            ExprKind::Not(a) => write!(f, "not {}", sub(a)),
            ExprKind::Select(c, a, b) => write!(f, "({} ? {} : {})", sub(c), sub(a), sub(b)),
            ExprKind::Call(func, args) => {
                let args: Vec<String> = args.iter().map(|a| sub(a).to_string()).collect();
                write!(f, "{}({})", func.name(), args.join(", "))
            }
            ExprKind::Cast(a) => write!(f, "{}({})", self.1.ty, sub(a)),
        }
    }
}

impl Display for Kernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "kernel {}", self.name)?;
        for p in &self.params {
            match p.default {
                Some(d) => writeln!(f, "  param {} = {d}", p.name)?,
                None => writeln!(f, "  param {}", p.name)?,
            }
        }
        for c in &self.param_constraints {
            writeln!(f, "  where {c}")?;
        }
        for a in &self.arrays {
            let role = match a.role {
                Role::In => "in",
                Role::Out => "out",
                Role::InOut => "inout",
                Role::Temp => "temp",
            };
            let dims: Vec<String> = a.dims.iter().map(|d| d.to_string()).collect();
            writeln!(
                f,
                "  array {}: {role} {}[{}]",
                a.name,
                a.elem,
                dims.join(", ")
            )?;
        }
        let mut out = String::new();
        write_nodes(self, &self.body, 1, &mut out)?;
        f.write_str(&out)
    }
}

fn write_nodes(k: &Kernel, nodes: &[Node], level: usize, out: &mut String) -> fmt::Result {
    let pad = "  ".repeat(level);
    for node in nodes {
        match node {
            Node::Loop(l) => {
                let range = if l.reverse {
                    format!("({}..{}).rev()", l.lower, l.upper)
                } else {
                    format!("{}..{}", l.lower, l.upper)
                };
                let step = if l.step == 1 {
                    String::new()
                } else {
                    format!(" step {}", l.step)
                };
                writeln!(out, "{pad}for {} in {range}{step} {{", l.var)?;
                write_nodes(k, &l.body, level + 1, out)?;
                writeln!(out, "{pad}}}")?;
            }
            Node::If(i) => {
                writeln!(out, "{pad}if {} {{", i.cond)?;
                write_nodes(k, &i.then, level + 1, out)?;
                writeln!(out, "{pad}}}")?;
            }
            Node::Stmt(s) => writeln!(
                out,
                "{pad}{}: {} {} {};",
                s.name,
                ShowAccess(k, &s.target),
                s.op.symbol(),
                ShowExpr(k, &s.rhs)
            )?,
        }
    }
    Ok(())
}
