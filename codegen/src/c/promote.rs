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
//! Exactness is kept: every access of the body to that array is to the one element, so the
//! local holds exactly the value the element would; the operations and their order are
//! unchanged. The element is proven within the array's extents, and it is loaded and stored
//! only when the loop runs at least once (then some instance accesses it).

use super::loops::{hoistable, LoopPrinter};
use super::stmt::{ElementAccess, Part, Replacement};
use crate::ast::{Expr, For, Node};
use crate::CodegenError;
use std::collections::BTreeSet;

/// The statements of a loop's body and the elements held in locals across it.
pub(super) struct Promotion<'n> {
    /// Each statement: its tuple name and its iteration vector as C.
    statements: Vec<(&'n str, Vec<String>)>,
    /// The elements held in locals.
    elements: Vec<Promoted>,
}

/// An array element held in a local while a loop runs.
struct Promoted {
    /// The element, a C lvalue in the enclosing loops' iterators.
    element: String,
    /// The C storage type of the array's elements.
    storage: &'static str,
    /// Per statement of the loop's body, in order: the positions of its accesses to it.
    positions: Vec<Vec<usize>>,
}

/// The statements of a loop body made of statements only (`None`: it holds a loop or a
/// guard).
fn statements_of(node: &Node) -> Option<Vec<(&str, &[Expr])>> {
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

impl LoopPrinter<'_> {
    /// The elements of `f`'s body worth holding in locals, if any.
    pub(super) fn promotion<'n>(&self, f: &'n For) -> Option<Promotion<'n>> {
        if f.parallel || hoistable(f).is_none() {
            return None;
        }
        let mut statements = Vec::new();
        let mut accesses: Vec<(Vec<ElementAccess>, &[Expr])> = Vec::new();
        for (tuple, args) in statements_of(&f.body)? {
            let c: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
            accesses.push((self.statements.element_accesses(tuple, &c)?, args));
            statements.push((tuple, c));
        }
        let written: BTreeSet<usize> = (accesses.iter())
            .flat_map(|(a, _)| a.iter().filter(|x| x.write).map(|x| x.array))
            .collect();
        let mut elements = Vec::new();
        'arrays: for array in written {
            let mut first: Option<&ElementAccess> = None;
            let mut positions = Vec::new();
            for (all, args) in &accesses {
                let mut mine = Vec::new();
                for a in all.iter().filter(|a| a.array == array) {
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

    /// Prints `f` with the elements of `promotion` in locals.
    pub(super) fn promoted(
        &mut self,
        f: &For,
        promotion: &Promotion,
        depth: usize,
    ) -> Result<(), CodegenError> {
        let runs = self.runs_once(f).expect("checked by promotion");
        let promoted = &promotion.elements;
        let elements: Vec<&str> = promoted.iter().map(|p| p.element.as_str()).collect();
        self.line(
            depth,
            &format!(
                "if ({runs}) {{ /* {} in locals across {} */",
                elements.join(", "),
                f.iterator
            ),
        );
        let d = depth + 1;
        let locals: Vec<String> = promoted.iter().map(|_| self.fresh("pc_s")).collect();
        for (p, local) in promoted.iter().zip(&locals) {
            self.line(d, &format!("{} {local} = {};", p.storage, p.element));
        }
        let (header, _) = self.header(f, d);
        self.line(d, &header);
        for (k, (tuple, args)) in promotion.statements.iter().enumerate() {
            let replaced: Vec<Replacement> = (promoted.iter().zip(&locals))
                .flat_map(|(p, l)| {
                    (p.positions[k].iter()).map(move |&pos| (Part::Access(pos), l.as_str()))
                })
                .collect();
            let text = self.statements.instance(tuple, args, &replaced)?;
            for l in text.lines() {
                self.line(d + 1, l);
            }
        }
        self.line(d, "}");
        for (p, local) in promoted.iter().zip(&locals) {
            self.line(d, &format!("{} = {local};", p.element));
        }
        self.line(depth, "}");
        Ok(())
    }
}
