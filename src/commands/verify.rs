//! `polyc verify`: check a schedule against a kernel's dependences and explain every
//! violation with a concrete pair of instances.

use super::input::KernelArgs;
use crate::error::CliError;
use poly::deps::Dependences;
use poly::order::OrderError;
use scheduler::legality::{self, input::parse_schedule, CheckError};
use scheduler::Options;

/// Arguments of `polyc verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// The schedule: an isl schedule tree (YAML, as `polyc show --emit schedule` prints it)
    /// or a union map such as `[N] -> { S0[i, j] -> [j, i] }`.
    #[arg(long, value_name = "FILE")]
    schedule: String,
    /// Let the instances of a reduction update (`+=`, `max=`, ...) run in any order among
    /// themselves.
    #[arg(long)]
    reorder_reductions: bool,
    /// Refuse (exit 1) a schedule that runs two instances at the same time, instead of
    /// warning about it.
    #[arg(long)]
    strict: bool,
}

/// Runs `polyc verify`: prints "schedule is legal" or every violation; exit 1 on any
/// violation or malformed schedule. Two instances at the same time are a warning (their
/// order is left to code generation), an error with `--strict`.
pub fn run(args: &VerifyArgs) -> Result<(), CliError> {
    let program = args.kernel.load_program()?;
    let text = std::fs::read_to_string(&args.schedule)
        .map_err(|e| CliError::User(format!("could not read `{}`: {e}", args.schedule)))?;
    let schedule = parse_schedule(&program.ctx, &text)
        .map_err(|e| CliError::User(format!("{}: {e}", args.schedule)))?;
    let deps = Dependences::compute(&program)?;
    let options = Options {
        reorder_reductions: args.reorder_reductions,
        ..Options::default()
    };
    let report = legality::check(&program, &deps, &schedule, &options).map_err(|e| match e {
        CheckError::Schedule(e) if !matches!(e, OrderError::Isl(_)) => {
            CliError::User(format!("{}: {e}", args.schedule))
        }
        other => other.into(),
    })?;
    print!("{report}");
    if report.violations.is_empty() {
        let map_err = |e: CheckError| match e {
            CheckError::Schedule(e) if !matches!(e, OrderError::Isl(_)) => {
                CliError::User(format!("{}: {e}", args.schedule))
            }
            other => other.into(),
        };
        if let Some(c) = legality::collision(&program, &schedule).map_err(map_err)? {
            let what = format!(
                "the schedule is not injective: {c}; their order is left to code generation"
            );
            if args.strict {
                return Err(CliError::User(format!("{}: {what}", args.schedule)));
            }
            eprintln!("warning: {}: {what}", args.schedule);
        }
    }
    match report.violations.len() {
        0 => Ok(()),
        n => Err(CliError::User(format!(
            "schedule is illegal: {n} violation{}",
            if n == 1 { "" } else { "s" }
        ))),
    }
}
