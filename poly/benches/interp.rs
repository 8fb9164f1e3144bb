//! Interpreter throughput on gemm (`examples/gemm.pk`, f64): the original-order walk at
//! NI = NJ = NK = 256 (16.8 million statement instances), and `run_instances` over the
//! materialised original order at 64. Throughput is reported in statement instances per second.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use frontend::ir::Kernel;
use poly::interp::{Interpreter, Memory, ParamValues};
use std::collections::BTreeMap;

fn gemm(n: i64) -> (Kernel, ParamValues) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/gemm.pk");
    let source = frontend::read_source(path).expect("examples/gemm.pk is readable");
    let kernel = frontend::compile(&source)
        .unwrap_or_else(|d| panic!("examples/gemm.pk does not compile: {d:?}"))
        .remove(0);
    let overrides: BTreeMap<String, i64> = ["NI", "NJ", "NK"]
        .iter()
        .map(|p| (p.to_string(), n))
        .collect();
    let params = ParamValues::resolve(&kernel, &overrides, &BTreeMap::new()).expect("parameters");
    (kernel, params)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("interp_gemm");
    group.sample_size(10);

    let (kernel, params) = gemm(256);
    let interp = Interpreter::new(&kernel, &params).expect("gemm compiles");
    let memory = Memory::random(&kernel, &params, 0).expect("memory");
    group.throughput(Throughput::Elements(interp.instance_count()));
    group.bench_function("run_original_n256", |b| {
        b.iter_batched_ref(
            || memory.clone(),
            |m| interp.run_original(m).expect("runs"),
            BatchSize::LargeInput,
        )
    });

    let (kernel, params) = gemm(64);
    let interp = Interpreter::new(&kernel, &params).expect("gemm compiles");
    let memory = Memory::random(&kernel, &params, 0).expect("memory");
    let instances = interp.original_instances();
    group.throughput(Throughput::Elements(instances.len() as u64));
    group.bench_function("run_instances_n64", |b| {
        b.iter_batched_ref(
            || memory.clone(),
            |m| {
                let order = instances.iter().map(|(s, iv)| (*s, iv.as_slice()));
                interp.run_instances(m, order).expect("runs")
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
