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
mod fuzz_npu;
mod input;
mod mappings;
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
    C(cfile::CFileArgs),
    /// Schedule a kernel (Feautrier, isl, identity), tile and parallelise; print the result.
    Schedule(schedule::ScheduleArgs),
    /// Compare schedulers on kernels: bands, parallel loops, tiles, time.
    Compare(compare::CompareArgs),
    /// Run every scheduler on every kernel file, each pair an independent job appending one
    /// JSON line to a file (resumable; `--job` runs one, for GNU parallel or Slurm).
    Study(study::StudyArgs),
    /// Draw a study's speed-ups (per kernel, per scheduler, over `identity`) as grouped bars
    /// in SVG.
    Plot(plot::PlotArgs),
    /// Time a kernel as original C (gcc, Polly) and as polyc's C; report medians.
    Bench(bench::BenchArgs),
    /// Schedule a kernel and emit it as C (with `--harness`, a complete program).
    Compile(compile::CompileArgs),
    /// Run the whole pipeline on an embedded example (what `make run` shows).
    Demo(demo::DemoArgs),
    /// Print a kernel as the compiler sees it: checked AST, isl model, dependences, schedule.
    Show(show::ShowArgs),
    /// Execute a kernel with the reference interpreter; print per-output checksums.
    Run(run::RunArgs),
    /// Simulate a program for the NPU (`.npu` assembly).
    Sim(sim::SimArgs),
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

    /// The arguments clap gives `polyc ARGS`, defaults filled in.
    fn parse(args: &[&str]) -> Command {
        Cli::try_parse_from(std::iter::once("polyc").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .command
    }

    #[test]
    fn the_commands_share_one_default_pipeline() {
        let (
            Command::Schedule(schedule),
            Command::Compile(compile),
            Command::Run(run),
            Command::Bench(bench),
            Command::C(c),
        ) = (
            parse(&["schedule", "k.pk"]),
            parse(&["compile", "k.pk"]),
            parse(&["run", "k.pk", "--target", "cpu"]),
            parse(&["bench", "k.pk"]),
            parse(&["c", "k.c"]),
        )
        else {
            panic!("the commands parse as themselves");
        };
        for scheduler in [
            &compile.scheduler,
            &run.scheduler,
            &bench.scheduler,
            &c.scheduler,
        ] {
            assert_eq!(scheduler, &schedule.scheduler);
        }
        assert_eq!(schedule.scheduler, schedule::DEFAULT_SCHEDULER);
        fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
            serde_json::to_value(v).expect("arguments serialize")
        }
        assert_eq!(json(&compile.schedule), json(&schedule.options));
        for tile in [&run.tile, &bench.tile, &c.tile] {
            assert_eq!(tile, &schedule.options.tile);
        }
        assert_eq!(c.parallel, schedule.options.parallel);
        for codegen in [&run.codegen, &bench.codegen, &c.codegen] {
            assert_eq!(json(codegen), json(&compile.codegen));
        }
    }
}
