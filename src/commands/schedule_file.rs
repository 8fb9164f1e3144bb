//! Reading a hand-written schedule (`--schedule FILE`) for `verify`, `schedule`, `compile`,
//! `run` and `bench`: a syntax error is rendered rustc-style with its line and column.

use crate::error::CliError;
use poly::isl::Ctx;
use poly::order::AnySchedule;
use poly::order::OrderError;
use scheduler::legality::input::{parse_schedule, InputError};
use scheduler::legality::CheckError;
use std::io::IsTerminal;
use std::path::Path;

/// The schedule in the file at `path`, read in `ctx`; a malformed one is a user error (its
/// diagnostic printed on standard error first when it is a syntax error).
pub fn read(ctx: &Ctx, path: &Path) -> Result<AnySchedule, CliError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::User(format!("could not read `{name}`: {e}")))?;
    parse_schedule(ctx, &text).map_err(|e| match e {
        InputError::Syntax(_) => {
            eprint!(
                "{}",
                e.render(&name, &text, std::io::stderr().is_terminal())
            );
            CliError::User(format!("`{name}` is not a schedule isl can read"))
        }
        other => CliError::User(format!("{name}: {other}")),
    })
}

/// A failed check of the schedule in `path`: a schedule that does not fit the kernel
/// (foreign statements, wrong arity) is the user's error, naming the file.
pub fn check_error(path: &Path, e: CheckError) -> CliError {
    match e {
        CheckError::Schedule(e) if !matches!(e, OrderError::Isl(_)) => {
            CliError::User(format!("{}: {e}", path.display()))
        }
        other => other.into(),
    }
}

/// Refuses a `--schedule` given (`given`) to a target that cannot use it, named by `target`:
/// only the CPU back end runs a hand-written schedule.
pub fn cpu_only(given: bool, target: &str) -> Result<(), CliError> {
    match given {
        true => Err(CliError::User(format!(
            "`--schedule` applies to `--target cpu`, not to {target}"
        ))),
        false => Ok(()),
    }
}
