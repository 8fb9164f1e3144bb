//! `polyc run`: execute a kernel with the reference interpreter and print checksums.

use super::input::KernelArgs;
use crate::error::CliError;
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
}

/// Runs `polyc run`: prints the resolved parameters, one checksum line per output array,
/// and the number of statement instances executed with the time taken.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let kernel = args.kernel.load_kernel()?;
    let inputs = match &args.inputs {
        Some(dir) => InputFiles::read_dir(&kernel, dir).map_err(user)?,
        None => InputFiles::default(),
    };
    let params =
        ParamValues::resolve(&kernel, &args.kernel.defines(), &inputs.shapes()).map_err(user)?;
    let mut memory = Memory::load_inputs(&kernel, &params, &inputs, args.seed).map_err(user)?;
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

fn is_output(kernel: &frontend::ir::Kernel, name: &str) -> bool {
    kernel
        .array_by_name(name)
        .is_some_and(|a| kernel.array(a).role.is_output())
}

fn user(err: InterpError) -> CliError {
    CliError::User(err.to_string())
}
