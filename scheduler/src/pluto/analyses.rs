//! What a heuristic may want to know about a statement before choosing its hyperplanes:
//! how its accesses move along each of its iterators (stride-1 iterators, spatial and
//! temporal reuse). Parallelism per band member is on the rows themselves
//! ([`super::View::parallel_members`]); for a tree, see
//! [`crate::transform::analysis::is_parallel`].

use crate::transform::reorder::{accesses_of, movement, Movement};
use poly::isl::IslResult;
use poly::model::Program;

/// How the array accesses of one statement move when one of its iterators advances by one
/// and the others stay put: counts of accesses (reads and the write, arrays of at least one
/// dimension; scalars live in registers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Strides {
    /// Accesses that stay on one element: temporal reuse carried by the iterator (`C[i][j]`
    /// along `k` in gemm).
    pub invariant: usize,
    /// Accesses that move by one element along the array's last dimension only: stride 1,
    /// spatial reuse (`B[k][j]` along `j`); what vectorises.
    pub contiguous: usize,
    /// Any other movement (`A[i][k]` along `i`): a new cache line at each step.
    pub strided: usize,
}

impl Strides {
    /// Whether the iterator is a good innermost loop: some access is contiguous along it
    /// and none is strided.
    pub fn is_stride_one(&self) -> bool {
        self.contiguous > 0 && self.strided == 0
    }
}

/// The [`Strides`] of statement `stmt` of `program` along each of its iterators, outermost
/// first.
pub fn strides(program: &Program, stmt: usize) -> IslResult<Vec<Strides>> {
    let s = &program.statements[stmt];
    let domain = s.domain.to_union()?;
    let accesses = accesses_of(s)?;
    let xs: Vec<String> = (0..s.iterators.len()).map(|j| format!("x{j}")).collect();
    (0..s.iterators.len())
        .map(|j| {
            let mut next = xs.clone();
            next[j] = format!("x{j} + 1");
            let text = format!(
                "{{ {0}[{1}] -> {0}[{2}] }}",
                s.tuple,
                xs.join(", "),
                next.join(", ")
            );
            let step = (program.ctx.union_map(&text)?)
                .intersect_domain(&domain)?
                .intersect_range(&domain)?;
            let mut out = Strides::default();
            for a in &accesses {
                match movement(&step, a)? {
                    Movement::Invariant => out.invariant += 1,
                    Movement::Contiguous => out.contiguous += 1,
                    Movement::Strided => out.strided += 1,
                }
            }
            Ok(out)
        })
        .collect()
}

/// The iterators of statement `stmt` that are stride-1 ([`Strides::is_stride_one`]),
/// outermost first.
pub fn stride_one_iterators(program: &Program, stmt: usize) -> IslResult<Vec<usize>> {
    let all = strides(program, stmt)?;
    Ok((0..all.len()).filter(|&j| all[j].is_stride_one()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    #[test]
    fn gemm_update_is_stride_one_along_j_only() {
        let gemm = program("polybench/gemm.pk");
        let update = (gemm.statements.iter())
            .position(|s| s.iterators.len() == 3)
            .unwrap();
        // Loops (i, k, j) over C[i][j] += alpha * A[i][k] * B[k][j]: the read and the write
        // of C, A, B.
        let s = strides(&gemm, update).unwrap();
        let counted = |invariant, contiguous, strided| Strides {
            invariant,
            contiguous,
            strided,
        };
        assert_eq!(
            s,
            vec![counted(1, 0, 3), counted(2, 1, 1), counted(1, 3, 0)]
        );
        assert_eq!(stride_one_iterators(&gemm, update).unwrap(), vec![2]);
    }
}
