//! Pluto's coefficient bound: a band the bound cuts short is found again with the bound
//! raised, and a typed note says so.

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::baseline::Isl;
use scheduler::pluto::Pluto;
use scheduler::{AffineSchedule, Options, Problem, Scheduler, SchedulerNote};
use std::collections::BTreeMap;

/// `tests/kernels/skew5.pk`: legal only with the skew `5t + i` inside one band.
fn skew5() -> Program {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/kernels/skew5.pk");
    let kernels = frontend::compile(&frontend::read_source(path).unwrap()).unwrap();
    Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap()
}

fn solve(pluto: &Pluto, options: Options) -> (AffineSchedule, Vec<SchedulerNote>) {
    let p = skew5();
    let deps = Dependences::compute(&p).unwrap();
    let problem = Problem {
        program: &p,
        deps: &deps,
        options,
    };
    pluto.affine_noted(&problem).unwrap()
}

/// The band members' iterator coefficients (`[t, i]`) of the only statement.
fn band_rows(s: &AffineSchedule, band: usize) -> Vec<Vec<i64>> {
    let b = s.bands[band];
    (s.rows[b.start..b.start + b.len].iter())
        .map(|r| r.stmts[0].iterators.clone())
        .collect()
}

#[test]
fn the_default_bound_is_raised_to_find_the_skewed_band() {
    let (s, notes) = solve(&Pluto::default(), Options::default());
    assert_eq!(s.bands.len(), 1, "{:?}", s.bands);
    assert_eq!(band_rows(&s, 0), vec![vec![1, 0], vec![5, 1]]);
    assert_eq!(
        notes,
        vec![SchedulerNote::CoefficientBoundRaised { from: 4, to: 8 }]
    );
}

#[test]
fn a_bound_from_the_options_is_the_start() {
    let options = Options {
        max_coefficient: Some(2),
        ..Options::default()
    };
    let (s, notes) = solve(&Pluto::default(), options);
    assert_eq!(band_rows(&s, 0), vec![vec![1, 0], vec![5, 1]]);
    assert_eq!(
        notes,
        vec![SchedulerNote::CoefficientBoundRaised { from: 2, to: 8 }]
    );
    let wide = Options {
        max_coefficient: Some(5),
        ..Options::default()
    };
    let (s, notes) = solve(&Pluto::default(), wide);
    assert_eq!(band_rows(&s, 0), vec![vec![1, 0], vec![5, 1]]);
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn without_room_to_raise_the_band_is_cut() {
    let capped = Pluto {
        coefficient_cap: 4,
        ..Pluto::default()
    };
    let (s, notes) = solve(&capped, Options::default());
    assert_eq!(s.bands.len(), 2, "{:?}", s.bands);
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn isl_finds_the_same_band() {
    let p = skew5();
    let deps = Dependences::compute(&p).unwrap();
    let problem = Problem {
        program: &p,
        deps: &deps,
        options: Options::default(),
    };
    let isl = Isl.schedule(&problem).unwrap().map().unwrap();
    let pluto = Pluto::default().schedule(&problem).unwrap().map().unwrap();
    assert!(isl.to_string().contains("5t + i"), "{isl}");
    assert!(pluto.to_string().contains("5t + i"), "{pluto}");
}
