//! Register tiling in the default pipeline (Pluto, the cache model's tiles for this machine,
//! `--parallel`, the blocks of an AVX2 machine, 6 x 64 bytes): the notes say it was applied,
//! not refused. deriche (47 statements)
//! used to be refused with isl's "syntax error": its budget ran out, shared with the
//! scheduler and the other transformations.

use codegen::register_tile::RegisterBlocks;
use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::transform::tile_size::Machine;
use scheduler::transform::TransformOptions;
use std::collections::BTreeMap;

fn register_tiling_note(example: &str) -> String {
    let path = format!("{}/../examples/{example}.pk", env!("CARGO_MANIFEST_DIR"));
    let file = frontend::read_source(&path).unwrap();
    let kernel = frontend::compile(&file).unwrap().remove(0);
    let ctx = Ctx::default();
    let program = Program::build(&ctx, &kernel, &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let transforms = TransformOptions {
        tile: Some(Vec::new()),
        parallel: true,
        machine: Machine::host(),
        register: Some(RegisterBlocks::for_machine(&Machine::FALLBACK)),
        ..TransformOptions::default()
    };
    let run = |name: &str| {
        let scheduler = scheduler::registry::scheduler_named(name).unwrap();
        codegen::pipeline::schedule(
            &program,
            &deps,
            scheduler.as_ref(),
            Default::default(),
            &transforms,
        )
    };
    // As `polyc compile`: isl's scheduler when Pluto's pipeline fails.
    let scheduled = run("pluto").or_else(|_| {
        ctx.reset_budget();
        run("isl")
    });
    scheduled
        .unwrap()
        .notes
        .into_iter()
        .find(|n| n.starts_with("register tiling"))
        .unwrap_or_default()
}

#[test]
fn deriche_is_register_tiled() {
    assert_eq!(
        register_tiling_note("polybench/deriche"),
        "register tiling: applied"
    );
}

#[test]
fn gemm_is_register_tiled() {
    assert_eq!(
        register_tiling_note("polybench/gemm"),
        "register tiling: applied"
    );
}
