//! Pluto's `smart` fusion keeps parallel loops: it distributes at the outermost level when
//! fusing would cost parallel loops, and splits inner bands whose statements' own loops
//! are parallel where the fused loop is not.

mod transform_support;

use scheduler::pluto::Pluto;
use scheduler::transform::{analysis, Tree, TreeDeps};
use scheduler::{FusePolicy, Options, Problem, Scheduler, SchedulerNote};
use transform_support::load;

/// Pluto's parallel loops on `example` under `fuse`, and its notes.
fn parallel_loops(example: &str, fuse: FusePolicy) -> (usize, Vec<SchedulerNote>) {
    let loaded = load(example);
    let problem = Problem {
        program: &loaded.program,
        deps: &loaded.deps,
        options: Options {
            fuse,
            ..Options::default()
        },
    };
    let (schedule, notes) = Pluto::default().schedule_noted(&problem).unwrap();
    let mut tree = Tree::from_schedule(&schedule).unwrap();
    analysis::annotate(&mut tree, &TreeDeps::of(&problem).unwrap()).unwrap();
    (analysis::parallel_loops(&tree, 0).unwrap(), notes)
}

#[test]
fn symm_keeps_its_parallel_loops_under_smart_fusion() {
    let (distributed, _) = parallel_loops("polybench/symm", FusePolicy::None);
    let (smart, notes) = parallel_loops("polybench/symm", FusePolicy::Smart);
    let (max, _) = parallel_loops("polybench/symm", FusePolicy::Max);
    assert_eq!((max, distributed), (0, 2));
    assert_eq!(smart, 2);
    assert_eq!(
        notes,
        vec![SchedulerNote::DistributedForParallelism {
            fused: 0,
            distributed: 2
        }]
    );
}

#[test]
fn smart_fusion_keeps_fusing_when_it_costs_nothing() {
    // gemm's two nests: fused or not, the same parallel loops.
    let (smart, notes) = parallel_loops("polybench/gemm", FusePolicy::Smart);
    assert_eq!(smart, 4);
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn durbin_and_adi_keep_the_parallel_loops_of_their_inner_statements() {
    // durbin: the `z` and `y` copies are parallel, the fused row was serial because of the
    // `sum_` reduction beside them (the original order has these 2 parallel loops).
    let (durbin, notes) = parallel_loops("polybench/durbin", FusePolicy::Smart);
    assert_eq!(durbin, 2, "{notes:?}");
    assert!(notes.contains(&SchedulerNote::InnerBandsDistributed { bands: 1 }));
    // adi: isl's scheduler finds 4 parallel loops; fused, Pluto had 1.
    let (adi, notes) = parallel_loops("polybench/adi", FusePolicy::Smart);
    assert!(adi >= 4, "{adi}: {notes:?}");
}

#[test]
fn gramschmidt_gets_its_column_loop_parallel_by_a_cut_band() {
    // gramschmidt's band `(k, j)` holds the pivot column's statements at `j = k` and the
    // updates of the other columns at `j > k`; `k` carries a cycle, so the band cannot be
    // distributed as a whole. Cut after `k`, the updates' own `j` loops are parallel.
    let (fused, _) = parallel_loops("polybench/gramschmidt", FusePolicy::Max);
    let (smart, notes) = parallel_loops("polybench/gramschmidt", FusePolicy::Smart);
    assert!(smart > fused, "{fused} -> {smart}: {notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| matches!(n, SchedulerNote::InnerBandsDistributed { .. })),
        "{notes:?}"
    );
}
