//! `polyc verify-mapping`: check a mapping written by a person (the text format of
//! docs/mapping.md) condition by condition; exit 1 with the counterexample if it is wrong.

use super::input::KernelArgs;
use super::mappings::{disagreement, verdict_lines, MappingOptions};
use crate::error::CliError;
use scheduler::mapping::intrinsic::bind;
use scheduler::mapping::software::Software;
use scheduler::mapping::text;

/// Arguments of `polyc verify-mapping`.
#[derive(clap::Args, Debug)]
pub struct VerifyMappingArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    #[command(flatten)]
    options: MappingOptions,
    /// The mapping (`statement`, `intrinsic`, groups `x <- loops`, operands `A <- T[...]`).
    #[arg(long, value_name = "FILE")]
    mapping: String,
}

/// Runs `polyc verify-mapping`.
pub fn run(args: &VerifyMappingArgs) -> Result<(), CliError> {
    let kernel = args.kernel.load_kernel()?;
    let ctx = args.options.context()?;
    let source = std::fs::read_to_string(&args.mapping)
        .map_err(|e| CliError::User(format!("could not read `{}`: {e}", args.mapping)))?;
    let at = |e: text::TextError| CliError::User(format!("{}:{e}", args.mapping));
    let parsed = text::parse(&source).map_err(at)?;
    let stmts = kernel.statements();
    let stmt = (stmts.iter().find(|s| s.stmt.name == parsed.statement)).ok_or_else(|| {
        let names: Vec<&str> = stmts.iter().map(|s| s.stmt.name.as_str()).collect();
        CliError::User(format!(
            "{}: kernel `{}` has no statement `{}` (it has: {})",
            args.mapping,
            kernel.name,
            parsed.statement,
            names.join(", ")
        ))
    })?;
    let intr = (ctx.intrinsics.iter().find(|i| i.name == parsed.intrinsic)).ok_or_else(|| {
        CliError::User(format!(
            "{}: no intrinsic `{}`",
            args.mapping, parsed.intrinsic
        ))
    })?;
    let binding = bind(intr, stmt.stmt, &kernel).ok_or_else(|| {
        CliError::User(format!(
            "{}: statement {} does not compute what `{}` computes (operator, expression or types differ)",
            args.mapping, stmt.stmt.name, intr.name
        ))
    })?;
    let sw = Software::new(&kernel, stmt, ctx.sizes(&kernel, &args.kernel.define)?);
    let mapping = text::resolve(&parsed, &sw, intr).map_err(at)?;
    let report = ctx
        .check(&sw, intr, &binding, &mapping)
        .map_err(|e| CliError::User(format!("{}: {e}", args.mapping)))?;
    disagreement(&report)?;
    print!("{}", verdict_lines(&report, ""));
    if report.proved() {
        println!("mapping is correct: all 7 conditions proved");
        Ok(())
    } else if report.refuted().is_empty() {
        Err(CliError::User(
            "mapping could not be proved: a solver gave up (see `unknown` above)".into(),
        ))
    } else {
        let n = report.refuted().len();
        Err(CliError::User(format!(
            "mapping is wrong: {n} condition{} refuted",
            if n == 1 { "" } else { "s" }
        )))
    }
}
