//! Every example kernel schedules legally with Pluto (smart and no fusion; max fusion is
//! too slow on attention.pk for now, see docs/scheduling.md).
//!
//! With `--nocapture` it prints each kernel's scheduling time (measured, never asserted).

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::pluto::Pluto;
use scheduler::{FusePolicy, Options, Problem};
use std::collections::BTreeMap;
use std::time::Instant;

fn example_files() -> Vec<std::path::PathBuf> {
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

#[test]
fn every_example_schedules_legally() {
    let mut failures = Vec::new();
    let files = example_files();
    assert!(files.len() > 40, "examples not found");
    for path in files {
        let source = frontend::read_source(path.to_str().unwrap()).unwrap();
        let Ok(kernels) = frontend::compile(&source) else {
            failures.push(format!("{}: does not compile", path.display()));
            continue;
        };
        for kernel in &kernels {
            let p = Program::build(&Ctx::default(), kernel, &BTreeMap::new()).unwrap();
            let deps = Dependences::compute(&p).unwrap();
            for fuse in [FusePolicy::Smart, FusePolicy::None] {
                let problem = Problem {
                    program: &p,
                    deps: &deps,
                    options: Options {
                        fuse,
                        reorder_reductions: false,
                    },
                };
                let start = Instant::now();
                let result = Pluto::default().affine(&problem);
                let elapsed = start.elapsed();
                let name = format!("{} {} {fuse:?}", path.display(), kernel.name);
                match result {
                    Ok(s) => {
                        println!("{name}: {:.1} ms", elapsed.as_secs_f64() * 1e3);
                        let flat = s.to_union_map(&p).unwrap();
                        let tree = s.to_tree(&p).unwrap().map().unwrap();
                        let validity = problem.validity().unwrap();
                        for map in [flat, tree] {
                            let before = map.lex_lt_union_map(&map).unwrap();
                            if !validity.is_subset(&before).unwrap() {
                                failures.push(format!("{name}: illegal schedule {map}"));
                            }
                        }
                    }
                    Err(e) => failures.push(format!("{name}: {e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
