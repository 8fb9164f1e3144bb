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
    let c = c_of(
        &frontend::read_source(&path).unwrap(),
        scheduler,
        &transforms,
    );
    // The runtime header every file starts with is not the kernel's: keep what follows it.
    let (_, function) = c.split_once(codegen::c::RUNTIME).unwrap();
    function.to_owned()
}

/// The C file of the first kernel of `source` under `scheduler` and `transforms`.
fn c_of(source: &frontend::SourceFile, scheduler: &str, transforms: &TransformOptions) -> String {
    let kernel = frontend::compile(source).unwrap().remove(0);
    let program = Program::build(&Ctx::default(), &kernel, &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Default::default(),
    };
    let scheduler = scheduler_named(scheduler).unwrap();
    let schedule = optimize(&problem, scheduler.as_ref(), transforms, &[])
        .unwrap()
        .schedule;
    codegen::generate(&program, &schedule, &CodegenOptions::default()).unwrap()
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
fn trisolv_keeps_its_sum_in_a_local_beside_reads_apart_from_it() {
    // `x[i]` in a local across `j`: the other read of `x`, `x[j]` with `j < i`, is proven
    // never to read it and stays a read of memory.
    check("trisolv", "identity", false);
}

#[test]
fn atax_jams_its_dot_products_by_four_into_accumulators() {
    // Four rows' sums side by side in locals; `y`'s updates beside them keep their
    // vectorisable order.
    check("atax", "pluto", true);
}

/// The C of the one kernel in `text`, as written (identity, untiled).
fn plain(text: &str) -> String {
    let source = frontend::SourceFile::new("<test>", text);
    c_of(&source, "identity", &TransformOptions::default())
}

#[test]
fn an_element_is_not_held_in_a_local_when_another_read_may_be_it() {
    // `j` reaches `i`: `x[j]` reads the element being summed, so it must not be shadowed.
    let shared = plain(
        "kernel k(L: f64[N, N], x: out f64[N]) params N = 8 {
           for i in 0..N { for j in 0..i + 1 { x[i] -= L[i, j] * x[j]; } } }",
    );
    assert!(!shared.contains("in locals across"), "{shared}");
    let apart = plain(
        "kernel k(L: f64[N, N], x: out f64[N]) params N = 8 {
           for i in 0..N { for j in 0..i { x[i] -= L[i, j] * x[j]; } } }",
    );
    assert!(apart.contains("in locals across"), "{apart}");
}
