//! Panel packing: a value an accumulator block computes at every step but that does not
//! move with some loop around the block is copied, once before that loop, into a small local
//! array laid out in the order the block reads it; the block then reads the copy. Two kinds
//! of values are copied (what BLIS and Polly's matrix-multiply optimisation call packing):
//!
//! - a strided read of a read-only input (gemm's `B[k, j]` under a register tile, whose rows
//!   are 8,800 bytes apart at PolyBench's LARGE size), before the loop over blocks of rows
//!   that it does not depend on: the block then streams through contiguous memory instead
//!   of one cache line and one page per step of `k`;
//! - a subexpression computed from inputs alone ([`InputExpression`], gemm's
//!   `alpha * A[i, k]`), before the loop over blocks of columns: each block then reads one
//!   value per row and step of `k`, instead of computing it at each step of every block
//!   (on AVX2 that multiplication took a third of the multiply unit's cycles).
//!
//! Exactness is kept: the inputs are never written by the kernel, so the copy holds the
//! values every evaluation would have given (a subexpression's value is its operation on
//! the same operands, in the same type), and the arithmetic around it is unchanged. The copy
//! reads exactly the elements the block reads: it runs the block's own loops (the ones the
//! value depends on) with the block's bounds, which mention no loop it skips, and only when
//! the reused loop runs at least once. The reads are proven within the arrays' extents, and
//! a floating-point operation cannot fault.
//!
//! The panel is indexed by the iterators of those loops, each less its lower bound, and
//! sized by their largest trip counts.

use super::accumulate::{max_trip, Block};
use super::cexpr::{hoistable, CExprs};
use super::instances::Instances;
use super::stmt::{ElementAccess, InputExpression, Part};
use crate::ast::{Expr, For, Node};
use std::ops::Range;

/// At most this many bytes per panel (allocated on the heap), sized by the scheduler's
/// register-block model to stay in L2.
pub const MAX_PANEL_BYTES: i64 = scheduler::transform::tile_size::MAX_PANEL_BYTES as i64;

/// What a panel holds: a read or a subexpression of the block's statement.
pub(super) struct Source {
    /// The part of the statement the panel stands for.
    pub(super) part: Part,
    /// What else a panel of it makes unnecessary.
    pub(super) covers: Covers,
    /// The positions of the statement iterators it depends on.
    iterators: Vec<usize>,
    /// One value as C, in the block's iterators.
    pub(super) value: String,
    /// The C type of a value.
    pub(super) storage: &'static str,
    /// The size of a value in bytes.
    bytes: usize,
}

impl Source {
    /// A read worth a copy: one strided along the accumulator loop or across the vector
    /// loop (`B[k, j]`, syrk's `A[j, k]`). One that is a single value across the vector
    /// loop and contiguous along the accumulator loop (gemm's `A[i, k]`) streams well as
    /// it is.
    fn read(read: ElementAccess, block: &Block) -> Option<Source> {
        let innermost = &block.inner.last()?.0.iterator;
        let mentions = |ps: &[usize], it: &str| ps.iter().any(|&p| block.args[p].mentions(it));
        if !read.read_only
            || !read.in_bounds
            || read.write
            || (mentions(&read.last_index_iterators, &block.outer.iterator)
                && !mentions(&read.iterators, innermost))
        {
            return None;
        }
        Some(Source {
            part: Part::Access(read.position),
            covers: Covers {
                nodes: 0..0,
                reads: read.position..read.position + 1,
            },
            iterators: read.iterators,
            value: read.element,
            storage: read.storage,
            bytes: read.bytes,
        })
    }

    fn expression(e: InputExpression) -> Source {
        Source {
            part: Part::Expression(e.nodes.start),
            covers: Covers {
                nodes: e.nodes,
                reads: e.reads,
            },
            iterators: e.iterators,
            value: e.value,
            storage: e.storage,
            bytes: e.bytes,
        }
    }
}

/// The parts of a statement a panel stands for, itself included: a read's position, or a
/// subexpression's nodes and the positions of the reads inside it.
#[derive(Clone, Debug)]
pub(super) struct Covers {
    /// Right-hand-side node numbers (empty for a read).
    nodes: Range<usize>,
    /// Access positions.
    reads: Range<usize>,
}

impl Covers {
    /// Whether a panel standing for `self` makes one for `other` unnecessary: `other` is
    /// this subexpression or inside it, or a read it makes.
    fn covers(&self, other: &Covers) -> bool {
        self.nodes.contains(&other.nodes.start)
            || (other.nodes.is_empty() && self.reads.contains(&other.reads.start))
    }
}

/// A value copied into a panel before a loop whose iterations all compute the same values.
pub(super) struct Panel<'n> {
    /// The accumulator loop of the block that reads the panel.
    pub(super) block: &'n For,
    /// What it holds.
    pub(super) source: Source,
    /// The loops the value depends on, outermost first.
    pub(super) dims: Vec<Dim<'n>>,
}

/// One dimension of a panel: a loop the value depends on.
pub(super) struct Dim<'n> {
    /// The loop.
    pub(super) lp: &'n For,
    /// Its largest trip count.
    pub(super) trips: i64,
    /// Whether it is one of the block's inner loops (their trip counts are clipped to the
    /// largest one, as the block itself does).
    pub(super) inner: bool,
}

/// A panel in scope, as the next decisions see it: the accumulator loop that reads it
/// (compared by address only) and what it stands for.
#[derive(Clone)]
pub(super) struct InScope {
    /// The accumulator loop of the block that reads it.
    pub(super) block: *const For,
    /// What it makes unnecessary.
    pub(super) covers: Covers,
}

impl<'n> Panel<'n> {
    /// The panels worth packing before `over`: `over` runs a chain of loops ending in an
    /// accumulator block, and a subexpression computed from inputs (outermost first) or a
    /// strided read of an input of the block's statement depends neither on `over` nor on
    /// any loop whose bounds do, and no panel in scope or chosen here covers it.
    pub(super) fn all(
        over: &'n For,
        statements: &'n dyn Instances,
        cexprs: CExprs<'_>,
        in_scope: &[InScope],
    ) -> Vec<Panel<'n>> {
        if hoistable(over).is_none() {
            return Vec::new();
        }
        let mut middle: Vec<&For> = Vec::new();
        let mut node: &Node = &over.body;
        let block = loop {
            match node {
                Node::Block(cs) if cs.len() == 1 => node = &cs[0],
                Node::For(g) => match Block::of(g, statements) {
                    Some(block) => break block,
                    None => {
                        middle.push(g);
                        node = &g.body;
                    }
                },
                _ => return Vec::new(),
            }
        };
        let args: Vec<String> = block.args.iter().map(|a| cexprs.expr(a)).collect();
        let accesses = (statements.element_accesses(block.tuple, &args)).unwrap_or_default();
        let expressions = (statements.input_expressions(block.tuple, &args, &accesses))
            .unwrap_or_default()
            .into_iter()
            .map(Source::expression);
        let reads = (accesses.into_iter()).filter_map(|read| Source::read(read, &block));
        // What the panels in scope for this block and the ones chosen here stand for.
        let mut covered: Vec<Covers> = (in_scope.iter())
            .filter(|p| std::ptr::eq(p.block, block.outer))
            .map(|p| p.covers.clone())
            .collect();
        let mut panels: Vec<Panel<'n>> = Vec::new();
        for source in expressions.chain(reads) {
            if covered.iter().any(|c| c.covers(&source.covers)) {
                continue;
            }
            if let Some(panel) = Panel::of(over, &middle, &block, source) {
                covered.push(panel.source.covers.clone());
                panels.push(panel);
            }
        }
        panels
    }

    /// The panel of `source`, when it depends on neither `over` nor the loops whose bounds
    /// do and fits in [`MAX_PANEL_BYTES`].
    fn of(
        over: &'n For,
        middle: &[&'n For],
        block: &Block<'n>,
        source: Source,
    ) -> Option<Panel<'n>> {
        // The AST iterators the value depends on, through the block's inner loops' bounds.
        let mut needed: Vec<String> = Vec::new();
        let mention = |e: &Expr, needed: &mut Vec<String>| {
            for l in middle
                .iter()
                .copied()
                .chain([block.outer])
                .chain(block.inner.iter().map(|(g, _)| *g))
                .chain([over])
            {
                if e.mentions(&l.iterator) && !needed.contains(&l.iterator) {
                    needed.push(l.iterator.clone());
                }
            }
        };
        for &p in &source.iterators {
            mention(&block.args[p], &mut needed);
        }
        for (g, _) in block.inner.iter().rev() {
            if needed.contains(&g.iterator) {
                mention(&g.init, &mut needed);
                mention(hoistable(g)?.1, &mut needed);
            }
        }
        if needed.contains(&over.iterator) {
            return None;
        }
        let is_needed = |g: &For| needed.contains(&g.iterator);
        let chain: Vec<&'n For> = middle.iter().copied().chain([block.outer]).collect();
        let mut dims = Vec::new();
        for &g in &chain {
            if !is_needed(g) {
                continue;
            }
            // Its range must not move with any loop of the chain.
            let bound = hoistable(g)?.1;
            if (chain.iter().chain([&over]))
                .any(|l| g.init.mentions(&l.iterator) || bound.mentions(&l.iterator))
            {
                return None;
            }
            dims.push(Dim {
                lp: g,
                trips: max_trip(g)?,
                inner: false,
            });
        }
        for &(g, trips) in &block.inner {
            if is_needed(g) {
                dims.push(Dim {
                    lp: g,
                    trips,
                    inner: true,
                });
            }
        }
        let elements: i64 = dims.iter().map(|d| d.trips).product();
        (!dims.is_empty() && elements * source.bytes as i64 <= MAX_PANEL_BYTES).then_some(Panel {
            block: block.outer,
            source,
            dims,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::instances::{Instances, LoopOptions};
    use super::super::print::print_loops;
    use super::super::stmt::{Accumulable, ElementAccess, InputExpression, Part, Replacement};
    use crate::ast::{Expr, For, Node, Op};
    use crate::CodegenError;
    use std::collections::BTreeMap;

    /// `S(i, k, j)`: `C[i][j] += A[i][k] * B[k][j]` with `A` and `B` inputs; with `alpha`,
    /// `C[i][j] += (alpha * A[i][k]) * B[k][j]`, whose right-hand side's nodes are numbered
    /// 0 (the whole), 1 (`alpha * A[i][k]`), 2 (`alpha`), 3 (`A`) and 4 (`B`); with `beta`,
    /// `C[i][j] += A[i][k] * (beta * B[k][j])`, numbered 0 (the whole), 1 (`A`),
    /// 2 (`beta * B[k][j]`), 3 (`beta`), 4 (`B`). `b_indices` are the iterator positions
    /// `B`'s indices mention (its last index is `j`).
    struct Product {
        acc: Accumulable,
        b_indices: Vec<usize>,
        alpha: bool,
        beta: bool,
    }

    impl Product {
        fn new() -> Product {
            Product {
                acc: Accumulable {
                    storage: "double",
                    index_iterators: vec![0, 2],
                    index_names: vec!["i".into(), "j".into()],
                    lvalue: "C[i][j]".into(),
                    self_reads: vec![],
                },
                b_indices: vec![1, 2],
                alpha: false,
                beta: false,
            }
        }
    }

    impl Instances for Product {
        fn instance(
            &self,
            _: &str,
            args: &[String],
            replaced: &[Replacement<'_>],
        ) -> Result<String, CodegenError> {
            let spelled = |p: Part, own: &str| {
                (replaced.iter().find(|(q, _)| *q == p)).map_or(own.to_owned(), |r| r.1.into())
            };
            let a = match self.alpha {
                true => spelled(Part::Expression(1), "(alpha * A[i][k])"),
                false => spelled(Part::Access(1), "A[i][k]"),
            };
            let b = match self.beta {
                true => spelled(Part::Expression(2), "(beta * B[k][j])"),
                false => spelled(Part::Access(2), "B[k][j]"),
            };
            Ok(format!(
                "{{ const long i = {}, k = {}, j = {}; {} += {a} * {b}; }}",
                args[0],
                args[1],
                args[2],
                spelled(Part::Access(0), "C[i][j]"),
            ))
        }

        fn input_expressions(
            &self,
            _: &str,
            args: &[String],
            _: &[ElementAccess],
        ) -> Option<Vec<InputExpression>> {
            let alpha_a = InputExpression {
                nodes: 1..4,
                reads: 1..2,
                iterators: vec![0, 1],
                value: format!("(alpha * A[{}][{}])", args[0], args[1]),
                storage: "double",
                bytes: 8,
            };
            // The whole right-hand side reads inputs only too, but moves with every loop.
            let whole = InputExpression {
                nodes: 0..5,
                reads: 1..3,
                iterators: vec![0, 1, 2],
                value: format!("{} * B[{}][{}]", alpha_a.value, args[1], args[2]),
                ..alpha_a.clone()
            };
            let beta_b = InputExpression {
                nodes: 2..5,
                reads: 2..3,
                iterators: vec![1, 2],
                value: format!("(beta * B[{}][{}])", args[1], args[2]),
                ..alpha_a.clone()
            };
            Some(match (self.alpha, self.beta) {
                (true, _) => vec![whole, alpha_a],
                (_, true) => vec![beta_b],
                _ => Vec::new(),
            })
        }

        fn accumulable(&self, _: &str) -> Option<&Accumulable> {
            Some(&self.acc)
        }

        fn element_accesses(&self, _: &str, args: &[String]) -> Option<Vec<ElementAccess>> {
            let access = |position, array, name: &str, iterators: Vec<usize>| {
                let indices: Vec<String> = iterators
                    .iter()
                    .map(|&p| format!("[{}]", args[p]))
                    .collect();
                ElementAccess {
                    position,
                    array,
                    write: position == 0,
                    read_only: position != 0,
                    in_bounds: true,
                    apart: false,
                    last_index_iterators: iterators.last().into_iter().copied().collect(),
                    iterators,
                    element: format!("{name}{}", indices.concat()),
                    storage: "double",
                    bytes: 8,
                }
            };
            Some(vec![
                access(0, 0, "C", vec![0, 2]),
                access(1, 1, "A", vec![0, 1]),
                access(2, 2, "B", self.b_indices.clone()),
            ])
        }
    }

    fn id(n: &str) -> Expr {
        Expr::Id(n.into())
    }

    /// `for (it = scale * outer; it <= min(scale * outer + scale - 1, N - 1); it++) body`.
    fn block_of(it: &str, outer: &str, scale: i64, parallel: bool, body: Node) -> Node {
        let lo = Expr::Op(Op::Mul, vec![Expr::Int(scale), id(outer)]);
        let hi = Expr::Op(Op::Add, vec![lo.clone(), Expr::Int(scale - 1)]);
        let n = Expr::Op(Op::Sub, vec![id("N"), Expr::Int(1)]);
        Node::For(For {
            iterator: it.into(),
            init: lo,
            cond: Expr::Op(Op::Le, vec![id(it), Expr::Op(Op::Min, vec![hi, n])]),
            step: 1,
            parallel,
            body: Box::new(body),
        })
    }

    /// gemm's register tile: rows `c3` (blocks of 4), columns `c4` (blocks of 8) within a
    /// tile `(t1, t2)`, `k` as `c5` within a tile `t3`, then a point band `(c6, c7)`.
    fn register_tile() -> Node {
        let user = Node::User("S".into(), vec![id("c6"), id("c5"), id("c7")]);
        let point = block_of("c6", "c3", 4, true, block_of("c7", "c4", 8, true, user));
        let k = block_of("c5", "t3", 32, false, point);
        block_of("c3", "t1", 16, true, block_of("c4", "t2", 4, true, k))
    }

    fn print_with(ast: &Node, pack: bool, statements: &Product) -> String {
        let params = BTreeMap::from([("N".to_owned(), "N".to_owned())]);
        let options = LoopOptions {
            pack,
            ..LoopOptions::default()
        };
        print_loops(ast, 0, &params, statements, options).unwrap()
    }

    fn print(ast: &Node, pack: bool) -> String {
        print_with(ast, pack, &Product::new())
    }

    #[test]
    fn the_strided_read_is_packed_once_for_every_row_block() {
        let c = print(&register_tile(), true);
        // `B[k][j]` is copied before the row blocks `c3`, whose iterator it does not
        // mention, over the column blocks, the `k` tile and a block's columns.
        let copy = "pc_pk0[c4 - (4 * t2)][c5 - (32 * t3)][c7 - (8 * c4)] = B[c5][c7];";
        let storage = "double (*restrict pc_pk0)[32][8] = malloc(sizeof(double) * 4 * 32 * 8);";
        assert!(c.contains(storage), "{c}");
        assert!(c.contains("pc_set_fault(PC_FAULT_OUT_OF_MEMORY);"), "{c}");
        assert!(c.contains("free(pc_pk0);"), "{c}");
        assert!(c.contains(copy), "{c}");
        assert!(c.find(copy) < c.find("for (long c3 = "), "{c}");
        // The block reads the copy; `A[i][k]`, one value across a block's row and
        // contiguous along `k`, is read where it is.
        let update = "pc_acc10[pc_o11][pc_o12] += A[i][k] * pc_pk0[c4 - (4 * t2)]";
        assert!(c.contains(update), "{c}");
        assert!(!c.contains("* B[k][j]"), "{c}");
        assert!(!print(&register_tile(), false).contains("pc_pk"));
    }

    #[test]
    fn a_product_of_inputs_is_packed_once_for_every_column_block() {
        let product = Product {
            alpha: true,
            ..Product::new()
        };
        let c = print_with(&register_tile(), true, &product);
        // `alpha * A[i][k]` is computed before the column blocks `c4`, whose iterator it
        // does not mention, inside the row blocks `c3`, over the `k` tile and a block's rows.
        let copy = "pc_pk6[c5 - (32 * t3)][c6 - (4 * c3)] = (alpha * A[c6][c5]);";
        let storage = "double (*restrict pc_pk6)[4] = malloc(sizeof(double) * 32 * 4);";
        assert!(c.contains(storage), "{c}");
        assert!(c.contains(copy), "{c}");
        assert!(c.find("for (long c3 = ") < c.find(copy), "{c}");
        assert!(c.find(copy) < c.rfind("for (long c4 = "), "{c}");
        // The block multiplies the two panels; nothing computes `alpha * A` any more.
        let update = "+= pc_pk6[c5 - (32 * t3)][c6 - (4 * c3)] * pc_pk0[c4 - (4 * t2)]";
        assert!(c.contains(update), "{c}");
        assert_eq!(c.matches("alpha * A").count(), 1, "{c}");
        // Without packing, the block computes it at every step.
        let unpacked = print_with(&register_tile(), false, &product);
        assert!(
            unpacked.contains("+= (alpha * A[i][k]) * B[k][j]; }"),
            "{unpacked}"
        );
    }

    #[test]
    fn a_read_inside_a_packed_product_is_not_packed_again() {
        let product = Product {
            beta: true,
            ..Product::new()
        };
        let c = print_with(&register_tile(), true, &product);
        // `beta * B[k][j]` is packed before the row blocks, as `B[k][j]` alone would be;
        // the read itself, which the block no longer makes, gets no panel of its own.
        let copy = "pc_pk0[c4 - (4 * t2)][c5 - (32 * t3)][c7 - (8 * c4)] = (beta * B[c5][c7]);";
        assert!(c.contains(copy), "{c}");
        assert_eq!(c.matches("malloc(").count(), 1, "{c}");
        assert!(c.contains("+= A[i][k] * pc_pk0[c4 - (4 * t2)]"), "{c}");
    }

    #[test]
    fn a_read_that_moves_with_every_loop_is_not_packed() {
        // `B[i][k][j]` depends on the row blocks and the column blocks: no loop of the
        // chain reads the same elements at every iteration.
        let mut product = Product::new();
        product.b_indices = vec![0, 1, 2];
        let c = print_with(&register_tile(), true, &product);
        assert!(!c.contains("pc_pk"), "{c}");
        assert!(c.contains("* B[k][j]; }"), "{c}");
    }
}
