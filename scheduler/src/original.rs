//! The original order as rows, the schedulers' last resort when Farkas' lemma hides every
//! row.
//!
//! The schedulers find rows with Farkas' lemma, which certifies a form non-negative on the
//! rational points of a dependence polyhedron. Some polyhedra hold rational points that
//! no instance pair is: `S3[i, j, k] -> S4[i', ..] : 2i' = 2 + j and j <= 1 + i and
//! j >= 4i - 6 ..` (fuzz seed 687) has `i' >= i` on every integer point and `i' = i - 1/2`
//! at `i = 3/2, j = 0`, so no row that follows `i` passes, and the search can be left with
//! no row at all.
//!
//! The original order never fails that way. Written as rows (the textual position among
//! siblings, then each loop's iterator, `-i` for a reversed loop, and so on down), it orders
//! every dependence pair, so its first row that orders some pair of a live set `L` compares
//! every pair of `L` with equal values or in order: each pair's first differing row is
//! positive, and none differs earlier. That row is checked exactly on the instance pairs
//! (isl, no Farkas), and taken.

use crate::affine::{AffineSchedule, Row, RowKind, StmtRow};
use frontend::ir::Node;
use poly::isl::{IslResult, PairOrder, UnionMap};
use poly::model::Program;

/// One entry of a statement's original time vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    /// Its position among its siblings.
    Position(i64),
    /// The iterator of its enclosing loop at this depth (`-1`: a reversed loop).
    Loop { depth: usize, sign: i64 },
}

/// The rows of the original order, outermost first; a statement with fewer gets zeros.
pub fn rows(program: &Program) -> Vec<Vec<StmtRow>> {
    let mut vectors = Vec::new();
    walk(&program.kernel.body, &mut Vec::new(), 0, &mut vectors);
    let n_params = program.kernel.params.len();
    let levels = vectors.iter().map(Vec::len).max().unwrap_or(0);
    (0..levels)
        .map(|l| {
            (program.statements.iter().zip(&vectors))
                .map(|(st, vector)| {
                    let n = st.iterators.len();
                    match vector.get(l) {
                        Some(&Entry::Position(p)) => StmtRow::constant(n, n_params, p),
                        Some(&Entry::Loop { depth, sign }) => {
                            let mut row = StmtRow::zero(n, n_params);
                            row.iterators[depth] = sign;
                            row
                        }
                        None => StmtRow::zero(n, n_params),
                    }
                })
                .collect()
        })
        .collect()
}

/// Appends each statement's time vector below `prefix`, in textual order (that of
/// [`Program::statements`]).
fn walk(nodes: &[Node], prefix: &mut Vec<Entry>, depth: usize, out: &mut Vec<Vec<Entry>>) {
    for (position, node) in nodes.iter().enumerate() {
        prefix.push(Entry::Position(position as i64));
        match node {
            Node::Stmt(_) => out.push(prefix.clone()),
            Node::If(i) => walk(&i.then, prefix, depth, out),
            Node::Loop(l) => {
                let sign = if l.reverse { -1 } else { 1 };
                prefix.push(Entry::Loop { depth, sign });
                walk(&l.body, prefix, depth + 1, out);
                prefix.pop();
            }
        }
        prefix.pop();
    }
}

/// The first row of the original order that orders some pair of `live`, if it orders none
/// backwards (it never does for dependences of the program: see the module's comment).
pub fn first_ordering_row(program: &Program, live: &UnionMap) -> IslResult<Option<Row>> {
    for stmts in rows(program) {
        let kind = if stmts.iter().all(StmtRow::is_constant) {
            RowKind::Scalar
        } else {
            RowKind::Loop { coincident: false }
        };
        let row = Row { kind, stmts };
        let map = AffineSchedule {
            rows: vec![row.clone()],
            bands: Vec::new(),
        }
        .to_union_map(program)?;
        if !live.pairs_where(&map, PairOrder::Before)?.is_empty()? {
            let backwards = !live.pairs_where(&map, PairOrder::After)?.is_empty()?;
            return Ok((!backwards).then_some(row));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::inline;

    /// The rows of a nest with a reversed loop and a guard: positions, then iterators
    /// (`-j` for the reversed one), as the original schedule tree orders them.
    #[test]
    fn the_original_order_as_rows() {
        let program = inline(
            "kernel k(A: inout f64[N]) params N = 8 {
  for i in 0..N {
    A[i] = 1.0;
    if i >= 1 { for j in (0..i).rev() { A[j] += A[i]; } }
  }
  A[0] = 2.0;
}",
        );
        let text: Vec<String> = rows(&program)
            .iter()
            .map(|row| {
                let cells: Vec<String> = (row.iter())
                    .map(|r| format!("{:?}{:+}", r.iterators, r.constant))
                    .collect();
                cells.join(" ")
            })
            .collect();
        assert_eq!(
            text,
            [
                "[0]+0 [0, 0]+0 []+1",
                "[1]+0 [1, 0]+0 []+0",
                "[0]+0 [0, 0]+1 []+0",
                "[0]+0 [0, 0]+0 []+0",
                "[0]+0 [0, -1]+0 []+0",
                "[0]+0 [0, 0]+0 []+0",
            ]
        );
    }
}
