//! End to end: for every example kernel and every registered scheduler, the schedule (computed
//! with symbolic parameters) passes the legality checker, and executing the instances in the
//! schedule's order for small parameter values (parallel instances shuffled) gives outputs
//! bit-identical to the original order. The schedule's text (its tree, and its flat time
//! relation) is accepted by the recognizers that locate syntax errors
//! (`legality::syntax`): they refuse nothing isl prints.

use frontend::ir::Kernel;
use poly::deps::Dependences;
use poly::interp::{Interpreter, Memory, ParamValues};
use poly::isl::Ctx;
use poly::model::Program;
use poly::order::{execution_order, AnySchedule, Ties};
use scheduler::legality::{check, syntax};
use scheduler::registry::all_schedulers;
use scheduler::{Options, Problem};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `.pk` files in `examples/` (or a subdirectory), sorted.
fn example_files(subdir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(subdir);
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pk"))
        .collect();
    out.sort();
    out
}

fn kernels(path: &Path) -> Vec<Kernel> {
    let source = std::fs::read_to_string(path).unwrap();
    let file = frontend::SourceFile::new(path.display().to_string(), &source);
    frontend::compile(&file).unwrap_or_else(|_| panic!("{} compiles", path.display()))
}

/// Small parameter values the kernel accepts: distinct values from 5 up (never above the
/// default), or else 8 for every parameter.
fn small_params(kernel: &Kernel) -> (BTreeMap<String, i64>, ParamValues) {
    let distinct: BTreeMap<String, i64> = kernel
        .params
        .iter()
        .enumerate()
        .map(|(k, p)| {
            (
                p.name.clone(),
                (5 + k as i64).min(p.default.unwrap_or(i64::MAX)),
            )
        })
        .collect();
    let uniform: BTreeMap<String, i64> =
        kernel.params.iter().map(|p| (p.name.clone(), 8)).collect();
    [distinct, uniform]
        .into_iter()
        .find_map(|fixed| {
            let values = ParamValues::resolve(kernel, &fixed, &BTreeMap::new()).ok()?;
            Some((fixed, values))
        })
        .unwrap_or_else(|| panic!("no small parameter values for {}", kernel.name))
}

#[test]
fn every_scheduler_is_legal_and_keeps_results_on_the_examples() {
    check_examples("");
}

#[test]
fn every_scheduler_is_legal_and_keeps_results_on_polybench() {
    check_examples("polybench");
}

/// Checks every (kernel, scheduler) pair of the examples in `subdir`.
fn check_examples(subdir: &str) {
    let mut checked = 0;
    let mut kernel_count = 0;
    let mut failures = Vec::new();
    let mut fail = |message: String| {
        eprintln!("{message}");
        failures.push(message);
    };
    for path in example_files(subdir) {
        for kernel in kernels(&path) {
            kernel_count += 1;
            let (fixed, values) = small_params(&kernel);
            let ctx = Ctx::default();
            let program = Program::build(&ctx, &kernel, &BTreeMap::new()).unwrap();
            let deps = Dependences::compute(&program).unwrap();
            let interp = Interpreter::new(&kernel, &values).unwrap();
            let mut expected = Memory::random(&kernel, &values, 7).unwrap();
            let original_runs = interp.run_original(&mut expected).is_ok();
            if !original_runs {
                eprintln!(
                    "{} faults on random inputs: orders not executed",
                    kernel.name
                );
            }
            let problem = Problem {
                program: &program,
                deps: &deps,
                options: Options::default(),
            };
            for scheduler in all_schedulers() {
                let what = format!("{} on {} ({values})", scheduler.name(), kernel.name);
                let start = std::time::Instant::now();
                let tree = match scheduler.schedule(&problem) {
                    Ok(tree) => AnySchedule::Tree(tree),
                    Err(e) => {
                        fail(format!("{what} failed: {e}"));
                        continue;
                    }
                };
                let printed = match &tree {
                    AnySchedule::Tree(t) => t.to_string(),
                    AnySchedule::Relation(r) => r.to_string(),
                };
                let flat = tree.time_relation(&program).unwrap();
                for text in [printed, flat.to_string()] {
                    if let Err(e) = syntax::check(&text) {
                        fail(format!("{what}: its text is refused ({e}):\n{text}"));
                    }
                }
                let report = check(&program, &deps, &tree, &Options::default()).unwrap();
                if !report.is_legal() {
                    fail(format!("{what} is illegal:\n{report}"));
                    continue;
                }
                if original_runs {
                    let order =
                        execution_order(&program, &tree, &fixed, Ties::Shuffled(checked)).unwrap();
                    let mut memory = Memory::random(&kernel, &values, 7).unwrap();
                    interp.run_instances(&mut memory, order).unwrap();
                    if !memory.bit_identical(&expected) {
                        fail(format!("{what} changes the results"));
                    }
                }
                eprintln!("{what}: {:?}", start.elapsed());
                checked += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The identity never fails, so every kernel was checked at least once.
    assert!(
        kernel_count >= 6 && checked >= kernel_count,
        "{checked} pairs checked"
    );
}
