//! A Pluto run that exceeds isl's operation budget stops with a clean error, never spins.

use poly::deps::Dependences;
use poly::isl::{Ctx, IslError};
use poly::model::Program;
use scheduler::pluto::Pluto;
use scheduler::{FusePolicy, Options, Problem, ScheduleError};
use std::collections::BTreeMap;

#[test]
fn exhausted_budget_is_a_schedule_error() {
    let path = format!("{}/../examples/attention.pk", env!("CARGO_MANIFEST_DIR"));
    let source = frontend::read_source(&path).unwrap();
    let kernels = frontend::compile(&source).unwrap_or_else(|_| panic!("attention compiles"));
    let program = Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    // The run resets the budget when it starts; give it far too little.
    program.ctx.set_budget(2_000);
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Options {
            fuse: FusePolicy::Max,
            reorder_reductions: false,
            ..Options::default()
        },
    };
    let result = Pluto::default().affine(&problem);
    assert!(
        matches!(result, Err(ScheduleError::Isl(IslError::OperationLimit(_)))),
        "{result:?}"
    );
}
