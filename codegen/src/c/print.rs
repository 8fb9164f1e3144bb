//! The loop AST as C, following a [`Plan`]: `for` loops with hoisted upper bounds and OpenMP
//! pragmas, guards, unrolled small constant loops, accumulator blocks, packed panels,
//! promoted elements, thread teams, and statement instances. Every decision was made by the
//! plan; this module only spells them (fresh names, indentation, C syntax).

use super::accumulate::Block;
use super::cexpr::{hoistable, CExprs};
use super::dialect::Dialect;
use super::instances::{Instances, LoopOptions};
use super::pack::Panel;
use super::plan::{LoopPlan, Parallelism, Plan};
use super::promote::Promotion;
use super::stmt::{Part, Replacement};
use crate::ast::{Expr, For, Node};
use crate::CodegenError;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The C text of `ast` at indentation `depth` (levels of four spaces), its parameters
/// spelled as `params` says, its statements as `statements` prints them.
pub fn print_loops(
    ast: &Node,
    depth: usize,
    params: &BTreeMap<String, String>,
    statements: &dyn Instances,
    options: LoopOptions,
) -> Result<String, CodegenError> {
    let cexprs = CExprs { params };
    let plan = Plan::of(ast, statements, cexprs, options);
    let mut printer = LoopPrinter {
        cexprs,
        statements,
        options,
        plan: &plan,
        out: String::new(),
        names: 0,
        panels: Vec::new(),
    };
    printer.node(ast, depth)?;
    Ok(printer.out)
}

/// Which panel stands for which part of a statement while the loop it is reused across is
/// printed.
struct ActivePanel {
    /// The accumulator loop of the block that reads it (compared by address only).
    block: *const For,
    /// The part it stands for.
    part: Part,
    /// The panel element as a C lvalue in the block's iterators.
    lvalue: String,
}

/// Prints an AST as the body of a C function, as its plan says.
struct LoopPrinter<'a, 'n> {
    cexprs: CExprs<'a>,
    statements: &'a dyn Instances,
    options: LoopOptions,
    plan: &'a Plan<'n>,
    out: String,
    /// How many names (`pc_ubK`, `pc_accK`, ...) were generated so far.
    names: usize,
    /// The packed panels in scope, which replace reads of their blocks.
    panels: Vec<ActivePanel>,
}

impl LoopPrinter<'_, '_> {
    fn line(&mut self, depth: usize, text: &str) {
        let _ = writeln!(self.out, "{:w$}{text}", "", w = depth * 4);
    }

    fn expr(&self, e: &Expr) -> String {
        self.cexprs.expr(e)
    }

    fn runs_once(&self, f: &For) -> Option<String> {
        self.cexprs.runs_once(f)
    }

    /// A new name: `prefix` and a number.
    fn fresh(&mut self, prefix: &str) -> String {
        self.names += 1;
        format!("{prefix}{}", self.names - 1)
    }

    fn node(&mut self, node: &Node, depth: usize) -> Result<(), CodegenError> {
        match node {
            Node::Block(children) => {
                for c in children {
                    self.node(c, depth)?;
                }
            }
            Node::If(cond, then, otherwise) => {
                let cond = self.expr(cond);
                self.line(depth, &format!("if ({cond}) {{"));
                self.node(then, depth + 1)?;
                if let Some(e) = otherwise {
                    self.line(depth, "} else {");
                    self.node(e, depth + 1)?;
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
            Node::For(f) => self.for_loop(f, depth)?,
        }
        Ok(())
    }

    fn for_loop(&mut self, f: &For, depth: usize) -> Result<(), CodegenError> {
        let plan = self.plan;
        let unplanned = || CodegenError::Internal(format!("loop over {} has no plan", f.iterator));
        match plan.of_loop(f).ok_or_else(unplanned)? {
            LoopPlan::Unrolled(values) => {
                let it = &f.iterator;
                for v in values {
                    self.line(depth, &format!("{{ /* {it} = {v} (unrolled) */"));
                    self.line(depth + 1, &format!("const long {it} = {v};"));
                    self.node(&f.body, depth + 1)?;
                    self.line(depth, "}");
                }
                Ok(())
            }
            LoopPlan::Accumulated(block) => self.accumulated(block, depth),
            LoopPlan::Team => self.team(f, depth),
            LoopPlan::Packed(panels, form) => self.packed(f, panels, *form, depth),
            LoopPlan::Promoted(promotion) => self.promoted(f, promotion, depth),
            LoopPlan::Plain(form) => self.plain_loop(f, *form, depth),
            LoopPlan::TeamShared | LoopPlan::TeamSequential => Err(CodegenError::Internal(
                format!("loop over {} is planned in a thread team", f.iterator),
            )),
        }
    }

    /// Prints `f` as a `for` loop in the OpenMP form `form`.
    fn plain_loop(&mut self, f: &For, form: Parallelism, depth: usize) -> Result<(), CodegenError> {
        let (header, trips) = self.header(f, depth);
        match form {
            Parallelism::Threads { min_trips } => {
                let clause = match (trips, min_trips) {
                    (Some(trips), Some(min)) => format!(" if({trips} >= {min})"),
                    _ => String::new(),
                };
                self.line(depth, &format!("#pragma omp parallel for{clause}"));
            }
            Parallelism::Simd => self.line(depth, "#pragma omp simd"),
            Parallelism::Sequential => {}
        }
        self.line(depth, &header);
        self.node(&f.body, depth + 1)?;
        self.line(depth, "}");
        Ok(())
    }

    /// Prints the hoisted upper bound of `f` (if any) and returns its `for (...) {` line,
    /// with its trip count as a C expression when the bound is hoisted and the step is 1.
    fn header(&mut self, f: &For, depth: usize) -> (String, Option<String>) {
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

    /// Prints `block` with its accumulators.
    fn accumulated(&mut self, block: &Block, depth: usize) -> Result<(), CodegenError> {
        let f = block.outer;
        self.line(
            depth,
            &format!(
                "{{ /* {}: accumulators across {} */",
                block.tuple, f.iterator
            ),
        );
        let d = depth + 1;
        let (op, bound) = hoistable(f).expect("checked by Block::of");
        let ub = self.fresh("pc_ub");
        let bound = self.expr(bound);
        self.line(d, &format!("const long {ub} = {bound};"));
        let runs = format!("{} {op} {ub}", f.iterator);
        let mut counts = Vec::new();
        let mut guard = vec![format!("{} {op} {ub}", self.expr(&f.init))];
        for &(g, trips) in &block.inner {
            let n = self.trip_count(g, trips, d);
            guard.push(format!("{n} > 0"));
            counts.push(n);
        }
        let full: Vec<String> = (block.inner.iter())
            .zip(&counts)
            .map(|((_, t), n)| format!("{n} == {t}"))
            .collect();
        let constant: Vec<String> = block.inner.iter().map(|(_, t)| t.to_string()).collect();
        self.line(d, &format!("if ({}) {{", guard.join(" && ")));
        self.line(d + 1, &format!("if ({}) {{", full.join(" && ")));
        self.accumulator_nests(block, &runs, &constant, d + 2)?;
        self.line(d + 1, "} else {");
        self.accumulator_nests(block, &runs, &counts, d + 2)?;
        self.line(d + 1, "}");
        self.line(d, "}");
        self.line(depth, "}");
        Ok(())
    }

    /// Prints `const long pc_nK = ...;`, the trip count of `g` (a loop of [`max_trip`]
    /// `trips` at most), and returns its name.
    fn trip_count(&mut self, g: &For, trips: i64, depth: usize) -> String {
        let (op, bound) = hoistable(g).expect("a loop of max_trip has a hoistable bound");
        let n = self.fresh("pc_n");
        let extra = if op == "<" { "" } else { " + 1" };
        let span = format!("{} - {}{extra}", self.expr(bound), self.expr(&g.init));
        self.line(depth, &format!("const long {n} = pc_min({trips}, {span});"));
        n
    }

    /// The accumulators, their load nest, the loop with its update nest (`runs`: its
    /// condition) and the store nest, for the inner loops' trip counts `counts`.
    fn accumulator_nests(
        &mut self,
        block: &Block,
        runs: &str,
        counts: &[String],
        depth: usize,
    ) -> Result<(), CodegenError> {
        let acc = self.fresh("pc_acc");
        let dims: String = (block.inner.iter())
            .map(|(_, t)| format!("[{t}]"))
            .collect();
        self.line(depth, &format!("{} {acc}{dims};", block.acc.storage));
        let offsets: Vec<String> = block.inner.iter().map(|_| self.fresh("pc_o")).collect();
        let element: String = std::iter::once(acc)
            .chain(offsets.iter().map(|o| format!("[{o}]")))
            .collect();
        let binds: Vec<String> = (block.acc.index_iterators.iter())
            .zip(&block.acc.index_names)
            .map(|(&p, name)| format!("{name} = {}", self.expr(&block.args[p])))
            .collect();
        let lvalue = &block.acc.lvalue;
        let load = format!(
            "{{ const long {}; {element} = {lvalue}; }}",
            binds.join(", ")
        );
        self.nest(block, counts, &offsets, depth, &load);
        let f = block.outer;
        let it = &f.iterator;
        let init = self.expr(&f.init);
        self.line(
            depth,
            &format!("for (long {it} = {init}; {runs}; {it}++) {{"),
        );
        let args: Vec<String> = block.args.iter().map(|a| self.expr(a)).collect();
        let mut replaced = vec![(Part::Access(0), element.as_str())];
        let self_reads = block.acc.self_reads.iter();
        replaced.extend(self_reads.map(|&p| (Part::Access(p), element.as_str())));
        replaced.extend(
            (self.panels.iter())
                .filter(|p| std::ptr::eq(p.block, f))
                .map(|p| (p.part, p.lvalue.as_str())),
        );
        let update = (self.statements).instance(block.tuple, &args, &replaced)?;
        self.nest(block, counts, &offsets, depth + 1, &update);
        self.line(depth, "}");
        let store = format!(
            "{{ const long {}; {lvalue} = {element}; }}",
            binds.join(", ")
        );
        self.nest(block, counts, &offsets, depth, &store);
        Ok(())
    }

    /// The inner loops of `block` over `offsets` from 0 to `counts`, each binding its
    /// iterator, around the C text `body`; the innermost is an OpenMP `simd` loop when it is
    /// parallel.
    fn nest(
        &mut self,
        block: &Block,
        counts: &[String],
        offsets: &[String],
        depth: usize,
        body: &str,
    ) {
        let last = block.inner.len() - 1;
        for (k, ((g, _), (n, o))) in block
            .inner
            .iter()
            .zip(counts.iter().zip(offsets))
            .enumerate()
        {
            let d = depth + k;
            if k == last && g.parallel && self.options.openmp {
                self.line(d, "#pragma omp simd");
            }
            self.line(d, &format!("for (long {o} = 0; {o} < {n}; {o}++) {{"));
            let init = self.expr(&g.init);
            self.line(d + 1, &format!("const long {} = {init} + {o};", g.iterator));
        }
        for l in body.lines() {
            self.line(depth + block.inner.len(), l);
        }
        for k in (0..block.inner.len()).rev() {
            self.line(depth + k, "}");
        }
    }

    /// Prints `panels` packed before the loop `f`, then `f` reading them.
    fn packed(
        &mut self,
        f: &For,
        panels: &[Panel],
        form: Parallelism,
        depth: usize,
    ) -> Result<(), CodegenError> {
        self.line(
            depth,
            &format!("{{ /* packed panels, reused across {} */", f.iterator),
        );
        let d = depth + 1;
        let runs = self.runs_once(f).expect("checked by Panel::all");
        // The storage, on the heap (a panel of up to 512 KiB would not fit the stack of
        // every thread: musl gives 128 KiB), used through a `restrict` pointer (through a
        // local array, gcc kept the block's accumulators in memory). In a user's file,
        // through the compiler's built-ins, which need no header.
        let (malloc, free) = match self.options.dialect {
            Dialect::Kernel => ("malloc", "free"),
            Dialect::Source => ("__builtin_malloc", "__builtin_free"),
        };
        let mut names = Vec::new();
        for panel in panels {
            let name = self.fresh("pc_pk");
            let ty = panel.source.storage;
            let inner: String = (panel.dims[1..].iter())
                .map(|d| format!("[{}]", d.trips))
                .collect();
            let count: String = panel
                .dims
                .iter()
                .map(|d| format!(" * {}", d.trips))
                .collect();
            self.line(
                d,
                &format!("{ty} (*restrict {name}){inner} = {malloc}(sizeof({ty}){count});"),
            );
            names.push(name);
        }
        self.line(d, &format!("if ({}) {{", names.join(" && ")));
        let d = d + 1;
        let mut active = Vec::new();
        for (panel, name) in panels.iter().zip(&names) {
            self.line(d, &format!("if ({runs}) {{"));
            let mut element = name.clone();
            for (k, dim) in panel.dims.iter().enumerate() {
                let g = dim.lp;
                let init = self.expr(&g.init);
                if dim.inner {
                    let n = self.trip_count(g, dim.trips, d + 1 + k);
                    let o = self.fresh("pc_o");
                    self.line(
                        d + 1 + k,
                        &format!("for (long {o} = 0; {o} < {n}; {o}++) {{"),
                    );
                    self.line(
                        d + 2 + k,
                        &format!("const long {} = {init} + {o};", g.iterator),
                    );
                } else {
                    let (header, _) = self.header(g, d + 1 + k);
                    self.line(d + 1 + k, &header);
                }
                element.push_str(&format!("[{} - {init}]", g.iterator));
            }
            let inner = d + 1 + panel.dims.len();
            self.line(inner, &format!("{element} = {};", panel.source.value));
            for k in (0..panel.dims.len()).rev() {
                self.line(d + 1 + k, "}");
            }
            self.line(d, "}");
            active.push(ActivePanel {
                block: panel.block,
                part: panel.source.part,
                lvalue: element,
            });
        }
        let before = self.panels.len();
        self.panels.extend(active);
        let printed = self.plain_loop(f, form, d);
        self.panels.truncate(before);
        printed?;
        self.line(depth + 1, "} else {");
        match self.options.dialect {
            Dialect::Kernel => self.line(d, "pc_set_fault(PC_FAULT_OUT_OF_MEMORY);"),
            // The user's program has no fault to report: the loop runs on the inputs.
            Dialect::Source => self.plain_loop(f, form, d)?,
        }
        self.line(depth + 1, "}");
        for name in &names {
            self.line(depth + 1, &format!("{free}({name});"));
        }
        self.line(depth, "}");
        Ok(())
    }

    /// Prints `f` with the elements of `promotion` in locals.
    fn promoted(
        &mut self,
        f: &For,
        promotion: &Promotion,
        depth: usize,
    ) -> Result<(), CodegenError> {
        let runs = self.runs_once(f).expect("checked by promotion");
        let promoted = &promotion.elements;
        let elements: Vec<&str> = promoted.iter().map(|p| p.element.as_str()).collect();
        self.line(
            depth,
            &format!(
                "if ({runs}) {{ /* {} in locals across {} */",
                elements.join(", "),
                f.iterator
            ),
        );
        let d = depth + 1;
        let locals: Vec<String> = promoted.iter().map(|_| self.fresh("pc_s")).collect();
        for (p, local) in promoted.iter().zip(&locals) {
            self.line(d, &format!("{} {local} = {};", p.storage, p.element));
        }
        let (header, _) = self.header(f, d);
        self.line(d, &header);
        for (k, (tuple, args)) in promotion.statements.iter().enumerate() {
            let replaced: Vec<Replacement> = (promoted.iter().zip(&locals))
                .flat_map(|(p, l)| {
                    (p.positions[k].iter()).map(move |&pos| (Part::Access(pos), l.as_str()))
                })
                .collect();
            let text = self.statements.instance(tuple, args, &replaced)?;
            for l in text.lines() {
                self.line(d + 1, l);
            }
        }
        self.line(d, "}");
        for (p, local) in promoted.iter().zip(&locals) {
            self.line(d, &format!("{} = {local};", p.element));
        }
        self.line(depth, "}");
        Ok(())
    }

    /// The sequential loop `f` inside one thread team (see `c::team`).
    fn team(&mut self, f: &For, depth: usize) -> Result<(), CodegenError> {
        self.line(depth, "#pragma omp parallel");
        self.line(depth, "{");
        self.team_for(f, false, depth + 1)?;
        self.line(depth, "}");
        Ok(())
    }

    /// `node` as run by every thread of the team: what the plan says shares work, as
    /// work-sharing constructs; the rest in `single` blocks.
    fn team_node(&mut self, node: &Node, depth: usize) -> Result<(), CodegenError> {
        let plan = self.plan;
        match node {
            Node::Block(children) if plan.shares(node) => {
                let mut alone: Vec<&Node> = Vec::new();
                for c in children {
                    if plan.shares(c) {
                        if !alone.is_empty() {
                            self.single(&std::mem::take(&mut alone), depth)?;
                        }
                        self.team_node(c, depth)?;
                    } else {
                        alone.push(c);
                    }
                }
                if !alone.is_empty() {
                    self.single(&alone, depth)?;
                }
            }
            Node::If(cond, then, otherwise) if plan.shares(node) => {
                let cond = self.expr(cond);
                self.line(depth, &format!("if ({cond}) {{"));
                self.team_node(then, depth + 1)?;
                if let Some(e) = otherwise {
                    self.line(depth, "} else {");
                    self.team_node(e, depth + 1)?;
                }
                self.line(depth, "}");
            }
            Node::For(f) if plan.shares(node) => {
                let shared = matches!(plan.of_loop(f), Some(LoopPlan::TeamShared));
                self.team_for(f, shared, depth)?
            }
            _ => self.single(&[node], depth)?,
        }
        Ok(())
    }

    /// A loop in the team: a `shared` one becomes `omp for`, a sequential one runs in every
    /// thread around its body.
    fn team_for(&mut self, f: &For, shared: bool, depth: usize) -> Result<(), CodegenError> {
        let (header, _) = self.header(f, depth);
        if shared {
            self.line(depth, "#pragma omp for");
            self.line(depth, &header);
            self.node(&f.body, depth + 1)?;
        } else {
            self.line(depth, &header);
            self.team_node(&f.body, depth + 1)?;
        }
        self.line(depth, "}");
        Ok(())
    }

    /// `nodes`, run by one thread of the team while the others wait at its end.
    fn single(&mut self, nodes: &[&Node], depth: usize) -> Result<(), CodegenError> {
        self.line(depth, "#pragma omp single");
        self.line(depth, "{");
        for n in nodes {
            self.node(n, depth + 1)?;
        }
        self.line(depth, "}");
        Ok(())
    }
}
