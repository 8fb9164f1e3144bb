use super::*;
use crate::transform::{BandKind, KeepOriginal, Node, Note};
use crate::Options;
use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use std::collections::BTreeMap;

fn lift(name: &str) -> (Program, Dependences) {
    let path = format!("{}/../examples/{name}.pk", env!("CARGO_MANIFEST_DIR"));
    lift_source(&frontend::read_source(&path).unwrap())
}

fn lift_source(source: &frontend::SourceFile) -> (Program, Dependences) {
    let kernels = frontend::compile(source).unwrap();
    let program = Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    (program, deps)
}

fn tiled_parallel() -> TransformOptions {
    TransformOptions {
        tile: Some(Vec::new()),
        parallel: true,
        ..TransformOptions::default()
    }
}

/// The outcome of the default pipeline (Pluto, tiles, parallel) on `examples/NAME.pk`
/// with `passes` added.
fn optimized(name: &str, passes: &[&dyn Pass]) -> Result<Optimized, OptimizeError> {
    let (program, deps) = lift(name);
    optimized_program(&program, &deps, passes)
}

/// The outcome of the default pipeline on `program`.
fn optimized_program(
    program: &Program,
    deps: &Dependences,
    passes: &[&dyn Pass],
) -> Result<Optimized, OptimizeError> {
    let problem = Problem {
        program,
        deps,
        options: Options::default(),
    };
    let pluto = crate::registry::scheduler_named("pluto").unwrap();
    optimize(&problem, pluto.as_ref(), &tiled_parallel(), passes)
}

/// The notes of the default pipeline on `examples/NAME.pk`.
fn notes(name: &str) -> Vec<Note> {
    optimized(name, &[]).unwrap().notes
}

fn kept(notes: &[Note]) -> Option<&KeepOriginal> {
    notes.iter().find_map(|n| match n {
        Note::OriginalKept(why) => Some(why),
        _ => None,
    })
}

#[test]
fn a_schedule_that_walks_columns_the_original_walks_in_rows_is_refused() {
    // bicg: Pluto fuses `q[i] += A[i, j] * p[j]` transposed, down the columns of `A`.
    let bicg = notes("polybench/bicg");
    assert!(
        matches!(kept(&bicg), Some(KeepOriginal::StridedAccesses { .. })),
        "{bicg:?}"
    );
    // gemm: Pluto's order makes `B[k, j]` contiguous where the original strides it.
    let gemm = notes("polybench/gemm");
    assert_eq!(kept(&gemm), None, "{gemm:?}");
}

#[test]
fn a_schedule_with_nothing_to_gain_is_refused() {
    // ludcmp: Pluto's one-member bands, with neither a parallel loop nor a tile.
    let ludcmp = notes("polybench/ludcmp");
    assert_eq!(
        kept(&ludcmp),
        Some(&KeepOriginal::NothingToGain),
        "{ludcmp:?}"
    );
    // durbin's inner loops are parallel once distributed (smart fusion), but run too few
    // instances per step of the sequential `k` loop.
    let durbin = notes("polybench/durbin");
    assert!(
        matches!(kept(&durbin), Some(KeepOriginal::StepsTooSmall { .. })),
        "{durbin:?}"
    );
}

#[test]
fn a_wavefront_of_steps_too_small_for_a_barrier_is_refused() {
    let too_small = |n: &[Note]| matches!(kept(n), Some(KeepOriginal::StepsTooSmall { steps, .. }) if *steps > 1);
    // trisolv at N = 2000: 31 wavefront steps of about 129,000 instances (box estimate).
    let trisolv = notes("polybench/trisolv");
    assert!(too_small(&trisolv), "{trisolv:?}");
    // jacobi-2d's time steps (1,300 x 1,300 points each) pay for theirs.
    let jacobi = notes("polybench/jacobi-2d");
    assert!(!too_small(&jacobi), "{jacobi:?}");
}

#[test]
fn the_original_order_kept_is_not_skewed() {
    // mirror-rows: the row loop carries dependences, the column loop is parallel and
    // innermost. The original order is kept for its steps too small for a barrier, as
    // written: the wavefront once skewed it into a serial walk along the diagonals, 20x
    // slower than gcc's original.
    let path = format!(
        "{}/../tests/kernels/mirror-rows.pk",
        env!("CARGO_MANIFEST_DIR")
    );
    let (program, deps) = lift_source(&frontend::read_source(&path).unwrap());
    let optimized = optimized_program(&program, &deps, &[]).unwrap();
    assert!(kept(&optimized.notes).is_some(), "{:?}", optimized.notes);
    let Node::Band(band) = &optimized.tree.root else {
        panic!("a band first");
    };
    let rows = program
        .ctx
        .union_map("[N, M] -> { S0[i, j] -> [i] }")
        .unwrap();
    let first = band.members[0]
        .intersect_domain(&program.domains().unwrap())
        .unwrap();
    let rows = rows.intersect_domain(&program.domains().unwrap()).unwrap();
    assert!(first.is_equal(&rows).unwrap(), "{first}");
}

#[test]
fn an_illegal_pass_is_refused_with_a_counterexample() {
    // seidel-2d's outermost loop is its time loop: running it backwards reads values not
    // yet computed.
    let Err(OptimizeError::Illegal(report)) =
        optimized("polybench/seidel-2d", &[&pass::ReverseOutermost])
    else {
        panic!("the reversed time loop was not refused");
    };
    assert!(!report.is_legal());
    let text = report.to_string();
    assert!(text.contains("S0["), "{text}");
    // Without the pass the same pipeline is legal.
    assert!(optimized("polybench/seidel-2d", &[]).is_ok());
}

#[test]
fn an_original_whose_parallel_loops_leave_heavy_statements_sequential_is_not_kept() {
    // jacobi-2d's original order runs both statements in parallel loops: kept rather than
    // skewed into a wavefront.
    let jacobi = optimized("polybench/jacobi-2d", &[]).unwrap();
    assert!(!cost::needs_skew(&jacobi.tree.root));
    // lu's original order parallelises only the trailing update `S2`; `S0`, as deep, would
    // stay sequential. The tiled band (i, j, k) wins, wavefronted over its tiles, with a
    // stride-1 member innermost in its (sequential) point band.
    let lu = optimized("polybench/lu", &[]).unwrap();
    let Node::Band(tiles) = &lu.tree.root else {
        panic!("lu: no outer band: {:?}", lu.notes);
    };
    assert!(matches!(tiles.kind, BandKind::Tile(_)));
    assert_eq!(tiles.coincident, [false, true, false], "{:?}", lu.notes);
    let (lu_program, _) = lift("polybench/lu");
    assert!(!cost::parallel_covers_heaviest(
        &lu_program,
        &Tree::from_schedule(&lu_program.schedule).unwrap()
    )
    .unwrap());
    let strided = crate::transform::reorder::strided_accesses(&lu.tree, &lu_program).unwrap();
    assert_eq!(strided.values().sum::<usize>(), 0, "{strided:?}");
}

/// The deepest tiled band of `node`: its member count.
fn deepest_tiled(node: &Node) -> usize {
    let here = match node {
        Node::Band(b) if matches!(b.kind, BandKind::Tile(_)) => b.members.len(),
        _ => 0,
    };
    let below = node.children().into_iter().map(|(_, c)| deepest_tiled(c));
    below.fold(here, usize::max)
}

#[test]
fn expanded_ludcmp_is_tiled_in_three_dimensions_as_lu_is() {
    // With its scalar `w` expanded, ludcmp's factorisation is lu's: smart fusion must not
    // fuse the copies into `w` with it (a shallower band), the cut search must see the
    // merged (i, j, k) band, and the forward substitution's small wavefront steps must
    // not send the whole kernel back to the original order.
    let (program, _) = lift("polybench/ludcmp");
    let (kernel, _) = crate::expand::expand(&program, &[], "pc_")
        .unwrap()
        .unwrap();
    let program = Program::build(&Ctx::default(), &kernel, &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Options::default(),
    };
    let pluto = crate::registry::scheduler_named("pluto").unwrap();
    let done = optimize(&problem, pluto.as_ref(), &tiled_parallel(), &[]).unwrap();
    assert_eq!(kept(&done.notes), None, "{:?}", done.notes);
    assert_eq!(deepest_tiled(&done.tree.root), 3, "{:?}", done.notes);
}

#[test]
fn independent_sums_are_jammed_dependent_ones_are_not() {
    let applied = |notes: &[Note]| {
        (notes.iter()).any(|n| matches!(n, Note::Applied(crate::transform::Step::Interleaving)))
    };
    // atax's row sums `tmp[i]` do not depend on one another, though `i` carries `y[j]`.
    let atax = notes("polybench/atax");
    assert!(applied(&atax), "{atax:?}");
    // Each row's sum starts from the previous row's: the next row's first statement reads
    // it, so the rows cannot be jammed; not even tried (a jam the legality check refused
    // would leave a note too).
    let (program, deps) = lift_source(&frontend::SourceFile::new(
        "<prefix>",
        "kernel prefix(A: f64[N, N], s: inout f64[N]) params N = 64 {
           for i in 1..N { s[i] = s[i - 1]; for j in 0..N { s[i] += A[i, j]; } } }",
    ));
    let prefix = optimized_program(&program, &deps, &[]).unwrap().notes;
    let interleaving = |n: &Note| match n {
        Note::Applied(step) | Note::Refused(step, _) => {
            *step == crate::transform::Step::Interleaving
        }
        _ => false,
    };
    assert!(!prefix.iter().any(interleaving), "{prefix:?}");
}

#[test]
fn recurrences_through_divisions_are_interleaved_sums_of_products_are_not() {
    // adi's sweeps: a parallel `i` around `j` loops whose `p[i][j]` needs `p[i][j - 1]`
    // through a division.
    let adi = notes("polybench/adi");
    assert!(
        adi.iter()
            .any(|n| matches!(n, Note::Applied(crate::transform::Step::Interleaving))),
        "{adi:?}"
    );
    // gesummv's two sums share their loop: jammed, they would not be held in locals.
    let gesummv = notes("polybench/gesummv");
    assert!(
        !gesummv
            .iter()
            .any(|n| matches!(n, Note::Applied(crate::transform::Step::Interleaving))),
        "{gesummv:?}"
    );
}
