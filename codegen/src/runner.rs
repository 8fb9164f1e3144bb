//! Running a compiled harness on the interpreter's inputs and reading its outputs back, so
//! that the C back end and `poly::interp` can be compared value by value.

use crate::toolchain::{self, CCompiler, RunOutput, ToolchainError};
use frontend::ir::{Kernel, Role};
use poly::interp::{InputFiles, InterpError, Memory, ParamValues};
use std::path::Path;

/// Writes every input and in-out array of `memory` to `dir/NAME.npy`.
pub fn write_inputs(memory: &Memory, dir: &Path) -> Result<(), InterpError> {
    let mut inputs = memory.clone();
    let names: Vec<String> = memory.arrays().iter().map(|a| a.name.clone()).collect();
    for name in names {
        if let Some(a) = inputs.array_mut(&name) {
            // `save_outputs` writes the arrays the caller receives: make those the inputs.
            a.role = if a.role.is_input() {
                Role::InOut
            } else {
                Role::Temp
            };
        }
    }
    inputs.save_outputs(dir)
}

/// The outputs a harness wrote to `dir` (other arrays zero), as a memory comparable with
/// the interpreter's.
pub fn read_outputs(
    kernel: &Kernel,
    params: &ParamValues,
    dir: &Path,
) -> Result<Memory, InterpError> {
    let mut outputs = kernel.clone();
    for a in &mut outputs.arrays {
        a.role = if a.role.is_output() {
            Role::InOut
        } else {
            Role::Temp
        };
    }
    let files = InputFiles::read_dir(&outputs, dir)?;
    Memory::load_inputs(&outputs, params, &files, 0)
}

/// The harness's arguments for `params`, reading inputs from `inputs` and writing outputs
/// to `outputs`.
pub fn harness_args(params: &ParamValues, inputs: &Path, outputs: Option<&Path>) -> Vec<String> {
    let mut args: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
    args.push("--in".into());
    args.push(inputs.display().to_string());
    if let Some(out) = outputs {
        args.push("--out".into());
        args.push(out.display().to_string());
    }
    args
}

/// Runs a compiled harness on `memory`'s inputs (written to `scratch/in`).
pub fn run_on(
    exe: &Path,
    memory: &Memory,
    params: &ParamValues,
    scratch: &Path,
    outputs: Option<&Path>,
) -> Result<RunOutput, RunError> {
    let inputs = scratch.join("in");
    write_inputs(memory, &inputs)?;
    Ok(toolchain::run(
        exe,
        &harness_args(params, &inputs, outputs),
    )?)
}

/// Compiles `code` (a file with a harness) with `compiler` in a temporary directory and runs
/// it on `memory`'s inputs.
pub fn compile_and_run(
    compiler: &CCompiler,
    code: &str,
    memory: &Memory,
    params: &ParamValues,
    outputs: Option<&Path>,
) -> Result<RunOutput, RunError> {
    let dir = tempfile::tempdir().map_err(ToolchainError::Io)?;
    let exe = compiler.build(code, dir.path(), "kernel")?;
    run_on(&exe, memory, params, dir.path(), outputs)
}

/// Why a run failed before the program could report anything.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Writing or reading `.npy` files.
    #[error(transparent)]
    Files(#[from] InterpError),
    /// Starting the program.
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
}
