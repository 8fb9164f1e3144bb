//! The unknowns of one Feautrier dimension and their order in the integer program.
//!
//! Unknowns, in lexicographic-minimisation order: one satisfaction variable `x_e` per
//! dependence piece, their common upper bound, three objectives (the sums of the absolute
//! values of the iterator, parameter and constant coefficients), the absolute values, then
//! the coefficients themselves. Within each group the coefficients run
//! over iterators of every statement, then parameters of every statement, then constants.

use crate::farkas::Form;
use crate::ilp::{Constraint, LinExpr};

/// Positions of the unknowns of one row's integer program.
pub struct Unknowns {
    /// Iterator counts of the statements.
    iterators: Vec<usize>,
    /// Offset of each statement's first iterator coefficient among the coefficients.
    iterator_offsets: Vec<usize>,
    n_params: usize,
    n_edges: usize,
}

/// The coefficient groups of a statement's function, in objective order.
#[derive(Clone, Copy)]
enum Group {
    Iterator,
    Param,
    Constant,
}

const GROUPS: [Group; 3] = [Group::Iterator, Group::Param, Group::Constant];

impl Unknowns {
    /// The unknowns for statements with these iterator counts, `n_params` parameters and
    /// `n_edges` dependence pieces.
    pub fn new(iterators: Vec<usize>, n_params: usize, n_edges: usize) -> Unknowns {
        let iterator_offsets = iterators
            .iter()
            .scan(0, |next, &n| {
                let start = *next;
                *next += n;
                Some(start)
            })
            .collect();
        Unknowns {
            iterators,
            iterator_offsets,
            n_params,
            n_edges,
        }
    }

    fn n_stmts(&self) -> usize {
        self.iterators.len()
    }

    fn n_iterator_coefficients(&self) -> usize {
        self.iterators.iter().sum()
    }

    fn n_coefficients(&self) -> usize {
        self.n_iterator_coefficients() + self.n_stmts() * (self.n_params + 1)
    }

    /// The first unknown after the satisfaction block.
    fn objectives(&self) -> usize {
        self.cap() + 1
    }

    /// The number of unknowns.
    pub fn n_vars(&self) -> usize {
        self.objectives() + GROUPS.len() + 2 * self.n_coefficients()
    }

    /// Whether piece `e` is strongly satisfied (between 0 and 1).
    pub fn satisfied(&self, e: usize) -> usize {
        e
    }

    /// The common upper bound of the satisfaction variables (at most 1). Bounding each
    /// variable by 1 directly would give isl a pair of opposite constraints per piece,
    /// and it looks for residues of every such pair in every other constraint as it builds
    /// the set, which took seconds on PolyBench's deriche.
    fn cap(&self) -> usize {
        self.n_edges
    }

    /// The index among the coefficients (not yet among the unknowns).
    fn coefficient_index(&self, group: Group, s: usize, k: usize) -> usize {
        let iters = self.n_iterator_coefficients();
        match group {
            Group::Iterator => self.iterator_offsets[s] + k,
            Group::Param => iters + s * self.n_params + k,
            Group::Constant => iters + self.n_stmts() * self.n_params + s,
        }
    }

    fn coefficient(&self, group: Group, s: usize, k: usize) -> usize {
        self.objectives()
            + GROUPS.len()
            + self.n_coefficients()
            + self.coefficient_index(group, s, k)
    }

    fn absolute(&self, group: Group, s: usize, k: usize) -> usize {
        self.objectives() + GROUPS.len() + self.coefficient_index(group, s, k)
    }

    /// The coefficient of iterator `k` of statement `s`.
    pub fn iterator(&self, s: usize, k: usize) -> usize {
        self.coefficient(Group::Iterator, s, k)
    }

    /// The coefficient of parameter `p` for statement `s`.
    pub fn param(&self, s: usize, p: usize) -> usize {
        self.coefficient(Group::Param, s, p)
    }

    /// The constant of statement `s`.
    pub fn constant(&self, s: usize) -> usize {
        self.coefficient(Group::Constant, s, 0)
    }

    /// `(statement, index)` of every coefficient of a group.
    fn members(&self, group: Group) -> Vec<(usize, usize)> {
        let stmts = 0..self.n_stmts();
        match group {
            Group::Iterator => stmts
                .flat_map(|s| (0..self.iterators[s]).map(move |k| (s, k)))
                .collect(),
            Group::Param => stmts
                .flat_map(|s| (0..self.n_params).map(move |p| (s, p)))
                .collect(),
            Group::Constant => stmts.map(|s| (s, 0)).collect(),
        }
    }

    /// The constraints bounding the satisfaction variables between 0 and 1.
    pub fn satisfaction_bounds(&self) -> Vec<Constraint> {
        let cap = LinExpr::var(self.cap());
        let mut out = vec![LinExpr::constant(1).minus(&cap).ge0()];
        for e in 0..self.n_edges {
            let x = LinExpr::var(self.satisfied(e));
            out.push(x.clone().ge0());
            out.push(cap.clone().minus(&x).ge0());
        }
        out
    }

    /// The constraints tying the coefficient objectives to the absolute values and those to
    /// the coefficients.
    pub fn coefficient_bounds(&self) -> Vec<Constraint> {
        let mut out = Vec::new();
        for (g, group) in GROUPS.into_iter().enumerate() {
            let mut sum = LinExpr::var(self.objectives() + g);
            for (s, k) in self.members(group) {
                let abs = LinExpr::var(self.absolute(group, s, k));
                let c = LinExpr::var(self.coefficient(group, s, k));
                out.push(abs.clone().minus(&c).ge0());
                out.push(abs.clone().plus(&c).ge0());
                out.push(abs.clone().ge0());
                sum = sum.minus(&abs);
            }
            out.push(sum.eq0());
        }
        out
    }

    /// The affine form `phi_sink(t) - phi_source(s) - x_edge` over dependence piece `edge`
    /// from `source` to `sink`, in terms of the unknowns.
    pub fn delay(&self, edge: usize, source: usize, sink: usize) -> Form {
        let var = LinExpr::var;
        Form {
            constant: var(self.constant(sink))
                .minus(&var(self.constant(source)))
                .minus(&var(self.satisfied(edge))),
            params: (0..self.n_params)
                .map(|p| var(self.param(sink, p)).minus(&var(self.param(source, p))))
                .collect(),
            src: (0..self.iterators[source])
                .map(|k| LinExpr::default().minus(&var(self.iterator(source, k))))
                .collect(),
            dst: (0..self.iterators[sink])
                .map(|k| var(self.iterator(sink, k)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknowns_are_distinct_and_dense() {
        let u = Unknowns::new(vec![2, 0, 3], 2, 4);
        let mut seen: Vec<usize> = (0..3)
            .flat_map(|s| {
                let n = [2, 0, 3][s];
                let it: Vec<usize> = (0..n).map(|k| u.iterator(s, k)).collect();
                let ps: Vec<usize> = (0..2).map(|p| u.param(s, p)).collect();
                it.into_iter().chain(ps).chain([u.constant(s)])
            })
            .collect();
        let n = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n);
        assert_eq!(u.n_vars(), 4 + 1 + 3 + 2 * n);
        assert!(seen.iter().all(|&v| v >= 4 + 1 + 3 + n && v < u.n_vars()));
        assert_eq!(u.satisfied(3), 3);
    }
}
