//! Diamond tiling (`transform::diamond`): applied to the stencils whose time-tiled bands
//! would start in a pipeline, legal, and with concurrent start; refused where none exists.
//! With index-set splitting (`transform::iss`) too, every example stays legal.

mod transform_support;

use poly::isl::UnionMap;
use scheduler::registry::scheduler_named;
use scheduler::transform::{optimize, BandKind, Node, Note, Step, TransformOptions, Tree};
use std::num::NonZeroU32;
use transform_support::{assert_legal, load, Loaded};

/// Pluto's schedule of `loaded`, tiled by 8, with or without diamond tiles (and split index
/// sets), made parallel: the tree and whether diamond tiling was applied.
fn tiled(loaded: &Loaded, diamond: bool) -> (Tree, bool) {
    tiled_with(loaded, diamond, false)
}

fn tiled_with(loaded: &Loaded, diamond: bool, iss: bool) -> (Tree, bool) {
    let pluto = scheduler_named("pluto").unwrap();
    let schedule = pluto.schedule(&loaded.problem()).unwrap();
    let options = TransformOptions {
        tile: Some(vec![NonZeroU32::new(8).unwrap(); 4]),
        diamond,
        iss,
        parallel: true,
        ..TransformOptions::default()
    };
    let optimized = optimize(&loaded.problem(), &schedule, &options).unwrap();
    let applied = (optimized.notes.iter()).any(|n| matches!(n, Note::Applied(Step::DiamondTiling)));
    assert_legal(loaded, &optimized.tree.to_schedule().unwrap());
    (optimized.tree, applied)
}

/// The outermost member of the tree's first band (the tile wavefront).
fn wavefront(tree: &Tree) -> &UnionMap {
    let Node::Band(band) = &tree.root else {
        panic!("the tiled stencils start with their tile band");
    };
    assert!(matches!(band.kind, BandKind::Tile(_)), "{:?}", band.kind);
    &band.members[0]
}

/// How many wavefronts the instances of the first time step (`t = first`) fall in, for
/// the parameters in `fixed` (e.g. `N = 64`).
fn wavefronts_at_start(loaded: &Loaded, tree: &Tree, first: i64, fixed: &str) -> usize {
    let ctx = &loaded.program.ctx;
    let params = loaded.program.context.param_names().unwrap().join(", ");
    let mut first_step: Option<poly::isl::UnionSet> = None;
    for s in &loaded.program.statements {
        let n = s.iterators.len();
        let rest: Vec<String> = (1..n).map(|k| format!("i{k}")).collect();
        let tuple = std::iter::once(first.to_string())
            .chain(rest)
            .collect::<Vec<_>>()
            .join(", ");
        let set = ctx
            .union_set(&format!(
                "[{params}] -> {{ {}[{tuple}] : {fixed} }}",
                s.name
            ))
            .unwrap();
        first_step = Some(match first_step {
            None => set,
            Some(u) => u.union(&set).unwrap(),
        });
    }
    let first_step = first_step.unwrap().intersect(&tree.domain).unwrap();
    let values = wavefront(tree)
        .intersect_domain(&first_step)
        .unwrap()
        .range()
        .unwrap();
    (values.sets().unwrap().iter())
        .map(|s| s.points().unwrap().len())
        .sum()
}

#[test]
fn stencils_get_diamond_tiles_with_concurrent_start() {
    for (name, first, fixed) in [
        ("jacobi-1d", 0, "TSTEPS = 16 and N = 64"),
        ("jacobi-2d", 0, "TSTEPS = 16 and N = 64"),
        ("heat-3d", 1, "TSTEPS = 16 and N = 32"),
        ("fdtd-2d", 0, "TMAX = 16 and NX = 64 and NY = 64"),
    ] {
        let loaded = load(&format!("polybench/{name}"));
        let (time, applied) = tiled(&loaded, false);
        assert!(!applied, "{name}");
        let (diamond, applied) = tiled(&loaded, true);
        assert!(applied, "{name}: no diamond tiles");
        // Time tiles start one tile column after the other; diamond tiles at once.
        let pipelined = wavefronts_at_start(&loaded, &time, first, fixed);
        let concurrent = wavefronts_at_start(&loaded, &diamond, first, fixed);
        assert!(
            concurrent <= 2,
            "{name}: the first step spans {concurrent} wavefronts"
        );
        assert!(
            pipelined >= 4,
            "{name}: time tiles span {pipelined} wavefronts"
        );
    }
}

#[test]
fn seidel_has_no_concurrent_start() {
    // In-place updates within a time step: every partner row carries a dependence of
    // distance 0 on `t`, so no cone complement is valid.
    let (_, applied) = tiled(&load("polybench/seidel-2d"), true);
    assert!(!applied);
}

#[test]
fn every_example_stays_legal_with_diamond_tiles_and_split_index_sets() {
    for path in transform_support::all_examples() {
        let loaded = transform_support::load_path(&path);
        tiled_with(&loaded, true, true);
    }
}
