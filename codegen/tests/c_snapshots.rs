//! Golden C: the generated function of a few kernels, kept as snapshots that show every
//! kind of loop plan (`c::plan`): accumulator blocks, packed panels, a thread team and simd
//! loops (gemm), promoted elements (gesummv), parallel stencil loops (jacobi-2d), plain
//! sequential loops (trisolv in its original order). Regenerate with
//! `UPDATE_EXPECT=1 cargo test -p codegen --test c_snapshots`.
//!
//! The machine is fixed (an AVX2 pair of cores, 6 x 64-byte register blocks), never the
//! host's, so the snapshots are the same everywhere.

use codegen::CodegenOptions;
use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::optimizer::optimize;
use scheduler::registry::scheduler_named;
use scheduler::transform::tile_size::{Machine, RegisterBlock, RegisterBlocks};
use scheduler::transform::TransformOptions;
use scheduler::Problem;
use std::collections::BTreeMap;

/// Two AVX2 cores with the fallback caches.
const AVX2_PAIR: Machine = Machine {
    cores: 2,
    ..Machine::FALLBACK
};

/// The C of `examples/polybench/NAME.pk` under `scheduler`, tiled (cache model) and
/// parallel with register blocks of 6 x 64 bytes when `optimized`, as is otherwise.
fn generated(name: &str, scheduler: &str, optimized: bool) -> String {
    let path = format!(
        "{}/../examples/polybench/{name}.pk",
        env!("CARGO_MANIFEST_DIR")
    );
    let kernel = frontend::compile(&frontend::read_source(&path).unwrap())
        .unwrap()
        .remove(0);
    let program = Program::build(&Ctx::default(), &kernel, &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Default::default(),
    };
    let transforms = match optimized {
        true => TransformOptions {
            tile: Some(Vec::new()),
            parallel: true,
            machine: AVX2_PAIR,
            register: Some(RegisterBlocks::uniform(RegisterBlock {
                rows: 6,
                bytes: 64,
            })),
            ..TransformOptions::default()
        },
        false => TransformOptions::default(),
    };
    let scheduler = scheduler_named(scheduler).unwrap();
    let schedule = optimize(&problem, scheduler.as_ref(), &transforms, &[])
        .unwrap()
        .schedule;
    let c = codegen::generate(&program, &schedule, &CodegenOptions::default()).unwrap();
    // The runtime header every file starts with is not the kernel's: keep what follows it.
    let (_, function) = c.split_once(codegen::c::RUNTIME).unwrap();
    function.to_owned()
}

fn check(name: &str, scheduler: &str, optimized: bool) {
    let file = format!("snapshots/{name}.{scheduler}.c");
    expect_test::expect_file![file].assert_eq(&generated(name, scheduler, optimized));
}

#[test]
fn gemm_accumulates_packs_and_shares_one_team() {
    check("gemm", "pluto", true);
}

#[test]
fn gesummv_promotes_its_accumulated_elements() {
    check("gesummv", "pluto", true);
}

#[test]
fn jacobi_2d_runs_parallel_stencil_loops() {
    check("jacobi-2d", "pluto", true);
}

#[test]
fn trisolv_in_its_original_order_is_plain_loops() {
    check("trisolv", "identity", false);
}
