//! The statement-level dependence graph: strongly connected components in topological
//! order and weakly connected components.
//!
//! Nodes are statement indices `0..n`; an edge `a -> b` says some instance of `b` depends
//! on some instance of `a`. Self-edges are allowed and change nothing.

/// A directed graph over statements.
#[derive(Clone, Debug)]
pub struct Ddg {
    succ: Vec<Vec<usize>>,
}

impl Ddg {
    /// A graph with `n` statements and the given edges (`(source, sink)`).
    pub fn new(n: usize, edges: impl IntoIterator<Item = (usize, usize)>) -> Ddg {
        let mut succ = vec![Vec::new(); n];
        for (a, b) in edges {
            if !succ[a].contains(&b) {
                succ[a].push(b);
            }
        }
        Ddg { succ }
    }

    /// Number of statements.
    pub fn len(&self) -> usize {
        self.succ.len()
    }

    /// Whether the graph has no statement.
    pub fn is_empty(&self) -> bool {
        self.succ.is_empty()
    }

    /// The strongly connected components, each sorted, in a topological order of the
    /// condensation (every edge goes from an earlier or the same component to a later one);
    /// among the components ready at a time, the one with the smallest statement comes first,
    /// so independent statements keep their textual order.
    pub fn sccs(&self) -> Vec<Vec<usize>> {
        let comp = self.scc_ids();
        let n_comp = comp.iter().copied().max().map_or(0, |m| m + 1);
        let mut members = vec![Vec::new(); n_comp];
        for (v, &c) in comp.iter().enumerate() {
            members[c].push(v);
        }
        let mut indegree = vec![0usize; n_comp];
        let mut csucc = vec![Vec::new(); n_comp];
        for (a, succ) in self.succ.iter().enumerate() {
            for &b in succ {
                let (ca, cb) = (comp[a], comp[b]);
                if ca != cb && !csucc[ca].contains(&cb) {
                    csucc[ca].push(cb);
                    indegree[cb] += 1;
                }
            }
        }
        // Kahn's algorithm, smallest first statement first.
        let mut ready: std::collections::BTreeSet<(usize, usize)> = (0..n_comp)
            .filter(|&c| indegree[c] == 0)
            .map(|c| (members[c][0], c))
            .collect();
        let mut order = Vec::with_capacity(n_comp);
        while let Some((_, c)) = ready.pop_first() {
            order.push(std::mem::take(&mut members[c]));
            for &d in &csucc[c] {
                indegree[d] -= 1;
                if indegree[d] == 0 {
                    ready.insert((members[d][0], d));
                }
            }
        }
        order
    }

    /// The weakly connected components (edges taken both ways), each sorted, ordered by
    /// their smallest statement.
    pub fn components(&self) -> Vec<Vec<usize>> {
        let n = self.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn root(parent: &mut [usize], mut v: usize) -> usize {
            while parent[v] != v {
                parent[v] = parent[parent[v]];
                v = parent[v];
            }
            v
        }
        for (a, succ) in self.succ.iter().enumerate() {
            for &b in succ {
                let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
        let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for v in 0..n {
            let r = root(&mut parent, v);
            groups.entry(r).or_default().push(v);
        }
        groups.into_values().collect()
    }

    /// Tarjan's algorithm (iterative): the component id of every statement.
    fn scc_ids(&self) -> Vec<usize> {
        let n = self.len();
        const NONE: usize = usize::MAX;
        let mut index = vec![NONE; n];
        let mut low = vec![0; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut comp = vec![NONE; n];
        let (mut next_index, mut next_comp) = (0, 0);
        for start in 0..n {
            if index[start] != NONE {
                continue;
            }
            // (node, position of the next successor to visit)
            let mut call = vec![(start, 0usize)];
            index[start] = next_index;
            low[start] = next_index;
            next_index += 1;
            stack.push(start);
            on_stack[start] = true;
            while let Some(&mut (v, ref mut pos)) = call.last_mut() {
                if let Some(&w) = self.succ[v].get(*pos) {
                    *pos += 1;
                    if index[w] == NONE {
                        index[w] = next_index;
                        low[w] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        call.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp[w] = next_comp;
                        if w == v {
                            break;
                        }
                    }
                    next_comp += 1;
                }
            }
        }
        comp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sccs_in_topological_order() {
        // 0 -> 1 <-> 2 -> 3, 4 alone, 5 -> 0
        let g = Ddg::new(6, [(0, 1), (1, 2), (2, 1), (2, 3), (5, 0)]);
        assert_eq!(
            g.sccs(),
            vec![vec![4], vec![5], vec![0], vec![1, 2], vec![3]]
        );
    }

    #[test]
    fn independent_statements_keep_textual_order() {
        let g = Ddg::new(3, []);
        assert_eq!(g.sccs(), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(g.components(), vec![vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn weak_components_ignore_direction() {
        let g = Ddg::new(5, [(3, 0), (1, 4), (1, 1)]);
        assert_eq!(g.components(), vec![vec![0, 3], vec![1, 4], vec![2]]);
    }

    #[test]
    fn long_chains_do_not_overflow_the_stack() {
        let n = 100_000;
        let g = Ddg::new(n, (0..n - 1).map(|k| (k, k + 1)).chain([(n - 1, 0)]));
        assert_eq!(g.sccs().len(), 1);
    }
}
