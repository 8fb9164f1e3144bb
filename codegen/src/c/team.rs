//! One thread team around a sequential loop (a time loop) instead of a fork and join for
//! every parallel loop inside it.
//!
//! ```c
//! #pragma omp parallel
//! {
//!     for (long c0 = 0; c0 < T; c0++) {      /* every thread runs the sequential loop */
//!         #pragma omp for                    /* the parallel loops share their iterations */
//!         for (long c1 = ...) { ... }
//!         #pragma omp single                 /* the rest runs once */
//!         { ... }
//!     }
//! }
//! ```
//!
//! Every thread evaluates the same loop bounds and guards (affine in the parameters and the
//! enclosing iterators, never in array contents), so all threads meet the same work-sharing
//! constructs in the same order, as OpenMP requires. Each `omp for` and `omp single` ends
//! with its implicit barrier: whatever follows, in this iteration or the next, sees all its
//! writes, exactly as in the sequential order (no `nowait` anywhere).

use super::accumulate::Block;
use super::cexpr::unrolled_values;
use super::instances::{Instances, LoopOptions};
use crate::ast::{For, Node};

/// Whether `node` holds a parallel loop that the team would share out: one that would have
/// forked its own team inside a sequential loop (its iterations run loops), reached through
/// sequential loops, guards and blocks.
pub(super) fn shares_work(node: &Node, statements: &dyn Instances, options: LoopOptions) -> bool {
    let shares = |n: &Node| shares_work(n, statements, options);
    match node {
        Node::For(f) if prints_as_unit(f, statements, options) => false,
        Node::For(f) if f.parallel => f.body.has_loop(),
        Node::For(f) => shares(&f.body),
        Node::If(_, then, otherwise) => {
            shares(then) || otherwise.as_ref().is_some_and(|e| shares(e))
        }
        Node::Block(children) => children.iter().any(shares),
        Node::User(..) => false,
    }
}

/// Whether `f` is printed as one piece (unrolled, or with accumulators), never split into
/// work-sharing constructs.
fn prints_as_unit(f: &For, statements: &dyn Instances, options: LoopOptions) -> bool {
    unrolled_values(f, options.unroll_limit).is_some() || Block::of(f, statements).is_some()
}

#[cfg(test)]
mod tests {
    use super::super::instances::{Instances, LoopOptions};
    use super::super::print::print_loops;
    use super::super::stmt::{ElementAccess, Replacement};
    use crate::ast::{Expr, For, Node, Op};
    use crate::CodegenError;
    use std::collections::BTreeMap;

    /// Statements printed as `S(args);`, none accumulable.
    struct Calls;

    impl Instances for Calls {
        fn instance(
            &self,
            tuple: &str,
            args: &[String],
            _: &[Replacement<'_>],
        ) -> Result<String, CodegenError> {
            Ok(format!("{tuple}({});", args.join(", ")))
        }

        /// No element accessed: every loop is contiguous.
        fn element_accesses(&self, _: &str, _: &[String]) -> Option<Vec<ElementAccess>> {
            Some(Vec::new())
        }
    }

    fn id(n: &str) -> Expr {
        Expr::Id(n.into())
    }

    fn call(tuple: &str, its: &[&str]) -> Node {
        Node::User(tuple.into(), its.iter().map(|i| id(i)).collect())
    }

    /// `for (it = 0; it < N; it++) body`.
    fn up_to_n(it: &str, parallel: bool, body: Node) -> Node {
        Node::For(For {
            iterator: it.into(),
            init: Expr::Int(0),
            cond: Expr::Op(Op::Lt, vec![id(it), id("N")]),
            step: 1,
            parallel,
            body: Box::new(body),
        })
    }

    fn print(ast: &Node) -> String {
        let params = BTreeMap::from([("N".to_owned(), "N".to_owned())]);
        print_loops(ast, 0, &params, &Calls, LoopOptions::default()).unwrap()
    }

    #[test]
    fn a_time_loop_around_parallel_nests_gets_one_team() {
        // for t { S0(t); for i parallel { for j { S1 } }; S2(t); S3(t) }
        let ast = up_to_n(
            "t",
            false,
            Node::Block(vec![
                call("S0", &["t"]),
                up_to_n("i", true, up_to_n("j", false, call("S1", &["t", "i", "j"]))),
                call("S2", &["t"]),
                call("S3", &["t"]),
            ]),
        );
        expect_test::expect![[r#"
            #pragma omp parallel
            {
                const long pc_ub0 = N;
                for (long t = 0; t < pc_ub0; t++) {
                    #pragma omp single
                    {
                        S0(t);
                    }
                    const long pc_ub1 = N;
                    #pragma omp for
                    for (long i = 0; i < pc_ub1; i++) {
                        const long pc_ub2 = N;
                        for (long j = 0; j < pc_ub2; j++) {
                            S1(t, i, j);
                        }
                    }
                    #pragma omp single
                    {
                        S2(t);
                        S3(t);
                    }
                }
            }
        "#]]
        .assert_eq(&print(&ast));
    }

    #[test]
    fn a_time_loop_around_loop_free_parallel_loops_stays_sequential() {
        // A team would cost a barrier per outer iteration for a single statement's loop.
        let ast = up_to_n("t", false, up_to_n("i", true, call("S0", &["t", "i"])));
        expect_test::expect![[r#"
            const long pc_ub0 = N;
            for (long t = 0; t < pc_ub0; t++) {
                const long pc_ub1 = N;
                #pragma omp simd
                for (long i = 0; i < pc_ub1; i++) {
                    S0(t, i);
                }
            }
        "#]]
        .assert_eq(&print(&ast));
    }

    #[test]
    fn a_parallel_loop_of_loop_free_iterations_forks_only_when_long() {
        // for i parallel { S0(i) }; for i parallel { for j { S1(i, j) } }
        let ast = Node::Block(vec![
            up_to_n("i", true, call("S0", &["i"])),
            up_to_n("i", true, up_to_n("j", false, call("S1", &["i", "j"]))),
        ]);
        expect_test::expect![[r#"
            const long pc_ub0 = N;
            #pragma omp parallel for if(pc_ub0 >= 32768)
            for (long i = 0; i < pc_ub0; i++) {
                S0(i);
            }
            const long pc_ub1 = N;
            #pragma omp parallel for
            for (long i = 0; i < pc_ub1; i++) {
                const long pc_ub2 = N;
                for (long j = 0; j < pc_ub2; j++) {
                    S1(i, j);
                }
            }
        "#]]
        .assert_eq(&print(&ast));
    }
}
