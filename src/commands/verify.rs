//! `polyc verify`: check a schedule against a kernel's dependences and explain every
//! violation with a concrete pair of instances.

use super::input::KernelArgs;
use super::schedule_file;
use crate::error::CliError;
use poly::deps::Dependences;
use scheduler::legality::{self, Collision, Verdict};
use scheduler::Options;
use std::path::Path;

/// Arguments of `polyc verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// The schedule: an isl schedule tree (YAML, as `polyc show --emit schedule` prints it)
    /// or a union map such as `[N] -> { S0[i, j] -> [j, i] }`; a syntax error is shown with
    /// its line and column (exit 1).
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
    let path = Path::new(&args.schedule);
    let schedule = schedule_file::read(&program.ctx, path)?;
    let deps = Dependences::compute(&program)?;
    let options = Options {
        reorder_reductions: args.reorder_reductions,
        ..Options::default()
    };
    match legality::verdict(&program, &deps, &schedule, &options)
        .map_err(|e| schedule_file::check_error(path, e))?
    {
        Verdict::Legal => {
            println!("schedule is legal");
            Ok(())
        }
        Verdict::NotInjective(c) => {
            println!("schedule is legal");
            let what = not_injective(&c);
            if args.strict {
                return Err(CliError::User(format!("{}: {what}", args.schedule)));
            }
            eprintln!("warning: {}: {what}", args.schedule);
            Ok(())
        }
        Verdict::Illegal(report) => {
            print!("{report}");
            let n = report.violations.len();
            Err(CliError::User(format!(
                "schedule is illegal: {n} violation{}",
                if n == 1 { "" } else { "s" }
            )))
        }
    }
}

/// The warning (or, strict, the error) about two instances at the same time.
pub fn not_injective(c: &Collision) -> String {
    format!("the schedule is not injective: {c}; their order is left to code generation")
}
