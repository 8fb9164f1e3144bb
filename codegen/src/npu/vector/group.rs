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

use super::graph::{Graph, Layout, Op, Val};
use super::lower::{binary, combining, Frame, Lowerer};
use super::recognise::{Kind, VectorKernel};
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
    let mut graph = Graph::new();
    let mut current: BTreeMap<ArrayId, Val> = BTreeMap::new();
    let mut loaded = Vec::new();
    let mut homes = BTreeSet::new();
    let mut roots = Vec::new();
    let mut origins = Vec::new();
    let cols = vk.cols.unwrap_or(1);
    // The value of `array` now: its last result, else what was loaded, else zero.
    let mut value_of = |g: &mut Graph, a: ArrayId, current: &mut BTreeMap<ArrayId, Val>| {
        if let Some(&v) = current.get(&a) {
            return Ok(v);
        }
        let array = kernel.array(a);
        let d = dtype(array.elem)?;
        let kind = vk.arrays[&a];
        let v = if array.role.is_input() {
            let v = g.given(d, layout(kind, &frame));
            loaded.push((v, a));
            match kind {
                Kind::Scalar => g.add(Op::Spread(v), d, Layout::Splat),
                _ => v,
            }
        } else {
            Lowerer { graph: g, frame }.constant(d, 0.0)
        };
        current.insert(a, v);
        Ok(v)
    };
    for s in &vk.stmts {
        let refuse = |why: String| NpuError::Unsupported(format!("statement {}: {why}", s.name));
        let start = graph.nodes.len();
        origins.push((
            start,
            format!(
                "{}: {} {}",
                s.name,
                kernel.array(s.target).name,
                s.op.symbol()
            ),
        ));
        let mut err = None;
        let mut leaf = |g: &mut Graph, a: &frontend::ir::Access| {
            value_of(g, a.array, &mut current).map_err(|e: NpuError| {
                let text = e.to_string();
                err = Some(e);
                text
            })
        };
        let mut low = Lowerer {
            graph: &mut graph,
            frame,
        };
        let v = low.expr(&s.rhs, &mut leaf);
        if let Some(e) = err {
            return Err(e);
        }
        let v = v.map_err(refuse)?;
        let target = s.target;
        let d = dtype(kernel.array(target).elem)?;
        let mut old = |low: &mut Lowerer| value_of(low.graph, target, &mut current);
        let new = match (s.reduce, s.op) {
            (Some(op), _) => {
                let tile = low.to_layout(v, Layout::Tile { pitch: frame.width });
                let red = low.reduce_rows(op, tile, cols).map_err(refuse)?;
                let o = old(&mut low)?;
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
                let o = old(&mut low)?;
                low.elementwise(d, &[o, v], |x| Op::Binary(bop, x[0], x[1]))
            }
        };
        let target_layout = layout(vk.arrays[&target], &frame);
        let mut new = low.to_layout(new, target_layout);
        let n = &low.graph.nodes[new];
        if new < start || n.home.is_some() || n.op == Op::Given {
            new = low.copy(new);
        }
        graph.pin(new, target.0);
        current.insert(target, new);
        homes.insert(target);
    }
    // Every output ends in its home, written or not (an output never written is zero, an
    // in-out one keeps what was loaded).
    origins.push((graph.nodes.len(), "outputs into their slots".into()));
    for (&a, &kind) in &vk.arrays {
        if !kernel.array(a).role.is_output() {
            continue;
        }
        let v = value_of(&mut graph, a, &mut current)?;
        if graph.nodes[v].home == Some(a.0) {
            roots.push(v);
            continue;
        }
        let mut low = Lowerer {
            graph: &mut graph,
            frame,
        };
        let mut w = low.to_layout(v, layout(kind, &frame));
        if w == v {
            w = low.copy(v);
        }
        graph.pin(w, a.0);
        homes.insert(a);
        roots.push(w);
    }
    let live = graph.live(&roots);
    Ok(Group {
        graph,
        loaded,
        homes,
        origins,
        live,
        frame,
    })
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
