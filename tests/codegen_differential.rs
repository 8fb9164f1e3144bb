//! Differential testing of the CPU back end against the reference interpreter.
//!
//! Each kernel is compiled once to C with a harness (`cc -O1 -fopenmp`) per configuration
//! and run for several parameter sets on the interpreter's seeded inputs; a run the
//! interpreter rejects (out-of-bounds access, division by zero) must fail in C too.
//!
//! * `compiled_kernels_match_the_interpreter`: the example kernels (`examples/*.pk` and the 19
//!   PolyBench kernels of [`POLYBENCH_FOR_EVERY_SCHEDULER`]) x every
//!   scheduler of `scheduler::registry::all_schedulers()` x {untiled; tiled by 4 (so that most
//!   extents are not multiples of the tile size) with parallel marks and register tiling by
//!   blocks of 2 rows and 24 bytes (so that most blocks are partial too)}, every parameter 1,
//!   5, then 13: outputs bit-identical (no reduction is reordered).
//! * `reordered_reductions_match_within_tolerance`: those kernels with reductions x the
//!   schedulers other than identity, tiled as above, scheduled with `--reorder-reductions` and built with FMA contraction
//!   (`FloatMode::Fma`): outputs within `runner::Comparison::Tolerant` (a normwise relative
//!   tolerance per element type, `runner::tolerance`), since both round differently.
//! * `polybench_default_pipeline_matches_bit_for_bit`: the 30 PolyBench kernels
//!   (`examples/polybench/*.pk`) through the default pipeline of `polyc compile`/`bench`
//!   (Pluto, isl when it fails; the cache model's tiles, sized for register blocks where
//!   they follow, on an AVX2 machine of two cores; parallel; register tiling 6 x 64 bytes
//!   with accumulators and packed panels), their parameters set to distinct primes that no
//!   tile or block size divides (from 37..53 down to 3..11, the largest sets within an
//!   instance budget): outputs bit-identical.

use codegen::runner::Comparison;
use codegen::toolchain::{CCompiler, FloatMode};
use codegen::{runner, CodegenOptions};
use frontend::ir::Kernel;
use poly::deps::Dependences;
use poly::interp::{Interpreter, Memory, ParamValues};
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::optimizer::optimize;
use scheduler::registry::{all_schedulers, scheduler_named};
use scheduler::transform::tile_size::{Machine, RegisterBlock, RegisterBlocks};
use scheduler::transform::TransformOptions;
use scheduler::{Options, Problem};
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Instant;

const SEED: u64 = 3;

/// The kernel files of `examples/DIR` (`""`: `examples/` itself).
fn examples(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pk"))
        .collect();
    files.sort();
    files
}

/// The PolyBench kernels that the suites over every scheduler also cover, beside
/// `examples/`'s own (at small equal parameter values). The other eleven are covered by the
/// default-pipeline suite only, which keeps these suites' time what it was when the 19 were
/// copies in `examples/`.
const POLYBENCH_FOR_EVERY_SCHEDULER: [&str; 19] = [
    "2mm",
    "3mm",
    "atax",
    "bicg",
    "cholesky",
    "covariance",
    "fdtd-2d",
    "floyd-warshall",
    "gemm",
    "gemver",
    "heat-3d",
    "jacobi-1d",
    "jacobi-2d",
    "lu",
    "mvt",
    "seidel-2d",
    "syrk",
    "trisolv",
    "trmm",
];

/// The kernel files of the suites over every scheduler: `examples/` and
/// [`POLYBENCH_FOR_EVERY_SCHEDULER`].
fn every_scheduler_files() -> Vec<PathBuf> {
    let chosen = |p: &PathBuf| {
        p.file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| POLYBENCH_FOR_EVERY_SCHEDULER.contains(&s))
    };
    let mut files = examples("");
    files.extend(examples("polybench").into_iter().filter(chosen));
    files
}

fn kernels(path: &Path) -> Vec<Kernel> {
    let file = frontend::read_source(path.to_str().unwrap()).unwrap();
    frontend::compile(&file).unwrap_or_else(|_| panic!("{} has errors", path.display()))
}

/// One way of compiling every kernel of a suite.
#[derive(Clone)]
struct Setup {
    /// Shown in failures.
    label: String,
    /// Schedulers tried in this order: the first whose pipeline succeeds is used.
    schedulers: Vec<&'static str>,
    options: Options,
    transforms: TransformOptions,
    float: FloatMode,
    comparison: Comparison,
}

/// Kernels, the setups each is compiled in, and the parameter sets each binary runs.
struct Suite {
    files: Vec<PathBuf>,
    setups: Vec<Setup>,
    /// Parameter sets, in order; sets violating the kernel's constraints or executing more
    /// than `max_instances` statement instances are skipped.
    params: fn(&Kernel) -> Vec<BTreeMap<String, i64>>,
    max_instances: u64,
    /// Only kernels with reduction dependences (the others cannot be reordered).
    only_reductions: bool,
}

/// Every parameter equal to 1, 5, then 13.
fn equal_small_values(kernel: &Kernel) -> Vec<BTreeMap<String, i64>> {
    [1, 5, 13]
        .iter()
        .map(|&v| kernel.params.iter().map(|p| (p.name.clone(), v)).collect())
        .collect()
}

/// Distinct primes per parameter (declaration order), from large to small sets: no tile
/// or register block size divides them, and swapped extents give different shapes.
fn distinct_primes(kernel: &Kernel) -> Vec<BTreeMap<String, i64>> {
    const SETS: [[i64; 5]; 3] = [[37, 41, 43, 47, 53], [11, 13, 17, 19, 23], [5, 7, 3, 11, 2]];
    SETS.iter()
        .map(|set| {
            (kernel.params.iter().zip(set.iter().cycle()))
                .map(|(p, &v)| (p.name.clone(), v))
                .collect()
        })
        .collect()
}

/// Tiled by 4 (most extents are not multiples of it), parallel, register blocks of 2 rows
/// and 24 bytes (3 `f64`, 6 `f32`: partial blocks at every size).
fn small_tiles() -> TransformOptions {
    TransformOptions {
        tile: Some(vec![NonZeroU32::new(4).unwrap()]),
        parallel: true,
        register: Some(RegisterBlocks::uniform(RegisterBlock {
            rows: 2,
            bytes: 24,
        })),
        ..TransformOptions::default()
    }
}

/// The interpreter's outputs (`None` when it rejects the run), or no run at all when the
/// parameters make it too long.
fn interpret(kernel: &Kernel, params: &ParamValues, max: u64) -> Option<Option<Memory>> {
    let mut memory = Memory::random(kernel, params, SEED).unwrap();
    let Ok(interp) = Interpreter::new(kernel, params) else {
        return Some(None);
    };
    if interp.instance_count() > max {
        return None;
    }
    Some(interp.run_original(&mut memory).ok().map(|_| memory))
}

/// Compares one compiled kernel with the interpreter for every parameter set of `suite`;
/// pushes the failures and returns how many runs were compared.
fn check_binary(
    exe: &Path,
    kernel: &Kernel,
    suite: &Suite,
    setup: &Setup,
    label: &str,
    failures: &mut Vec<String>,
) -> usize {
    let mut runs = 0;
    for defines in (suite.params)(kernel) {
        let Ok(params) = ParamValues::resolve(kernel, &defines, &Default::default()) else {
            continue;
        };
        let Some(expected) = interpret(kernel, &params, suite.max_instances) else {
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
                let wrong = runner::disagreements(kernel, &memory, &got, setup.comparison).unwrap();
                failures.extend(wrong.iter().map(|d| format!("{case}: {d}")));
            }
        }
    }
    runs
}

/// Runs a suite on two workers (the machine has two cores), each with its own isl
/// contexts, and asserts that nothing failed and at least `min_binaries` were built.
fn assert_suite(name: &str, suite: Suite, min_binaries: usize) {
    let compiler = CCompiler::system("-O1");
    if !compiler.is_available() {
        // A missing compiler fails the suite, so that it never passes by testing nothing.
        assert!(
            std::env::var("POLYC_ALLOW_SKIP").is_ok_and(|v| v == "1"),
            "no C compiler (`cc`): install one, or set POLYC_ALLOW_SKIP=1 to skip"
        );
        eprintln!("no C compiler (`cc`): skipped (POLYC_ALLOW_SKIP=1)");
        return;
    }
    let start = Instant::now();
    let results: Vec<(Vec<String>, usize, usize)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let (suite, compiler) = (&suite, &compiler);
                scope.spawn(move || check_files(suite, w, compiler))
            })
            .collect();
        workers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let failures: Vec<String> = results.iter().flat_map(|r| r.0.clone()).collect();
    let binaries: usize = results.iter().map(|r| r.1).sum();
    let runs: usize = results.iter().map(|r| r.2).sum();
    eprintln!(
        "{name}: {binaries} binaries, {runs} runs in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(binaries >= min_binaries, "only {binaries} kernels compiled");
}

#[test]
fn compiled_kernels_match_the_interpreter() {
    let tiled = small_tiles();
    let mut setups = Vec::new();
    for scheduler in all_schedulers() {
        let name = scheduler.name();
        let exact = |label: &str, transforms: TransformOptions| Setup {
            label: format!("{name} / {label}"),
            schedulers: vec![name],
            options: Options::default(),
            transforms,
            float: FloatMode::Exact,
            comparison: Comparison::Exact,
        };
        setups.push(exact("untiled", TransformOptions::default()));
        setups.push(exact(
            "tiled 4, parallel, register-tiled 2 x 24 bytes",
            tiled.clone(),
        ));
    }
    // Register blocks within tiles: rectangular blocks, so accumulators and packed panels
    // (gemm, 2mm, 3mm, batched-matmul), partial at the sizes 5 and 13.
    setups.push(Setup {
        label: "pluto / tiled 8, parallel, register-tiled 2 x 32 bytes, packed panels".into(),
        schedulers: vec!["pluto"],
        options: Options::default(),
        transforms: TransformOptions {
            tile: Some(vec![NonZeroU32::new(8).unwrap(); 8]),
            parallel: true,
            register: Some(RegisterBlocks::uniform(RegisterBlock {
                rows: 2,
                bytes: 32,
            })),
            ..TransformOptions::default()
        },
        float: FloatMode::Exact,
        comparison: Comparison::Exact,
    });
    let suite = Suite {
        files: every_scheduler_files(),
        setups,
        params: equal_small_values,
        // The interpreter runs unoptimised in debug builds.
        max_instances: 300_000,
        only_reductions: false,
    };
    assert_suite("codegen differential", suite, 100);
}

#[test]
fn reordered_reductions_match_within_tolerance() {
    let transforms = small_tiles();
    // The identity scheduler keeps the original order, reductions or not.
    let setups = all_schedulers()
        .iter()
        .filter(|s| s.name() != "identity")
        .map(|s| Setup {
            label: format!(
                "{} / --reorder-reductions, FMA, tiled 4, parallel, register-tiled 2 x 24 bytes",
                s.name()
            ),
            schedulers: vec![s.name()],
            options: Options {
                reorder_reductions: true,
                ..Options::default()
            },
            transforms: transforms.clone(),
            float: FloatMode::Fma,
            comparison: Comparison::Tolerant,
        })
        .collect();
    let suite = Suite {
        files: every_scheduler_files(),
        setups,
        params: equal_small_values,
        max_instances: 300_000,
        only_reductions: true,
    };
    assert_suite("reordered reductions", suite, 15);
}

/// The machine of the default-pipeline setup: AVX2 and two cores, so that the register-block
/// model splits rows between two tiles.
const AVX2_PAIR: Machine = Machine {
    cores: 2,
    ..Machine::FALLBACK
};

#[test]
fn polybench_default_pipeline_matches_bit_for_bit() {
    let setup = Setup {
        label: "default pipeline".into(),
        schedulers: vec!["pluto", "isl"],
        options: Options::default(),
        transforms: TransformOptions {
            tile: Some(Vec::new()),
            parallel: true,
            machine: AVX2_PAIR,
            register: Some(RegisterBlocks::for_machine(&AVX2_PAIR)),
            ..TransformOptions::default()
        },
        float: FloatMode::Exact,
        comparison: Comparison::Exact,
    };
    let suite = Suite {
        files: examples("polybench"),
        setups: vec![setup],
        params: distinct_primes,
        max_instances: 1_000_000,
        only_reductions: false,
    };
    assert_suite("polybench default pipeline", suite, 30);
}

/// Checks the kernels of every other file of `suite` from the `worker`-th: the failures,
/// the binaries built and the runs compared.
fn check_files(suite: &Suite, worker: usize, compiler: &CCompiler) -> (Vec<String>, usize, usize) {
    let work = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let (mut binaries, mut runs) = (0, 0);
    for path in suite.files.iter().skip(worker).step_by(2) {
        for kernel in kernels(path) {
            let ctx = Ctx::default();
            let program = Program::build(&ctx, &kernel, &BTreeMap::new()).unwrap();
            let deps = Dependences::compute(&program).unwrap();
            if suite.only_reductions && deps.reduction.is_empty().unwrap() {
                continue;
            }
            for setup in &suite.setups {
                let label = format!("{} / {}", kernel.name, setup.label);
                let mut scheduled = Err(String::from("no scheduler"));
                for name in &setup.schedulers {
                    let _analysis = ctx.analysis();
                    let problem = Problem {
                        program: &program,
                        deps: &deps,
                        options: setup.options.clone(),
                    };
                    let scheduler = scheduler_named(name).unwrap();
                    scheduled = optimize(&problem, scheduler.as_ref(), &setup.transforms, &[])
                        .map_err(|e| format!("{name}: {e}"));
                    if scheduled.is_ok() {
                        break;
                    }
                }
                let scheduled = match scheduled {
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
                let compiler = compiler.clone().with_float(setup.float);
                let exe = match compiler.build(&code, work.path(), &format!("k{binaries}")) {
                    Ok(exe) => exe,
                    Err(e) => {
                        failures.push(format!("{label}: {e}"));
                        continue;
                    }
                };
                binaries += 1;
                runs += check_binary(&exe, &kernel, suite, setup, &label, &mut failures);
            }
        }
    }
    (failures, binaries, runs)
}
