//! Tile sizes chosen by the cache model (`scheduler::transform::tile_size`): the chosen
//! tiles obey the documented rule, checked against footprints counted here by brute force.

mod transform_support;

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::isl::UnionMap;
use poly::model::Program;
use scheduler::baseline::Identity;
use scheduler::registry::scheduler_named;
use scheduler::transform::summary::bands;
use scheduler::transform::tile_size::{Machine, SizeModel, MAX_TILE_SIZE};
use scheduler::transform::{optimize, BandKind, BandNode, Node, Note, Optimized, TransformOptions};
use scheduler::Scheduler;
use std::collections::{BTreeMap, HashSet};
use std::num::NonZeroU32;
use transform_support::{load_path, Loaded};

/// A small machine, so that brute-force footprints stay cheap: L1d 4 KiB, L2 64 KiB,
/// AVX-512 vectors.
const SMALL: Machine = Machine {
    l1d_bytes: 4 << 10,
    l2_bytes: 64 << 10,
    l3_bytes: 1 << 20,
    vector_bytes: 64,
    cores: 1,
};

fn polybench(name: &str) -> Loaded {
    load_path(&format!(
        "{}/../examples/polybench/{name}.pk",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn tiled(loaded: &Loaded, scheduler: &dyn Scheduler, given: &[u32], m: Machine) -> Optimized {
    let schedule = scheduler.schedule(&loaded.problem()).unwrap();
    let options = TransformOptions {
        tile: Some(given.iter().map(|&s| NonZeroU32::new(s).unwrap()).collect()),
        machine: m,
        ..TransformOptions::default()
    };
    optimize(&loaded.problem(), &schedule, &options).unwrap()
}

/// The tile sizes of every tiled band, in depth-first order.
fn tile_sizes(o: &Optimized) -> Vec<Vec<u32>> {
    bands(&o.tree)
        .into_iter()
        .filter_map(|b| match b.kind {
            BandKind::Tile(s) => Some(s.iter().map(|s| s.get()).collect()),
            _ => None,
        })
        .collect()
}

/// Which iterator of `S1[i, k, j]` (gemm's update) each member of the point band below the
/// 3-member tile band follows (`'i'`, `'j'` or `'k'`: advancing it alone advances the member
/// by one).
fn gemm_member_order(o: &Optimized, loaded: &Loaded) -> Vec<char> {
    fn find(node: &Node) -> Option<&BandNode> {
        match node {
            Node::Band(b) if b.members.len() == 3 && b.kind == BandKind::Point => Some(b),
            n => n.children().into_iter().find_map(|(_, c)| find(c)),
        }
    }
    let band = find(&o.tree.root).expect("gemm has a tiled 3-member band");
    let ctx = &loaded.program.ctx;
    let value = |m: &UnionMap, (i, k, j): (i64, i64, i64)| -> i64 {
        let probe = ctx.union_set(&format!("{{ S1[{i}, {k}, {j}] }}")).unwrap();
        let range = m.intersect_domain(&probe).unwrap().range().unwrap();
        let mut set = range.sets().unwrap().remove(0);
        for p in ["NI", "NJ", "NK"] {
            set = set.fix_param(p, 1000).unwrap();
        }
        set.points().unwrap()[0][0]
    };
    band.members
        .iter()
        .map(|m| {
            let at = value(m, (30, 50, 70));
            let steps = [
                ('i', (31, 50, 70)),
                ('k', (30, 51, 70)),
                ('j', (30, 50, 71)),
            ];
            let moved: Vec<char> = steps
                .iter()
                .filter(|(_, p)| value(m, *p) != at)
                .map(|(c, _)| *c)
                .collect();
            assert_eq!(moved.len(), 1, "member {m} is not one iterator");
            assert_eq!(
                value(m, steps.iter().find(|s| s.0 == moved[0]).unwrap().1),
                at + 1
            );
            moved[0]
        })
        .collect()
}

/// gemm's footprint for tile sizes (`ti`, `tj`, `tk`) of `S1[i, k, j]`, counted by
/// enumerating the tile: `C[i, j]`, `A[i, k]` and `B[k, j]`, 8 bytes each (scalars such as
/// `alpha` live in registers and are not counted).
fn gemm_bytes(ti: u32, tj: u32, tk: u32) -> u64 {
    let mut touched: HashSet<(char, u32, u32)> = HashSet::new();
    for i in 0..ti {
        for k in 0..tk {
            for j in 0..tj {
                touched.insert(('C', i, j));
                touched.insert(('A', i, k));
                touched.insert(('B', k, j));
            }
        }
    }
    8 * touched.len() as u64
}

#[test]
fn gemm_f64_tile_fits_the_rule_and_cannot_grow() {
    let loaded = polybench("gemm");
    let pluto = scheduler_named("pluto").unwrap();
    let o = tiled(&loaded, pluto.as_ref(), &[], SMALL);
    let order = gemm_member_order(&o, &loaded);
    let sizes = tile_sizes(&o)
        .into_iter()
        .find(|s| s.len() == 3)
        .expect("a 3-member tile band");
    let size_of = |c: char| sizes[order.iter().position(|&o| o == c).unwrap()];
    let (ti, tj, tk) = (size_of('i'), size_of('j'), size_of('k'));
    let budget_l1 = SMALL.l1d_bytes / 2;
    let budget_l2 = SMALL.l2_bytes / 2;
    // One iteration of the outermost point loop, and the whole tile, fit.
    let one_outer = |s: [u32; 3]| {
        let mut s = s;
        s[0] = 1;
        s
    };
    let bytes = |s: [u32; 3]| {
        let get = |c: char| s[order.iter().position(|&o| o == c).unwrap()];
        gemm_bytes(get('i'), get('j'), get('k'))
    };
    let chosen = [sizes[0], sizes[1], sizes[2]];
    assert!(bytes(one_outer(chosen)) <= budget_l1, "{sizes:?}");
    assert!(bytes(chosen) <= budget_l2, "{sizes:?}");
    // j is gemm's stride-1 dimension: a multiple of 8 doubles (AVX-512).
    assert_eq!(tj % 8, 0, "{sizes:?}");
    for s in [ti, tj, tk] {
        assert!(s.is_power_of_two() && s <= MAX_TILE_SIZE, "{sizes:?}");
    }
    // No member can take its next candidate (double) without breaking a budget.
    for k in 0..3 {
        let mut next = chosen;
        next[k] *= 2;
        if next[k] <= MAX_TILE_SIZE {
            assert!(
                bytes(one_outer(next)) > budget_l1 || bytes(next) > budget_l2,
                "{sizes:?} ({order:?}) could grow member {k}"
            );
        }
    }
}

#[test]
fn a_one_dimensional_stencil_gets_a_long_tile() {
    let loaded = polybench("jacobi-1d");
    let pluto = scheduler_named("pluto").unwrap();
    let o = tiled(&loaded, pluto.as_ref(), &[], Machine::FALLBACK);
    let sizes = tile_sizes(&o);
    assert_eq!(sizes.len(), 1, "{sizes:?}");
    // Two arrays of 2000 doubles: everything fits, so both members take the largest size.
    assert_eq!(sizes[0], vec![MAX_TILE_SIZE; 2]);
}

/// A kernel whose loops have extents 3 and 5 (6 and 5 with `-D N=6`); every `i` reads the
/// same row of `B`, a reuse that makes the band worth tiling.
const TINY: &str = "kernel tiny(A: inout f64[N, M], B: f64[N, M])
  params N = 3, M = 5
{
  for i in 0..N {
    for j in 0..M {
      A[i, j] = A[i, j] + B[0, j];
    }
  }
}
";

fn load_tiny(fixed: &[(&str, i64)]) -> Loaded {
    let file = frontend::SourceFile::new("tiny.pk", TINY);
    let kernels = frontend::compile(&file).unwrap_or_else(|_| panic!("tiny.pk compiles"));
    let fixed: BTreeMap<String, i64> = fixed.iter().map(|&(n, v)| (n.to_string(), v)).collect();
    let program = Program::build(&Ctx::default(), &kernels[0], &fixed).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    Loaded { program, deps }
}

#[test]
fn tiles_are_never_larger_than_the_loops() {
    let o = tiled(&load_tiny(&[]), &Identity, &[], Machine::FALLBACK);
    assert_eq!(tile_sizes(&o), vec![vec![3, 5]]);
    let o = tiled(&load_tiny(&[("N", 6)]), &Identity, &[], Machine::FALLBACK);
    assert_eq!(tile_sizes(&o), vec![vec![6, 5]]);
}

/// Whether a note reports sizes the footprint model chose.
fn cache_model(n: &Note) -> bool {
    matches!(n, Note::TileSizes(t) if matches!(t.model, SizeModel::Cache { .. }))
}

#[test]
fn given_sizes_override_the_model_and_the_rest_is_chosen() {
    let loaded = polybench("gemm");
    let pluto = scheduler_named("pluto").unwrap();
    let all = tiled(&loaded, pluto.as_ref(), &[32, 32, 32], SMALL);
    assert!(tile_sizes(&all).iter().all(|s| s.iter().all(|&x| x == 32)));
    assert!(!all.notes.iter().any(cache_model));
    let first = tiled(&loaded, pluto.as_ref(), &[4], SMALL);
    let sizes = tile_sizes(&first);
    assert!(sizes.iter().all(|s| s[0] == 4), "{sizes:?}");
    assert!(first.notes.iter().any(cache_model));
}

#[test]
fn the_choice_depends_only_on_the_cache_sizes() {
    let loaded = polybench("gemm");
    let pluto = scheduler_named("pluto").unwrap();
    let a = tiled(&loaded, pluto.as_ref(), &[], SMALL);
    let b = tiled(&loaded, pluto.as_ref(), &[], SMALL);
    assert_eq!(tile_sizes(&a), tile_sizes(&b));
    let big = tiled(&loaded, pluto.as_ref(), &[], Machine::FALLBACK);
    let volume = |s: &[u32]| s.iter().map(|&x| u64::from(x)).product::<u64>();
    let (small, large) = (tile_sizes(&a), tile_sizes(&big));
    assert!(
        small.iter().zip(&large).all(|(s, l)| volume(s) < volume(l)),
        "{small:?} vs {large:?}"
    );
}

#[test]
fn a_failing_model_falls_back_to_32_and_says_why() {
    // No default, and the stand-in value 1024 breaks the constraint: N stays symbolic and
    // unbounded, and so do the loops.
    let src = TINY.replace("params N = 3, M = 5", "params N, M = 5 where N >= 2000");
    let file = frontend::SourceFile::new("tiny.pk", src);
    let kernels = frontend::compile(&file).unwrap_or_else(|_| panic!("tiny.pk compiles"));
    let program = Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let o = tiled(&Loaded { program, deps }, &Identity, &[], SMALL);
    assert_eq!(tile_sizes(&o), vec![vec![32, 32]]);
    assert!(
        o.notes.iter().any(|n| matches!(
            n,
            Note::TileSizes(t) if matches!(t.model, SizeModel::Failed(_))
        )),
        "{:?}",
        o.notes
    );
}
