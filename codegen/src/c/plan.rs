//! Plan, then print: what the printer does with each loop of the AST, decided in one pass
//! before anything is printed.
//!
//! [`Plan::of`] walks the AST as the printer will, carrying what the decisions depend on
//! (whether a parallel region or a thread team encloses the node, how many sequential loops
//! do, which packed panels are in scope), and asks the deciding modules about each loop in
//! a fixed order: unrolled ([`unrolled_values`]), an accumulator block
//! ([`Block::of`](super::accumulate)), one thread team around a sequential loop
//! ([`shares_work`](super::team)), packed panels ([`Panel::all`](super::pack)), promoted
//! elements ([`promotion`](super::promote)), else a plain loop whose OpenMP form
//! ([`Parallelism`]) is decided here. The printer (the `print` module) reads the plan and
//! decides nothing.

use super::accumulate::Block;
use super::cexpr::{unrolled_values, CExprs};
use super::instances::{Instances, LoopOptions};
use super::pack::{InScope, Panel};
use super::promote::{promotion, Promotion};
use super::stride::contiguous;
use super::team::shares_work;
use crate::ast::{For, Node};
use std::collections::HashMap;

/// A parallel loop whose iterations run no inner loop forks threads only from this many
/// iterations on (an OpenMP `if` clause): below it, waking the team costs more than the
/// work it shares (atax's initialisations of 2,000 elements ran 6% slower in parallel).
const MIN_FLAT_PARALLEL_TRIPS: i64 = 32768;

/// The OpenMP form of a plain loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Parallelism {
    /// `#pragma omp parallel for`, with `if(trips >= min)` when the trip count is known.
    Threads {
        /// The fewest iterations worth forking for (`None`: always fork).
        min_trips: Option<i64>,
    },
    /// `#pragma omp simd`: an innermost parallel loop inside a parallel region or a
    /// sequential loop whose accesses are contiguous or invariant along it
    /// ([`contiguous`]).
    Simd,
    /// No pragma.
    Sequential,
}

/// What the printer does with one loop.
pub(super) enum LoopPlan<'n> {
    /// Printed once per value of its iterator.
    Unrolled(Vec<i64>),
    /// Its statement's targets held in local accumulators.
    Accumulated(Block<'n>),
    /// One thread team around it; the loops inside are [`LoopPlan::TeamShared`] or
    /// [`LoopPlan::TeamSequential`].
    Team,
    /// In a thread team: its iterations shared out (`omp for`).
    TeamShared,
    /// In a thread team: run by every thread around its body.
    TeamSequential,
    /// Packed panels before it, then the loop itself in the given form.
    Packed(Vec<Panel<'n>>, Parallelism),
    /// Elements of its statements held in locals.
    Promoted(Promotion<'n>),
    /// A plain loop.
    Plain(Parallelism),
}

/// The plan of a whole AST.
pub(super) struct Plan<'n> {
    loops: HashMap<*const For, LoopPlan<'n>>,
    /// Inside thread teams: whether each node shares work out (else one thread runs it).
    shares: HashMap<*const Node, bool>,
}

/// What the decisions about a node depend on.
#[derive(Clone, Default)]
struct Scope {
    /// A parallel loop or a thread team encloses the node.
    in_parallel: bool,
    /// Sequential loops outside any parallel region enclose the node.
    sequential_depth: usize,
    /// The packed panels in scope.
    panels: Vec<InScope>,
}

impl Scope {
    fn in_parallel(&self) -> Scope {
        Scope {
            in_parallel: true,
            ..self.clone()
        }
    }
}

struct Planner<'n, 's> {
    statements: &'n dyn Instances,
    cexprs: CExprs<'s>,
    options: LoopOptions,
    plan: Plan<'n>,
}

impl<'n> Plan<'n> {
    /// The plan of `ast`.
    pub(super) fn of(
        ast: &'n Node,
        statements: &'n dyn Instances,
        cexprs: CExprs<'_>,
        options: LoopOptions,
    ) -> Plan<'n> {
        let mut planner = Planner {
            statements,
            cexprs,
            options,
            plan: Plan {
                loops: HashMap::new(),
                shares: HashMap::new(),
            },
        };
        planner.node(ast, &Scope::default());
        planner.plan
    }

    /// The plan of loop `f` (`None`: `f` is not in the planned AST).
    pub(super) fn of_loop(&self, f: &For) -> Option<&LoopPlan<'n>> {
        self.loops.get(&(f as *const For))
    }

    /// Whether `node`, in a thread team, shares work out.
    pub(super) fn shares(&self, node: &Node) -> bool {
        self.shares
            .get(&(node as *const Node))
            .copied()
            .unwrap_or(false)
    }
}

impl<'n> Planner<'n, '_> {
    fn node(&mut self, node: &'n Node, scope: &Scope) {
        match node {
            Node::Block(children) => children.iter().for_each(|c| self.node(c, scope)),
            Node::If(_, then, otherwise) => {
                self.node(then, scope);
                if let Some(e) = otherwise {
                    self.node(e, scope);
                }
            }
            Node::User(..) => {}
            Node::For(f) => {
                let plan = self.for_loop(f, scope);
                self.plan.loops.insert(f, plan);
            }
        }
    }

    fn for_loop(&mut self, f: &'n For, scope: &Scope) -> LoopPlan<'n> {
        let options = self.options;
        if let Some(values) = unrolled_values(f, options.unroll_limit) {
            self.node(&f.body, scope);
            return LoopPlan::Unrolled(values);
        }
        if let Some(block) = Block::of(f, self.statements) {
            return LoopPlan::Accumulated(block);
        }
        if options.openmp
            && !f.parallel
            && !scope.in_parallel
            && scope.sequential_depth == 0
            && shares_work(&f.body, self.statements, options)
        {
            self.team_node(&f.body, scope);
            return LoopPlan::Team;
        }
        if options.pack {
            let panels = Panel::all(f, self.statements, self.cexprs, &scope.panels);
            if !panels.is_empty() {
                let mut inner = scope.clone();
                (inner.panels).extend(panels.iter().map(|p| InScope {
                    block: p.block,
                    covers: p.source.covers.clone(),
                }));
                return LoopPlan::Packed(panels, self.plain(f, &inner));
            }
        }
        if let Some(promoted) = promotion(f, self.statements, self.cexprs) {
            return LoopPlan::Promoted(promoted);
        }
        LoopPlan::Plain(self.plain(f, scope))
    }

    /// The OpenMP form of `f` printed as a plain loop in `scope`, its body planned.
    fn plain(&mut self, f: &'n For, scope: &Scope) -> Parallelism {
        let openmp = self.options.openmp;
        // A parallel loop inside a sequential one forks and joins threads at every outer
        // iteration: only worth it when each of its iterations runs a loop itself.
        let worth_threads = scope.sequential_depth == 0 || f.body.has_loop();
        let threads = openmp && f.parallel && !scope.in_parallel && worth_threads;
        let form = if threads {
            Parallelism::Threads {
                min_trips: (!f.body.has_loop()).then_some(MIN_FLAT_PARALLEL_TRIPS),
            }
        } else if openmp
            && f.parallel
            && f.step == 1
            && !f.body.has_loop()
            && contiguous(f, self.statements, self.cexprs)
        {
            Parallelism::Simd
        } else {
            Parallelism::Sequential
        };
        let sequential = !scope.in_parallel && !threads;
        let inner = Scope {
            in_parallel: scope.in_parallel || threads,
            sequential_depth: scope.sequential_depth + usize::from(sequential),
            panels: scope.panels.clone(),
        };
        self.node(&f.body, &inner);
        form
    }

    /// Whether `node` shares work out in a thread team, remembered for the printer.
    fn shares(&mut self, node: &'n Node) -> bool {
        let shares = shares_work(node, self.statements, self.options);
        self.plan.shares.insert(node, shares);
        shares
    }

    /// `node` as run by every thread of a team: shared loops and guards around them, the
    /// rest run by one thread (in parallel, as far as the loops inside are concerned).
    fn team_node(&mut self, node: &'n Node, scope: &Scope) {
        let shares = self.shares(node);
        match node {
            Node::Block(children) if shares => {
                for c in children {
                    if self.shares(c) {
                        self.team_node(c, scope);
                    } else {
                        self.node(c, &scope.in_parallel());
                    }
                }
            }
            Node::If(_, then, otherwise) if shares => {
                self.team_node(then, scope);
                if let Some(e) = otherwise {
                    self.team_node(e, scope);
                }
            }
            Node::For(f) if shares => {
                let plan = self.team_for(f, scope);
                self.plan.loops.insert(f, plan);
            }
            _ => self.node(node, &scope.in_parallel()),
        }
    }

    fn team_for(&mut self, f: &'n For, scope: &Scope) -> LoopPlan<'n> {
        if f.parallel {
            self.node(&f.body, &scope.in_parallel());
            LoopPlan::TeamShared
        } else {
            self.team_node(&f.body, scope);
            LoopPlan::TeamSequential
        }
    }
}
