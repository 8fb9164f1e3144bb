//! `polyc bench`: time a kernel three ways, alternating runs: (a) the original loop order as
//! C with `gcc -O3 -march=native`, (b) the same C through Polly (`clang-16`), (c) polyc's
//! schedule with `gcc -O3 -march=native -fopenmp`; with `--openblas`, gemm also through
//! OpenBLAS's `cblas_dgemm` (d). Before anything is timed, every variant's outputs are
//! compared with (a)'s: bit for bit by default, where every build keeps the exact-arithmetic
//! flags of [`toolchain::EXACT_FLAGS`] (no FMA contraction), and within the tolerance of
//! [`Comparison::Tolerant`] for OpenBLAS and, with `--fma`, for every variant, all built
//! with FMA contraction ([`FloatMode::Fma`]) alike. A variant that fails to build or run is
//! reported and left out; one whose outputs disagree stops the benchmark. OpenMP's settings
//! (`OMP_NUM_THREADS`, `OMP_WAIT_POLICY`, ...) are the caller's environment, as a user's
//! own runs would have them.
//!
//! A kernel whose original runs for less than [`MIN_TIMED_SECONDS`] is timed over several
//! repetitions in each run (the harness's `--repeat`, every repetition from the same inputs),
//! the same number for every variant, so that the median of a millisecond kernel does not
//! rest on a handful of samples that the machine's noise alone moves by 10%.
//!
//! A C file (`.c`, PolyBench style) is benchmarked as it is, by `bench_c`.

use super::bench_c;
use super::compile::{self, CodegenArgs};
use super::format::Format;
use super::input::{defines, is_c_file, lift_one, parse_define, CArgs};
use super::pipeline::{PipelineArgs, DEFAULT_SCHEDULER};
use super::progress::Progress;
use super::report::Report;
use super::schedule::ScheduleOptions;
use crate::error::CliError;
use codegen::npu::conv::Offer;
use codegen::runner::{self, Comparison};
use codegen::toolchain::{self, CCompiler, FloatMode, RunOutput};
use poly::interp::ParamValues;
use poly::model::Program;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Arguments of `polyc bench`.
#[derive(clap::Args, Serialize, Debug)]
pub struct BenchArgs {
    /// Kernel files (`.pk`), one kernel each, or C files (`.c`, PolyBench style: see
    /// `docs/c-frontend.md`).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// For kernel files, parameter values passed to every run, e.g. `-D N=2000`; for C
    /// files, macros of the build line, e.g. `-D LARGE_DATASET`.
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    pub define: Vec<String>,
    /// For C files: an include directory of the build line (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<String>,
    /// For C files: another source file of the program, built with each variant (PolyBench's
    /// `utilities/polybench.c`; repeatable).
    #[arg(long, value_name = "FILE")]
    pub link: Vec<String>,
    /// polyc's scheduling algorithm for variant (c): pluto (the default everywhere),
    /// feautrier, isl or identity (the original order). `pluto` falls back to `isl`, and any
    /// to the original order, when it fails.
    #[arg(long, default_value = DEFAULT_SCHEDULER)]
    pub scheduler: String,
    /// Variant (c)'s transformations.
    #[command(flatten)]
    #[serde(flatten)]
    pub pipeline: PipelineArgs,
    /// For kernel files: variant (c) runs this schedule (an isl schedule tree or a union map,
    /// as `polyc verify` reads it, and refused like there when illegal) instead of a
    /// scheduler's, kept as written (tiled only with `--tile`, made parallel only with
    /// `--parallel`).
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<PathBuf>,
    /// For kernel files: another polyc variant, built and timed beside (c) in the same
    /// rounds, with its own `--scheduler`, `--schedule` and pipeline flags written as one
    /// argument, e.g. `--also=--diamond` or `--also '--scheduler isl --no-tile'` (split at
    /// white space; repeatable).
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub also: Vec<String>,
    /// How many timed rounds (each runs every variant once).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Also time gemm kernels through OpenBLAS's `cblas_dgemm` (`-lopenblas`).
    #[arg(long)]
    pub openblas: bool,
    /// Build every variant with FMA contraction (`-ffp-contract=fast`, as optimised
    /// libraries compute) and compare outputs with the original's within a normwise relative
    /// tolerance (f64: 1e-9) instead of bit for bit.
    #[arg(long)]
    pub fma: bool,
    /// The back end: `npu` compiles the kernel for the simulated NPU and compares the back
    /// end's candidate programs in the simulator instead of timing C.
    #[arg(long, value_enum, default_value = "cpu")]
    pub target: compile::Target,
    /// The machine: with `--target npu`, an NPU preset or TOML file (default
    /// `ascend-like`); with `--target cpu`, a CPU machine file variant (c)'s tiles are sized
    /// for (default: this host's caches; see `docs/studies.md`).
    #[arg(long, value_name = "MACHINE")]
    pub machine: Option<String>,
    /// With `--target npu`: let the matrix and vector units sum in their own order.
    #[arg(long)]
    pub reorder_reductions: bool,
    /// With `--target npu`: how many of the back end's candidate programs to simulate.
    #[arg(long, default_value_t = 6)]
    pub candidates: usize,
    /// With `--target npu`: offer every variant of a convolution's cheapest tilings (how the
    /// first tile, the band and the weights stream) as a candidate of its own, not only the
    /// model's choice for each tiling.
    #[arg(long)]
    pub variants: bool,
    /// How the results are printed (`--format` is another name for it): a table; for
    /// kernel files, a JSON report (`docs/studies.md`) with every variant's times; with
    /// `--target npu`, also CSV (a line per candidate).
    #[arg(long = "emit", alias = "format", value_enum, default_value = "table")]
    pub emit: Format,
    #[command(flatten)]
    #[serde(flatten)]
    pub codegen: CodegenArgs,
}

/// The flags a user gives clang-16 for Polly with its parallel code generation.
pub const POLLY_FLAGS: &[&str] = &[
    "-O3",
    "-march=native",
    "-mllvm",
    "-polly",
    "-mllvm",
    "-polly-parallel",
    "-fopenmp",
];

/// Each variant runs for at least about this long a round (see the module documentation).
pub const MIN_TIMED_SECONDS: f64 = 0.25;

/// At most this many repetitions a run.
const MAX_REPEATS: usize = 64;

/// How many repetitions a run gives a kernel whose original took `seconds` once.
pub(super) fn repeats_for(seconds: f64) -> usize {
    if seconds <= 0.0 || !seconds.is_finite() {
        return MAX_REPEATS;
    }
    ((MIN_TIMED_SECONDS / seconds).ceil() as usize).clamp(1, MAX_REPEATS)
}

/// The flags of an `--also` variant.
#[derive(clap::Parser, Debug)]
#[command(no_binary_name = true)]
struct AlsoArgs {
    /// The scheduling algorithm.
    #[arg(long, default_value = DEFAULT_SCHEDULER)]
    scheduler: String,
    /// A schedule to run instead of a scheduler's.
    #[arg(long, value_name = "FILE")]
    schedule: Option<PathBuf>,
    /// The transformations.
    #[command(flatten)]
    pipeline: PipelineArgs,
}

impl AlsoArgs {
    /// Reads the flags of `--also FLAGS`.
    fn parse(flags: &str) -> Result<AlsoArgs, CliError> {
        <AlsoArgs as clap::Parser>::try_parse_from(flags.split_whitespace())
            .map_err(|e| CliError::User(format!("`--also {flags}`: {}", e.render())))
    }
}

/// One way of running the kernel.
struct Variant {
    name: String,
    compiler: CCompiler,
    /// How its outputs must agree with the original's.
    comparison: Comparison,
    exe: PathBuf,
    times: Vec<f64>,
}

impl BenchArgs {
    /// The scheduling options of variant (c) (for a kernel file or a C file).
    pub fn schedule_options(&self) -> ScheduleOptions {
        ScheduleOptions {
            pipeline: self.pipeline.clone(),
            given: self.schedule.clone(),
            machine: self.machine.clone(),
            ..ScheduleOptions::default()
        }
    }
}

pub(super) fn internal(e: impl std::fmt::Display) -> CliError {
    CliError::Internal(e.to_string())
}

pub(super) fn run_once(exe: &Path, args: &[String]) -> Result<RunOutput, String> {
    let out = toolchain::run(exe, args).map_err(|e| e.to_string())?;
    if out.success {
        Ok(out)
    } else {
        Err(format!("failed: {}", out.stderr.trim()))
    }
}

pub(super) fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// gemm (`C := alpha * A * B + beta * C`, as in `examples/polybench/gemm.pk`) through
/// `cblas_dgemm`, with polyc's harness; `None` for any other kernel.
fn openblas_gemm(program: &Program) -> Result<Option<String>, CliError> {
    let kernel = &program.kernel;
    let arrays: Vec<&str> = kernel.arrays.iter().map(|a| a.name.as_str()).collect();
    let params: Vec<&str> = kernel.params.iter().map(|p| p.name.as_str()).collect();
    if kernel.name != "gemm"
        || arrays != ["alpha", "beta", "C", "A", "B"]
        || params != ["NI", "NJ", "NK"]
        || kernel
            .arrays
            .iter()
            .any(|a| a.elem != frontend::ir::ElemType::F64)
    {
        return Ok(None);
    }
    let harness = codegen::harness::harness(program)?;
    Ok(Some(format!(
        "{}\n#include <cblas.h>\n{}\n{{\n    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, \
         NI, NJ, NK, alpha, A, NK, B, NJ, beta, C, NJ);\n    return 0;\n}}\n{harness}",
        codegen::c::RUNTIME,
        codegen::c::signature(kernel),
    )))
}

/// Runs `polyc bench`.
pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    if args.target == compile::Target::Npu {
        super::schedule_file::cpu_only(
            args.schedule.is_some(),
            "the NPU back end (it fixes its own loop order)",
        )?;
        let fixed = (args.define.iter())
            .map(|d| parse_define(d).map_err(CliError::User))
            .collect::<Result<Vec<_>, _>>()?;
        return super::bench_npu::run(&super::bench_npu::NpuBench {
            files: &args.files,
            define: &fixed,
            machine: args.machine.as_deref(),
            reorder: args.reorder_reductions,
            candidates: args.candidates,
            format: args.emit,
            args,
            offer: if args.variants {
                Offer::Variants
            } else {
                Offer::Tilings
            },
        });
    }
    let also = (args.also.iter())
        .map(|flags| AlsoArgs::parse(flags))
        .collect::<Result<Vec<_>, _>>()?;
    if args.emit == Format::Csv {
        return Err(CliError::User(
            "`--emit csv` applies to `--target npu` (the C benchmark prints a table or JSON)"
                .into(),
        ));
    }
    if let Some(c) = args.files.iter().find(|f| is_c_file(f)) {
        if args.emit == Format::Json {
            return Err(CliError::User(format!(
                "{c}: `--emit json` applies to kernel files (`.pk`); C files print a table"
            )));
        }
        if args.schedule.is_some() || !args.also.is_empty() {
            return Err(CliError::User(format!(
                "{c}: `--schedule` and `--also` apply to kernel files (`.pk`), not to C files"
            )));
        }
    }
    let dir = tempfile::tempdir().map_err(internal)?;
    let mut failed = Vec::new();
    let mut worst = 0;
    let mut speedups = bench_c::Speedups::default();
    let mut benched = Vec::new();
    let progress = Progress::new(args.files.len() as u64);
    for file in &args.files {
        progress.start(file.clone());
        let done = if is_c_file(file) {
            bench_c::bench_file(args, file, dir.path()).map(|s| speedups.add(s))
        } else {
            bench_file(args, &also, file, dir.path()).map(|b| match args.emit {
                Format::Json => benched.push(b),
                _ => b.print(),
            })
        };
        if let Err(e) = done {
            progress.note(&format!("error: {file}: {e}"));
            worst = worst.max(e.exit_code());
            failed.push(file.clone());
        }
        progress.done();
    }
    drop(progress);
    speedups.print();
    if args.emit == Format::Json {
        let machine = args.schedule_options().tile_machine()?;
        Report::new("bench", Some(machine), args, &benched).print()?;
    }
    let message = || format!("benchmarking failed for {}", failed.join(", "));
    // The failure is ours only if some kernel failed through our fault.
    match worst {
        0 => Ok(()),
        1 => Err(CliError::User(message())),
        _ => Err(CliError::Internal(message())),
    }
}

/// One kernel file, benchmarked.
#[derive(Serialize, Debug)]
struct Benched {
    /// The file.
    file: String,
    /// The kernel.
    kernel: String,
    /// The parameters fixed with `-D`, as given.
    define: Vec<(String, i64)>,
    /// Whether every variant was built with FMA contraction.
    fma: bool,
    /// How many times the kernel ran within each run.
    repetitions: usize,
    /// The original's output checksums, one line per output (every variant's agreed).
    checksums: Vec<String>,
    /// The variants that ran, the original first.
    variants: Vec<VariantTimes>,
}

/// One variant's times.
#[derive(Serialize, Debug)]
struct VariantTimes {
    /// What it is (`original (gcc -O3)`, ...).
    name: String,
    /// Its compiler command.
    compiler: String,
    /// The median kernel time, in seconds.
    median_s: f64,
    /// The original's median over this one's.
    speedup: f64,
    /// Every timed repetition, in seconds.
    times_s: Vec<f64>,
}

impl Benched {
    /// Prints the benchmark as a table.
    fn print(&self) {
        let mut shown: Vec<String> = (self.define.iter())
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        if self.fma {
            shown.push("FMA contraction".into());
        }
        if self.repetitions > 1 {
            shown.push(format!("{} repetitions a run", self.repetitions));
        }
        println!("{} ({}):", self.file, shown.join(" "));
        for line in &self.checksums {
            println!("  {line}");
        }
        for v in &self.variants {
            println!(
                "  {:<28} median {:>9.4} s  speed-up {:>6.2}x  [{}]",
                v.name, v.median_s, v.speedup, v.compiler
            );
        }
    }
}

/// Benchmarks one kernel file: the original through gcc and Polly, polyc's variant (c),
/// the `also` variants (parsed from `args.also`, in order) and OpenBLAS if asked.
fn bench_file(
    args: &BenchArgs,
    also: &[AlsoArgs],
    file: &str,
    dir: &Path,
) -> Result<Benched, CliError> {
    let original = compile::generate(&compile::Compilation {
        file,
        kernel: None,
        scheduler: "identity",
        schedule: &ScheduleOptions {
            pipeline: PipelineArgs::none(),
            ..ScheduleOptions::default()
        },
        register: None,
        passes: &[],
        codegen: {
            let mut o = args.codegen.options(true);
            o.loops.openmp = false;
            o
        },
    })?;
    let optimized = compile::generate(&compile::Compilation {
        file,
        kernel: None,
        scheduler: &args.scheduler,
        schedule: &args.schedule_options(),
        register: args.codegen.register(),
        passes: &[],
        codegen: args.codegen.options(true),
    })?;
    let program = lift_one(file, None, &[], &CArgs::default())?.program;
    let (float, comparison) = if args.fma {
        (FloatMode::Fma, Comparison::Tolerant)
    } else {
        (FloatMode::Exact, Comparison::Exact)
    };
    let compiler = |program: &str, flags: &[&str]| CCompiler::new(program, flags).with_float(float);
    let gcc = compiler("gcc", &["-O3", "-march=native"]);
    let gcc_omp = compiler("gcc", &["-O3", "-march=native", "-fopenmp"]);
    let polly = compiler("clang-16", POLLY_FLAGS);
    let stem = Path::new(file)
        .file_stem()
        .map_or("kernel".into(), |s| s.to_string_lossy().into_owned());
    let mut candidates = vec![
        (
            "original (gcc -O3)".to_string(),
            gcc.clone(),
            comparison,
            original.clone(),
            "a".to_string(),
        ),
        // Missing clang-16, Polly or libomp: `scripts/setup.sh clang-16 libpolly-16-dev
        // libomp-16-dev` installs them.
        (
            "original (clang-16 Polly)".to_string(),
            polly,
            comparison,
            original,
            "b".to_string(),
        ),
        (
            match args.schedule {
                Some(_) => "given (gcc -O3 -fopenmp)",
                None => "polyc (gcc -O3 -fopenmp)",
            }
            .to_string(),
            gcc_omp.clone(),
            comparison,
            optimized,
            "c".to_string(),
        ),
    ];
    for (k, (flags, also)) in args.also.iter().zip(also).enumerate() {
        let code = compile::generate(&compile::Compilation {
            file,
            kernel: None,
            scheduler: &also.scheduler,
            schedule: &ScheduleOptions {
                pipeline: also.pipeline.clone(),
                given: also.schedule.clone(),
                machine: args.machine.clone(),
                ..ScheduleOptions::default()
            },
            register: args.codegen.register(),
            passes: &[],
            codegen: args.codegen.options(true),
        })?;
        let name = format!("polyc {flags} (gcc -O3 -fopenmp)");
        candidates.push((name, gcc_omp.clone(), comparison, code, format!("also{k}")));
    }
    if args.openblas {
        if let Some(code) = openblas_gemm(&program)? {
            let blas = gcc.with_libs(&["-lopenblas"]);
            candidates.push((
                "OpenBLAS cblas_dgemm".to_string(),
                blas,
                Comparison::Tolerant,
                code,
                "d".to_string(),
            ));
        }
    }
    let mut variants = Vec::new();
    for (name, compiler, comparison, code, tag) in candidates {
        match compiler.build(&code, dir, &format!("{stem}-{tag}")) {
            Ok(exe) => variants.push(Variant {
                name,
                compiler,
                comparison,
                exe,
                times: Vec::new(),
            }),
            Err(e) if tag == "a" => return Err(internal(e)),
            Err(e) => eprintln!("note: {file}: `{name}` is skipped: {e}"),
        }
    }
    let fixed = (args.define.iter())
        .map(|d| parse_define(d).map_err(CliError::User))
        .collect::<Result<Vec<_>, _>>()?;
    let params = ParamValues::resolve(&program.kernel, &defines(&fixed), &Default::default())
        .map_err(|e| CliError::User(e.to_string()))?;
    let (mut variants, reference, seconds) = checked(&program, &params, variants, dir)?;
    let repeats = repeats_for(seconds);
    let mut harness_args = runner::harness_args(&params, None, None);
    if repeats > 1 {
        harness_args.extend(["--repeat".to_string(), repeats.to_string()]);
    }
    for _ in 0..args.rounds.max(1) {
        for v in &mut variants {
            let out = run_once(&v.exe, &harness_args).map_err(CliError::User)?;
            v.times.extend(out.times());
        }
    }
    let base = median(&variants[0].times);
    Ok(Benched {
        file: file.to_owned(),
        kernel: program.kernel.name.clone(),
        define: fixed,
        fma: args.fma,
        repetitions: repeats,
        checksums: reference.lines().map(str::to_owned).collect(),
        variants: (variants.into_iter())
            .map(|v| VariantTimes {
                name: v.name,
                compiler: v.compiler.describe(),
                median_s: median(&v.times),
                speedup: base / median(&v.times),
                times_s: v.times,
            })
            .collect(),
    })
}

/// Runs every variant once, writing its outputs, and keeps those that ran, with the
/// checksums the first (the original, the reference) printed and the kernel time of its
/// run. Outputs that disagree with
/// the reference under a variant's comparison are an error; a variant that fails to run is
/// left out with a note.
fn checked(
    program: &Program,
    params: &ParamValues,
    variants: Vec<Variant>,
    dir: &Path,
) -> Result<(Vec<Variant>, String, f64), CliError> {
    let kernel = &program.kernel;
    let mut reference: Option<(String, poly::interp::Memory, f64)> = None;
    let mut kept = Vec::new();
    for (k, v) in variants.into_iter().enumerate() {
        let out_dir = dir.join(format!("out{k}"));
        let run =
            run_once(&v.exe, &runner::harness_args(params, None, Some(&out_dir))).and_then(|out| {
                let values = runner::read_outputs(kernel, params, &out_dir)
                    .map_err(|e| format!("its outputs cannot be read: {e}"))?;
                Ok((out, values))
            });
        let (out, values) = match run {
            Ok(run) => run,
            // The original must run: it is the reference.
            Err(e) if reference.is_none() => return Err(CliError::User(e)),
            Err(e) => {
                eprintln!("note: `{}` is left out: {e}", v.name);
                continue;
            }
        };
        match &reference {
            None => {
                let seconds = out.times().first().copied().unwrap_or(0.0);
                reference = Some((out.stdout, values, seconds));
            }
            Some((_, expected, _)) => {
                let wrong = runner::disagreements(kernel, expected, &values, v.comparison)
                    .map_err(internal)?;
                if !wrong.is_empty() {
                    let wrong: Vec<String> = wrong.iter().map(ToString::to_string).collect();
                    return Err(CliError::Internal(format!(
                        "the outputs of `{}` disagree with the original's ({:?}): {}",
                        v.name,
                        v.comparison,
                        wrong.join("; ")
                    )));
                }
            }
        }
        kept.push(v);
    }
    let (checksums, _, seconds) =
        reference.ok_or_else(|| internal("no variant to compare with"))?;
    Ok((kept, checksums, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_kernels_are_repeated_up_to_the_minimum_time() {
        assert_eq!(repeats_for(1.0), 1);
        assert_eq!(repeats_for(MIN_TIMED_SECONDS), 1);
        assert_eq!(repeats_for(0.004), 63);
        assert_eq!(repeats_for(0.0001), MAX_REPEATS);
        assert_eq!(repeats_for(0.0), MAX_REPEATS);
    }
}
