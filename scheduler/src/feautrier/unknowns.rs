//! The unknowns of one Feautrier dimension and their order in the ILP.
//!
//! Dimensions, in lexicographic-minimisation order: the objectives (minus the number of
//! satisfied dependence pieces; then the sums of the absolute values of the iterator,
//! parameter and constant coefficients), the satisfaction variables `x_e`, the absolute
//! values, then the coefficients themselves.

/// Names and positions of the unknowns.
pub struct Unknowns {
    iterators: Vec<usize>,
    n_params: usize,
    n_edges: usize,
}

/// The coefficient groups of a statement's function.
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
        Unknowns {
            iterators,
            n_params,
            n_edges,
        }
    }
    /// Number of parameters.
    pub fn n_params(&self) -> usize {
        self.n_params
    }
    /// Number of iterators of statement `s`.
    pub fn n_iterators(&self, s: usize) -> usize {
        self.iterators[s]
    }
    /// The coefficient of iterator `k` of statement `s`.
    pub fn iterator(&self, s: usize, k: usize) -> String {
        format!("c{s}_{k}")
    }
    /// The coefficient of parameter `p` for statement `s`.
    pub fn param(&self, s: usize, p: usize) -> String {
        format!("p{s}_{p}")
    }
    /// The constant of statement `s`.
    pub fn constant(&self, s: usize) -> String {
        format!("k{s}")
    }
    /// Whether dependence piece `e` is strongly satisfied (0 or 1).
    pub fn satisfied(&self, e: usize) -> String {
        format!("x{e}")
    }

    fn coefficients(&self, g: Group) -> Vec<String> {
        let stmts = 0..self.iterators.len();
        match g {
            Group::Iterator => stmts
                .flat_map(|s| (0..self.iterators[s]).map(move |k| (s, k)))
                .map(|(s, k)| self.iterator(s, k))
                .collect(),
            Group::Param => stmts
                .flat_map(|s| (0..self.n_params).map(move |p| (s, p)))
                .map(|(s, p)| self.param(s, p))
                .collect(),
            Group::Constant => stmts.map(|s| self.constant(s)).collect(),
        }
    }

    fn satisfactions(&self) -> Vec<String> {
        (0..self.n_edges).map(|e| self.satisfied(e)).collect()
    }

    /// Every unknown, in ILP order.
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = (0..4).map(|k| format!("obj{k}")).collect();
        out.extend(self.satisfactions());
        for g in GROUPS {
            out.extend(self.coefficients(g).iter().map(|c| format!("abs_{c}")));
        }
        for g in GROUPS {
            out.extend(self.coefficients(g));
        }
        out
    }

    /// The position of an unknown in [`Unknowns::names`].
    pub fn position(&self, name: &str) -> usize {
        self.names()
            .iter()
            .position(|n| n == name)
            .expect("every unknown is named")
    }

    /// The constraints tying objectives, satisfaction variables and absolute values.
    pub fn bounds(&self) -> String {
        let mut cs: Vec<String> = self
            .satisfactions()
            .iter()
            .map(|x| format!("0 <= {x} <= 1"))
            .collect();
        let sum = |v: Vec<String>| {
            if v.is_empty() {
                "0".to_string()
            } else {
                v.join(" + ")
            }
        };
        cs.push(format!("obj0 = -({})", sum(self.satisfactions())));
        for (k, g) in GROUPS.into_iter().enumerate() {
            let coefs = self.coefficients(g);
            for c in &coefs {
                cs.push(format!("abs_{c} >= {c} and abs_{c} >= -{c}"));
            }
            let abs = coefs.iter().map(|c| format!("abs_{c}")).collect();
            cs.push(format!("obj{} = {}", k + 1, sum(abs)));
        }
        format!("{{ [{}] : {} }}", self.names().join(", "), cs.join(" and "))
    }
}
