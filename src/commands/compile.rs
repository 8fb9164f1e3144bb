//! `polyc compile`: schedule a kernel and emit it as C (optionally with a `main` harness).

use super::schedule::{
    find_scheduler, isl_error, lift_file, transform_options, Lifted, ScheduleOptions,
};
use crate::error::CliError;
use codegen::isl_ast::{AstOptions, LoopType};
use codegen::register_tile::{RegisterBlock, RegisterBlocks};
use codegen::{c::LoopOptions, CodegenError, CodegenOptions};
use scheduler::transform::tile_size::Machine;
use scheduler::transform::TransformOptions;
use std::path::PathBuf;

/// The back end to compile for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// C99 with OpenMP for CPUs.
    Cpu,
}

/// The AST loop type of every band member.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopTypeArg {
    /// isl's default.
    Default,
    /// One loop per member, no code duplication.
    Atomic,
    /// Separate loops for full and partial pieces (full tiles without bound checks).
    Separate,
}

/// Code generation flags shared by `compile`, `run --target cpu` and `bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct CodegenArgs {
    /// How isl generates each loop.
    #[arg(long, value_enum, default_value = "default")]
    pub loop_type: LoopTypeArg,
    /// Unroll loops with a constant trip count up to this (0: never).
    #[arg(long, default_value_t = 4)]
    pub unroll: u32,
    /// Emit no OpenMP pragmas.
    #[arg(long)]
    pub no_openmp: bool,
    /// Do not copy strided input reads of register tiles into packed local panels.
    #[arg(long)]
    pub no_pack: bool,
    /// Register tiling of innermost reduction bands: `ROWS,BYTES` (rows of the outer
    /// parallel loop, bytes of the stride-1 loop per block; a block held in registers that
    /// has no rows gets ROWS x BYTES of columns), `auto` (blocks held in registers fit this
    /// machine's vector registers, 6,64 with AVX2 and 4,256 with AVX-512; others are
    /// 4,256), or `off`.
    #[arg(long, default_value = "auto", value_parser = parse_register_block)]
    pub register_tile: RegisterTile,
}

/// The value of `--register-tile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterTile(pub Option<RegisterBlocks>);

fn parse_register_block(text: &str) -> Result<RegisterTile, String> {
    match text {
        "off" => return Ok(RegisterTile(None)),
        "auto" => {
            return Ok(RegisterTile(Some(RegisterBlocks::for_machine(
                &Machine::host(),
            ))))
        }
        _ => {}
    }
    let bad =
        || format!("expected `ROWS,BYTES` (positive integers), `auto` or `off`, got `{text}`");
    let (rows, bytes) = text.split_once(',').ok_or_else(bad)?;
    let positive = |t: &str| {
        t.trim()
            .parse::<u32>()
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(bad)
    };
    Ok(RegisterTile(Some(RegisterBlocks::uniform(RegisterBlock {
        rows: positive(rows)?,
        bytes: positive(bytes)?,
    }))))
}

impl CodegenArgs {
    /// The back end's options.
    pub fn options(&self, harness: bool) -> CodegenOptions {
        CodegenOptions {
            ast: AstOptions {
                loop_type: match self.loop_type {
                    LoopTypeArg::Default => LoopType::Default,
                    LoopTypeArg::Atomic => LoopType::Atomic,
                    LoopTypeArg::Separate => LoopType::Separate,
                },
            },
            loops: LoopOptions {
                unroll_limit: self.unroll,
                openmp: !self.no_openmp,
                pack: !self.no_pack,
            },
            harness,
            register: self.register_tile.0,
        }
    }
}

/// Arguments of `polyc compile`.
#[derive(clap::Args, Debug)]
pub struct CompileArgs {
    /// The kernel file (`.pk`), or `-` for standard input.
    pub file: String,
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    pub kernel: Option<String>,
    /// The back end.
    #[arg(long, value_enum, default_value = "cpu")]
    pub target: Target,
    /// Where to write the C file (`-`: standard output).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
    /// Add a `main` that reads `.npy` inputs, times the kernel and prints checksums.
    #[arg(long)]
    pub harness: bool,
    /// The scheduling algorithm (`pluto` falls back to `isl` when it fails).
    #[arg(long, default_value = "pluto")]
    pub scheduler: String,
    #[command(flatten)]
    pub schedule: ScheduleOptions,
    #[command(flatten)]
    pub codegen: CodegenArgs,
}

/// Maps a back-end error to the CLI's error classes.
pub fn codegen_error(e: CodegenError) -> CliError {
    match e {
        CodegenError::Isl(e) => isl_error(e),
        e @ CodegenError::Unsupported(_) => CliError::User(e.to_string()),
        e => CliError::Internal(e.to_string()),
    }
}

/// The one kernel of `lifted` the user chose.
pub fn choose(
    mut lifted: Vec<Lifted>,
    kernel: Option<&str>,
    file: &str,
) -> Result<Lifted, CliError> {
    let names = || {
        lifted
            .iter()
            .map(|l| l.program.kernel.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match kernel {
        Some(k) => match lifted.iter().position(|l| l.program.kernel.name == k) {
            Some(i) => Ok(lifted.swap_remove(i)),
            None => Err(CliError::User(format!(
                "`{file}` has no kernel `{k}` (it has: {})",
                names()
            ))),
        },
        None if lifted.len() == 1 => Ok(lifted.remove(0)),
        None => Err(CliError::User(format!(
            "`{file}` holds several kernels ({}): choose one with --kernel",
            names()
        ))),
    }
}

/// Lifts, schedules and prints the chosen kernel of a file as C.
pub fn generate(
    file: &str,
    kernel: Option<&str>,
    scheduler: &str,
    schedule: &ScheduleOptions,
    options: &CodegenOptions,
) -> Result<String, CliError> {
    let scheduler = find_scheduler(scheduler)?;
    let transforms = TransformOptions {
        register: options.register,
        ..transform_options(schedule)?
    };
    let lifted = choose(lift_file(file, &schedule.define)?, kernel, file)?;
    let problem = lifted.problem(schedule);
    let run = |s: &dyn scheduler::Scheduler| {
        codegen::pipeline::schedule(
            &lifted.program,
            &lifted.deps,
            s,
            problem.options.clone(),
            &transforms,
        )
    };
    let scheduled = match run(scheduler.as_ref()) {
        // Pluto is the default; isl's scheduler is the fallback when it fails.
        Err(why) if scheduler.name() == "pluto" => {
            eprintln!(
                "note: {}: pluto failed ({why}); scheduling with isl",
                lifted.program.kernel.name
            );
            lifted.program.ctx.reset_budget();
            run(find_scheduler("isl")?.as_ref())
        }
        result => result,
    }
    .map_err(codegen_error)?;
    for note in scheduled.notes.iter().filter(|n| n.contains("refused")) {
        eprintln!("note: {}: {note}", lifted.program.kernel.name);
    }
    codegen::generate(&lifted.program, &scheduled.schedule, options).map_err(codegen_error)
}

/// Runs `polyc compile`.
pub fn run(args: &CompileArgs) -> Result<(), CliError> {
    let code = generate(
        &args.file,
        args.kernel.as_deref(),
        &args.scheduler,
        &args.schedule,
        &args.codegen.options(args.harness),
    )?;
    if args.output.as_os_str() == "-" {
        print!("{code}");
        Ok(())
    } else {
        std::fs::write(&args.output, code)
            .map_err(|e| CliError::User(format!("cannot write `{}`: {e}", args.output.display())))
    }
}
