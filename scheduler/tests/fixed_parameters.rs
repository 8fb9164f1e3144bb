//! With parameters fixed (`-D N=5000`), the ILP-based schedulers solve with the parameters
//! symbolic ([`scheduler::Symbolic`]) and apply the result to the fixed program: the same
//! schedule as for the symbolic kernel, on the fixed instances. Solved with the fixed
//! values, Pluto took 17 s on trisolv at N = 5000 (docs/scheduling.md).

use poly::deps::Dependences;
use poly::isl::{Ctx, Schedule, UnionMap};
use poly::model::Program;
use scheduler::registry::scheduler_named;
use scheduler::{Options, Problem};
use std::collections::BTreeMap;

/// `examples/polybench/NAME.pk` scheduled by `scheduler` with `fixed` parameter values,
/// in a context of its own, as a flat relation on the program's instances.
fn schedule_map(name: &str, scheduler: &str, fixed: &[(&str, i64)]) -> (Ctx, UnionMap) {
    let path = format!(
        "{}/../examples/polybench/{name}.pk",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = frontend::read_source(&path).unwrap();
    let kernel = frontend::compile(&source).unwrap().remove(0);
    let ctx = Ctx::default();
    let fixed: BTreeMap<String, i64> = fixed.iter().map(|&(p, v)| (p.into(), v)).collect();
    let program = Program::build(&ctx, &kernel, &fixed).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Options::default(),
    };
    let schedule: Schedule = scheduler_named(scheduler)
        .unwrap()
        .schedule(&problem)
        .unwrap();
    // The schedule covers exactly the fixed program's instances.
    let domain = program.domains().unwrap();
    assert!(schedule.domain().unwrap().is_equal(&domain).unwrap());
    let map = schedule.map().unwrap().intersect_domain(&domain).unwrap();
    (ctx, map)
}

#[test]
fn fixed_parameters_get_the_symbolic_schedule() {
    for scheduler in ["pluto", "feautrier"] {
        let (ctx, fixed) = schedule_map("trisolv", scheduler, &[("N", 5000)]);
        let (_, symbolic) = schedule_map("trisolv", scheduler, &[]);
        // In one context (through its text), the symbolic schedule at N = 5000.
        let symbolic = ctx.union_map(&symbolic.to_string()).unwrap();
        let at = ctx.set("[N] -> { : N = 5000 }").unwrap();
        let expected = symbolic.intersect_params(&at).unwrap();
        assert!(!fixed.is_empty().unwrap());
        assert!(
            fixed.is_equal(&expected).unwrap(),
            "{scheduler}: {fixed} against {expected}"
        );
    }
}
