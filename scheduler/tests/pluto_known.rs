//! Known Pluto results on classic kernels, each checked for legality.

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::pluto::Pluto;
use scheduler::{AffineSchedule, FusePolicy, Options, Problem, RowKind};
use std::collections::BTreeMap;

fn program(example: &str) -> Program {
    let path = format!("{}/../examples/{example}", env!("CARGO_MANIFEST_DIR"));
    let source = frontend::read_source(&path).unwrap();
    let kernels = frontend::compile(&source).unwrap_or_else(|_| panic!("{example} compiles"));
    Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap()
}

/// Schedules with Pluto and checks every validity dependence goes forward in time.
fn schedule(example: &str, fuse: FusePolicy) -> (Program, AffineSchedule) {
    let p = program(example);
    let deps = Dependences::compute(&p).unwrap();
    let problem = Problem {
        program: &p,
        deps: &deps,
        options: Options {
            fuse,
            reorder_reductions: false,
            ..Options::default()
        },
    };
    let s = Pluto::default().affine(&problem).unwrap();
    let flat = s.to_union_map(&p).unwrap();
    let validity = problem.validity().unwrap();
    assert!(
        validity
            .is_subset(&flat.lex_lt_union_map(&flat).unwrap())
            .unwrap(),
        "{example}: illegal schedule {flat}"
    );
    let tree = s.to_tree(&p).unwrap();
    let tree_map = tree.map().unwrap();
    assert!(
        validity
            .is_subset(&tree_map.lex_lt_union_map(&tree_map).unwrap())
            .unwrap(),
        "{example}: illegal tree {tree}"
    );
    (p, s)
}

/// The rows of statement `stmt` in band `band` as `[iterators..., constant]`.
fn band_rows(s: &AffineSchedule, band: usize, stmt: usize) -> Vec<Vec<i64>> {
    let b = s.bands[band];
    s.rows[b.start..b.start + b.len]
        .iter()
        .map(|r| {
            let f = &r.stmts[stmt];
            f.iterators.iter().copied().chain([f.constant]).collect()
        })
        .collect()
}

fn coincident(s: &AffineSchedule, band: usize) -> Vec<bool> {
    let b = s.bands[band];
    s.rows[b.start..b.start + b.len]
        .iter()
        .map(|r| matches!(r.kind, RowKind::Loop { coincident: true }))
        .collect()
}

fn show(p: &Program, s: &AffineSchedule) -> String {
    format!("{:?}\n{}", s.bands, s.to_union_map(p).unwrap())
}

#[test]
fn seidel_2d_is_skewed_into_one_tilable_band() {
    let (p, s) = schedule("polybench/seidel-2d.pk", FusePolicy::Smart);
    assert_eq!(s.bands.len(), 1, "{}", show(&p, &s));
    assert_eq!(
        band_rows(&s, 0, 0),
        vec![vec![1, 0, 0, 0], vec![1, 1, 0, 0], vec![2, 1, 1, 0]],
        "{}",
        show(&p, &s)
    );
}

#[test]
fn jacobi_1d_is_time_skewed_and_fused() {
    let (p, s) = schedule("polybench/jacobi-1d.pk", FusePolicy::Smart);
    assert_eq!(s.bands.len(), 1, "{}", show(&p, &s));
    assert_eq!(s.bands[0].len, 2, "{}", show(&p, &s));
    // (t, 2t + i) for the first statement: a skewed, tilable band.
    assert_eq!(band_rows(&s, 0, 0)[1][..2], [2, 1], "{}", show(&p, &s));
    // Fused: the band is outermost, no scalar row distributes the two statements first.
    assert_eq!(s.bands[0].start, 0, "{}", show(&p, &s));
}

#[test]
fn gemm_has_a_three_deep_band_with_two_parallel_loops() {
    let (p, s) = schedule("polybench/gemm.pk", FusePolicy::Smart);
    let update = p
        .statements
        .iter()
        .position(|st| st.iterators.len() == 3)
        .unwrap();
    let band = s
        .bands
        .iter()
        .position(|b| b.len == 3)
        .unwrap_or_else(|| panic!("no 3-deep band: {}", show(&p, &s)));
    assert_eq!(
        coincident(&s, band),
        vec![true, true, false],
        "{}",
        show(&p, &s)
    );
    assert_eq!(band_rows(&s, band, update).len(), 3);
}

/// Statements with distinct constants in the outermost scalar row, if it is the first row.
fn top_level_groups(s: &AffineSchedule) -> usize {
    match s.rows.first() {
        Some(r) if r.kind == RowKind::Scalar => {
            let mut c: Vec<i64> = r.stmts.iter().map(|f| f.constant).collect();
            c.sort_unstable();
            c.dedup();
            c.len()
        }
        _ => 1,
    }
}

#[test]
fn mm_fusion_follows_the_policy() {
    let example = "polybench/2mm.pk";
    let (p, none) = schedule(example, FusePolicy::None);
    assert_eq!(
        top_level_groups(&none),
        p.statements.len(),
        "{}",
        show(&p, &none)
    );
    let (p, max) = schedule(example, FusePolicy::Max);
    assert_eq!(top_level_groups(&max), 1, "{}", show(&p, &max));
    assert!(matches!(max.rows[0].kind, RowKind::Loop { .. }));
}

#[test]
fn lu_and_cholesky_get_tilable_bands() {
    for example in ["polybench/lu.pk", "polybench/cholesky.pk"] {
        let (p, s) = schedule(example, FusePolicy::Smart);
        assert!(
            s.bands.iter().any(|b| b.len >= 2),
            "{example}: {}",
            show(&p, &s)
        );
    }
}

#[test]
fn max_fusion_distributes_less_than_no_fusion() {
    let (p, none) = schedule("polybench/3mm.pk", FusePolicy::None);
    let (_, max) = schedule("polybench/3mm.pk", FusePolicy::Max);
    assert_eq!(top_level_groups(&none), p.statements.len());
    assert!(
        top_level_groups(&max) < top_level_groups(&none),
        "{}",
        show(&p, &max)
    );
}

/// fdtd-2d: the 3-deep statements get `[t, t + i, t + j]`, as isl and Pluto give, while
/// `ey[0][j] = fict[t]` (2-deep) follows them with `[t, t, t + j]`; requiring it an
/// independent second row had forced `[t, t + j, t + i]` on all of them.
#[test]
fn fdtd_2d_keeps_i_outside_j_beside_its_lower_dimensional_statement() {
    let (p, s) = schedule("polybench/fdtd-2d.pk", FusePolicy::Smart);
    assert_eq!(s.bands.len(), 1, "{}", show(&p, &s));
    assert_eq!(
        band_rows(&s, 0, 0),
        vec![vec![1, 0, 0], vec![1, 0, 0], vec![1, 1, 0]],
        "{}",
        show(&p, &s)
    );
    for stmt in 1..4 {
        let rows = band_rows(&s, 0, stmt);
        let iterators: Vec<&[i64]> = rows.iter().map(|r| &r[..3]).collect();
        assert_eq!(
            iterators,
            [&[1, 0, 0][..], &[1, 1, 0], &[1, 0, 1]],
            "S{stmt}: {}",
            show(&p, &s)
        );
    }
}
