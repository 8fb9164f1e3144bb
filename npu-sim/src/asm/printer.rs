//! The printer: a [`Program`] as canonical `.npu` text that parses back to the same program.

use crate::program::*;
use std::fmt::Write;

/// Prints a program: declarations first, then the statements, two spaces per loop level.
pub fn print(p: &Program) -> String {
    let mut out = String::new();
    for t in &p.tensors {
        let _ = writeln!(
            out,
            "tensor {} : {}{} {}",
            t.name,
            t.dtype,
            shape(&t.shape),
            t.dir
        );
    }
    for b in &p.buffers {
        let _ = write!(
            out,
            "buffer {} : {} {}{}",
            b.name,
            b.tier,
            b.dtype,
            shape(&b.shape)
        );
        if let Placement::At(o) = b.placement {
            let _ = write!(out, " @ {o}");
        }
        out.push('\n');
    }
    if !p.tensors.is_empty() || !p.buffers.is_empty() {
        out.push('\n');
    }
    stmts(p, &p.body, 0, &mut out);
    out
}

fn shape(dims: &[u64]) -> String {
    let d: Vec<String> = dims.iter().map(u64::to_string).collect();
    format!("[{}]", d.join(", "))
}

fn stmts(p: &Program, body: &[Stmt], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for s in body {
        match s {
            Stmt::Loop(l) => {
                let _ = write!(
                    out,
                    "{pad}loop {} in {}..{}",
                    p.vars[l.var.0 as usize],
                    expr(p, &l.lo),
                    expr(p, &l.hi)
                );
                if l.step != 1 {
                    let _ = write!(out, " step {}", l.step);
                }
                out.push_str(" {\n");
                stmts(p, &l.body, depth + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Instr(i) => {
                if let Some(note) = i.origin.note() {
                    let _ = writeln!(out, "{pad}# {}", note.replace('\n', " "));
                }
                let _ = writeln!(out, "{pad}{}", instr(p, &i.op));
            }
        }
    }
}

/// One instruction, without indentation or newline.
pub fn instr(p: &Program, op: &Op) -> String {
    let r = |m: &MemRef| memref(p, m);
    let mut args: Vec<String> = vec![];
    let e = |x: &Expr| expr(p, x);
    // An option is printed unless it has the value the parser supplies when it is absent.
    let opt = |name: &str, v: &Expr, default: &Expr, args: &mut Vec<String>| {
        if v != default {
            args.push(format!("{name}={}", e(v)));
        }
    };
    let (zero, one) = (Expr::Const(0), Expr::Const(1));
    match op {
        Op::Dma(d) => {
            let z = &d.sizes;
            args.extend([r(&d.dst), r(&d.src)]);
            opt("count", &z.count, &one, &mut args);
            args.push(format!("len={}", e(&z.len)));
            opt("src_stride", &z.src_stride, &z.len, &mut args);
            opt("dst_stride", &z.dst_stride, &z.len, &mut args);
            flags(
                &[
                    (d.mode.name(), d.mode != DmaMode::Plain),
                    ("relu", d.relu),
                    ("atomic", d.atomic),
                ],
                &mut args,
            );
        }
        Op::Load3d(i) => {
            let z = &i.sizes;
            args.extend([r(&i.dst), r(&i.src)]);
            for (name, v) in [
                ("h", &z.h),
                ("w", &z.w),
                ("c", &z.c),
                ("kh", &z.kh),
                ("kw", &z.kw),
            ] {
                args.push(format!("{name}={}", e(v)));
            }
            opt("stride", &z.stride, &one, &mut args);
            for (name, v) in [
                ("pad_top", &z.pad_top),
                ("pad_bottom", &z.pad_bottom),
                ("pad_left", &z.pad_left),
                ("pad_right", &z.pad_right),
                ("m_start", &z.m_start),
            ] {
                opt(name, v, &zero, &mut args);
            }
            args.push(format!("m_ext={}", e(&z.m_ext)));
            opt("k_start", &z.k_start, &zero, &mut args);
            args.push(format!("k_ext={}", e(&z.k_ext)));
        }
        Op::Mmad(m) => {
            let z = &m.sizes;
            args.extend([r(&m.c), r(&m.a), r(&m.b)]);
            args.extend(
                [("m", &z.m), ("k", &z.k), ("n", &z.n)].map(|(n, v)| format!("{n}={}", e(v))),
            );
            match &m.init {
                Expr::Const(0) => {}
                Expr::Const(1) => args.push("init".into()),
                x => args.push(format!("init={}", e(x))),
            }
        }
        Op::Vector(v) => {
            let z = &v.sizes;
            args.push(r(&v.dst));
            match &v.op {
                VecOp::Scalar { a, value, .. } => args.extend([r(a), float(*value)]),
                VecOp::Dup { value } => args.push(float(*value)),
                op => args.extend(op.sources().into_iter().map(r)),
            }
            opt("repeat", &z.repeat, &one, &mut args);
            let optional = [
                ("mask", &z.mask),
                ("dst_rs", &z.dst_rs),
                ("src0_rs", &z.src_rs[0]),
                ("src1_rs", &z.src_rs[1]),
                ("src2_rs", &z.src_rs[2]),
            ];
            for (name, value) in optional {
                if let Some(value) = value {
                    args.push(format!("{name}={}", e(value)));
                }
            }
        }
        Op::SetFlag(f) | Op::WaitFlag(f) => {
            // A bare id is a small non-negative integer; anything else is an expression.
            let id = match &f.id {
                Expr::Const(id) if (0..1 << 16).contains(id) => id.to_string(),
                e => format!("({})", expr(p, e)),
            };
            args.extend([f.src.to_string(), f.dst.to_string(), id])
        }
        Op::Barrier(BarrierScope::All) => args.push("ALL".into()),
        Op::Barrier(BarrierScope::Pipe(pipe)) => args.push(pipe.to_string()),
        Op::SyncAll => return op.mnemonic(),
    }
    format!("{} {}", op.mnemonic(), args.join(", "))
}

fn flags(fs: &[(&str, bool)], args: &mut Vec<String>) {
    args.extend(fs.iter().filter(|(_, on)| *on).map(|(n, _)| n.to_string()));
}

/// A scalar immediate, always with a fraction or exponent so it reads as a float.
fn float(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains(['.', 'e']) || !v.is_finite() {
        s
    } else {
        format!("{s}.0")
    }
}

/// `name[i, j]`.
pub fn memref(p: &Program, m: &MemRef) -> String {
    let idx: Vec<String> = m.index.iter().map(|e| expr(p, e)).collect();
    format!("{}[{}]", p.target_info(m.target).0, idx.join(", "))
}

/// An expression, parenthesised so that it parses back to the same tree.
pub fn expr(p: &Program, e: &Expr) -> String {
    let atom = |e: &Expr| match e {
        Expr::Const(_)
        | Expr::Var(_)
        | Expr::Core
        | Expr::Cores
        | Expr::Cmp(..)
        | Expr::Min(..)
        | Expr::Max(..)
        | Expr::Select(..) => expr(p, e),
        _ => format!("({})", expr(p, e)),
    };
    let sum_operand = |e: &Expr| match e {
        Expr::Add(..) | Expr::Sub(..) => format!("({})", expr(p, e)),
        _ => expr(p, e),
    };
    match e {
        Expr::Const(c) => c.to_string(),
        Expr::Var(v) => p.vars[v.0 as usize].clone(),
        Expr::Core => "core".into(),
        Expr::Cores => "cores".into(),
        Expr::Add(a, b) => format!("{} + {}", expr(p, a), sum_operand(b)),
        Expr::Sub(a, b) => format!("{} - {}", expr(p, a), sum_operand(b)),
        Expr::Mul(c, a) => format!("{c}*{}", atom(a)),
        Expr::Div(a, c) => format!("{}/{c}", atom(a)),
        Expr::Mod(a, c) => format!("{}%{c}", atom(a)),
        Expr::Min(a, b) => format!("min({}, {})", expr(p, a), expr(p, b)),
        Expr::Max(a, b) => format!("max({}, {})", expr(p, a), expr(p, b)),
        Expr::Cmp(op, a, b) => format!("({} {} {})", expr(p, a), op.symbol(), expr(p, b)),
        Expr::Select(c, a, b) => {
            format!("select({}, {}, {})", expr(p, c), expr(p, a), expr(p, b))
        }
    }
}
