//! What a group of rows computes: every statement of the kernel, in program order, as one
//! value graph.
//!
//! An array's value is tracked statement by statement: an input's is what was loaded (per
//! group for tiles and per-row values, per core for per-column values and scalars), an
//! output's or temporary's is zero until a statement writes it. A statement's result is
//! stored into the target's *home* (an output's slot of the output ring, a temporary's own
//! buffer), and later reads of the target read it there: intermediates never leave UB.
//! Reductions reduce the right-hand side over the columns (`Lowerer::reduce_rows`) and
//! combine the result with the target's value.

use super::graph::{Columns, Graph, Layout, Op, Val};
use super::lower::{binary, combining, Frame, Lowerer};
use super::recognise::{Kind, Statement, VectorKernel};
use crate::npu::matmul::dtype;
use crate::npu::NpuError;
use frontend::ir::{ArrayId, AssignOp, BinOp, Kernel};
use npu_sim::program::{BinaryOp, ReduceOp, UnaryOp};
use std::collections::{BTreeMap, BTreeSet};

/// The computation of a group of rows.
#[derive(Debug)]
pub struct Group {
    /// Its values.
    pub graph: Graph,
    /// The values loaded from GM, with their arrays (tiles and per-row values per group,
    /// per-column values and scalars per core).
    pub loaded: Vec<(Val, ArrayId)>,
    /// The arrays stored into homes (a home is numbered by its array's index).
    pub homes: BTreeSet<ArrayId>,
    /// Where each statement's values start, with a note naming the statement.
    pub origins: Vec<(Val, String)>,
    /// Which values the outputs need (the others are never computed).
    pub live: Vec<bool>,
    /// The rows' frame.
    pub frame: Frame,
}

/// The layout of an array of `kind` in a frame.
pub fn layout(kind: Kind, frame: &Frame) -> Layout {
    match kind {
        Kind::Tile => Layout::Tile { pitch: frame.width },
        Kind::Row => Layout::Row,
        Kind::Col => Layout::Col,
        Kind::Scalar => Layout::One,
    }
}

/// The graph of `vk`'s statements over groups of rows in `frame`.
pub fn build(vk: &VectorKernel, kernel: &Kernel, frame: Frame) -> Result<Group, NpuError> {
    let mut st = State::new(vk, kernel, frame, Columns::Whole);
    let cols = vk.cols.unwrap_or(1);
    for s in &vk.stmts {
        st.statement(s, cols)?;
    }
    // Every output ends in its home, written or not (an output never written is zero, an
    // in-out one keeps what was loaded).
    st.origins
        .push((st.graph.nodes.len(), "outputs into their slots".into()));
    let outputs: Vec<ArrayId> = (vk.arrays.keys())
        .filter(|&&a| kernel.array(a).role.is_output())
        .copied()
        .collect();
    let roots = st.store_homes(&outputs)?;
    Ok(st.finish(&roots))
}

/// A run of statements computed together over a group of rows: one step of a program whose
/// rows go through UB in column chunks (`passes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepSpec {
    /// The statements, by their index in the kernel's row statements.
    pub stmts: Vec<usize>,
    /// The columns the step's reductions reduce (a chunk's).
    pub cols: i64,
    /// Tile outputs no statement writes, stored by this step (zero, or an in-out array as
    /// loaded).
    pub unwritten: Vec<ArrayId>,
}

/// The graph of `steps`, each step's values a range of nodes of its own: nothing computed
/// in one step is shared with another, and every array is read afresh at a step's start
/// (an input as loaded for the step, a written array from its home).
pub fn build_steps(
    vk: &VectorKernel,
    kernel: &Kernel,
    frame: Frame,
    columns: Columns,
    steps: &[StepSpec],
) -> Result<(Group, Vec<std::ops::Range<Val>>), NpuError> {
    let mut st = State::new(vk, kernel, frame, columns);
    let mut ranges = Vec::new();
    let mut roots = Vec::new();
    for step in steps {
        st.graph.fence();
        st.arrays.current.clear();
        let start = st.graph.nodes.len();
        for &i in &step.stmts {
            st.statement(&vk.stmts[i], step.cols)?;
        }
        let written: Vec<(ArrayId, Val)> = (st.arrays.current.iter())
            .filter(|(a, _)| st.arrays.homes.contains(a))
            .map(|(&a, &v)| (a, v))
            .collect();
        roots.extend(written.iter().map(|&(_, v)| v));
        let rows = written.iter().filter(|(a, _)| vk.arrays[a] == Kind::Row);
        st.arrays.carried.extend(rows.map(|&(a, _)| a));
        if !step.unwritten.is_empty() {
            st.origins
                .push((st.graph.nodes.len(), "outputs into their slots".into()));
            roots.extend(st.store_homes(&step.unwritten)?);
        }
        ranges.push(start..st.graph.nodes.len());
    }
    Ok((st.finish(&roots), ranges))
}

/// A graph under construction, with each array's value.
struct State<'k> {
    graph: Graph,
    arrays: Arrays<'k>,
    origins: Vec<(Val, String)>,
}

/// Each array's current value, what was loaded and which arrays have homes.
struct Arrays<'k> {
    vk: &'k VectorKernel,
    kernel: &'k Kernel,
    frame: Frame,
    current: BTreeMap<ArrayId, Val>,
    loaded: Vec<(Val, ArrayId)>,
    homes: BTreeSet<ArrayId>,
    /// The per-row arrays earlier steps wrote: read back from their homes, which outlive a
    /// step (a tile's home holds a chunk).
    carried: BTreeSet<ArrayId>,
}

impl Arrays<'_> {
    /// The value of `a` now: its last result, else its home's (a per-row array a step
    /// before wrote), else what was loaded (an input), else zero.
    fn value_of(&mut self, g: &mut Graph, a: ArrayId) -> Result<Val, NpuError> {
        if let Some(&v) = self.current.get(&a) {
            return Ok(v);
        }
        let array = self.kernel.array(a);
        let d = dtype(array.elem)?;
        let kind = self.vk.arrays[&a];
        let v = if self.carried.contains(&a) {
            let v = g.given(d, layout(kind, &self.frame));
            g.pin(v, a.0);
            v
        } else if array.role.is_input() {
            let layout = match (kind, g.columns) {
                (Kind::Tile, Columns::Resident { width }) => Layout::Tile { pitch: width },
                _ => layout(kind, &self.frame),
            };
            let v = g.given(d, layout);
            self.loaded.push((v, a));
            match kind {
                Kind::Scalar => g.add(Op::Spread(v), d, Layout::Splat),
                _ => v,
            }
        } else {
            Lowerer {
                graph: g,
                frame: self.frame,
            }
            .constant(d, 0.0)
        };
        self.current.insert(a, v);
        Ok(v)
    }
}

impl<'k> State<'k> {
    fn new(vk: &'k VectorKernel, kernel: &'k Kernel, frame: Frame, columns: Columns) -> Self {
        let mut graph = Graph::new();
        graph.columns = columns;
        State {
            graph,
            arrays: Arrays {
                vk,
                kernel,
                frame,
                current: BTreeMap::new(),
                loaded: Vec::new(),
                homes: BTreeSet::new(),
                carried: BTreeSet::new(),
            },
            origins: Vec::new(),
        }
    }

    /// Lowers statement `s`, its reductions over `cols` columns, and stores its result into
    /// its target's home.
    fn statement(&mut self, s: &Statement, cols: i64) -> Result<(), NpuError> {
        let refuse = |why: String| NpuError::Unsupported(format!("statement {}: {why}", s.name));
        let (kernel, frame) = (self.arrays.kernel, self.arrays.frame);
        let start = self.graph.nodes.len();
        self.origins.push((
            start,
            format!(
                "{}: {} {}",
                s.name,
                kernel.array(s.target).name,
                s.op.symbol()
            ),
        ));
        let arrays = &mut self.arrays;
        let mut err = None;
        let mut leaf = |g: &mut Graph, a: &frontend::ir::Access| {
            arrays.value_of(g, a.array).map_err(|e: NpuError| {
                let text = e.to_string();
                err = Some(e);
                text
            })
        };
        let mut low = Lowerer {
            graph: &mut self.graph,
            frame,
        };
        let v = low.expr(&s.rhs, &mut leaf);
        if let Some(e) = err {
            return Err(e);
        }
        let v = v.map_err(refuse)?;
        let target = s.target;
        let d = dtype(kernel.array(target).elem)?;
        let arrays = &mut self.arrays;
        let new = match (s.reduce, s.op) {
            (Some(op), _) => {
                // (a tile of any pitch reduces as it is)
                let tile = match low.graph.nodes[v].layout {
                    Layout::Tile { .. } => v,
                    _ => low.to_layout(v, Layout::Tile { pitch: frame.width }),
                };
                let red = low.reduce_rows(op, tile, cols).map_err(refuse)?;
                let o = arrays.value_of(low.graph, target)?;
                if identity(low.graph, o, op) {
                    // `m = -inf; m max= ...`: the reduction's result is the value (a sum
                    // may then be -0 where the kernel's is +0, equal as numbers)
                    red
                } else {
                    low.elementwise(d, &[o, red], |x| Op::Binary(combining(op), x[0], x[1]))
                }
            }
            (None, AssignOp::Assign) => v,
            (None, op) => {
                let bop = match op {
                    AssignOp::Add => binary(BinOp::Add, d),
                    AssignOp::Sub => binary(BinOp::Sub, d),
                    AssignOp::Mul => binary(BinOp::Mul, d),
                    AssignOp::Div => binary(BinOp::Div, d),
                    AssignOp::Max => Ok(BinaryOp::Max),
                    _ => Ok(BinaryOp::Min),
                }
                .map_err(refuse)?;
                let o = arrays.value_of(low.graph, target)?;
                low.elementwise(d, &[o, v], |x| Op::Binary(bop, x[0], x[1]))
            }
        };
        let target_layout = layout(arrays.vk.arrays[&target], &frame);
        let mut new = low.to_layout(new, target_layout);
        let n = &low.graph.nodes[new];
        if new < start || n.home.is_some() || n.op == Op::Given {
            new = low.copy(new);
        }
        self.graph.pin(new, target.0);
        arrays.current.insert(target, new);
        arrays.homes.insert(target);
        Ok(())
    }

    /// Puts the current value of each of `arrays` into its home (copying it when it is
    /// elsewhere); their values in their homes.
    fn store_homes(&mut self, arrays: &[ArrayId]) -> Result<Vec<Val>, NpuError> {
        let frame = self.arrays.frame;
        let mut roots = Vec::new();
        for &a in arrays {
            let kind = self.arrays.vk.arrays[&a];
            let v = self.arrays.value_of(&mut self.graph, a)?;
            if self.graph.nodes[v].home == Some(a.0) {
                roots.push(v);
                continue;
            }
            let mut low = Lowerer {
                graph: &mut self.graph,
                frame,
            };
            let mut w = low.to_layout(v, layout(kind, &frame));
            if w == v {
                w = low.copy(v);
            }
            self.graph.pin(w, a.0);
            self.arrays.homes.insert(a);
            roots.push(w);
        }
        Ok(roots)
    }

    fn finish(self, roots: &[Val]) -> Group {
        let live = self.graph.live(roots);
        Group {
            graph: self.graph,
            loaded: self.arrays.loaded,
            homes: self.arrays.homes,
            origins: self.origins,
            live,
            frame: self.arrays.frame,
        }
    }
}

/// Whether value `v` is the identity of reduction `op` everywhere (0 for sums, -inf for
/// maxima, +inf for minima), as a constant or a copy of one.
fn identity(g: &Graph, v: Val, op: ReduceOp) -> bool {
    let constant = match g.nodes[v].op {
        Op::Dup(c) => Some(c),
        Op::Unary(UnaryOp::Mov, a) => match g.nodes[a].op {
            Op::Dup(c) => Some(c),
            _ => None,
        },
        _ => None,
    };
    constant.is_some_and(|c| match op {
        ReduceOp::Sum => c.value() == 0.0,
        ReduceOp::Max => c.value() == f64::NEG_INFINITY,
        ReduceOp::Min => c.value() == f64::INFINITY,
    })
}
