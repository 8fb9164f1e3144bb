//! `polyc schedule`: schedule a kernel, transform the schedule, print it.

use super::input::{lift_file, parse_define, CArgs, Lifted};
use crate::error::CliError;

use super::pipeline::{Origin, PipelineArgs, DEFAULT_SCHEDULER};
use super::report::{Band, Report};
use super::schedule_file;
use super::verify::not_injective;
use scheduler::baseline::Given;
use scheduler::legality::{self, Verdict};
use scheduler::optimizer::optimize;
use scheduler::registry::{scheduler_named, scheduler_names};
use scheduler::target::Target;
use scheduler::transform::tile_size::{Machine, NamedMachine, RegisterBlocks};
use scheduler::transform::{summary, Note, Step, TransformOptions};
use scheduler::{FusePolicy, Options, Problem, Scheduler};
use serde::Serialize;

/// What `polyc schedule` prints.
#[derive(clap::ValueEnum, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Emit {
    /// The schedule tree in isl's YAML notation.
    Schedule,
    /// The dependences: distance per common loop.
    Deps,
    /// One line per band: depth, permutability, parallel members, tile sizes.
    Summary,
    /// The scheduled loops as pseudo-C.
    Ast,
    /// A JSON report (`docs/studies.md`): per kernel, the scheduler that made the schedule,
    /// the notes, the bands, the parallel loops and the tree.
    Json,
}

/// Options shared by `polyc schedule`, `compile`, `compare` and `study` (their defaults are
/// the default pipeline's, [`ScheduleOptions::default`]).
#[derive(clap::Args, Serialize, Debug, Clone, Default)]
pub struct ScheduleOptions {
    /// The transformations (tiling, parallelism, fusion).
    #[command(flatten)]
    #[serde(flatten)]
    pub pipeline: PipelineArgs,
    /// Allow reduction updates to be reordered among themselves.
    #[arg(long)]
    pub reorder_reductions: bool,
    /// Pluto: start with schedule coefficients bounded by N in magnitude (default 4); when
    /// the bound cuts a permutable band short it is doubled, up to 64, and a note says so.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    pub max_coefficient: Option<i64>,
    /// Fix a parameter, e.g. `-D N=64` (others stay symbolic).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub define: Vec<(String, i64)>,
    /// Use this schedule (an isl schedule tree or a union map, as `polyc verify` reads it)
    /// instead of a scheduler's, after checking it as `verify` does (illegal or malformed:
    /// exit 1); it is kept as written, tiled only with `--tile` and made parallel only with
    /// `--parallel`, and `--fuse` still applies.
    #[arg(long = "schedule", value_name = "FILE")]
    pub given: Option<std::path::PathBuf>,
    /// The machine tiles are sized for: a CPU machine file (TOML: name, cores, l1d, l2, l3,
    /// vector_bytes; see `docs/studies.md`) instead of this host's caches; with `--target
    /// npu`, the NPU preset or machine file (default `ascend-like`).
    #[arg(long, value_name = "FILE")]
    pub machine: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub c: CArgs,
}

/// Arguments of `polyc schedule`.
#[derive(clap::Args, Serialize, Debug)]
pub struct ScheduleArgs {
    /// The kernel file (`.pk`; a `.c` file: its `#pragma scop` regions), or `-` for
    /// standard input.
    pub file: String,
    /// The scheduling algorithm: pluto (the default everywhere), feautrier, isl or identity
    /// (the original order). `pluto` falls back to `isl`, and any to the original order,
    /// when it fails.
    #[arg(long, default_value = DEFAULT_SCHEDULER)]
    pub scheduler: String,
    /// What to print.
    #[arg(long, value_enum, default_value = "summary")]
    pub emit: Emit,
    #[command(flatten)]
    #[serde(flatten)]
    pub options: ScheduleOptions,
}

impl ScheduleOptions {
    /// The scheduling problem of `lifted` under these options.
    pub fn problem<'a>(&self, lifted: &'a Lifted) -> Problem<'a> {
        Problem {
            program: &lifted.program,
            deps: &lifted.deps,
            options: Options {
                fuse: self.pipeline.fuse.map(FusePolicy::from).unwrap_or_default(),
                reorder_reductions: self.reorder_reductions,
                max_coefficient: self.max_coefficient,
                rar: self.pipeline.rar,
                isl: self.pipeline.isl_options(),
            },
        }
    }
}

impl ScheduleOptions {
    /// The machine tiles are sized for: the `--machine` file's, else this host's.
    pub fn tile_machine(&self) -> Result<NamedMachine, CliError> {
        let Some(path) = &self.machine else {
            return Ok(NamedMachine {
                name: "host".into(),
                machine: Target::host().cache_model().unwrap_or(Machine::FALLBACK),
            });
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::User(format!("cannot read machine file `{path}`: {e}")))?;
        NamedMachine::parse(&text).map_err(|e| CliError::User(format!("{path}: {e}")))
    }
}

/// The transformation options the flags ask for: the default pipeline's unless a flag
/// turns a step off, a `--schedule FILE` kept as written unless a flag asks otherwise (see
/// [`PipelineArgs`]); `register`, the blocks of `--register-tile` where the command
/// generates code (`None` where it does not), applies where cache tiles may go.
pub fn transform_options(
    options: &ScheduleOptions,
    register: Option<RegisterBlocks>,
) -> Result<TransformOptions, CliError> {
    let origin = match options.given {
        Some(_) => Origin::Given,
        None => Origin::Scheduler,
    };
    let pipeline = &options.pipeline;
    let tile = pipeline.tile_sizes(origin)?;
    // A schedule the user wrote is tiled, in caches and registers, only when asked.
    let register = register.filter(|_| origin == Origin::Scheduler || tile.is_some());
    Ok(TransformOptions {
        fuse: pipeline.fuse.map(FusePolicy::from),
        tile,
        tile2: pipeline.tile2_sizes()?,
        diamond: pipeline.diamond,
        iss: pipeline.iss,
        machine: options.tile_machine()?.machine,
        parallel: pipeline.parallel(origin),
        register,
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

/// Optimizes `problem` with the scheduler named `name`; when it fails, the next one takes
/// over (isl's after Pluto, then the original order, which is always legal), each switch
/// noted on standard error, so that a valid kernel always gets a schedule. An illegal result
/// is not a failure to fall back from: it is refused. Returns the result and the name of
/// the scheduler that produced it.
pub fn optimize_with_fallback(
    problem: &Problem,
    name: &str,
    given: Option<&std::path::Path>,
    transforms: &TransformOptions,
    passes: &[&'static dyn scheduler::optimizer::Pass],
) -> Result<(scheduler::optimizer::Optimized, &'static str), CliError> {
    if let Some(path) = given {
        let given = given_schedule(problem, path)?;
        let optimized = optimize(problem, &given, transforms, passes)?;
        let tiled = (optimized.notes.iter()).any(|n| matches!(n, Note::Applied(Step::Tiling)));
        if transforms.tile.is_some() && !tiled {
            eprintln!(
                "note: {}: `--tile` tiled nothing in {} (tiles go on permutable bands of two \
                 or more members that carry reuse; a union map is one band, not marked \
                 permutable)",
                problem.program.kernel.name,
                path.display()
            );
        }
        return Ok((optimized, "given"));
    }
    let mut chain = vec![find_scheduler(name)?];
    if chain[0].name() == "pluto" {
        chain.push(find_scheduler("isl")?);
    }
    if chain[0].name() != "identity" {
        chain.push(find_scheduler("identity")?);
    }
    let kernel = &problem.program.kernel.name;
    let mut attempts = chain.iter().peekable();
    loop {
        let s = attempts
            .next()
            .expect("the chain holds the chosen scheduler");
        let _analysis = problem.program.ctx.analysis();
        match optimize(problem, s.as_ref(), transforms, passes) {
            Err(why)
                if !matches!(why, scheduler::optimizer::OptimizeError::Illegal(_))
                    && attempts.peek().is_some() =>
            {
                let next = attempts.peek().map_or("", |n| n.name());
                eprintln!(
                    "note: {kernel}: {} failed ({why}); scheduling with {next}",
                    s.name()
                );
            }
            result => return Ok((result?, s.name())),
        }
    }
}

/// The schedule in the file at `path` as a scheduler, once `polyc verify`'s check has found
/// it legal (a violation is the user's error, with the checker's report; two instances at
/// the same time are warned about, as `verify` does).
fn given_schedule(problem: &Problem, path: &std::path::Path) -> Result<Given, CliError> {
    let program = problem.program;
    let schedule = schedule_file::read(&program.ctx, path)?;
    match legality::verdict(program, problem.deps, &schedule, &problem.options)
        .map_err(|e| schedule_file::check_error(path, e))?
    {
        Verdict::Legal => {}
        Verdict::NotInjective(c) => eprintln!("warning: {}: {}", path.display(), not_injective(&c)),
        Verdict::Illegal(report) => {
            return Err(CliError::User(format!(
                "{}: the schedule is illegal:\n{report}",
                path.display()
            )))
        }
    }
    Given::new(program, &schedule).map_err(CliError::from)
}

/// One kernel's schedule in a JSON report.
#[derive(Serialize, Debug)]
struct Scheduled {
    /// The kernel.
    kernel: String,
    /// The scheduler that made the schedule (another than the one asked for after a
    /// fallback; `given` for `--schedule FILE`).
    scheduler: &'static str,
    /// What the optimizer did or refused, one sentence each.
    notes: Vec<String>,
    /// Its bands, outermost first.
    bands: Vec<Band>,
    /// Its parallel loops.
    parallel_loops: usize,
    /// The schedule tree in isl's YAML notation.
    schedule: String,
}

/// Runs `polyc schedule`.
pub fn run(args: &ScheduleArgs) -> Result<(), CliError> {
    find_scheduler(&args.scheduler)?;
    let transforms = transform_options(&args.options, None)?;
    let mut report = Vec::new();
    for lifted in lift_file(&args.file, &args.options.define, &args.options.c)? {
        let problem = args.options.problem(&lifted);
        let name = &lifted.program.kernel.name;
        if args.emit == Emit::Deps {
            println!("kernel {name}:");
            for s in lifted.deps.summaries(&lifted.program)? {
                println!("  {s}");
            }
            // What `--rar` adds to Pluto's objective, never a constraint.
            if args.options.pipeline.rar {
                let reuse = poly::deps::Reuse::compute(&lifted.program)?;
                for s in reuse.summaries(&lifted.program)? {
                    println!("  {s}");
                }
            }
            continue;
        }
        let (optimized, scheduler) = optimize_with_fallback(
            &problem,
            &args.scheduler,
            args.options.given.as_deref(),
            &transforms,
            &[],
        )?;
        if args.emit != Emit::Json {
            for note in &optimized.notes {
                eprintln!("note: {name}: {note}");
            }
        }
        let tree = &optimized.schedule;
        match args.emit {
            Emit::Json => report.push(Scheduled {
                kernel: name.clone(),
                scheduler,
                notes: optimized.notes.iter().map(ToString::to_string).collect(),
                bands: summary::bands(&optimized.tree)
                    .iter()
                    .map(Band::from)
                    .collect(),
                parallel_loops: scheduler::transform::analysis::parallel_loops(&optimized.tree, 0)?,
                schedule: tree.to_string(),
            }),
            Emit::Schedule => println!("{tree}"),
            Emit::Summary => {
                println!("kernel {name} ({scheduler}):");
                print!("{}", summary::summary(&optimized.tree));
            }
            Emit::Ast => {
                println!("// kernel {name} ({scheduler})");
                print!("{}", poly::isl::pseudo_c(tree, &lifted.program.context)?);
            }
            Emit::Deps => unreachable!("handled above"),
        }
    }
    if args.emit == Emit::Json {
        let machine = Some(args.options.tile_machine()?);
        Report::new("schedule", machine, args, report).print()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_are_checked() {
        assert_eq!(parse_define("N=4").unwrap(), ("N".to_string(), 4));
        assert!(parse_define("N").is_err());
        assert!(parse_define("N=x").is_err());
    }
}
