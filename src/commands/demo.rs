//! `polyc demo`: the whole pipeline on an embedded example, as `make run` shows it.

use super::input::{isl_error, model_error};
use crate::error::CliError;
use frontend::SourceFile;
use poly::deps::Dependences;
use poly::interp::{InputFiles, Interpreter, Memory, ParamValues};
use poly::isl::Ctx;
use poly::model::Program;
use std::collections::BTreeMap;

/// The embedded default example: PolyBench's gemm.
const GEMM: &str = include_str!("../../examples/gemm.pk");

/// Arguments of `polyc demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Size used for every parameter of the example.
    #[arg(long, default_value_t = 64)]
    size: i64,
}

/// Runs `polyc demo`: check, lift, dependences, and execution of the embedded gemm.
pub fn run(args: &DemoArgs) -> Result<(), CliError> {
    let file = SourceFile::new("examples/gemm.pk (embedded)", GEMM);
    let kernel = frontend::compile(&file)
        .map_err(|d| CliError::Internal(d.render(&file, false)))?
        .remove(0);
    println!(
        "== kernel `{}`: {} statements",
        kernel.name,
        kernel.statements().len()
    );
    let fixed: BTreeMap<String, i64> = kernel
        .params
        .iter()
        .map(|p| (p.name.clone(), args.size))
        .collect();
    let program = Program::build(&Ctx::default(), &kernel, &fixed).map_err(model_error)?;
    for s in &program.statements {
        println!("   {}: {}", s.name, s.domain);
    }
    let deps = Dependences::compute(&program).map_err(isl_error)?;
    println!("== dependences");
    for s in deps.summaries(&program).map_err(isl_error)? {
        println!("   {s}");
    }
    println!("== original schedule\n   {}", program.schedule);
    let params = ParamValues::resolve(&kernel, &fixed, &BTreeMap::new())
        .map_err(|e| CliError::User(e.to_string()))?;
    let mut memory = Memory::load_inputs(&kernel, &params, &InputFiles::default(), 0)
        .map_err(|e| CliError::User(e.to_string()))?;
    let interpreter =
        Interpreter::new(&kernel, &params).map_err(|e| CliError::User(e.to_string()))?;
    interpreter
        .run_original(&mut memory)
        .map_err(|e| CliError::User(e.to_string()))?;
    println!(
        "== reference run ({} instances)",
        interpreter.instance_count()
    );
    for c in memory.checksums() {
        println!("   {c}");
    }
    Ok(())
}
