//! The subcommands of `polyc`, one module each.

mod bench;
mod bench_c;
mod bench_npu;
mod cfile;
mod check;
mod compare;
mod compile;
mod demo;
mod format;
mod fuzz;
mod fuzz_fault;
mod fuzz_npu;
mod fuzz_parallel;
mod fuzz_reuse;
mod input;
mod mappings;
mod pipeline;
mod plot;
mod progress;
mod ranking;
mod report;
mod run;
mod schedule;
mod schedule_file;
mod show;
mod sim;
mod study;
mod sync;
mod target;
mod timing;
mod verify;
mod verify_mapping;

use crate::error::CliError;
use clap::{Parser, Subcommand};

/// A polyhedral optimizing compiler for affine tensor kernels.
#[derive(Parser, Debug)]
#[command(
    name = "polyc",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("POLYC_COMMIT"), ")"),
    about
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse and check a kernel file; print its diagnostics.
    Check(check::CheckArgs),
    /// Optimise the `#pragma scop` regions of a C file: each is replaced by its optimised
    /// loop nest, everything else is kept byte for byte.
    #[command(after_help = pipeline::help())]
    C(cfile::CFileArgs),
    /// Schedule a kernel (Pluto, Feautrier, isl, identity), tile and parallelise; print the
    /// result.
    #[command(after_help = pipeline::help())]
    Schedule(schedule::ScheduleArgs),
    /// Compare schedulers on kernels: bands, parallel loops, tiles, time.
    #[command(after_help = pipeline::help())]
    Compare(compare::CompareArgs),
    /// Run every scheduler on every kernel file, each pair an independent job appending one
    /// JSON line to a file (resumable; `--job` runs one, for GNU parallel or Slurm).
    #[command(after_help = pipeline::help())]
    Study(study::StudyArgs),
    /// Draw a study's speed-ups (per kernel, per scheduler, over `identity`) as grouped bars
    /// in SVG.
    Plot(plot::PlotArgs),
    /// Time a kernel as original C (gcc, Polly) and as polyc's C; report medians.
    #[command(after_help = pipeline::help())]
    Bench(bench::BenchArgs),
    /// Schedule a kernel and emit it as C (with `--harness`, a complete program).
    #[command(after_help = pipeline::help())]
    Compile(compile::CompileArgs),
    /// Run the whole pipeline on an embedded example (what `make run` shows).
    Demo(demo::DemoArgs),
    /// Print a kernel as the compiler sees it: checked AST, isl model, dependences, schedule.
    Show(show::ShowArgs),
    /// Execute a kernel with the reference interpreter; print per-output checksums.
    #[command(after_help = pipeline::help())]
    Run(run::RunArgs),
    /// Simulate a program for the NPU (`.npu` assembly).
    Sim(sim::SimArgs),
    /// Place the flags (and barriers) a `.npu` program needs between its pipes, from its
    /// dependences; print the synchronised program.
    Sync(sync::SyncArgs),
    /// Check a schedule against a kernel's dependences; explain every violation.
    Verify(verify::VerifyArgs),
    /// Every mapping of a kernel's statements onto the NPU's intrinsics, each proved or
    /// refuted (with a counterexample) condition by condition.
    Mappings(mappings::MappingsArgs),
    /// Check a hand-written intrinsic mapping; exit 1 with a counterexample if it is wrong.
    VerifyMapping(verify_mapping::VerifyMappingArgs),
    /// Random kernels through every scheduler and setting, each schedule executed and
    /// compared with the original order.
    FuzzSchedules(fuzz::FuzzArgs),
    /// Print a target description (`host`, or an NPU machine): memory levels, compute
    /// units, cores.
    Target(target::TargetArgs),
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Check(args) => check::run(&args),
        Command::C(args) => cfile::run(&args),
        Command::Schedule(args) => schedule::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Study(args) => study::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::Compile(args) => compile::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Show(args) => show::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Sync(args) => sync::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Mappings(args) => mappings::run(&args),
        Command::VerifyMapping(args) => verify_mapping::run(&args),
        Command::FuzzSchedules(args) => fuzz::run(&args),
        Command::Target(args) => target::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use schedule::transform_options;
    use scheduler::transform::TransformOptions;

    /// The arguments clap gives `polyc ARGS`, defaults filled in.
    fn parse(args: &[&str]) -> Command {
        Cli::try_parse_from(std::iter::once("polyc").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .command
    }

    /// The commands that schedule, each with the arguments that make it schedule a kernel.
    const SCHEDULING: [&[&str]; 7] = [
        &["schedule", "k.pk"],
        &["compile", "k.pk"],
        &["run", "k.pk", "--target", "cpu"],
        &["bench", "k.pk"],
        &["c", "k.c"],
        &["compare", "k.pk"],
        &["study", "k.pk", "--list-jobs"],
    ];

    /// What each command that schedules does with `extra` flags: its scheduler (`None` for
    /// those that run every scheduler), its transformations, and where it generates code,
    /// its transformations with register tiles.
    struct Pipeline {
        scheduler: Option<String>,
        transforms: TransformOptions,
        built: Option<TransformOptions>,
    }

    fn pipelines(extra: &[&str]) -> Vec<Pipeline> {
        (SCHEDULING.iter())
            .map(|args| {
                let args: Vec<&str> = args.iter().chain(extra).copied().collect();
                let (scheduler, options, register) = match parse(&args) {
                    Command::Schedule(a) => (Some(a.scheduler), a.options, None),
                    Command::Compile(a) => (Some(a.scheduler), a.schedule, a.codegen.register()),
                    Command::Run(a) => (
                        Some(a.scheduler.clone()),
                        a.schedule_options(),
                        a.codegen.register(),
                    ),
                    Command::Bench(a) => (
                        Some(a.scheduler.clone()),
                        a.schedule_options(),
                        a.codegen.register(),
                    ),
                    Command::C(a) => (
                        Some(a.scheduler.clone()),
                        a.schedule_options(),
                        a.codegen.register(),
                    ),
                    Command::Compare(a) => (None, a.options, a.codegen.register()),
                    Command::Study(a) => (None, a.study.schedule, a.study.codegen.register()),
                    other => panic!("{args:?} parsed as {other:?}"),
                };
                let transforms = |register| transform_options(&options, register).unwrap();
                Pipeline {
                    scheduler,
                    transforms: transforms(None),
                    built: (args[0] != "schedule").then(|| transforms(register)),
                }
            })
            .collect()
    }

    /// The same options (`TransformOptions` has no `PartialEq`; its `Debug` shows every field).
    fn same(a: &TransformOptions, b: &TransformOptions) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn the_commands_share_one_default_pipeline() {
        let all = pipelines(&[]);
        let default = transform_options(&schedule::ScheduleOptions::default(), None).unwrap();
        assert_eq!(
            default.tile,
            Some(Vec::new()),
            "tiled with the cache model's sizes"
        );
        assert!(default.parallel);
        assert!(default.fuse.is_none(), "the scheduler's own fusion");
        let built = all[1].built.clone().expect("compile builds");
        assert!(same(
            &built,
            &TransformOptions {
                register: built.register,
                ..default.clone()
            }
        ));
        for (p, args) in all.iter().zip(SCHEDULING) {
            if let Some(s) = &p.scheduler {
                assert_eq!(s, pipeline::DEFAULT_SCHEDULER, "{args:?}");
            }
            assert!(same(&p.transforms, &default), "{args:?}");
            if let Some(b) = &p.built {
                assert!(same(b, &built), "{args:?}");
            }
        }
        let (Command::Compile(compile), Command::Run(run), Command::Bench(bench), Command::C(c)) = (
            parse(SCHEDULING[1]),
            parse(SCHEDULING[2]),
            parse(SCHEDULING[3]),
            parse(SCHEDULING[4]),
        ) else {
            panic!("the commands parse as themselves");
        };
        fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
            serde_json::to_value(v).expect("arguments serialize")
        }
        for codegen in [&run.codegen, &bench.codegen, &c.codegen] {
            assert_eq!(json(codegen), json(&compile.codegen));
        }
    }

    #[test]
    fn no_tile_and_no_parallel_turn_each_step_off() {
        let eight = std::num::NonZeroU32::new(8).unwrap();
        for (flags, tile, parallel) in [
            (&["--no-tile"][..], None, true),
            (&["--no-parallel"], Some(vec![]), false),
            (&["--no-tile", "--no-parallel"], None, false),
            (&["--tile", "8,8", "--parallel"], Some(vec![eight; 2]), true),
        ] {
            for (p, args) in pipelines(flags).iter().zip(SCHEDULING) {
                assert_eq!(p.transforms.tile, tile, "{args:?} {flags:?}");
                assert_eq!(p.transforms.parallel, parallel, "{args:?} {flags:?}");
            }
        }
        for args in SCHEDULING {
            for conflict in [&["--tile", "--no-tile"], &["--parallel", "--no-parallel"]] {
                let args = args.iter().chain(conflict).copied();
                assert!(Cli::try_parse_from(std::iter::once("polyc").chain(args)).is_err());
            }
        }
    }

    #[test]
    fn every_scheduling_command_states_the_default_pipeline_in_its_help() {
        let cli = Cli::command();
        for args in SCHEDULING {
            let command = cli.find_subcommand(args[0]).expect("a subcommand");
            let after = command.get_after_help().map(ToString::to_string);
            assert_eq!(after, Some(pipeline::help()), "{}", args[0]);
        }
        assert!(pipeline::help().contains(pipeline::DEFAULT_SCHEDULER));
    }
}
