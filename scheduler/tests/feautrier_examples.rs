//! Feautrier's scheduler produces legal schedules.

mod transform_support;

use scheduler::feautrier::{affine_schedule, Feautrier};
use scheduler::{RowKind, Scheduler};
use transform_support::{assert_legal, load};

fn check(name: &str) -> scheduler::AffineSchedule {
    let loaded = load(name);
    let rows = affine_schedule(&loaded.problem()).unwrap();
    let tree = Feautrier.schedule(&loaded.problem()).unwrap();
    assert_legal(&loaded, &tree);
    rows
}

#[test]
fn jacobi_1d() {
    let rows = check("polybench/jacobi-1d");
    eprintln!("{rows:?}");
    // Time first: the outer row is a loop over t that carries every dependence it can.
    assert!(matches!(
        rows.rows[0].kind,
        RowKind::Loop { coincident: false }
    ));
}

#[test]
fn gemm() {
    let rows = check("polybench/gemm");
    eprintln!("{rows:?}");
}

#[test]
fn lu() {
    let rows = check("polybench/lu");
    eprintln!("{rows:?}");
}
