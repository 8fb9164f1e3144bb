//! The values a group of rows computes, as vector operations over UB values in program
//! order, each operation once (common subexpressions are shared).
//!
//! A value's [`Layout`] says how it spreads over the rows of a group and their columns; its
//! place in UB (buffer and offset) is decided afterwards (`alloc`), and its instructions are
//! emitted from the operation and the places (`emit`).

use npu_sim::program::{BinaryOp, CmpOp, DType, ReduceOp, ScalarOp, UnaryOp};
use std::collections::HashMap;

/// A value: an index into [`Graph::nodes`].
pub type Val = usize;

/// How a value spans a group of rows in UB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// One value per row and column: row `i` starts at `i * pitch`.
    Tile {
        /// Elements between row starts.
        pitch: i64,
    },
    /// One value per row, contiguous.
    Row,
    /// One value per row copied over a whole repeat of lanes (row `i` at `i * lanes`): a
    /// per-row value as an operand of a tile operation.
    Spread,
    /// One value per column, the same for every row (`width` values).
    Col,
    /// One repeat of lanes all holding the same value: a constant or a scalar.
    Splat,
    /// A single element (a scalar as loaded from GM).
    One,
    /// Partial results of a reduction: row `i`'s at `i * pitch`.
    Part {
        /// Elements between row starts.
        pitch: i64,
    },
}

impl Layout {
    /// Whether the value is the same for every group of rows (computed once per core).
    pub fn invariant(self) -> bool {
        matches!(self, Layout::Col | Layout::Splat | Layout::One)
    }
}

/// An immediate operand, kept as its bits so that operations can be compared and hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Imm(u64);

impl Imm {
    /// The immediate `v`.
    pub fn new(v: f64) -> Imm {
        Imm(v.to_bits())
    }
    /// Its value.
    pub fn value(self) -> f64 {
        f64::from_bits(self.0)
    }
}

/// What computes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Placed by the caller (an input tile, a per-core column): nothing to compute.
    Given,
    /// Every lane the same constant.
    Dup(Imm),
    /// `vexp`, `vsqrt`, `vmov` ...
    Unary(UnaryOp, Val),
    /// `vadd`, `vmax` ...
    Binary(BinaryOp, Val, Val),
    /// `vadds`, `vmuls` ... with an immediate.
    Scalar(ScalarOp, Val, Imm),
    /// `vcmp`: 1 or 0 in the operands' type.
    Cmp(CmpOp, Val, Val),
    /// `vsel`: where the first is non-zero the second, else the third.
    Select(Val, Val, Val),
    /// `vconv`: to this value's type.
    Conv(Val),
    /// `vbcast`: a [`Layout::Row`] value to [`Layout::Spread`], or [`Layout::One`] to
    /// [`Layout::Splat`].
    Spread(Val),
    /// `vreduce` of each row's elements `start..start + len` (at most one repeat) into one
    /// value per row.
    Fold {
        /// The reduction.
        op: ReduceOp,
        /// What is reduced.
        src: Val,
        /// First element of each row (a multiple of the lanes).
        start: i64,
        /// Elements per row.
        len: i64,
    },
    /// `vreduce` of each row's first `len` elements (a multiple of the lanes) repeat by
    /// repeat: `len / lanes` partial results per row.
    Partials {
        /// The reduction.
        op: ReduceOp,
        /// What is reduced.
        src: Val,
        /// Elements per row.
        len: i64,
    },
}

impl Op {
    /// The values it reads.
    pub fn operands(&self) -> Vec<Val> {
        match *self {
            Op::Given | Op::Dup(_) => vec![],
            Op::Unary(_, a)
            | Op::Scalar(_, a, _)
            | Op::Conv(a)
            | Op::Spread(a)
            | Op::Fold { src: a, .. }
            | Op::Partials { src: a, .. } => vec![a],
            Op::Binary(_, a, b) | Op::Cmp(_, a, b) => vec![a, b],
            Op::Select(c, a, b) => vec![c, a, b],
        }
    }
    /// Whether it computes element by element in place of an operand of its own layout and
    /// type (so that the operand's buffer may hold the result).
    pub fn elementwise(&self) -> bool {
        matches!(
            self,
            Op::Unary(..) | Op::Binary(..) | Op::Scalar(..) | Op::Cmp(..) | Op::Select(..)
        )
    }
}

/// One value.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What computes it.
    pub op: Op,
    /// Its element type.
    pub dtype: DType,
    /// How it spans the rows.
    pub layout: Layout,
    /// The home it was stored into (`Graph::pin`), if any.
    pub home: Option<usize>,
}

/// How a group's rows go through UB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Columns {
    /// Whole rows: every value of a group is in UB at once.
    #[default]
    Whole,
    /// Column chunks, every input loaded per chunk (a per-column value differs from chunk
    /// to chunk and is computed per chunk).
    Streamed,
    /// Column chunks computed over inputs loaded whole per group (tiles of `width`
    /// elements a row) and per core (per-column inputs): computed per-column values are
    /// computed per chunk.
    Resident {
        /// Elements per row of a loaded tile.
        width: i64,
    },
}

impl Columns {
    /// Whether rows go through UB in column chunks.
    pub fn chunked(self) -> bool {
        self != Columns::Whole
    }
}

/// The values of a group of rows, in the order they are computed.
#[derive(Debug, Default)]
pub struct Graph {
    /// Every value; operands come before their users.
    pub nodes: Vec<Node>,
    /// How the rows' columns go through UB.
    pub columns: Columns,
    shared: HashMap<(Op, DType, Layout), Val>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// Whether value `v` is the same for every group of rows (computed once per core).
    pub fn invariant(&self, v: Val) -> bool {
        match self.nodes[v].layout {
            Layout::Col => match self.columns {
                Columns::Whole => true,
                Columns::Streamed => false,
                Columns::Resident { .. } => self.nodes[v].op == Op::Given,
            },
            l => l.invariant(),
        }
    }

    /// Ends the values shared so far: no later operation reuses an earlier one (a step of
    /// a chunked program recomputes what it needs) but a constant or a spread scalar,
    /// computed once per core.
    pub fn fence(&mut self) {
        self.shared
            .retain(|(_, _, layout), _| matches!(layout, Layout::Splat | Layout::One));
    }

    /// A value the caller places (it is computed by nothing here).
    pub fn given(&mut self, dtype: DType, layout: Layout) -> Val {
        self.push(Op::Given, dtype, layout)
    }

    /// The value `op` computes, shared with an equal earlier one.
    pub fn add(&mut self, op: Op, dtype: DType, layout: Layout) -> Val {
        if let Some(&v) = self.shared.get(&(op, dtype, layout)) {
            return v;
        }
        let v = self.push(op, dtype, layout);
        self.shared.insert((op, dtype, layout), v);
        v
    }

    /// A new value computed by `op`, never shared.
    pub fn fresh(&mut self, op: Op, dtype: DType, layout: Layout) -> Val {
        self.push(op, dtype, layout)
    }

    fn push(&mut self, op: Op, dtype: DType, layout: Layout) -> Val {
        self.nodes.push(Node {
            op,
            dtype,
            layout,
            home: None,
        });
        self.nodes.len() - 1
    }

    /// Stores `v` in `home` (an array's place, numbered by the caller): what was there before
    /// is overwritten, so values held there are no longer shared.
    pub fn pin(&mut self, v: Val, home: usize) {
        let nodes = &self.nodes;
        self.shared.retain(|_, w| nodes[*w].home != Some(home));
        self.nodes[v].home = Some(home);
    }

    /// Which values `roots` need (themselves and, transitively, their operands): the others
    /// are never computed (an initialisation a reduction makes redundant, a constant only it
    /// read).
    pub fn live(&self, roots: &[Val]) -> Vec<bool> {
        let mut live = vec![false; self.nodes.len()];
        roots.iter().for_each(|&r| live[r] = true);
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                self.nodes[i]
                    .op
                    .operands()
                    .into_iter()
                    .for_each(|a| live[a] = true);
            }
        }
        live
    }

    /// The last live node reading each value (`None` if none reads it).
    pub fn last_uses(&self, live: &[bool]) -> Vec<Option<Val>> {
        let mut last = vec![None; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate().filter(|(i, _)| live[*i]) {
            for a in n.op.operands() {
                last[a] = Some(i);
            }
        }
        last
    }
}
