//! Scalar promotion: in a sequential loop whose body is a list of statements (no inner
//! loop), an array element that every access of the body to its array names, and that does
//! not move with the loop, such as gesummv's `tmp[i]` and `y[i]` in
//! `for j { tmp[i] = A[i, j] * x[j] + tmp[i]; y[i] = B[i, j] * x[j] + y[i]; }`, lives in a
//! local while the loop runs: loaded before it, stored after it.
//!
//! The compiler could do this itself from the `restrict` parameters, but not inside an
//! OpenMP region: gcc outlines the region into a function that receives the pointers without
//! `restrict`, then loads and stores `tmp[i]` at every step of `j` (gesummv in parallel ran
//! 3.5x slower per thread than the same loops outside OpenMP).
//!
//! Exactness is kept: every access of the body to that array is to the one element, or a
//! read of the same statement proven never to read the element (trisolv's `x[j]` beside
//! `x[i]`, `j < i`: [`ElementAccess::apart`]), so the local holds exactly the value the
//! element would and the other reads find theirs in memory; the operations and their order
//! are unchanged. The element is proven within the array's extents, and it is loaded and stored
//! only when the loop runs at least once (then some instance accesses it).

use super::cexpr::{hoistable, CExprs};
use super::instances::Instances;
use super::stmt::ElementAccess;
use crate::ast::{Expr, For, Node};
use std::collections::BTreeSet;

/// The statements of a loop's body and the elements held in locals across it.
pub(super) struct Promotion<'n> {
    /// Each statement: its tuple name and its iteration vector as C.
    pub(super) statements: Vec<(&'n str, Vec<String>)>,
    /// The elements held in locals.
    pub(super) elements: Vec<Promoted>,
}

/// An array element held in a local while a loop runs.
pub(super) struct Promoted {
    /// The element, a C lvalue in the enclosing loops' iterators.
    pub(super) element: String,
    /// The C storage type of the array's elements.
    pub(super) storage: &'static str,
    /// Per statement of the loop's body, in order: the positions of its accesses to it.
    pub(super) positions: Vec<Vec<usize>>,
}

/// The statements of a loop body made of statements only (`None`: it holds a loop or a
/// guard).
pub(super) fn statements_of(node: &Node) -> Option<Vec<(&str, &[Expr])>> {
    match node {
        Node::User(tuple, args) => Some(vec![(tuple.as_str(), args.as_slice())]),
        Node::Block(children) => {
            let mut all = Vec::new();
            for c in children {
                all.extend(statements_of(c)?);
            }
            Some(all)
        }
        Node::For(_) | Node::If(..) => None,
    }
}

/// The elements of `f`'s body worth holding in locals, if any.
pub(super) fn promotion<'n>(
    f: &'n For,
    instances: &dyn Instances,
    cexprs: CExprs<'_>,
) -> Option<Promotion<'n>> {
    if f.parallel || hoistable(f).is_none() {
        return None;
    }
    let mut statements = Vec::new();
    let mut accesses: Vec<(Vec<ElementAccess>, &[Expr])> = Vec::new();
    for (tuple, args) in statements_of(&f.body)? {
        let c: Vec<String> = args.iter().map(|a| cexprs.expr(a)).collect();
        accesses.push((instances.element_accesses(tuple, &c)?, args));
        statements.push((tuple, c));
    }
    let written: BTreeSet<usize> = (accesses.iter())
        .flat_map(|(a, _)| a.iter().filter(|x| x.write).map(|x| x.array))
        .collect();
    let mut elements = Vec::new();
    'arrays: for array in written {
        let mut first: Option<&ElementAccess> = None;
        let mut positions = Vec::new();
        // A read apart from the element stays a read of memory: sound only when it and the
        // element's accesses belong to one statement (which `apart` is proven for).
        let touching = (accesses.iter())
            .filter(|(all, _)| all.iter().any(|a| a.array == array))
            .count();
        for (all, args) in &accesses {
            let mut mine = Vec::new();
            for a in all.iter().filter(|a| a.array == array) {
                if a.apart && touching == 1 {
                    continue;
                }
                let moves = (a.iterators.iter()).any(|&p| args[p].mentions(&f.iterator));
                let same = first.is_none_or(|b| b.element == a.element);
                if !a.in_bounds || moves || !same {
                    continue 'arrays;
                }
                first = Some(a);
                mine.push(a.position);
            }
            positions.push(mine);
        }
        let element = first.expect("a written array has an access");
        elements.push(Promoted {
            element: element.element.clone(),
            storage: element.storage,
            positions,
        });
    }
    (!elements.is_empty()).then_some(Promotion {
        statements,
        elements,
    })
}
