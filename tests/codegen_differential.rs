//! Differential testing of the CPU back end against the reference interpreter.
//!
//! For every example kernel (`examples/*.pk`), every scheduler of
//! `scheduler::registry::all_schedulers()`, untiled and tiled by 4 (so that most extents
//! are not multiples of the tile size) with parallel marks and register tiling (blocks of 2
//! rows and 24 bytes, so that most blocks are partial too), the kernel is compiled once to C with a harness
//! (`cc -O1 -fopenmp`) and run for several parameter values (every parameter 1, 5, then 13)
//! on the interpreter's seeded inputs: every output must be bit-identical to the
//! interpreter's (no reduction is reordered here), and a run the interpreter rejects
//! (out-of-bounds access, division by zero) must fail in C too.

use codegen::register_tile::RegisterBlock;
use codegen::toolchain::CCompiler;
use codegen::{runner, CodegenOptions};
use frontend::ir::Kernel;
use poly::deps::Dependences;
use poly::interp::{Interpreter, Memory, ParamValues};
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::registry::all_schedulers;
use scheduler::transform::TransformOptions;
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Instant;

const PARAM_VALUES: [i64; 3] = [1, 5, 13];
const SEED: u64 = 3;

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pk"))
        .collect();
    files.sort();
    files
}

fn kernels(path: &Path) -> Vec<Kernel> {
    let file = frontend::read_source(path.to_str().unwrap()).unwrap();
    frontend::compile(&file).unwrap_or_else(|_| panic!("{} has errors", path.display()))
}

/// Parameter sets whose runs execute more statement instances than this are skipped (the
/// interpreter runs unoptimised in debug builds).
const MAX_INSTANCES: u64 = 300_000;

/// The interpreter's outputs (`None` when it rejects the run), or no run at all when the
/// parameters make it too long.
fn interpret(kernel: &Kernel, params: &ParamValues) -> Option<Option<Memory>> {
    let mut memory = Memory::random(kernel, params, SEED).unwrap();
    let Ok(interp) = Interpreter::new(kernel, params) else {
        return Some(None);
    };
    if interp.instance_count() > MAX_INSTANCES {
        return None;
    }
    Some(interp.run_original(&mut memory).ok().map(|_| memory))
}

/// Compares one compiled kernel with the interpreter for every parameter set; returns the
/// failures and how many runs were compared.
fn check_binary(exe: &Path, kernel: &Kernel, label: &str, failures: &mut Vec<String>) -> usize {
    let mut runs = 0;
    for v in PARAM_VALUES {
        let defines: BTreeMap<String, i64> =
            kernel.params.iter().map(|p| (p.name.clone(), v)).collect();
        let Ok(params) = ParamValues::resolve(kernel, &defines, &Default::default()) else {
            continue;
        };
        let Some(expected) = interpret(kernel, &params) else {
            continue;
        };
        runs += 1;
        let inputs = Memory::random(kernel, &params, SEED).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let out_dir = scratch.path().join("out");
        let out = runner::run_on(exe, &inputs, &params, scratch.path(), Some(&out_dir)).unwrap();
        let case = format!("{label} with {params}");
        match (expected, out.success) {
            (None, false) => {}
            (None, true) => failures.push(format!("{case}: the interpreter fails, C does not")),
            (Some(_), false) => failures.push(format!("{case}: C fails: {}", out.stderr)),
            (Some(memory), true) => {
                let got = runner::read_outputs(kernel, &params, &out_dir).unwrap();
                let diffs = memory.compare(&got).unwrap();
                for d in diffs.iter().filter(|d| {
                    !d.is_identical()
                        && kernel
                            .array_by_name(&d.name)
                            .is_some_and(|a| kernel.array(a).role.is_output())
                }) {
                    failures.push(format!(
                        "{case}: `{}` differs in {} elements (max abs {:e})",
                        d.name, d.mismatches, d.max_abs
                    ));
                }
            }
        }
    }
    runs
}

#[test]
fn compiled_kernels_match_the_interpreter() {
    let compiler = CCompiler::system("-O1");
    if !compiler.is_available() {
        eprintln!("no C compiler (`cc`): skipped");
        return;
    }
    let start = Instant::now();
    let files = examples();
    // Two workers, each with its own isl context: the machine has two cores.
    let results: Vec<(Vec<String>, usize, usize)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let mine: Vec<PathBuf> = files.iter().skip(w).step_by(2).cloned().collect();
                let compiler = compiler.clone();
                scope.spawn(move || check_files(&mine, &compiler))
            })
            .collect();
        workers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let failures: Vec<String> = results.iter().flat_map(|r| r.0.clone()).collect();
    let binaries: usize = results.iter().map(|r| r.1).sum();
    let runs: usize = results.iter().map(|r| r.2).sum();
    eprintln!(
        "codegen differential: {binaries} binaries, {runs} runs in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(binaries >= 100, "only {binaries} kernels compiled");
}

/// Checks every kernel of `files`: the failures, the binaries built and the runs compared.
fn check_files(files: &[PathBuf], compiler: &CCompiler) -> (Vec<String>, usize, usize) {
    let work = tempfile::tempdir().unwrap();
    let tilings: [Option<Vec<NonZeroU32>>; 2] = [None, Some(vec![NonZeroU32::new(4).unwrap()])];
    let mut failures = Vec::new();
    let (mut binaries, mut runs) = (0, 0);
    for path in files {
        for kernel in kernels(path) {
            let ctx = Ctx::default();
            let program = Program::build(&ctx, &kernel, &BTreeMap::new()).unwrap();
            let deps = Dependences::compute(&program).unwrap();
            for scheduler in all_schedulers() {
                for tile in &tilings {
                    let label = format!(
                        "{} / {} / {}",
                        kernel.name,
                        scheduler.name(),
                        if tile.is_some() {
                            "tiled 4, parallel, register-tiled 2 x 24 bytes"
                        } else {
                            "untiled"
                        }
                    );
                    let transforms = TransformOptions {
                        tile: tile.clone(),
                        parallel: tile.is_some(),
                        ..TransformOptions::default()
                    };
                    // Blocks of 2 rows and 3 f64 (6 f32) leave partial blocks at every size.
                    let register = tile.as_ref().map(|_| RegisterBlock { rows: 2, bytes: 24 });
                    let scheduled = match codegen::pipeline::schedule(
                        &program,
                        &deps,
                        scheduler.as_ref(),
                        Default::default(),
                        &transforms,
                        register,
                    ) {
                        Ok(s) => s,
                        Err(e) => {
                            failures.push(format!("{label}: scheduling: {e}"));
                            continue;
                        }
                    };
                    let options = CodegenOptions {
                        harness: true,
                        ..CodegenOptions::default()
                    };
                    let code = match codegen::generate(&program, &scheduled.schedule, &options) {
                        Ok(c) => c,
                        Err(e) => {
                            failures.push(format!("{label}: codegen: {e}"));
                            continue;
                        }
                    };
                    let name = format!("k{binaries}");
                    let exe = match compiler.build(&code, work.path(), &name) {
                        Ok(exe) => exe,
                        Err(e) => {
                            failures.push(format!("{label}: {e}"));
                            continue;
                        }
                    };
                    binaries += 1;
                    runs += check_binary(&exe, &kernel, &label, &mut failures);
                }
            }
        }
    }
    (failures, binaries, runs)
}
