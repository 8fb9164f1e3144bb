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

use super::loops::LoopPrinter;
use crate::ast::{For, Node};
use crate::CodegenError;

impl LoopPrinter<'_> {
    /// Whether `node` holds a parallel loop that the team would share out: one that would
    /// have forked its own team inside a sequential loop (its iterations run loops), reached
    /// through sequential loops, guards and blocks.
    pub(super) fn shares_work(&self, node: &Node) -> bool {
        match node {
            Node::For(f) if self.prints_as_unit(f) => false,
            Node::For(f) if f.parallel => f.body.has_loop(),
            Node::For(f) => self.shares_work(&f.body),
            Node::If(_, then, otherwise) => {
                self.shares_work(then) || otherwise.as_ref().is_some_and(|e| self.shares_work(e))
            }
            Node::Block(children) => children.iter().any(|c| self.shares_work(c)),
            Node::User(..) => false,
        }
    }

    /// Whether `f` is printed as one piece (unrolled, or with accumulators), never split
    /// into work-sharing constructs.
    fn prints_as_unit(&self, f: &For) -> bool {
        self.unrollable(f).is_some() || super::accumulate::Block::of(f, self.statements).is_some()
    }

    /// The sequential loop `f` inside one thread team (see the module documentation).
    pub(super) fn team(&mut self, f: &For, depth: usize) -> Result<(), CodegenError> {
        self.line(depth, "#pragma omp parallel");
        self.line(depth, "{");
        self.team_for(f, depth + 1)?;
        self.line(depth, "}");
        Ok(())
    }

    /// `node` as run by every thread of the team.
    fn team_node(&mut self, node: &Node, depth: usize) -> Result<(), CodegenError> {
        let shares = self.shares_work(node);
        match node {
            Node::Block(children) if shares => {
                let mut alone: Vec<Node> = Vec::new();
                for c in children {
                    if self.shares_work(c) {
                        if !alone.is_empty() {
                            self.single(&std::mem::take(&mut alone), depth)?;
                        }
                        self.team_node(c, depth)?;
                    } else {
                        alone.push(c.clone());
                    }
                }
                if !alone.is_empty() {
                    self.single(&alone, depth)?;
                }
            }
            Node::If(cond, then, otherwise) if shares => {
                let cond = self.expr(cond);
                self.line(depth, &format!("if ({cond}) {{"));
                self.team_node(then, depth + 1)?;
                if let Some(e) = otherwise {
                    self.line(depth, "} else {");
                    self.team_node(e, depth + 1)?;
                }
                self.line(depth, "}");
            }
            Node::For(f) if shares => self.team_for(f, depth)?,
            _ => self.single(std::slice::from_ref(node), depth)?,
        }
        Ok(())
    }

    /// A loop that shares work: a parallel one becomes `omp for`, a sequential one runs in
    /// every thread around its body.
    fn team_for(&mut self, f: &For, depth: usize) -> Result<(), CodegenError> {
        let (header, _) = self.header(f, depth);
        if f.parallel {
            self.line(depth, "#pragma omp for");
            self.line(depth, &header);
            self.node(&f.body, depth + 1, true)?;
        } else {
            self.line(depth, &header);
            self.team_node(&f.body, depth + 1)?;
        }
        self.line(depth, "}");
        Ok(())
    }

    /// `nodes`, run by one thread of the team while the others wait at its end.
    fn single(&mut self, nodes: &[Node], depth: usize) -> Result<(), CodegenError> {
        self.line(depth, "#pragma omp single");
        self.line(depth, "{");
        for n in nodes {
            self.node(n, depth + 1, true)?;
        }
        self.line(depth, "}");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::loops::{Instances, LoopOptions, LoopPrinter};
    use super::super::stmt::Replacement;
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
        LoopPrinter::new(&params, &Calls, LoopOptions::default())
            .print(ast, 0)
            .unwrap()
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
