//! Register tiling in the default pipeline (Pluto, the cache model's tiles for the fallback
//! machine, `--parallel`, the blocks of an AVX2 machine, 6 x 64 bytes): the notes say it was
//! applied (gemm), or at least not refused. deriche (47 statements, no band the step
//! blocks, so no note) used to be refused with isl's "syntax error": its budget ran out,
//! shared with the scheduler and the other transformations.

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::optimizer::optimize;
use scheduler::transform::tile_size::{Machine, RegisterBlocks};
use scheduler::transform::{Note, Step, TransformOptions};
use scheduler::Problem;
use std::collections::BTreeMap;

fn register_tiling_note(example: &str) -> Option<Note> {
    let path = format!("{}/../examples/{example}.pk", env!("CARGO_MANIFEST_DIR"));
    let file = frontend::read_source(&path).unwrap();
    let kernel = frontend::compile(&file).unwrap().remove(0);
    let ctx = Ctx::default();
    let program = Program::build(&ctx, &kernel, &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let transforms = TransformOptions {
        tile: Some(Vec::new()),
        parallel: true,
        machine: Machine::FALLBACK,
        register: Some(RegisterBlocks::for_machine(&Machine::FALLBACK)),
        ..TransformOptions::default()
    };
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Default::default(),
    };
    let run = |name: &str| {
        let scheduler = scheduler::registry::scheduler_named(name).unwrap();
        optimize(&problem, scheduler.as_ref(), &transforms, &[])
    };
    // As `polyc compile`: isl's scheduler when Pluto's pipeline fails.
    let scheduled = run("pluto").or_else(|_| {
        let _analysis = ctx.analysis();
        run("isl")
    });
    scheduled.unwrap().notes.into_iter().find(|n| {
        matches!(
            n,
            Note::Applied(Step::RegisterTiling) | Note::Refused(Step::RegisterTiling, _)
        )
    })
}

#[test]
fn deriche_is_not_refused_register_tiling() {
    let note = register_tiling_note("polybench/deriche");
    assert!(!matches!(note, Some(Note::Refused(..))), "{note:?}");
}

#[test]
fn gemm_is_register_tiled() {
    let note = register_tiling_note("polybench/gemm");
    assert!(
        matches!(note, Some(Note::Applied(Step::RegisterTiling))),
        "{note:?}"
    );
}
