//! Every example kernel (`examples/` and `examples/polybench/`) schedules with Pluto under
//! every fusion policy, and the schedule passes the legality checker, as a flat relation and
//! as a tree (band permutability and parallel marks included).
//!
//! With `--nocapture` it prints one line per kernel with the scheduling time of each policy,
//! wall clock and CPU time of the scheduling thread (which stays meaningful on a loaded
//! machine); measured, never asserted. The figures in docs/performance.md come from
//! `cargo test --release -p scheduler --test pluto_examples -- --nocapture`.

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use poly::order::AnySchedule;
use scheduler::legality::check;
use scheduler::pluto::Pluto;
use scheduler::{FusePolicy, Options, Problem};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

const POLICIES: [FusePolicy; 3] = [FusePolicy::Smart, FusePolicy::None, FusePolicy::Max];

fn example_files() -> Vec<PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files = Vec::new();
    for dir in [root.clone(), root.join("polybench")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "pk") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// CPU time consumed by the calling thread so far, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the clock id is a constant Linux knows.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Schedules `program` under `fuse` and checks the result; the wall-clock and CPU time
/// taken by Pluto alone, in seconds.
fn schedule_and_check(
    program: &Program,
    deps: &Dependences,
    fuse: FusePolicy,
) -> Result<(f64, f64), String> {
    let options = Options {
        fuse,
        reorder_reductions: false,
        ..Options::default()
    };
    let problem = Problem {
        program,
        deps,
        options: options.clone(),
    };
    let (start, cpu_start) = (Instant::now(), thread_cpu_seconds());
    let affine = Pluto::default()
        .affine(&problem)
        .map_err(|e| e.to_string())?;
    let elapsed = (
        start.elapsed().as_secs_f64(),
        thread_cpu_seconds() - cpu_start,
    );
    let flat = affine.to_union_map(program).map_err(|e| e.to_string())?;
    let tree = affine.to_tree(program).map_err(|e| e.to_string())?;
    for schedule in [AnySchedule::Relation(flat), AnySchedule::Tree(tree)] {
        let report = check(program, deps, &schedule, &options).map_err(|e| e.to_string())?;
        if !report.is_legal() {
            return Err(format!("illegal schedule: {report:?}"));
        }
    }
    Ok(elapsed)
}

#[test]
fn every_example_schedules_legally_under_every_fusion_policy() {
    let mut failures = Vec::new();
    let files = example_files();
    assert!(files.len() >= 36, "examples not found");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    println!("kernel: smart / none / max, wall (CPU) ms; meaningful in release mode only");
    for path in files {
        let shown = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let source = frontend::read_source(path.to_str().unwrap()).unwrap();
        let Ok(kernels) = frontend::compile(&source) else {
            failures.push(format!("{shown}: does not compile"));
            continue;
        };
        for kernel in &kernels {
            let program = Program::build(&Ctx::default(), kernel, &BTreeMap::new()).unwrap();
            let deps = Dependences::compute(&program).unwrap();
            let mut times = Vec::new();
            for fuse in POLICIES {
                match schedule_and_check(&program, &deps, fuse) {
                    Ok((wall, cpu)) => times.push(format!("{:.0} ({:.0})", wall * 1e3, cpu * 1e3)),
                    Err(e) => {
                        times.push("FAILED".into());
                        failures.push(format!("{shown} {} {fuse:?}: {e}", kernel.name));
                    }
                }
            }
            println!("{shown} {}: {}", kernel.name, times.join(" / "));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
