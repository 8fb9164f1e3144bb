//! The loop AST as C: `for` loops with hoisted upper bounds and OpenMP pragmas, guards,
//! unrolled small constant loops, and statement instances.

use super::stmt::{Accumulable, ElementAccess, InputExpression, Replacement};
use crate::ast::{Expr, For, Node, Op};
use crate::CodegenError;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The statements the loops execute, as the printer needs them.
pub trait Instances {
    /// A statement instance as C: the statement's tuple name and its iteration vector (C
    /// expressions) to one C statement or block, with the parts of `replaced` spelled as
    /// the C lvalues given there (an accumulator for the target, a panel for a read or for
    /// a subexpression).
    fn instance(
        &self,
        tuple: &str,
        args: &[String],
        replaced: &[Replacement<'_>],
    ) -> Result<String, CodegenError>;

    /// How the statement's target can be held in a local accumulator (`None`, the default:
    /// it cannot, and its loops are printed as they are).
    fn accumulable(&self, _tuple: &str) -> Option<&Accumulable> {
        None
    }

    /// Every access of a statement instance (its tuple name and iteration vector), each
    /// element spelled in the C expressions of `args`, for packing and promotion (`None`,
    /// the default: nothing is known of them, so neither applies).
    fn element_accesses(&self, _tuple: &str, _args: &[String]) -> Option<Vec<ElementAccess>> {
        None
    }

    /// The subexpressions of a statement instance computed from inputs alone, each value
    /// spelled in the C expressions of `args`, given the instance's [`element_accesses`]
    /// (`accesses`), for packing (`None`, the default: nothing is known of them).
    ///
    /// [`element_accesses`]: Instances::element_accesses
    fn input_expressions(
        &self,
        _tuple: &str,
        _args: &[String],
        _accesses: &[ElementAccess],
    ) -> Option<Vec<InputExpression>> {
        None
    }
}

/// A parallel loop whose iterations run no inner loop forks threads only from this many
/// iterations on (an OpenMP `if` clause): below it, waking the team costs more than the
/// work it shares.
const MIN_FLAT_PARALLEL_TRIPS: i64 = 32768;

/// How loops are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopOptions {
    /// Loops with a constant trip count up to this are unrolled (0: never).
    pub unroll_limit: u32,
    /// Whether to emit OpenMP pragmas (`parallel for`, `simd`).
    pub openmp: bool,
    /// Whether to copy strided input reads of accumulator blocks into packed panels
    /// (`c::pack`).
    pub pack: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        LoopOptions {
            unroll_limit: 4,
            openmp: true,
            pack: true,
        }
    }
}

/// Prints an AST as the body of a C function.
pub struct LoopPrinter<'a> {
    /// How the parameters' isl names are spelled in C.
    pub params: &'a BTreeMap<String, String>,
    /// The statements.
    pub statements: &'a dyn Instances,
    /// Options.
    pub options: LoopOptions,
    pub(super) out: String,
    /// How many names (`pc_ubK`, `pc_accK`, ...) were generated so far.
    pub(super) names: usize,
    /// How many sequential loops (outside any parallel region) enclose the current node.
    sequential_depth: usize,
    /// The packed panels in scope, which replace reads of their blocks.
    pub(super) panels: Vec<super::pack::ActivePanel>,
}

impl<'a> LoopPrinter<'a> {
    /// A printer.
    pub fn new(
        params: &'a BTreeMap<String, String>,
        statements: &'a dyn Instances,
        options: LoopOptions,
    ) -> Self {
        LoopPrinter {
            params,
            statements,
            options,
            out: String::new(),
            names: 0,
            sequential_depth: 0,
            panels: Vec::new(),
        }
    }

    /// The C text of `node` at indentation `depth` (levels of four spaces).
    pub fn print(mut self, node: &Node, depth: usize) -> Result<String, CodegenError> {
        self.node(node, depth, false)?;
        Ok(self.out)
    }

    pub(super) fn line(&mut self, depth: usize, text: &str) {
        let _ = writeln!(self.out, "{:w$}{text}", "", w = depth * 4);
    }

    pub(super) fn node(
        &mut self,
        node: &Node,
        depth: usize,
        in_parallel: bool,
    ) -> Result<(), CodegenError> {
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
                let text = self.statements.instance(name, &args, &[])?;
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
        if let Some(block) = super::accumulate::Block::of(f, self.statements) {
            return self.accumulated(&block, depth);
        }
        if self.options.openmp
            && !f.parallel
            && !in_parallel
            && self.sequential_depth == 0
            && self.shares_work(&f.body)
        {
            return self.team(f, depth);
        }
        let panels = match self.options.pack {
            true => super::pack::Panel::all(f, self),
            false => Vec::new(),
        };
        if !panels.is_empty() {
            return self.packed(f, &panels, depth, in_parallel);
        }
        if let Some(promoted) = self.promotion(f) {
            return self.promoted(f, &promoted, depth);
        }
        self.plain_loop(f, depth, in_parallel)
    }

    /// Prints `f` as a `for` loop with its OpenMP pragma, if any.
    pub(super) fn plain_loop(
        &mut self,
        f: &For,
        depth: usize,
        in_parallel: bool,
    ) -> Result<(), CodegenError> {
        // A parallel loop inside a sequential one forks and joins threads at every outer
        // iteration: only worth it when each of its iterations runs a loop itself.
        let worth_threads = self.sequential_depth == 0 || f.body.has_loop();
        let omp_parallel = self.options.openmp && f.parallel && !in_parallel && worth_threads;
        let (header, trips) = self.header(f, depth);
        if omp_parallel {
            // Waking the team costs more than a short loop of loop-free iterations does
            // (atax's initialisations of 2,000 elements ran 6% slower in parallel).
            let clause = match trips {
                Some(trips) if !f.body.has_loop() => {
                    format!(" if({trips} >= {MIN_FLAT_PARALLEL_TRIPS})")
                }
                _ => String::new(),
            };
            self.line(depth, &format!("#pragma omp parallel for{clause}"));
        } else if self.options.openmp && f.parallel && f.step == 1 && !f.body.has_loop() {
            self.line(depth, "#pragma omp simd");
        }
        self.line(depth, &header);
        let sequential = !in_parallel && !omp_parallel;
        self.sequential_depth += usize::from(sequential);
        self.node(&f.body, depth + 1, in_parallel || omp_parallel)?;
        self.sequential_depth -= usize::from(sequential);
        self.line(depth, "}");
        Ok(())
    }

    /// Prints the hoisted upper bound of `f` (if any) and returns its `for (...) {` line,
    /// with its trip count as a C expression when the bound is hoisted and the step is 1.
    pub(super) fn header(&mut self, f: &For, depth: usize) -> (String, Option<String>) {
        let it = &f.iterator;
        let init = self.expr(&f.init);
        let mut trips = None;
        let cond = match hoistable(f) {
            Some((op, bound)) => {
                let name = self.fresh("pc_ub");
                let bound = self.expr(bound);
                self.line(depth, &format!("const long {name} = {bound};"));
                if f.step == 1 {
                    let extra = if op == "<" { "" } else { " + 1" };
                    let from = if init == "0" {
                        String::new()
                    } else {
                        format!(" - ({init})")
                    };
                    trips = Some(format!("{name}{from}{extra}"));
                }
                format!("{it} {op} {name}")
            }
            None => self.expr(&f.cond),
        };
        let step = if f.step == 1 {
            format!("{it}++")
        } else {
            format!("{it} += {}", f.step)
        };
        (
            format!("for (long {it} = {init}; {cond}; {step}) {{"),
            trips,
        )
    }

    /// The C condition that `f` (with a hoistable bound) runs at least once.
    pub(super) fn runs_once(&self, f: &For) -> Option<String> {
        let (op, bound) = hoistable(f)?;
        Some(format!("{} {op} {}", self.expr(&f.init), self.expr(bound)))
    }

    /// A new name: `prefix` and a number.
    pub(super) fn fresh(&mut self, prefix: &str) -> String {
        self.names += 1;
        format!("{prefix}{}", self.names - 1)
    }

    /// The iterator's values when the loop has a small constant trip count.
    pub(super) fn unrollable(&self, f: &For) -> Option<Vec<i64>> {
        let (Expr::Int(lo), Some((op, Expr::Int(hi)))) = (&f.init, hoistable(f)) else {
            return None;
        };
        let last = if op == "<" { *hi - 1 } else { *hi };
        let values: Vec<i64> = (*lo..=last).step_by(f.step.max(1) as usize).collect();
        (!f.parallel && !values.is_empty() && values.len() as u32 <= self.options.unroll_limit)
            .then_some(values)
    }

    pub(super) fn expr(&self, e: &Expr) -> String {
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
pub(super) fn hoistable(f: &For) -> Option<(&'static str, &Expr)> {
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
