//! `polyc compile`: schedule a kernel and emit it as C (optionally with a `main` harness).

use super::input::{choose, defines, lift_one, read_kernels, Lifted};
use super::pipeline::DEFAULT_SCHEDULER;
use super::schedule::{optimize_with_fallback, transform_options, ScheduleOptions};
use crate::error::CliError;
use codegen::{c::LoopOptions, CodegenOptions};
use poly::interp::ParamValues;
use poly::isl::{AstOptions, LoopType};
use scheduler::optimizer::pass::pass_named;
use scheduler::optimizer::{Optimized, Pass};
use scheduler::target;
use scheduler::transform::tile_size::{RegisterBlock, RegisterBlocks};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The back end to compile for.
#[derive(clap::ValueEnum, serde::Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// C99 with OpenMP for CPUs.
    Cpu,
    /// A program for the simulated NPU (`.npu`, see `polyc sim`): matrix products today.
    Npu,
}

/// The AST loop type of every band member.
#[derive(clap::ValueEnum, serde::Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LoopTypeArg {
    /// isl's default.
    Default,
    /// One loop per member, no code duplication.
    Atomic,
    /// Separate loops for full and partial pieces (full tiles without bound checks).
    Separate,
}

/// Code generation flags shared by `compile`, `run --target cpu` and `bench`.
#[derive(clap::Args, serde::Serialize, Debug, Clone)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RegisterTile(pub Option<RegisterBlocks>);

fn parse_register_block(text: &str) -> Result<RegisterTile, String> {
    match text {
        "off" => return Ok(RegisterTile(None)),
        "auto" => return Ok(RegisterTile(target::Target::host().register_blocks())),
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
    /// The register blocks of `--register-tile` (`None`: no register tiling).
    pub fn register(&self) -> Option<RegisterBlocks> {
        self.register_tile.0
    }

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
                ..LoopOptions::default()
            },
            harness,
        }
    }
}

/// Arguments of `polyc compile`.
#[derive(clap::Args, Debug)]
pub struct CompileArgs {
    /// The kernel file (`.pk`; a `.c` file: its `#pragma scop` regions), or `-` for
    /// standard input.
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
    /// The scheduling algorithm: pluto (the default everywhere), feautrier, isl or identity
    /// (the original order). `pluto` falls back to `isl`, and any to the original order,
    /// when it fails.
    #[arg(long, default_value = DEFAULT_SCHEDULER)]
    pub scheduler: String,
    #[command(flatten)]
    pub schedule: ScheduleOptions,
    #[command(flatten)]
    pub codegen: CodegenArgs,
    /// Adds a transformation after the optimizer's own, checked only by its final legality
    /// check (a debugging aid: `reverse-outermost` is deliberately wrong).
    #[arg(long, hide = true, value_name = "NAME")]
    pub pass: Vec<String>,
}

/// What to compile and how.
pub struct Compilation<'a> {
    /// The kernel file.
    pub file: &'a str,
    /// Which kernel of it.
    pub kernel: Option<&'a str>,
    /// The scheduler's name (`pluto` falls back to `isl`, and any to the original order).
    pub scheduler: &'a str,
    /// Scheduling and transformation flags.
    pub schedule: &'a ScheduleOptions,
    /// The register blocks (`None`: no register tiling).
    pub register: Option<RegisterBlocks>,
    /// Transformations added after the optimizer's own.
    pub passes: &'a [&'static dyn Pass],
    /// The back end's options.
    pub codegen: CodegenOptions,
}

/// Lifts, optimizes and prints the chosen kernel of a file as C.
pub fn generate(c: &Compilation) -> Result<String, CliError> {
    let lifted = lift_one(c.file, c.kernel, &c.schedule.define, &c.schedule.c)?;
    let optimized = optimize_lifted(&lifted, c)?;
    Ok(codegen::generate(
        &lifted.program,
        &optimized.schedule,
        &c.codegen,
    )?)
}

/// Optimizes a lifted kernel as `c` says (its file and kernel aside): with the chosen
/// scheduler, falling back to isl's after Pluto and to the original order after any; the
/// optimizer's refusals are printed as notes.
pub fn optimize_lifted(lifted: &Lifted, c: &Compilation) -> Result<Optimized, CliError> {
    let transforms = transform_options(c.schedule, c.register)?;
    let problem = c.schedule.problem(lifted);
    let (optimized, _) = optimize_with_fallback(
        &problem,
        c.scheduler,
        c.schedule.given.as_deref(),
        &transforms,
        c.passes,
    )?;
    for note in optimized.notes.iter().filter(|n| n.is_refusal()) {
        eprintln!("note: {}: {note}", lifted.program.kernel.name);
    }
    Ok(optimized)
}

/// The chosen kernel compiled for the NPU, as `.npu` text with a header saying what it is.
fn npu_program(args: &CompileArgs) -> Result<String, CliError> {
    let kernel = choose(
        read_kernels(&args.file, &args.schedule.c)?,
        |k| &k.name,
        args.kernel.as_deref(),
        &args.file,
    )?;
    let params = ParamValues::resolve(&kernel, &defines(&args.schedule.define), &BTreeMap::new())
        .map_err(|e| CliError::User(e.to_string()))?;
    let sizes: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let machine = npu_machine(args.schedule.machine.as_deref())?;
    let compiled =
        codegen::npu::compile(&kernel, &sizes, &machine, args.schedule.reorder_reductions)
            .map_err(|e| match e {
                codegen::npu::NpuError::Internal(_) => CliError::Internal(e.to_string()),
                _ => CliError::User(e.to_string()),
            })?;
    let mut header = format!(
        "# {} compiled by polyc for `{}` ({} cores).\n",
        kernel.name, machine.name, machine.cores
    );
    for line in compiled.plan.describe() {
        header.push_str(&format!("# {line}\n"));
    }
    Ok(format!("{header}\n{}", npu_sim::print(&compiled.program)))
}

/// The NPU machine `--machine` names with `--target npu`: a preset or a TOML file,
/// [`DEFAULT_NPU_MACHINE`] when none is named.
pub fn npu_machine(name: Option<&str>) -> Result<npu_sim::Machine, CliError> {
    npu_sim::Machine::load(name.unwrap_or(DEFAULT_NPU_MACHINE))
        .map_err(|e| CliError::User(e.to_string()))
}

/// The NPU machine of `--target npu` when `--machine` names none.
pub const DEFAULT_NPU_MACHINE: &str = "ascend-like";

/// Runs `polyc compile`.
pub fn run(args: &CompileArgs) -> Result<(), CliError> {
    if args.target == Target::Npu {
        super::schedule_file::cpu_only(
            args.schedule.given.is_some(),
            "the NPU back end (it fixes its own loop order)",
        )?;
        return write(&args.output, &npu_program(args)?);
    }
    let passes = (args.pass.iter())
        .map(|name| {
            pass_named(name).ok_or_else(|| CliError::User(format!("unknown pass `{name}`")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let code = generate(&Compilation {
        file: &args.file,
        kernel: args.kernel.as_deref(),
        scheduler: &args.scheduler,
        schedule: &args.schedule,
        register: args.codegen.register(),
        passes: &passes,
        codegen: args.codegen.options(args.harness),
    })?;
    write(&args.output, &code)
}

/// Writes `text` to `path` (`-`: standard output).
fn write(path: &std::path::Path, text: &str) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        print!("{text}");
        Ok(())
    } else {
        std::fs::write(path, text)
            .map_err(|e| CliError::User(format!("cannot write `{}`: {e}", path.display())))
    }
}
