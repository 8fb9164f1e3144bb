//! The baselines are legal on every example, before and after the transformations.

mod transform_support;

use scheduler::baseline::{Identity, Isl};
use scheduler::transform::{optimize, TransformOptions};
use scheduler::Scheduler;
use transform_support::{all_examples, assert_legal, load_path};

#[test]
fn baselines_are_legal_on_every_example() {
    let all_on = TransformOptions {
        tile: Some(Vec::new()),
        parallel: true,
        ..TransformOptions::default()
    };
    for path in all_examples() {
        let loaded = load_path(&path);
        for s in [&Identity as &dyn Scheduler, &Isl] {
            let schedule = s
                .schedule(&loaded.problem())
                .unwrap_or_else(|e| panic!("{path}: {}: {e}", s.name()));
            assert_legal(&loaded, &schedule);
            let optimized = optimize(&loaded.problem(), &schedule, &all_on).unwrap();
            assert_legal(&loaded, &optimized.tree.to_schedule().unwrap());
        }
    }
}

#[test]
fn identity_is_the_original_order() {
    let loaded = load_path(&format!(
        "{}/../examples/polybench/gemm.pk",
        env!("CARGO_MANIFEST_DIR")
    ));
    let s = Identity.schedule(&loaded.problem()).unwrap();
    assert_eq!(s.map().unwrap(), loaded.program.schedule_map().unwrap());
}
