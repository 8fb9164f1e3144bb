//! `polyc run`: execute a kernel with the reference interpreter and print checksums.

use super::compile::{self, CodegenArgs};
use super::input::{defines, KernelArgs};
use super::pipeline::{PipelineArgs, DEFAULT_SCHEDULER};
use super::schedule::ScheduleOptions;
use crate::error::CliError;
use codegen::runner;
use codegen::toolchain::CCompiler;
use poly::interp::{InputFiles, InterpError, Interpreter, Memory, ParamValues};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `polyc run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// Seed of the random values given to inputs not read from `--inputs`.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Directory holding inputs as `NAME.npy` (arrays not found there get seeded random values).
    #[arg(long, value_name = "DIR")]
    inputs: Option<PathBuf>,
    /// Directory to write every output and in-out array to, as `NAME.npy`.
    #[arg(long, value_name = "DIR")]
    outputs: Option<PathBuf>,
    /// Where to execute: the reference interpreter, or C compiled by the CPU back end.
    #[arg(long, value_enum, default_value = "interp")]
    target: RunTarget,
    /// The scheduling algorithm for `--target cpu`: pluto (the default everywhere),
    /// feautrier, isl or identity (the original order). `pluto` falls back to `isl`, and any to the original order,
    /// when it fails.
    #[arg(long, default_value = DEFAULT_SCHEDULER)]
    pub(super) scheduler: String,
    /// With `--target cpu`: run this schedule (an isl schedule tree or a union map, checked
    /// as `polyc verify` checks it; illegal or malformed: exit 1) instead of a scheduler's,
    /// kept as written (tiled only with `--tile`, made parallel only with `--parallel`).
    #[arg(long, value_name = "FILE")]
    schedule: Option<PathBuf>,
    /// The transformations of `--target cpu`.
    #[command(flatten)]
    pub(super) pipeline: PipelineArgs,
    #[command(flatten)]
    pub(super) codegen: CodegenArgs,
    /// The machine: with `--target npu`, an NPU preset or TOML file (default `ascend-like`);
    /// with `--target cpu`, a CPU machine file to size tiles for (default: this host's
    /// caches; see `docs/studies.md`).
    #[arg(long, value_name = "MACHINE")]
    machine: Option<String>,
    /// Let `--target npu` reorder floating-point sums (the matrix unit does).
    #[arg(long)]
    reorder_reductions: bool,
    /// With `--target npu`: print the simulator's full report (pipes, paths, buffers,
    /// roofline) on standard error.
    #[arg(long)]
    report: bool,
    /// With `--target npu`: write the simulated timeline in Chrome trace-event JSON (opens in
    /// Perfetto), also when the run stops on a race or a fault.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// With `--target npu`: do not run the interpreter to check the simulated outputs (by
    /// default every output must match it within its element type's tolerance, or the run
    /// fails with exit 2).
    #[arg(long)]
    no_check: bool,
}

/// Where `polyc run` executes the kernel.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunTarget {
    /// The reference interpreter.
    Interp,
    /// C from the CPU back end, built with `cc -O2 -fopenmp`.
    Cpu,
    /// A program from the NPU back end, run by the simulator (`--machine`).
    Npu,
}

impl RunArgs {
    /// The scheduling options of `--target cpu`.
    pub(super) fn schedule_options(&self) -> ScheduleOptions {
        ScheduleOptions {
            pipeline: self.pipeline.clone(),
            given: self.schedule.clone(),
            machine: self.machine.clone(),
            c: self.kernel.c.clone(),
            ..ScheduleOptions::default()
        }
    }
}

/// Runs `polyc run`: prints the resolved parameters, one checksum line per output array,
/// and the number of statement instances executed with the time taken.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    if args.target != RunTarget::Cpu {
        super::schedule_file::cpu_only(
            args.schedule.is_some(),
            "the interpreter or the NPU (they run the original order or their own)",
        )?;
    }
    if args.target != RunTarget::Npu && (args.report || args.trace.is_some() || args.no_check) {
        return Err(CliError::User(
            "`--report`, `--trace` and `--no-check` are the simulator's: they apply to `--target npu`"
                .into(),
        ));
    }
    let kernel = args.kernel.load_kernel()?;
    let inputs = match &args.inputs {
        Some(dir) => InputFiles::read_dir(&kernel, dir).map_err(user)?,
        None => InputFiles::default(),
    };
    let params = ParamValues::resolve(&kernel, &defines(&args.kernel.define), &inputs.shapes())
        .map_err(user)?;
    let mut memory = Memory::load_inputs(&kernel, &params, &inputs, args.seed).map_err(user)?;
    if args.target == RunTarget::Cpu {
        return run_cpu(args, &kernel, &params, &memory);
    }
    if args.target == RunTarget::Npu {
        return run_npu(args, &kernel, &params, &memory);
    }
    let interpreter = Interpreter::new(&kernel, &params).map_err(user)?;
    let start = Instant::now();
    interpreter.run_original(&mut memory).map_err(user)?;
    let elapsed = start.elapsed();
    print_outputs(&kernel, &params, &memory);
    eprintln!(
        "{} statement instances in {:.3} s",
        interpreter.instance_count(),
        elapsed.as_secs_f64()
    );
    if let Some(dir) = &args.outputs {
        memory.save_outputs(dir).map_err(user)?;
    }
    Ok(())
}

/// Builds the kernel's C with a harness in a temporary directory, runs it on `memory`'s
/// inputs and passes its output through.
fn run_cpu(
    args: &RunArgs,
    kernel: &frontend::ir::Kernel,
    params: &ParamValues,
    memory: &Memory,
) -> Result<(), CliError> {
    let code = compile::generate(&compile::Compilation {
        file: &args.kernel.file,
        kernel: Some(&kernel.name),
        scheduler: &args.scheduler,
        schedule: &args.schedule_options(),
        register: args.codegen.register(),
        passes: &[],
        codegen: args.codegen.options(true),
    })?;
    let out = runner::compile_and_run(
        &CCompiler::system("-O2"),
        &code,
        memory,
        params,
        args.outputs.as_deref(),
    )
    .map_err(|e| CliError::Internal(e.to_string()))?;
    print!("{}", out.stdout);
    if !out.success {
        return Err(CliError::User(out.stderr.trim().to_owned()));
    }
    let times = out.times();
    eprintln!("compiled kernel ran in {:.3} s", times.iter().sum::<f64>());
    Ok(())
}

/// Compiles the kernel for the NPU, simulates it on `memory`'s inputs and prints the same
/// lines as the interpreter, with the cycles on standard error.
fn run_npu(
    args: &RunArgs,
    kernel: &frontend::ir::Kernel,
    params: &ParamValues,
    memory: &Memory,
) -> Result<(), CliError> {
    let machine = compile::npu_machine(args.machine.as_deref())?;
    let sizes = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let npu = |e: codegen::npu::NpuError| match e {
        codegen::npu::NpuError::Internal(_) => CliError::Internal(e.to_string()),
        _ => CliError::User(e.to_string()),
    };
    let compiled =
        codegen::npu::compile(kernel, &sizes, &machine, args.reorder_reductions).map_err(npu)?;
    if let Some(path) = &args.trace {
        // timed on its own, so that a run that stops still leaves its timeline
        let inputs = codegen::npu::inputs(kernel, memory).map_err(npu)?;
        let strict = npu_sim::Semantics::Strict;
        let timed = match npu_sim::run_timed(&compiled.program, &machine, &inputs, 0, strict) {
            Ok(run) => Some((run.insts, run.timeline)),
            Err(stopped) => stopped.timed,
        };
        if let Some((insts, timeline)) = timed {
            let source = npu_sim::print(&compiled.program);
            super::sim::write_trace(path, &insts, &timeline, &source)?;
        }
    }
    let run = codegen::npu::simulate(&compiled, kernel, memory, &machine).map_err(npu)?;
    print_outputs(kernel, params, &run.memory);
    eprintln!("simulated: {}", run.summary);
    if args.report {
        eprint!("{}", run.report);
    }
    match args.no_check {
        true => eprintln!("not checked against the interpreter (--no-check)"),
        false => eprintln!(
            "{}",
            checked(kernel, params, memory, &run.memory, compiled.plan.exact())?
        ),
    }
    if let Some(dir) = &args.outputs {
        run.memory.save_outputs(dir).map_err(user)?;
    }
    Ok(())
}

/// Runs the interpreter on `inputs` (the simulator's inputs) and compares every output with
/// the simulated ones (`got`): bit for bit when the program keeps the kernel's order
/// (`exact`), else within its element type's tolerance ([`runner::tolerance`]: the NPU
/// reorders sums), or no further than the interpreter from the exact result
/// ([`runner::judged`]): the line to print, or the disagreements as polyc's own error.
fn checked(
    kernel: &frontend::ir::Kernel,
    params: &ParamValues,
    inputs: &Memory,
    got: &Memory,
    exact: bool,
) -> Result<String, CliError> {
    let expected = runner::interpreted(kernel, params, inputs).map_err(user)?;
    let wrong = match exact {
        true => runner::disagreements(kernel, &expected, got, runner::Comparison::Exact),
        false => runner::judged(kernel, params, inputs, &expected, got),
    }
    .map_err(|e| CliError::Internal(e.to_string()))?;
    if wrong.is_empty() && exact {
        return Ok(
            "checked against the interpreter: every output bit for bit (the program keeps the kernel's order)"
                .into(),
        );
    }
    if wrong.is_empty() {
        let outputs: Vec<String> = (kernel.arrays.iter())
            .filter(|a| a.role.is_output())
            .map(|a| match runner::tolerance(a.elem) {
                0.0 => format!("`{}` exactly", a.name),
                t => format!("`{}` within {t:e}", a.name),
            })
            .collect();
        return Ok(format!(
            "checked against the interpreter: {} (normwise; the NPU reorders sums, and an output \
             beyond that passes when it is no further from the f64 result than the interpreter's)",
            outputs.join(", ")
        ));
    }
    let list: Vec<String> = wrong.iter().map(|d| d.to_string()).collect();
    Err(CliError::Internal(format!(
        "the simulated outputs differ from the interpreter's: {}",
        list.join("; ")
    )))
}

/// The kernel line and one checksum line per output.
fn print_outputs(kernel: &frontend::ir::Kernel, params: &ParamValues, memory: &Memory) {
    let values: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
    println!("kernel {} ({})", kernel.name, values.join(", "));
    for c in memory
        .checksums()
        .iter()
        .filter(|c| is_output(kernel, &c.name))
    {
        println!("{c}");
    }
}

fn is_output(kernel: &frontend::ir::Kernel, name: &str) -> bool {
    kernel
        .array_by_name(name)
        .is_some_and(|a| kernel.array(a).role.is_output())
}

fn user(err: InterpError) -> CliError {
    CliError::User(err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontend::SourceFile;
    use std::collections::BTreeMap;

    /// The check passes the interpreter's own outputs, a difference within the tolerance
    /// (unless the program keeps the kernel's order), and refuses one beyond it, naming the
    /// array.
    #[test]
    fn the_npu_check_refuses_outputs_beyond_the_tolerance() {
        let text = "kernel k(A: f32[N]) -> (B: f32[N])\n  params N = 8\n{\n  for i in 0..N { B[i] = A[i] * 2.0; }\n}\n";
        let kernel = frontend::compile(&SourceFile::new("k.pk", text))
            .unwrap()
            .remove(0);
        let params = ParamValues::resolve(&kernel, &BTreeMap::new(), &BTreeMap::new()).unwrap();
        let inputs = Memory::random(&kernel, &params, 1).unwrap();
        let mut got = inputs.clone();
        let interpreter = Interpreter::new(&kernel, &params).unwrap();
        interpreter.run_original(&mut got).unwrap();
        assert!(checked(&kernel, &params, &inputs, &got, false).is_ok());
        assert!(checked(&kernel, &params, &inputs, &got, true).is_ok());
        let mut values = got.array("B").unwrap().values().to_vec();
        let scale = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mut nudged = |by: f64| {
            values[3] += scale * by;
            got.array_mut("B").unwrap().set_values(&values).unwrap();
            got.clone()
        };
        let close = nudged(1e-4);
        assert!(checked(&kernel, &params, &inputs, &close, false).is_ok());
        // a program that keeps the kernel's order is held to every bit
        match checked(&kernel, &params, &inputs, &close, true) {
            Err(CliError::Internal(why)) => assert!(why.contains("`B` differs"), "{why}"),
            other => panic!("{other:?}"),
        }
        let got = nudged(1e-2);
        match checked(&kernel, &params, &inputs, &got, false) {
            Err(CliError::Internal(why)) => assert!(why.contains("`B` differs"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
