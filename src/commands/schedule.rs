//! `polyc schedule`: schedule a kernel, transform the schedule, print it.

use crate::error::CliError;
use codegen::isl_ast;
use poly::deps::Dependences;
use poly::isl::{Ctx, IslError};
use poly::model::{ModelError, Program};
use scheduler::registry::{scheduler_named, scheduler_names};
use scheduler::transform::tile_size::Machine;
use scheduler::transform::{optimize, summary, TransformOptions};
use scheduler::{FusePolicy, Options, Problem, ScheduleError, Scheduler};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::num::NonZeroU32;

/// What `polyc schedule` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The schedule tree in isl's YAML notation.
    Schedule,
    /// The dependences: distance per common loop.
    Deps,
    /// One line per band: depth, permutability, parallel members, tile sizes.
    Summary,
    /// The scheduled loops as pseudo-C.
    Ast,
}

/// A fusion policy on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fuse {
    /// Distribute strongly connected components.
    None,
    /// Fuse when no parallel loop is lost.
    Smart,
    /// Fuse whenever legal.
    Max,
}

impl From<Fuse> for FusePolicy {
    fn from(f: Fuse) -> FusePolicy {
        match f {
            Fuse::None => FusePolicy::None,
            Fuse::Smart => FusePolicy::Smart,
            Fuse::Max => FusePolicy::Max,
        }
    }
}

/// Options shared by `polyc schedule` and `polyc compare`.
#[derive(clap::Args, Debug)]
pub struct ScheduleOptions {
    /// Tile permutable bands; sizes per band member, comma-separated; members without a size
    /// (all of them for `--tile` alone) get sizes chosen by a cache model of this machine.
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "SIZES")]
    pub tile: Option<String>,
    /// Tile the tile loops again with these sizes (needs --tile).
    #[arg(long, value_name = "SIZES", requires = "tile")]
    pub tile2: Option<String>,
    /// Re-decide loop fusion after scheduling.
    #[arg(long, value_enum)]
    pub fuse: Option<Fuse>,
    /// Expose parallelism: wavefront when no outer loop is parallel, stride-1 parallel loop
    /// innermost.
    #[arg(long)]
    pub parallel: bool,
    /// Allow reduction updates to be reordered among themselves.
    #[arg(long)]
    pub reorder_reductions: bool,
    /// Fix a parameter, e.g. `-D N=64` (others stay symbolic).
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    pub define: Vec<String>,
}

/// Arguments of `polyc schedule`.
#[derive(clap::Args, Debug)]
pub struct ScheduleArgs {
    /// The kernel file (`.pk`), or `-` for standard input.
    pub file: String,
    /// The scheduling algorithm.
    #[arg(long, default_value = "isl")]
    pub scheduler: String,
    /// What to print.
    #[arg(long, value_enum, default_value = "summary")]
    pub emit: Emit,
    #[command(flatten)]
    pub options: ScheduleOptions,
}

/// A kernel lifted into the polyhedral model, with its dependences.
pub struct Lifted {
    /// The program.
    pub program: Program,
    /// Its dependences.
    pub deps: Dependences,
}

impl Lifted {
    /// The scheduling problem under the user's options.
    pub fn problem(&self, options: &ScheduleOptions) -> Problem<'_> {
        Problem {
            program: &self.program,
            deps: &self.deps,
            options: Options {
                fuse: options.fuse.map(FusePolicy::from).unwrap_or_default(),
                reorder_reductions: options.reorder_reductions,
            },
        }
    }
}

/// Reads, checks and lifts every kernel of a file.
pub fn lift_file(path: &str, define: &[String]) -> Result<Vec<Lifted>, CliError> {
    let fixed = parse_defines(define)?;
    let file = frontend::read_source(path).map_err(|message| {
        eprint!("{message}");
        CliError::User(format!("could not read `{path}`"))
    })?;
    let kernels = frontend::compile(&file).map_err(|diags| {
        eprint!("{}", diags.render(&file, std::io::stderr().is_terminal()));
        CliError::User(format!("`{}` has errors", file.name))
    })?;
    let ctx = Ctx::default();
    kernels
        .iter()
        .map(|k| {
            let program = Program::build(&ctx, k, &fixed).map_err(|e| match e {
                ModelError::Isl(e) => isl_error(e),
                other => CliError::User(format!("{path}: {other}")),
            })?;
            let deps = Dependences::compute(&program).map_err(isl_error)?;
            Ok(Lifted { program, deps })
        })
        .collect()
}

/// The transformation options the flags ask for.
pub fn transform_options(options: &ScheduleOptions) -> Result<TransformOptions, CliError> {
    Ok(TransformOptions {
        fuse: options.fuse.map(FusePolicy::from),
        tile: options.tile.as_deref().map(parse_sizes).transpose()?,
        tile2: options.tile2.as_deref().map(parse_sizes).transpose()?,
        machine: Machine::host(),
        parallel: options.parallel,
        register: None,
    })
}

/// The scheduler named on the command line.
pub fn find_scheduler(name: &str) -> Result<Box<dyn Scheduler>, CliError> {
    scheduler_named(name).ok_or_else(|| {
        CliError::User(format!(
            "unknown scheduler `{name}` (available: {})",
            scheduler_names()
        ))
    })
}

/// Maps an isl failure to the driver's error (a resource limit or a bug: internal).
pub fn isl_error(e: IslError) -> CliError {
    CliError::Internal(e.to_string())
}

fn schedule_error(e: ScheduleError) -> CliError {
    match e {
        ScheduleError::Isl(poly::isl::IslError::OperationLimit(_)) => CliError::User(e.to_string()),
        other => CliError::Internal(other.to_string()),
    }
}

/// Runs `polyc schedule`.
pub fn run(args: &ScheduleArgs) -> Result<(), CliError> {
    let scheduler = find_scheduler(&args.scheduler)?;
    let transforms = transform_options(&args.options)?;
    for lifted in lift_file(&args.file, &args.options.define)? {
        let problem = lifted.problem(&args.options);
        let name = &lifted.program.kernel.name;
        if args.emit == Emit::Deps {
            println!("kernel {name}:");
            for s in lifted.deps.summaries(&lifted.program).map_err(isl_error)? {
                println!("  {s}");
            }
            continue;
        }
        let schedule = scheduler.schedule(&problem).map_err(schedule_error)?;
        let optimized = optimize(&problem, &schedule, &transforms).map_err(isl_error)?;
        for note in &optimized.notes {
            eprintln!("note: {name}: {note}");
        }
        let tree = optimized.tree.to_schedule().map_err(isl_error)?;
        match args.emit {
            Emit::Schedule => println!("{tree}"),
            Emit::Summary => {
                println!("kernel {name} ({}):", scheduler.name());
                print!("{}", summary::summary(&optimized.tree));
            }
            Emit::Ast => {
                println!("// kernel {name} ({})", scheduler.name());
                print!(
                    "{}",
                    isl_ast::pseudo_c(&tree, &lifted.program.context).map_err(isl_error)?
                );
            }
            Emit::Deps => unreachable!("handled above"),
        }
    }
    Ok(())
}

fn parse_defines(define: &[String]) -> Result<BTreeMap<String, i64>, CliError> {
    define
        .iter()
        .map(|d| {
            let (name, value) = d
                .split_once('=')
                .ok_or_else(|| CliError::User(format!("-D {d}: expected NAME=VALUE")))?;
            let value = value
                .trim()
                .parse::<i64>()
                .map_err(|_| CliError::User(format!("-D {d}: `{value}` is not an integer")))?;
            Ok((name.trim().to_string(), value))
        })
        .collect()
}

fn parse_sizes(text: &str) -> Result<Vec<NonZeroU32>, CliError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|s| {
            s.trim().parse::<NonZeroU32>().map_err(|_| {
                CliError::User(format!(
                    "tile size `{s}` is not a positive integer (in `{text}`)"
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_defines_are_checked() {
        assert_eq!(parse_sizes("").unwrap(), Vec::new());
        assert_eq!(parse_sizes("8, 16").unwrap().len(), 2);
        assert!(parse_sizes("8,0").is_err());
        assert!(parse_sizes("x").is_err());
        assert_eq!(parse_defines(&["N=4".into()]).unwrap()["N"], 4);
        assert!(parse_defines(&["N".into()]).is_err());
        assert!(parse_defines(&["N=x".into()]).is_err());
    }
}
