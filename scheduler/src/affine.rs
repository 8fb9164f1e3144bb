//! Multi-dimensional affine schedules, the common output of the schedulers.
//!
//! Row `d` gives every statement `S` a time coordinate `phi_S^d(i) = c . i + p . N + c0`
//! (iterators `i`, parameters `N`). A [`RowKind::Loop`] row is a hyperplane (a loop after code
//! generation); a [`RowKind::Scalar`] row gives each statement a constant and orders groups
//! of statements (a sequence node: a fusion or distribution decision). Consecutive loop rows
//! of one [`Band`] are permutable (they may be tiled).

/// The coefficients of one statement in one row: iterators, then parameters, then the
/// constant (lengths given by the statement and the kernel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmtRow {
    /// One coefficient per iterator of the statement, outermost first.
    pub iterators: Vec<i64>,
    /// One coefficient per kernel parameter, in declaration order.
    pub params: Vec<i64>,
    /// The constant term.
    pub constant: i64,
}

/// What a row means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// A hyperplane: becomes a loop.
    Loop {
        /// Whether no dependence is carried by this row among those not yet satisfied by
        /// outer rows (the loop may run in parallel).
        coincident: bool,
    },
    /// A statement-wise constant ordering groups of statements.
    Scalar,
}

/// One schedule dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// What it means.
    pub kind: RowKind,
    /// One function per statement, in the program's statement order.
    pub stmts: Vec<StmtRow>,
}

/// A maximal run of consecutive loop rows that are permutable together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Band {
    /// First row.
    pub start: usize,
    /// Number of rows.
    pub len: usize,
}

/// A multi-dimensional affine schedule with its band structure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AffineSchedule {
    /// The rows, outermost first.
    pub rows: Vec<Row>,
    /// The permutable bands (loop rows only, disjoint, in order).
    pub bands: Vec<Band>,
}
