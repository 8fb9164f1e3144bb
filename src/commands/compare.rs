//! `polyc compare`: several schedulers on several kernels, side by side.

use super::input::lift_file;
use super::schedule::{find_scheduler, transform_options, ScheduleOptions};
use crate::error::CliError;
use scheduler::compare::{measure, table};

/// Arguments of `polyc compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The kernel files (`.pk`).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The schedulers to compare, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "feautrier,isl,identity")]
    pub schedulers: Vec<String>,
    #[command(flatten)]
    pub options: ScheduleOptions,
}

/// Runs `polyc compare`: one table row per kernel and scheduler.
pub fn run(args: &CompareArgs) -> Result<(), CliError> {
    let schedulers = args
        .schedulers
        .iter()
        .map(|n| find_scheduler(n.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let transforms = transform_options(&args.options)?;
    let mut rows = Vec::new();
    for file in &args.files {
        for lifted in lift_file(file, &args.options.define, &args.options.c)? {
            let problem = args.options.problem(&lifted);
            for s in &schedulers {
                rows.push(measure(&problem, s.as_ref(), &transforms));
            }
        }
    }
    print!("{}", table(&rows));
    Ok(())
}
