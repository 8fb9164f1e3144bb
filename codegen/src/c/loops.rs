//! The loop AST as C: `for` loops with hoisted upper bounds and OpenMP pragmas, guards,
//! unrolled small constant loops, and statement instances.

use crate::ast::{Expr, For, Node, Op};
use crate::CodegenError;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A statement instance as C: the statement's tuple name and its iteration vector (C
/// expressions) to one C statement or block.
pub type EmitUser<'a> = dyn Fn(&str, &[String]) -> Result<String, CodegenError> + 'a;

/// How loops are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopOptions {
    /// Loops with a constant trip count up to this are unrolled (0: never).
    pub unroll_limit: u32,
    /// Whether to emit OpenMP pragmas (`parallel for`, `simd`).
    pub openmp: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        LoopOptions {
            unroll_limit: 4,
            openmp: true,
        }
    }
}

/// Prints an AST as the body of a C function.
pub struct LoopPrinter<'a> {
    /// How the parameters' isl names are spelled in C.
    pub params: &'a BTreeMap<String, String>,
    /// Prints statement instances.
    pub user: &'a EmitUser<'a>,
    /// Options.
    pub options: LoopOptions,
    out: String,
    bounds: usize,
}

impl<'a> LoopPrinter<'a> {
    /// A printer.
    pub fn new(
        params: &'a BTreeMap<String, String>,
        user: &'a EmitUser<'a>,
        options: LoopOptions,
    ) -> Self {
        LoopPrinter {
            params,
            user,
            options,
            out: String::new(),
            bounds: 0,
        }
    }

    /// The C text of `node` at indentation `depth` (levels of four spaces).
    pub fn print(mut self, node: &Node, depth: usize) -> Result<String, CodegenError> {
        self.node(node, depth, false)?;
        Ok(self.out)
    }

    fn line(&mut self, depth: usize, text: &str) {
        let _ = writeln!(self.out, "{:w$}{text}", "", w = depth * 4);
    }

    fn node(&mut self, node: &Node, depth: usize, in_parallel: bool) -> Result<(), CodegenError> {
        match node {
            Node::Block(children) => {
                for c in children {
                    self.node(c, depth, in_parallel)?;
                }
            }
            Node::If(cond, then, otherwise) => {
                let cond = self.expr(cond);
                self.line(depth, &format!("if ({cond}) {{"));
                self.node(then, depth + 1, in_parallel)?;
                if let Some(e) = otherwise {
                    self.line(depth, "} else {");
                    self.node(e, depth + 1, in_parallel)?;
                }
                self.line(depth, "}");
            }
            Node::User(name, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                let text = (self.user)(name, &args)?;
                for l in text.lines() {
                    self.line(depth, l);
                }
            }
            Node::For(f) => self.for_loop(f, depth, in_parallel)?,
        }
        Ok(())
    }

    fn for_loop(&mut self, f: &For, depth: usize, in_parallel: bool) -> Result<(), CodegenError> {
        let it = &f.iterator;
        if let Some(values) = self.unrollable(f) {
            for v in values {
                self.line(depth, &format!("{{ /* {it} = {v} (unrolled) */"));
                self.line(depth + 1, &format!("const long {it} = {v};"));
                self.node(&f.body, depth + 1, in_parallel)?;
                self.line(depth, "}");
            }
            return Ok(());
        }
        let init = self.expr(&f.init);
        let cond = match hoistable(f) {
            Some((op, bound)) => {
                let name = format!("pc_ub{}", self.bounds);
                self.bounds += 1;
                let bound = self.expr(bound);
                self.line(depth, &format!("const long {name} = {bound};"));
                format!("{it} {op} {name}")
            }
            None => self.expr(&f.cond),
        };
        let omp_parallel = self.options.openmp && f.parallel && !in_parallel;
        if omp_parallel {
            self.line(depth, "#pragma omp parallel for");
        } else if self.options.openmp && f.parallel && f.step == 1 && !f.body.has_loop() {
            self.line(depth, "#pragma omp simd");
        }
        let step = if f.step == 1 {
            format!("{it}++")
        } else {
            format!("{it} += {}", f.step)
        };
        self.line(
            depth,
            &format!("for (long {it} = {init}; {cond}; {step}) {{"),
        );
        self.node(&f.body, depth + 1, in_parallel || omp_parallel)?;
        self.line(depth, "}");
        Ok(())
    }

    /// The iterator's values when the loop has a small constant trip count.
    fn unrollable(&self, f: &For) -> Option<Vec<i64>> {
        let (Expr::Int(lo), Some((op, Expr::Int(hi)))) = (&f.init, hoistable(f)) else {
            return None;
        };
        let last = if op == "<" { *hi - 1 } else { *hi };
        let values: Vec<i64> = (*lo..=last).step_by(f.step.max(1) as usize).collect();
        (!f.parallel && !values.is_empty() && values.len() as u32 <= self.options.unroll_limit)
            .then_some(values)
    }

    fn expr(&self, e: &Expr) -> String {
        match e {
            Expr::Int(v) => v.to_string(),
            Expr::Id(name) => self
                .params
                .get(name)
                .cloned()
                .unwrap_or_else(|| name.clone()),
            Expr::Op(op, args) => {
                let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
                let bin = |sym: &str| format!("({} {sym} {})", a[0], a[1]);
                match op {
                    Op::And => bin("&&"),
                    Op::Or => bin("||"),
                    Op::Max | Op::Min => {
                        let f = if *op == Op::Max { "pc_max" } else { "pc_min" };
                        let mut it = a.iter();
                        let first = it.next().cloned().unwrap_or_default();
                        it.fold(first, |acc, x| format!("{f}({acc}, {x})"))
                    }
                    Op::Minus => format!("(-({}))", a[0]),
                    Op::Add => bin("+"),
                    Op::Sub => bin("-"),
                    Op::Mul => bin("*"),
                    Op::Div | Op::PosDiv => bin("/"),
                    Op::FloorDiv => format!("pc_floord({}, {})", a[0], a[1]),
                    Op::PosRem | Op::ZeroRem => bin("%"),
                    Op::Select => format!("({} ? {} : {})", a[0], a[1], a[2]),
                    Op::Eq => bin("=="),
                    Op::Le => bin("<="),
                    Op::Lt => bin("<"),
                    Op::Ge => bin(">="),
                    Op::Gt => bin(">"),
                }
            }
        }
    }
}

/// `(op, bound)` when the loop's condition is `iterator op bound` with a bound that does not
/// depend on the iterator (so it can be computed once before the loop).
fn hoistable(f: &For) -> Option<(&'static str, &Expr)> {
    let Expr::Op(op, args) = &f.cond else {
        return None;
    };
    let sym = match op {
        Op::Le => "<=",
        Op::Lt => "<",
        _ => return None,
    };
    match args.as_slice() {
        [Expr::Id(it), bound] if *it == f.iterator && !bound.mentions(it) => Some((sym, bound)),
        _ => None,
    }
}

impl Expr {
    fn mentions(&self, name: &str) -> bool {
        match self {
            Expr::Int(_) => false,
            Expr::Id(n) => n == name,
            Expr::Op(_, args) => args.iter().any(|a| a.mentions(name)),
        }
    }
}

impl Node {
    fn has_loop(&self) -> bool {
        match self {
            Node::For(_) => true,
            Node::If(_, t, e) => t.has_loop() || e.as_ref().is_some_and(|e| e.has_loop()),
            Node::Block(cs) => cs.iter().any(Node::has_loop),
            Node::User(..) => false,
        }
    }
}
