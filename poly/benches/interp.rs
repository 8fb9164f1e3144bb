//! Interpreter throughput on gemm (`examples/polybench/gemm.pk`, f64): the original-order walk at
//! NI = NJ = NK = 256 (16.8 million statement instances), and `run_instances` over the
//! materialised original order at 64. Throughput is reported in statement instances per second,
//! twice: per second of wall-clock time (`interp_gemm`) and per second of the benchmark
//! thread's CPU time (`interp_gemm_cpu`), which stays meaningful on a loaded, shared machine.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use frontend::ir::Kernel;
use poly::interp::{Interpreter, Memory, ParamValues};
use std::collections::BTreeMap;
use std::time::Duration;

fn gemm(n: i64) -> (Kernel, ParamValues) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/polybench/gemm.pk");
    let source = frontend::read_source(path).expect("examples/polybench/gemm.pk is readable");
    let kernel = frontend::compile(&source)
        .unwrap_or_else(|d| panic!("examples/polybench/gemm.pk does not compile: {d:?}"))
        .remove(0);
    let overrides: BTreeMap<String, i64> = ["NI", "NJ", "NK"]
        .iter()
        .map(|p| (p.to_string(), n))
        .collect();
    let params = ParamValues::resolve(&kernel, &overrides, &BTreeMap::new()).expect("parameters");
    (kernel, params)
}

/// The CPU time of the calling thread (Linux `CLOCK_THREAD_CPUTIME_ID`), formatted like
/// wall-clock time.
struct ThreadCpuTime(WallTime);

impl ThreadCpuTime {
    fn now() -> Duration {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid, writable timespec.
        let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }
}

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        ThreadCpuTime::now()
    }
    fn end(&self, start: Duration) -> Duration {
        ThreadCpuTime::now().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, d: &Duration) -> f64 {
        d.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        self.0.formatter()
    }
}

fn bench<M: Measurement>(c: &mut Criterion<M>, group_name: &str) {
    let mut group = c.benchmark_group(group_name);
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

fn wall_clock(c: &mut Criterion) {
    bench(c, "interp_gemm");
}

fn cpu_time(c: &mut Criterion<ThreadCpuTime>) {
    bench(c, "interp_gemm_cpu");
}

criterion_group!(wall, wall_clock);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(ThreadCpuTime(WallTime));
    targets = cpu_time
}
criterion_main!(wall, cpu);
