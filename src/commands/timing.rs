//! Timing a kernel's C under one schedule (`polyc compare --run` and studies): built as
//! `polyc bench` builds its variant (c), `gcc -O3 -march=native -fopenmp` with the exact
//! floating-point flags, run once to warm up and to read the output checksums, then `runs`
//! times. A kernel whose warm-up run took less than [`super::bench::MIN_TIMED_SECONDS`]
//! repeats itself within each run (the harness's `--repeat`) as `polyc bench` does, and a
//! run's time is the mean of its repetitions.

use super::bench::{internal, repeats_for, run_once};
use super::input::defines;
use crate::error::CliError;
use codegen::runner;
use codegen::toolchain::CCompiler;
use codegen::CodegenOptions;
use poly::interp::ParamValues;
use poly::isl::Schedule;
use poly::model::Program;
use scheduler::optimizer::{optimize, Optimized};
use scheduler::transform::TransformOptions;
use scheduler::{Problem, Scheduler};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The compiler and flags timed schedules are built with.
pub fn compiler() -> CCompiler {
    CCompiler::new("gcc", &["-O3", "-march=native", "-fopenmp"])
}

/// The kernel times of one schedule's runs.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Timing {
    /// The median run, in milliseconds.
    pub median_ms: f64,
    /// The fastest run, in milliseconds.
    pub min_ms: f64,
    /// The slowest run, in milliseconds.
    pub max_ms: f64,
    /// Every run, in milliseconds, in the order they ran.
    pub runs_ms: Vec<f64>,
    /// How many times the kernel ran within each run (its time is their mean).
    pub repetitions: usize,
    /// The parameter values it ran with.
    pub params: BTreeMap<String, i64>,
    /// The output checksums of the warm-up run, one line per output array.
    pub checksums: Vec<String>,
    /// The compiler command (`gcc -O3 ...`).
    pub compiler: String,
}

impl Timing {
    /// The timing of `runs` (their times, in seconds).
    fn of(
        runs: Vec<f64>,
        repetitions: usize,
        params: &ParamValues,
        checksums: &str,
        compiler: &CCompiler,
    ) -> Timing {
        let ms: Vec<f64> = runs.iter().map(|s| s * 1000.0).collect();
        let mut sorted = ms.clone();
        sorted.sort_by(f64::total_cmp);
        Timing {
            median_ms: sorted[sorted.len() / 2],
            min_ms: sorted[0],
            max_ms: sorted[sorted.len() - 1],
            runs_ms: ms,
            repetitions,
            params: params.iter().map(|(n, v)| (n.to_string(), v)).collect(),
            checksums: checksums.lines().map(str::to_owned).collect(),
            compiler: compiler.describe(),
        }
    }
}

/// Optimizes `problem` with `scheduler` alone (no fallback) as `polyc compile` would, then
/// builds and times the result as [`time_schedule`] does (named after the kernel and the
/// scheduler).
pub fn optimize_and_time(
    problem: &Problem,
    scheduler: &dyn Scheduler,
    transforms: &TransformOptions,
    codegen: &CodegenOptions,
    define: &[(String, i64)],
    runs: u32,
    dir: &Path,
) -> Result<(Optimized, Timing), CliError> {
    let optimized = optimize(problem, scheduler, transforms, &[])?;
    let program = problem.program;
    let name = format!("{}-{}", program.kernel.name, scheduler.name());
    let timing = time_schedule(
        program,
        &optimized.schedule,
        codegen,
        define,
        runs,
        dir,
        &name,
    )?;
    Ok((optimized, timing))
}

/// Builds `program` under `schedule` in `dir` (as `NAME`) and times it `runs` times (at
/// least once) with the parameters `define` fixes (the others at their defaults).
pub fn time_schedule(
    program: &Program,
    schedule: &Schedule,
    codegen: &CodegenOptions,
    define: &[(String, i64)],
    runs: u32,
    dir: &Path,
    name: &str,
) -> Result<Timing, CliError> {
    let code = codegen::generate(program, schedule, codegen)?;
    let compiler = compiler();
    let exe = compiler.build(&code, dir, name).map_err(internal)?;
    let params = ParamValues::resolve(&program.kernel, &defines(define), &BTreeMap::new())
        .map_err(|e| CliError::User(e.to_string()))?;
    let mut args = runner::harness_args(&params, None, None);
    let warm_up = run_once(&exe, &args).map_err(CliError::User)?;
    let repetitions = repeats_for(warm_up.times().iter().sum());
    if repetitions > 1 {
        args.extend(["--repeat".to_string(), repetitions.to_string()]);
    }
    let times = (0..runs.max(1))
        .map(|_| {
            let out = run_once(&exe, &args).map_err(CliError::User)?;
            let times = out.times();
            Ok(times.iter().sum::<f64>() / times.len().max(1) as f64)
        })
        .collect::<Result<Vec<f64>, CliError>>()?;
    Ok(Timing::of(
        times,
        repetitions,
        &params,
        &warm_up.stdout,
        &compiler,
    ))
}
