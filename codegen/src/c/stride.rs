//! Whether a loop walks memory contiguously: every element its statements access either
//! stays put along the loop's iterator or moves along its array's last (contiguous)
//! index only. `#pragma omp simd` is asked for such loops alone: forced onto a loop that
//! strides through rows (gramschmidt's `A[i][j] -= Q[i][k] * R[k][j]` over `i`), it makes
//! the compiler gather every read and scatter every write one element at a time.

use super::cexpr::CExprs;
use super::instances::Instances;
use super::promote::statements_of;
use crate::ast::For;

/// Whether every access of `f`'s body is invariant or contiguous along `f`'s iterator
/// (`false` when the body holds loops or guards, or the accesses are unknown).
pub(super) fn contiguous(f: &For, instances: &dyn Instances, cexprs: CExprs<'_>) -> bool {
    let Some(statements) = statements_of(&f.body) else {
        return false;
    };
    statements.into_iter().all(|(tuple, args)| {
        let c: Vec<String> = args.iter().map(|a| cexprs.expr(a)).collect();
        let Some(accesses) = instances.element_accesses(tuple, &c) else {
            return false;
        };
        accesses.iter().all(|a| {
            (a.iterators.iter())
                .filter(|&&p| args[p].mentions(&f.iterator))
                .all(|p| a.last_index_iterators.contains(p))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::instances::Instances;
    use super::super::stmt::{ElementAccess, Replacement};
    use super::*;
    use crate::ast::{Expr, Node, Op};
    use crate::CodegenError;
    use std::collections::BTreeMap;

    /// One statement `S(i, j)` accessing `A[i][j]` (contiguous along `j`, strided along
    /// `i`) and `x[0]` (invariant).
    struct RowMajor;

    impl Instances for RowMajor {
        fn instance(
            &self,
            t: &str,
            a: &[String],
            _: &[Replacement<'_>],
        ) -> Result<String, CodegenError> {
            Ok(format!("{t}({});", a.join(", ")))
        }

        fn element_accesses(&self, _: &str, args: &[String]) -> Option<Vec<ElementAccess>> {
            let access =
                |array, iterators: Vec<usize>, last: Vec<usize>, element: String| ElementAccess {
                    position: array,
                    array,
                    write: array == 0,
                    read_only: array != 0,
                    in_bounds: true,
                    apart: false,
                    iterators,
                    last_index_iterators: last,
                    element,
                    storage: "double",
                    bytes: 8,
                };
            Some(vec![
                access(
                    0,
                    vec![0, 1],
                    vec![1],
                    format!("A[{}][{}]", args[0], args[1]),
                ),
                access(1, vec![], vec![], "x[0]".into()),
            ])
        }
    }

    fn innermost(iterator: &str) -> For {
        For {
            iterator: iterator.into(),
            init: Expr::Int(0),
            cond: Expr::Op(Op::Lt, vec![Expr::Id(iterator.into()), Expr::Int(8)]),
            step: 1,
            parallel: true,
            body: Box::new(Node::User(
                "S".into(),
                vec![Expr::Id("c0".into()), Expr::Id("c1".into())],
            )),
        }
    }

    #[test]
    fn only_loops_along_the_last_index_are_contiguous() {
        let params = BTreeMap::new();
        let cexprs = CExprs { params: &params };
        assert!(contiguous(&innermost("c1"), &RowMajor, cexprs));
        assert!(!contiguous(&innermost("c0"), &RowMajor, cexprs));
    }
}
