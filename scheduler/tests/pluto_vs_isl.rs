//! On every example (`examples/`, `examples/polybench/`, `examples/resnet50/`: 69 kernels),
//! polyc's Pluto finds at least as many parallel loops and a permutable band at least as
//! deep as isl's scheduler, both untransformed (as `polyc compare --schedulers pluto,isl
//! --no-tile --no-parallel` tabulates them; the table is in `docs/scheduling.md`).

mod transform_support;

use scheduler::baseline::Isl;
use scheduler::compare::{measure, Shape};
use scheduler::registry::scheduler_named;
use scheduler::transform::TransformOptions;
use scheduler::Scheduler;
use transform_support::load_path;

/// Every kernel file under `examples/`, its `polybench/` and `resnet50/`.
fn every_example() -> Vec<String> {
    let root = format!("{}/../examples", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["", "polybench", "resnet50"] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "pk") {
                out.push(path.display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The parallel loops and the deepest permutable band of `scheduler`'s schedule.
fn shape(path: &str, scheduler: &dyn Scheduler) -> (usize, usize) {
    let loaded = load_path(path);
    let m = measure(&loaded.problem(), scheduler, &TransformOptions::default());
    let Shape {
        bands,
        parallel_loops,
    } = m
        .outcome
        .unwrap_or_else(|e| panic!("{path}: {}: {e}", scheduler.name()));
    let deepest = (bands.iter().filter(|b| b.permutable))
        .map(|b| b.members)
        .max()
        .unwrap_or(0);
    (parallel_loops, deepest)
}

#[test]
fn pluto_is_at_least_as_parallel_and_as_deep_as_isl_on_every_example() {
    let files = every_example();
    assert_eq!(files.len(), 69, "{files:?}");
    let pluto = scheduler_named("pluto").unwrap();
    let mut worse = Vec::new();
    for path in &files {
        let (p_par, p_depth) = shape(path, pluto.as_ref());
        let (i_par, i_depth) = shape(path, &Isl);
        if p_par < i_par || p_depth < i_depth {
            worse.push(format!(
                "{path}: pluto {p_par} parallel, depth {p_depth}; isl {i_par}, depth {i_depth}"
            ));
        }
    }
    assert!(worse.is_empty(), "{}", worse.join("\n"));
}
