//! Where each unknown of a hyperplane search lives in the integer program.
//!
//! Per statement, for each iterator from the innermost outwards `(neg_j, pos_j)` (the
//! coefficient is `pos_j - neg_j`, both in `0..=bound`), then the shift; a heuristic's own
//! unknowns follow ([`super::RowIlp::new_var`]). The heuristic's terms are put before all of
//! them when the program is solved ([`crate::ilp::Ilp::with_terms_first`]): isl's
//! lexicographic minimum minimises the terms in order, then the rest in this order.

use crate::ilp::LinExpr;

/// The position of one statement's unknowns.
#[derive(Clone, Copy, Debug)]
pub struct StmtVars {
    /// The statement (index into `Program::statements`).
    pub stmt: usize,
    /// Its number of iterators.
    pub n_iters: usize,
    base: usize,
}

impl StmtVars {
    fn neg(&self, j: usize) -> usize {
        self.base + 2 * (self.n_iters - 1 - j)
    }
    fn pos(&self, j: usize) -> usize {
        self.neg(j) + 1
    }
    /// The unknown of the shift.
    pub fn shift(&self) -> usize {
        self.base + 2 * self.n_iters
    }
    /// The coefficient of iterator `j`.
    pub fn coefficient(&self, j: usize) -> LinExpr {
        LinExpr::var(self.pos(j)).minus(&LinExpr::var(self.neg(j)))
    }
    /// Its absolute value (exact at a lexicographic minimum, where one part is 0).
    pub fn magnitude(&self, j: usize) -> LinExpr {
        LinExpr::var(self.pos(j)).plus(&LinExpr::var(self.neg(j)))
    }
    /// The unknowns holding coefficient parts (each in `0..=bound`).
    pub fn parts(&self) -> std::ops::Range<usize> {
        self.base..self.base + 2 * self.n_iters
    }
}

/// The unknowns of one hyperplane search.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Number of kernel parameters.
    pub n_params: usize,
    /// The statements, in order.
    pub stmts: Vec<StmtVars>,
}

impl Layout {
    /// The layout for `n_params` parameters and the statements `(index, number of
    /// iterators)`.
    pub fn new(n_params: usize, stmts: &[(usize, usize)]) -> Layout {
        let mut base = 0;
        let stmts = stmts
            .iter()
            .map(|&(stmt, n_iters)| {
                let v = StmtVars {
                    stmt,
                    n_iters,
                    base,
                };
                base += 2 * n_iters + 1;
                v
            })
            .collect();
        Layout { n_params, stmts }
    }
    /// Total number of unknowns.
    pub fn n_vars(&self) -> usize {
        self.stmts.last().map_or(0, |s| s.shift() + 1)
    }
    /// The unknowns of statement `stmt`, if it is in the layout.
    pub fn stmt(&self, stmt: usize) -> Option<&StmtVars> {
        self.stmts.iter().find(|s| s.stmt == stmt)
    }
}
