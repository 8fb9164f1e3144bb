//! `polyc run`: execute a kernel with the reference interpreter and print checksums.

use super::compile::{self, CodegenArgs};
use super::input::{defines, KernelArgs};
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
    /// The scheduler for `--target cpu`.
    #[arg(long, default_value = "isl")]
    scheduler: String,
    /// Tile sizes for `--target cpu` (as `polyc schedule --tile`).
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "SIZES")]
    tile: Option<String>,
    #[command(flatten)]
    codegen: CodegenArgs,
}

/// Where `polyc run` executes the kernel.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunTarget {
    /// The reference interpreter.
    Interp,
    /// C from the CPU back end, built with `cc -O2 -fopenmp`.
    Cpu,
}

/// Runs `polyc run`: prints the resolved parameters, one checksum line per output array,
/// and the number of statement instances executed with the time taken.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
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
    let interpreter = Interpreter::new(&kernel, &params).map_err(user)?;
    let start = Instant::now();
    interpreter.run_original(&mut memory).map_err(user)?;
    let elapsed = start.elapsed();
    let values: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
    println!("kernel {} ({})", kernel.name, values.join(", "));
    for c in memory
        .checksums()
        .iter()
        .filter(|c| is_output(&kernel, &c.name))
    {
        println!("{c}");
    }
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
    let schedule = ScheduleOptions {
        tile: args.tile.clone(),
        tile2: None,
        fuse: None,
        parallel: false,
        reorder_reductions: false,
        define: Vec::new(),
    };
    let code = compile::generate(&compile::Compilation {
        file: &args.kernel.file,
        kernel: Some(&kernel.name),
        scheduler: &args.scheduler,
        schedule: &schedule,
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

fn is_output(kernel: &frontend::ir::Kernel, name: &str) -> bool {
    kernel
        .array_by_name(name)
        .is_some_and(|a| kernel.array(a).role.is_output())
}

fn user(err: InterpError) -> CliError {
    CliError::User(err.to_string())
}
