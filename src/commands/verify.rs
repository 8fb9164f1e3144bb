//! `polyc verify`: check a schedule against a kernel's dependences and explain every
//! violation with a concrete pair of instances.

use super::format::Output;
use super::input::KernelArgs;
use super::report::Report;
use super::schedule_file;
use crate::error::CliError;
use poly::deps::Dependences;
use scheduler::legality::{self, Collision, Verdict};
use scheduler::Options;
use serde::Serialize;
use std::path::Path;

/// Arguments of `polyc verify`.
#[derive(clap::Args, Serialize, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    #[serde(flatten)]
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
    /// What to print: the verdict in sentences, or a JSON report (`docs/studies.md`) with
    /// the verdict, the two instances at the same time and every violation (the exit code
    /// is the same).
    #[arg(long, value_enum, default_value = "text")]
    emit: Output,
}

/// What `verify` found, for the JSON report.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Found {
    /// The schedule respects every dependence and runs each instance at its own time.
    Legal,
    /// Legal, but two instances run at the same time.
    NotInjective,
    /// Some dependence or rule is violated.
    Illegal,
}

/// The JSON report's results.
#[derive(Serialize, Debug)]
struct Verified {
    /// The kernel.
    kernel: String,
    /// The verdict.
    verdict: Found,
    /// With `not_injective`, the two instances run at the same time.
    collision: Option<String>,
    /// With `illegal`, every violation, each with its witness, as the text report gives it.
    violations: Vec<String>,
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
    let verdict = legality::verdict(&program, &deps, &schedule, &options)
        .map_err(|e| schedule_file::check_error(path, e))?;
    if args.emit == Output::Json {
        let (found, collision, violations) = match &verdict {
            Verdict::Legal => (Found::Legal, None, Vec::new()),
            Verdict::NotInjective(c) => (Found::NotInjective, Some(c.to_string()), Vec::new()),
            Verdict::Illegal(r) => (
                Found::Illegal,
                None,
                r.violations.iter().map(ToString::to_string).collect(),
            ),
        };
        let verified = Verified {
            kernel: program.kernel.name.clone(),
            verdict: found,
            collision,
            violations,
        };
        Report::new("verify", None, args, &verified).print()?;
    }
    let quiet = args.emit == Output::Json;
    match verdict {
        Verdict::Legal => {
            if !quiet {
                println!("schedule is legal");
            }
            Ok(())
        }
        Verdict::NotInjective(c) => {
            let what = not_injective(&c);
            if args.strict {
                return Err(CliError::User(format!("{}: {what}", args.schedule)));
            }
            if !quiet {
                println!("schedule is legal");
                eprintln!("warning: {}: {what}", args.schedule);
            }
            Ok(())
        }
        Verdict::Illegal(report) => {
            if !quiet {
                print!("{report}");
            }
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
