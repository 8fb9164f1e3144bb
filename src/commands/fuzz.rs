//! `polyc fuzz-schedules`: random affine kernels ([`progen`]) through every scheduler and
//! transformation setting, each schedule executed by the interpreter in its own order (and,
//! with `--compile`, as generated C) and compared bit for bit with the original order.
//!
//! A failure is polyc's: a scheduler or transformation error on a valid kernel (internal
//! errors, exhausted budgets), an optimized schedule the legality checker refuses, or
//! different results. Each is reported with the seed that reproduces it
//! (`polyc fuzz-schedules --seed S --count 1 --show`).

use crate::error::CliError;
use codegen::runner::{self, Comparison};
use codegen::toolchain::CCompiler;
use codegen::CodegenOptions;
use frontend::SourceFile;
use poly::deps::Dependences;
use poly::interp::{InputFiles, Interpreter, Memory, ParamValues};
use poly::isl::Ctx;
use poly::model::Program;
use poly::order::{execution_order, AnySchedule, Ties};
use scheduler::optimizer::optimize;
use scheduler::registry::all_schedulers;
use scheduler::transform::tile_size::{RegisterBlock, RegisterBlocks};
use scheduler::transform::TransformOptions;
use scheduler::{FusePolicy, Options, Problem};
use std::collections::BTreeMap;
use std::num::NonZeroU32;

/// Arguments of `polyc fuzz-schedules`.
#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    /// How many programs.
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// The seed of the first program (the others take the next seeds).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also compile every schedule to C, run it and compare its checksums (slower).
    #[arg(long)]
    compile: bool,
    /// Print each program before checking it.
    #[arg(long)]
    show: bool,
}

/// One transformation setting.
struct Setup {
    label: &'static str,
    options: Options,
    transforms: TransformOptions,
}

fn setups() -> Vec<Setup> {
    let tiles = Some(vec![NonZeroU32::new(4).expect("4 is not zero"); 8]);
    let tiled = TransformOptions {
        tile: tiles,
        parallel: true,
        ..TransformOptions::default()
    };
    vec![
        Setup {
            label: "untiled",
            options: Options::default(),
            transforms: TransformOptions::default(),
        },
        Setup {
            label: "tiled 4, parallel",
            options: Options::default(),
            transforms: tiled.clone(),
        },
        Setup {
            label: "tiled 4, parallel, register-tiled 2 x 16 bytes",
            options: Options::default(),
            transforms: TransformOptions {
                register: Some(RegisterBlocks::uniform(RegisterBlock {
                    rows: 2,
                    bytes: 16,
                })),
                ..tiled.clone()
            },
        },
        Setup {
            label: "fused (max), tiled 4, parallel",
            options: Options {
                fuse: FusePolicy::Max,
                ..Options::default()
            },
            transforms: TransformOptions {
                fuse: Some(FusePolicy::Max),
                ..tiled
            },
        },
    ]
}

/// Runs `polyc fuzz-schedules`.
pub fn run(args: &FuzzArgs) -> Result<(), CliError> {
    let setups = setups();
    let compiler = CCompiler::system("-O1");
    if args.compile && !compiler.is_available() {
        return Err(CliError::User("--compile needs a C compiler (cc)".into()));
    }
    let mut failures = Vec::new();
    let mut variants = 0;
    for seed in args.seed..args.seed.saturating_add(args.count) {
        let text = progen::generate(seed);
        if args.show {
            println!("{text}");
        }
        let mut fail = |what: String| {
            eprintln!("FAIL seed {seed}: {}", shortened(&what));
            failures.push(seed);
        };
        match check_program(seed, &text, &setups, args.compile.then_some(&compiler)) {
            Ok((n, found)) => {
                variants += n;
                found.into_iter().for_each(&mut fail);
            }
            Err(e) => fail(e),
        }
    }
    failures.dedup();
    println!(
        "{} programs (seeds {}..{}), {variants} schedules checked{}: {} failing program(s)",
        args.count,
        args.seed,
        args.seed.saturating_add(args.count),
        if args.compile { " and compiled" } else { "" },
        failures.len()
    );
    match failures.is_empty() {
        true => Ok(()),
        false => Err(CliError::Internal(format!(
            "{} failing program(s); reproduce one with `polyc fuzz-schedules --seed S --count 1 --show`: seeds {failures:?}",
            failures.len()
        ))),
    }
}

/// At most [`SHOWN_CHARS`] characters of `text` (a failure's relation can run to pages).
fn shortened(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// How much of a failure's text is shown.
const SHOWN_CHARS: usize = 400;

/// Checks one program under every scheduler and setup: the number of schedules checked and
/// what failed (an error: the program itself could not be set up).
fn check_program(
    seed: u64,
    text: &str,
    setups: &[Setup],
    compiler: Option<&CCompiler>,
) -> Result<(usize, Vec<String>), String> {
    let file = SourceFile::new(format!("fuzz{seed}.pk"), text);
    let kernel = frontend::compile(&file)
        .map_err(|d| {
            format!(
                "the generator made an invalid program:\n{}",
                d.render(&file, false)
            )
        })?
        .remove(0);
    let program = Program::build(&Ctx::default(), &kernel, &BTreeMap::new())
        .map_err(|e| format!("lifting: {e}"))?;
    let deps = Dependences::compute(&program).map_err(|e| format!("dependences: {e}"))?;
    let params = ParamValues::resolve(&kernel, &BTreeMap::new(), &BTreeMap::new())
        .map_err(|e| format!("parameters: {e}"))?;
    let fixed: BTreeMap<String, i64> = (kernel.params.iter())
        .filter_map(|p| Some((p.name.clone(), params.get(&p.name)?)))
        .collect();
    let initial = Memory::load_inputs(&kernel, &params, &InputFiles::default(), seed)
        .map_err(|e| format!("inputs: {e}"))?;
    let interpreter = Interpreter::new(&kernel, &params).map_err(|e| e.to_string())?;
    let mut expected = initial.clone();
    interpreter
        .run_original(&mut expected)
        .map_err(|e| format!("original order: {e}"))?;
    let mut found = Vec::new();
    let mut checked = 0;
    for scheduler in all_schedulers() {
        for setup in setups {
            let what = format!("{} / {}", scheduler.name(), setup.label);
            let problem = Problem {
                program: &program,
                deps: &deps,
                options: setup.options.clone(),
            };
            let schedule = match optimize(&problem, scheduler.as_ref(), &setup.transforms, &[]) {
                Ok(o) => o.schedule,
                Err(e) => {
                    found.push(format!("{what}: {e}"));
                    continue;
                }
            };
            checked += 1;
            let order = execution_order(
                &program,
                &AnySchedule::Tree(schedule.clone()),
                &fixed,
                Ties::Shuffled(seed),
            );
            let mut memory = initial.clone();
            let ran = order.map_err(|e| e.to_string()).and_then(|order| {
                (interpreter
                    .run_instances(&mut memory, order.iter().map(|(s, iv)| (*s, iv.as_slice()))))
                .map_err(|e| e.to_string())
            });
            match ran {
                Err(e) => found.push(format!("{what}: running the new order: {e}")),
                Ok(()) if !memory.bit_identical(&expected) => {
                    found.push(format!("{what}: the new order changes the results"))
                }
                Ok(()) => {}
            }
            if let Some(compiler) = compiler {
                if let Err(e) =
                    compiled(&program, &schedule, compiler, &initial, &params, &expected)
                {
                    found.push(format!("{what}: generated C: {e}"));
                }
            }
        }
    }
    Ok((checked, found))
}

/// Compiles `schedule` to C, runs it on `initial` and compares the output arrays it writes
/// with the interpreter's (`expected`), bit for bit.
fn compiled(
    program: &Program,
    schedule: &poly::isl::Schedule,
    compiler: &CCompiler,
    initial: &Memory,
    params: &ParamValues,
    expected: &Memory,
) -> Result<(), String> {
    let options = CodegenOptions {
        harness: true,
        ..CodegenOptions::default()
    };
    let code = codegen::generate(program, schedule, &options).map_err(|e| e.to_string())?;
    let outputs = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = runner::compile_and_run(compiler, &code, initial, params, Some(outputs.path()))
        .map_err(|e| e.to_string())?;
    if !out.success {
        return Err(out.stderr);
    }
    let kernel = &program.kernel;
    let got = runner::read_outputs(kernel, params, outputs.path()).map_err(|e| e.to_string())?;
    let wrong = runner::disagreements(kernel, expected, &got, Comparison::Exact)
        .map_err(|e| e.to_string())?;
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "outputs differ: {}",
            wrong
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}
