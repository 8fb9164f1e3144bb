//! Feautrier's rows each have a budget of their own: a schedule of many rows over parametric
//! dependences may spend more than one budget in all (fuzz seed 3421, the program of
//! `tests/fuzz/regressions/seed-3421.pk`, every setting an internal error while one budget
//! covered every row).

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::feautrier::affine_schedule;
use scheduler::{Options, Problem};
use std::collections::BTreeMap;

#[test]
fn a_schedule_of_many_rows_spends_a_budget_a_row() {
    let path = format!(
        "{}/../tests/fuzz/regressions/seed-3421.pk",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = frontend::read_source(&path).unwrap();
    let kernels = frontend::compile(&source).unwrap_or_else(|_| panic!("seed 3421 compiles"));
    // the parameters symbolic, as the fuzzer lifts its programs
    let program = Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Options::default(),
    };
    let rows = affine_schedule(&problem).unwrap_or_else(|e| panic!("{e}"));
    assert!(rows.rows.len() > 1, "{rows:?}");
}
