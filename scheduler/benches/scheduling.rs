//! How Pluto's scheduling time grows with the number of statements: synthetic chains of
//! one-dimensional stencils `A{k}[i] = A{k-1}[i - 1] + A{k-1}[i] + A{k-1}[i + 1]`, each in
//! its own loop. Smart fusion fuses the chain, which needs a shift per statement, in groups
//! of at most `Pluto::max_fused_statements` (24): each hyperplane is one integer program
//! per group.
//!
//! Run: `cargo bench -p scheduler --bench scheduling` (figures in docs/performance.md).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::pluto::Pluto;
use scheduler::{Options, Problem};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The kernel text of a chain of `n` statements.
fn chain(n: usize) -> String {
    let arrays: Vec<String> = (0..=n).map(|k| format!("A{k}: inout f64[N]")).collect();
    let mut text = format!("kernel chain({}) params N = 1000 {{\n", arrays.join(", "));
    for k in 1..=n {
        let _ = writeln!(
            text,
            "  for i in 1..N - 1 {{ A{k}[i] = A{p}[i - 1] + A{p}[i] + A{p}[i + 1]; }}",
            p = k - 1
        );
    }
    text.push_str("}\n");
    text
}

fn program(n: usize) -> Program {
    let dir = std::env::temp_dir().join(format!("polyc-bench-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("chain{n}.pk"));
    std::fs::write(&path, chain(n)).unwrap();
    let source = frontend::read_source(path.to_str().unwrap()).unwrap();
    let kernels = frontend::compile(&source).unwrap_or_else(|_| panic!("chain {n} compiles"));
    // The dependence analysis of 200 statements needs more than the default isl budget;
    // Pluto resets the budget at the start of each run.
    Program::build(&Ctx::new(50_000_000), &kernels[0], &BTreeMap::new()).unwrap()
}

fn scheduling(c: &mut Criterion) {
    let mut group = c.benchmark_group("pluto_chain");
    group.sample_size(10);
    for n in [10, 20, 50, 100, 200] {
        let p = program(n);
        let deps = Dependences::compute(&p).unwrap();
        let problem = Problem {
            program: &p,
            deps: &deps,
            options: Options::default(),
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &problem, |b, problem| {
            b.iter(|| Pluto::default().affine(problem).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, scheduling);
criterion_main!(benches);
