//! Compile time of the default pipeline without a clock: every PolyBench kernel goes through
//! `polyc compile K.pk --tile= --parallel` (Pluto, the wavefront policy, cache-model tiles,
//! register tiling, then isl's AST and the C printer) in a context whose isl operation
//! budget is [`BUDGET`], and no analysis may run out of it.
//!
//! isl counts its operations (allocations and simplex pivots) deterministically, and each
//! analysis starts a fresh budget (`Ctx::analysis`), so this fails on any machine when
//! one analysis gets much costlier. The budget is the CLI's own
//! ([`DEFAULT_MAX_OPERATIONS`]): what runs out of it here is refused or fails in
//! `polyc compile` too. It is not a tight bound: deriche's costliest analysis (the
//! transformations of its original order) needs between 2 and 3 million operations today
//! (the test fails with 2 million), the other kernels less.

use codegen::CodegenOptions;
use poly::deps::Dependences;
use poly::isl::{Ctx, DEFAULT_MAX_OPERATIONS};
use poly::model::Program;
use scheduler::optimizer::optimize;
use scheduler::transform::tile_size::{Machine, RegisterBlocks, SizeModel};
use scheduler::transform::{Note, Refusal, TransformOptions};
use scheduler::Problem;
use std::collections::BTreeMap;
use std::path::Path;

/// isl operations each analysis of the pipeline may take.
const BUDGET: u64 = DEFAULT_MAX_OPERATIONS;

/// Why `path` does not compile within the budget, if it does not.
fn over_budget(path: &Path) -> Option<String> {
    let path = path.to_str().expect("a UTF-8 path");
    let file = frontend::read_source(path).expect("the example is readable");
    let kernel = frontend::compile(&file)
        .unwrap_or_else(|_| panic!("{path} compiles"))
        .remove(0);
    let ctx = Ctx::new(BUDGET);
    let failed = |stage: &str, e: &dyn std::fmt::Display| Some(format!("{stage}: {e}"));
    let program = match Program::build(&ctx, &kernel, &BTreeMap::new()) {
        Ok(p) => p,
        Err(e) => return failed("lifting", &e),
    };
    let deps = match Dependences::compute(&program) {
        Ok(d) => d,
        Err(e) => return failed("dependences", &e),
    };
    let transforms = TransformOptions {
        tile: Some(Vec::new()),
        machine: Machine::FALLBACK,
        parallel: true,
        register: Some(RegisterBlocks::for_machine(&Machine::FALLBACK)),
        ..TransformOptions::default()
    };
    let pluto = scheduler::registry::scheduler_named("pluto").expect("pluto is registered");
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Default::default(),
    };
    let scheduled = match optimize(&problem, pluto.as_ref(), &transforms, &[]) {
        Ok(s) => s,
        Err(e) => return failed("schedule", &e),
    };
    // An isl failure inside an optional step becomes a note (isl's parser may report an
    // exhausted budget as a syntax error).
    let isl_failed = |n: &&Note| match n {
        Note::Refused(_, Refusal::Isl(_))
        | Note::OriginalRefused { .. }
        | Note::ProfitabilityUnknown(_) => true,
        Note::TileSizes(t) => matches!(t.model, SizeModel::Failed(_)),
        _ => false,
    };
    if let Some(note) = scheduled.notes.iter().find(isl_failed) {
        return Some(format!("note: {note}"));
    }
    let options = CodegenOptions::default();
    codegen::generate(&program, &scheduled.schedule, &options)
        .err()
        .and_then(|e| failed("C", &e))
}

#[test]
fn every_polybench_kernel_compiles_within_the_budget() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/polybench");
    let mut kernels: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/polybench exists")
        .map(|e| e.expect("readable directory").path())
        .filter(|p| p.extension().is_some_and(|e| e == "pk"))
        .collect();
    kernels.sort();
    assert_eq!(kernels.len(), 30, "{kernels:?}");
    let failures: Vec<String> = kernels
        .iter()
        .filter_map(|k| Some(format!("{}: {}", k.display(), over_budget(k)?)))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
