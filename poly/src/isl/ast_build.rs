//! isl's AST generator (`isl_ast_build`, declared in `ffi.rs`: isl-rs does not bind it).
//! [`build`] turns a schedule tree into a plain [`ast::Node`], after [`prepare`] has marked
//! the bands' parallel members and chosen their AST loop type;
//! [`pseudo_c`] prints isl's own C-like rendering (for `polyc schedule`).

use super::ffi::{
    isl_ast_build_free, isl_ast_build_from_context, isl_ast_build_node_from_schedule,
    isl_ast_build_set_iterators, isl_ast_node_free, isl_ast_node_to_C_str,
};
use super::{ast, Ctx, IslError, IslResult, Obj, Schedule, Set, ISL_ALGORITHM_FACTOR};
use isl_rs::{ASTLoopType, ASTNode, Id, IdList, ScheduleNode, ScheduleNodeType};
use libc::{c_void, uintptr_t};
use std::ffi::CStr;

/// How isl generates the loops of each band member (`isl_ast_loop_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LoopType {
    /// isl's default (atomic when the options allow it).
    #[default]
    Default,
    /// One loop per member whose bounds cover every statement: no code duplication.
    Atomic,
    /// Separate loops for the pieces where different statements or bounds apply (full and
    /// partial tiles get loops of their own).
    Separate,
}

impl LoopType {
    fn isl(self) -> ASTLoopType {
        match self {
            LoopType::Default => ASTLoopType::Default,
            LoopType::Atomic => ASTLoopType::Atomic,
            LoopType::Separate => ASTLoopType::Separate,
        }
    }
}

/// Options of AST generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AstOptions {
    /// The loop type of every band member.
    pub loop_type: LoopType,
}

/// The AST of `schedule` for parameters in `context`. Coincident band members become loops
/// with [`ast::For::parallel`] set.
pub fn build(schedule: &Schedule, context: &Set, options: &AstOptions) -> IslResult<ast::Node> {
    let prepared = prepare(schedule, options)?;
    let ctx = schedule.ctx();
    with_isl_ast(&prepared, context, |node| {
        // SAFETY: `node` is a live AST node owned by `with_isl_ast`; the wrapper does not
        // free it (`should_free_on_drop: false`).
        let wrapped = ASTNode {
            ptr: node,
            should_free_on_drop: false,
        };
        ast::convert(ctx, &wrapped)
    })
}

/// The loops that execute `schedule` for parameters in `context`, as isl prints them (one
/// call `S(i, j)` per statement instance).
pub fn pseudo_c(schedule: &Schedule, context: &Set) -> IslResult<String> {
    with_isl_ast(schedule, context, |node| {
        // SAFETY: `node` is live; isl returns a malloc'd string freed here.
        unsafe {
            let text = isl_ast_node_to_C_str(node);
            if text.is_null() {
                return Err(failure(schedule));
            }
            let out = CStr::from_ptr(text).to_string_lossy().into_owned();
            libc::free(text as *mut c_void);
            Ok(out)
        }
    })
}

/// Builds isl's AST of `schedule` and hands its root to `f`, freeing it afterwards.
///
/// The loop at schedule depth `d` is named `c<d>` ([`iterators`]), which the parallel marks
/// rely on. isl's AST generator is one algorithm of isl's: it runs with
/// [`ISL_ALGORITHM_FACTOR`] times an analysis's budget.
fn with_isl_ast<R>(
    schedule: &Schedule,
    context: &Set,
    f: impl FnOnce(uintptr_t) -> IslResult<R>,
) -> IslResult<R> {
    let _generator = schedule.ctx().analysis_scaled(ISL_ALGORITHM_FACTOR);
    let mut names = iterators(schedule)?;
    // SAFETY: `to_ptr` hands over new references (`__isl_take`), and so does `names`, whose
    // wrapper is told not to free it; `build` and `node` are owned here and freed exactly
    // once, after `f` is done with `node`.
    unsafe {
        let build = isl_ast_build_from_context(context.to_ptr());
        if build == 0 {
            return Err(failure(schedule));
        }
        names.should_free_on_drop = false;
        let build = isl_ast_build_set_iterators(build, names.ptr);
        if build == 0 {
            return Err(failure(schedule));
        }
        let node = isl_ast_build_node_from_schedule(build, schedule.to_ptr());
        isl_ast_build_free(build);
        if node == 0 {
            return Err(failure(schedule));
        }
        let out = f(node);
        isl_ast_node_free(node);
        out
    }
}

/// The loop iterators `c0`, `c1`, .. for every schedule depth of `schedule`, given to isl
/// up front. Left to itself, isl names the loops of a band when it reaches the band, after
/// their positions in its own schedule space, which is one deeper than the schedule's below
/// a place where it inserted a dimension (to shift strided statements to a common offset):
/// the loops of the bands below would be named after the wrong depths, and a parallel mark
/// would designate the wrong loop. An inserted dimension takes its place in this list
/// instead, so the names keep following the schedule's depths.
fn iterators(schedule: &Schedule) -> IslResult<IdList> {
    let ctx = schedule.ctx();
    let depth = deepest(ctx, schedule.query(|s| s.get_root())?)?;
    let mut names = ctx.check(IdList::alloc(ctx.raw(), depth as i32))?;
    for d in 0..depth {
        let id = ctx.check(Id::read_from_str(ctx.raw(), &format!("c{d}")))?;
        names = ctx.check(names.add(id))?;
    }
    Ok(names)
}

/// The deepest schedule depth below `node` (the number of band members on the longest path).
fn deepest(ctx: &Ctx, node: ScheduleNode) -> IslResult<usize> {
    let mut depth = ctx.check(node.get_schedule_depth())? as usize;
    if ctx.check(node.get_type())? == ScheduleNodeType::Band {
        depth += ctx.check(node.band_n_member())? as usize;
    }
    for k in 0..ctx.check(node.n_children())? {
        depth = depth.max(deepest(ctx, ctx.check(node.get_child(k))?)?);
    }
    Ok(depth)
}

/// Why isl's AST generator stopped: its operation budget ([`IslError::OperationLimit`], as
/// every other computation reports it), or isl's message.
fn failure(schedule: &Schedule) -> IslError {
    let raw = schedule.ctx().raw();
    let msg = raw.last_error_msg().to_string();
    let quota = raw.last_error() == isl_rs::Error::Quota;
    raw.reset_error();
    match quota {
        true => IslError::OperationLimit(raw.get_max_operations()),
        false => IslError::Isl(format!("AST generation failed: {msg}")),
    }
}

/// The schedule with every band member given the loop type of `options` and, above each
/// band with parallel (coincident) members, an [`ast::parallel_mark`] naming them. Bands
/// are not split into one-member bands: isl generates a band as a whole far more cheaply
/// than as a nest of one-member bands, whose every level it must analyse again (a
/// time-tiled jacobi-1d or jacobi-2d ran out of isl's budget after 45 s split, and took
/// 0.3 s whole).
pub fn prepare(schedule: &Schedule, options: &AstOptions) -> IslResult<Schedule> {
    let ctx = schedule.ctx();
    let root = schedule.query(|s| s.get_root())?;
    let root = visit(ctx, root, options)?;
    Ok(Obj::from_raw(ctx, ctx.check(root.get_schedule())?))
}

fn visit(ctx: &Ctx, node: ScheduleNode, options: &AstOptions) -> IslResult<ScheduleNode> {
    let mut node = node;
    let mut marked = false;
    if ctx.check(node.get_type())? == ScheduleNodeType::Band && ctx.check(node.band_n_member())? > 0
    {
        let depth = ctx.check(node.get_schedule_depth())? as usize;
        let mut parallel = Vec::new();
        for k in 0..ctx.check(node.band_n_member())? {
            node = ctx.check(node.band_member_set_ast_loop_type(k, options.loop_type.isl()))?;
            if ctx.check(node.band_member_get_coincident(k))? {
                parallel.push(depth + k as usize);
            }
        }
        if !parallel.is_empty() {
            let mark = ast::parallel_mark(&parallel);
            let id = ctx.check(Id::read_from_str(ctx.raw(), &mark))?;
            node = ctx.check(ctx.check(node.insert_mark(id))?.child(0))?;
            marked = true;
        }
    }
    for k in 0..ctx.check(node.n_children())? {
        node = ctx.check(visit(ctx, ctx.check(node.child(k))?, options)?.parent())?;
    }
    // Return at the position we were given: the inserted mark, if any.
    if marked {
        node = ctx.check(node.parent())?;
    }
    Ok(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(ctx: &Ctx, coincident: &str) -> Schedule {
        ctx.schedule(&format!(
            "{{ domain: \"[N] -> {{ S[i, j] : 0 <= i < N and 0 <= j < N }}\", child: \
             {{ schedule: \"[N] -> [{{ S[i, j] -> [(i)] }}, {{ S[i, j] -> [(j)] }}]\", \
             coincident: [ {coincident} ] }} }}"
        ))
        .unwrap()
    }

    /// isl's AST generator out of its budget is an exhausted budget (a clean error, exit 1),
    /// not an isl failure; it has ten times an analysis's budget, and the context's budget is
    /// as it was afterwards.
    #[test]
    fn the_generator_out_of_its_budget_says_so() {
        let ctx = Ctx::default();
        let context = ctx.set("[N] -> { : N >= 1 }").unwrap();
        let skewed = ctx
            .schedule(
                "{ domain: \"[N] -> { A[i, j] : 0 <= i, j < N; B[i, j] : 0 <= i < j < N; \
                 C[i, j] : 0 <= j <= i < N and (i + j) mod 3 = 0 }\", child: { schedule: \
                 \"[N] -> [{ A[i, j] -> [(2i + j)]; B[i, j] -> [(i + 3j)]; C[i, j] -> [(5i - j)] }, \
                 { A[i, j] -> [(j)]; B[i, j] -> [(i)]; C[i, j] -> [(i + j)] }]\" } }",
            )
            .unwrap();
        let options = AstOptions {
            loop_type: LoopType::Separate,
        };
        // Preparing the tree fits 10,000 operations, generating its AST does not fit 100,000.
        ctx.set_budget(10_000);
        let out = build(&skewed, &context, &options);
        assert_eq!(out.err(), Some(IslError::OperationLimit(100_000)));
        assert_eq!(ctx.budget(), 10_000);
        // It fits 200,000, ten times 20,000 (and not 20,000 itself).
        ctx.set_budget(20_000);
        assert!(build(&skewed, &context, &options).is_ok());
    }

    #[test]
    fn pseudo_c_prints_a_loop_nest() {
        let ctx = Ctx::default();
        let text = pseudo_c(
            &schedule(&ctx, "0, 0"),
            &ctx.set("[N] -> { : N >= 1 }").unwrap(),
        )
        .unwrap();
        assert!(text.contains("for (int c0 = 0; c0 < N; c0 += 1)"), "{text}");
        assert!(text.contains("S(c0, c1);"), "{text}");
    }

    #[test]
    fn a_mark_over_a_loopless_member_leaves_the_loops_below_sequential() {
        let ctx = Ctx::default();
        let context = ctx.set("[N] -> { : N >= 1 }").unwrap();
        let schedule = ctx
            .schedule(
                "{ domain: \"[N] -> { S[i, j] : i = 0 and 0 <= j < N }\", child: \
                 { schedule: \"[N] -> [{ S[i, j] -> [(i)] }, { S[i, j] -> [(j)] }]\", \
                 coincident: [ 1, 0 ] } }",
            )
            .unwrap();
        let ast = build(&schedule, &context, &AstOptions::default()).unwrap();
        let ast::Node::For(only) = ast else {
            panic!("{ast:?}")
        };
        assert_eq!(only.iterator, "c1");
        assert!(!only.parallel);
    }

    #[test]
    fn coincident_members_become_parallel_loops() {
        let ctx = Ctx::default();
        let context = ctx.set("[N] -> { : N >= 1 }").unwrap();
        let ast = build(&schedule(&ctx, "0, 1"), &context, &AstOptions::default()).unwrap();
        let ast::Node::For(outer) = ast else {
            panic!("{ast:?}")
        };
        let ast::Node::For(inner) = *outer.body else {
            panic!()
        };
        assert!(!outer.parallel && inner.parallel);
        assert_eq!(
            *inner.body,
            ast::Node::User(
                "S".into(),
                vec![ast::Expr::Id("c0".into()), ast::Expr::Id("c1".into())]
            )
        );
    }

    /// The loops of `node` from the outside in, each with its iterator and parallel flag.
    fn loops(node: &ast::Node, out: &mut Vec<(String, bool)>) {
        match node {
            ast::Node::For(f) => {
                out.push((f.iterator.clone(), f.parallel));
                loops(&f.body, out);
            }
            ast::Node::If(_, t, e) => {
                loops(t, out);
                if let Some(e) = e {
                    loops(e, out);
                }
            }
            ast::Node::Block(nodes) => nodes.iter().for_each(|n| loops(n, out)),
            ast::Node::User(..) => {}
        }
    }

    /// isl shifts `A` (at even `c0`) and `B` (odd) to a common offset by inserting a
    /// schedule dimension after `c0`; named by isl, the loops of the band below would then
    /// be one deeper: `j`'s would be `c2`, the name of the parallel member `k`'s loop in the
    /// mark, and run in parallel.
    #[test]
    fn the_marked_loop_is_the_parallel_members_after_a_shift() {
        let ctx = Ctx::default();
        let context = ctx.set("[N] -> { : N >= 2 }").unwrap();
        let schedule = ctx
            .schedule(
                "{ domain: \"[N] -> { A[i, j, k] : 0 <= i, j, k < N; B[i, j, k] : 0 <= i, j, k < N }\", \
                 child: { schedule: \"[N] -> [{ A[i, j, k] -> [(2i)]; B[i, j, k] -> [(2i + 1)] }]\", \
                 child: { schedule: \"[N] -> [{ A[i, j, k] -> [(j)]; B[i, j, k] -> [(j)] }, \
                 { A[i, j, k] -> [(k)]; B[i, j, k] -> [(k)] }]\", permutable: 1, \
                 coincident: [ 0, 1 ] } } }",
            )
            .unwrap();
        // Shifted, `A` and `B` run at the same `c0`, one after the other.
        let text = pseudo_c(&schedule, &context).unwrap();
        assert!(
            text.contains("A(c0, c1, c2)") && text.contains("B(c0, c1, c2)"),
            "{text}"
        );
        let ast = build(&schedule, &context, &AstOptions::default()).unwrap();
        let mut found = Vec::new();
        loops(&ast, &mut found);
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["c0", "c1", "c2", "c1", "c2"], "{text}");
        for (iterator, parallel) in found {
            assert_eq!(parallel, iterator == "c2", "{iterator}:\n{text}");
        }
    }
}
