//! `polyc fuzz-schedules`: random affine kernels ([`progen`]) through every scheduler and
//! transformation setting, each schedule executed by the interpreter in its own order (and,
//! with `--compile`, as generated C) and compared bit for bit with the original order.
//!
//! A failure is polyc's: a scheduler or transformation error on a valid kernel (internal
//! errors, exhausted budgets), an optimized schedule the legality checker refuses, or
//! different results. isl's scheduler giving up ([`ScheduleError::IslDeclined`], a
//! limitation of isl's) is counted apart, as declined. Each failure is reported with the
//! seed that reproduces it (`polyc fuzz-schedules --seed S --count 1 --show`); `--shrink DIR`
//! reduces each failing program to a minimal one that fails the same way
//! ([`progen::shrink`]) and saves it, and `--replay DIR` checks saved programs instead of
//! generated ones (the regression corpus).

use super::fuzz_fault::{CFault, Failure, Fault};
use super::fuzz_npu;
use super::fuzz_parallel;
use super::fuzz_reuse::{CVerdicts, Reused};
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
use scheduler::optimizer::{optimize, OptimizeError};
use scheduler::registry::all_schedulers;
use scheduler::transform::tile_size::{RegisterBlock, RegisterBlocks};
use scheduler::transform::TransformOptions;
use scheduler::{FusePolicy, Options, Problem, ScheduleError, Scheduler};
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
    /// Also put each seed's program (its `f64` arrays as `f32`) and a random tensor kernel of
    /// the vector path's shape through the NPU back end on `ascend-like` and `mini`,
    /// simulate them and compare them with the interpreter within tolerance; a refusal with
    /// its reason passes.
    #[arg(long)]
    npu: bool,
    /// Only the NPU's kernels (`--npu` without the schedulers: much faster per seed).
    #[arg(long)]
    npu_only: bool,
    /// Print each program before checking it.
    #[arg(long)]
    show: bool,
    /// Reduce each failing program to a minimal one that fails the same way and save it in
    /// this directory as `seed-S.pk`.
    #[arg(long, value_name = "DIR")]
    shrink: Option<std::path::PathBuf>,
    /// Check every `.pk` file of this directory instead of generated programs.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["count", "seed"])]
    replay: Option<std::path::PathBuf>,
    /// How many programs to check at once, each on its own thread (default: one per core).
    /// The output is the same for any number.
    #[arg(long, value_name = "N", default_value_t = 0)]
    jobs: usize,
    /// A program still being checked after this many seconds is a failure (a hang): it is
    /// reported and the run ends with exit code 2 at once (0: no limit). Generous: the
    /// slowest of the 10^4-program run took 75 s.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    timeout: u64,
}

/// Which scheduler and setting to check: all, or only those of a failure being shrunk.
type Only<'a> = Option<&'a Failure>;

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
                ..tiled.clone()
            },
        },
        Setup {
            label: "distributed (none), tiled 4, parallel",
            options: Options {
                fuse: FusePolicy::None,
                ..Options::default()
            },
            transforms: TransformOptions {
                fuse: Some(FusePolicy::None),
                ..tiled
            },
        },
    ]
}

/// Runs `polyc fuzz-schedules`.
pub fn run(args: &FuzzArgs) -> Result<(), CliError> {
    let setups = setups();
    let legs = Legs {
        schedules: !args.npu_only,
        npu: args.npu || args.npu_only,
    };
    let compiler = CCompiler::system("-O1");
    if args.compile && !compiler.is_available() {
        return Err(CliError::User("--compile needs a C compiler (cc)".into()));
    }
    let compiler = args.compile.then_some(&compiler);
    if let Some(dir) = &args.shrink {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::User(format!("{}: {e}", dir.display())))?;
    }
    let programs = match &args.replay {
        Some(dir) => saved(dir)?,
        None => (args.seed..args.seed.saturating_add(args.count))
            .map(|seed| (seed, format!("seed {seed}"), progen::generate(seed)))
            .collect(),
    };
    let mut failing = Vec::new();
    let (mut variants, mut declined, mut built) = (0, 0, 0);
    let mut npu = NpuTally::default();
    let check = |(seed, _, text): &(u64, String, String)| {
        check_program(*seed, text, &setups, compiler, legs, None)
    };
    let take = |(seed, name, text): &(u64, String, String), checked: Result<Checked, String>| {
        if args.show {
            println!("{text}");
            if legs.npu {
                println!("{}", progen::tensor::generate(*seed));
            }
        }
        let found = match checked {
            Ok(checked) => {
                variants += checked.schedules;
                declined += checked.declined;
                built += checked.built;
                npu.matched += checked.npu.matched;
                npu.refused += checked.npu.refused;
                checked.found
            }
            Err(e) => {
                eprintln!("FAIL {name}: {}", shortened(&e));
                failing.push(name.clone());
                return Ok(());
            }
        };
        for f in &found {
            eprintln!("FAIL {name}: {}", shortened(&f.to_string()));
        }
        if !found.is_empty() {
            failing.push(name.clone());
        }
        if let Some(first) = found.iter().find(|f| !fuzz_npu::is_tensor(f.setup)) {
            if let Some(dir) = &args.shrink {
                let path = dir.join(format!("seed-{seed}.pk"));
                let small = shrunk(*seed, text, first, &setups, compiler, legs);
                std::fs::write(&path, small)
                    .map_err(|e| CliError::User(format!("{}: {e}", path.display())))?;
                eprintln!("  shrunk to {}", path.display());
            }
        }
        Ok(())
    };
    let limit = (args.timeout > 0).then(|| std::time::Duration::from_secs(args.timeout));
    let stuck = |(_, name, _): &(u64, String, String), elapsed: std::time::Duration| {
        // Its thread cannot be stopped, and would keep the run from ending: end it here.
        eprintln!(
            "FAIL {name}: still being checked after {} s (--timeout {}): a hang",
            elapsed.as_secs(),
            args.timeout
        );
        std::process::exit(i32::from(CliError::Internal(String::new()).exit_code()));
    };
    fuzz_parallel::in_order(&programs, args.jobs, limit, check, take, stuck)?;
    let what = match &args.replay {
        Some(dir) => format!("{} programs of {}", programs.len(), dir.display()),
        None => format!(
            "{} programs (seeds {}..{})",
            args.count,
            args.seed,
            args.seed.saturating_add(args.count)
        ),
    };
    let on_npu = match legs.npu {
        true => format!(
            ", on the NPU {} kernels compiled and matched, {} refused ({} legs a seed: {})",
            npu.matched,
            npu.refused,
            fuzz_npu::LEGS.len(),
            (fuzz_npu::LEGS.iter().map(|l| l.2))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        false => String::new(),
    };
    let declined = match declined {
        0 => String::new(),
        n => {
            format!(", {n} declined by isl (\"unable to carry dependences\" or out of its budget)")
        }
    };
    let compiled = match args.compile {
        true => format!(" and compiled ({built} distinct C programs built and run)"),
        false => String::new(),
    };
    println!(
        "{what}, {variants} schedules checked{compiled}{declined}{on_npu}: {} failing program(s)",
        failing.len()
    );
    match failing.is_empty() {
        true => Ok(()),
        false => Err(CliError::Internal(format!(
            "{} failing program(s); reproduce a seed with `polyc fuzz-schedules --seed S --count 1 --show`: {}",
            failing.len(),
            failing.join(", ")
        ))),
    }
}

/// The `.pk` files of `dir`, in name order, as (seed for their inputs, name, text).
fn saved(dir: &std::path::Path) -> Result<Vec<(u64, String, String)>, CliError> {
    let err = |e: std::io::Error| CliError::User(format!("{}: {e}", dir.display()));
    let mut paths: Vec<std::path::PathBuf> = (std::fs::read_dir(dir).map_err(err)?)
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(err)?;
    paths.retain(|p| p.extension().is_some_and(|e| e == "pk"));
    paths.sort();
    (paths.into_iter().enumerate())
        .map(|(k, p)| {
            let text = std::fs::read_to_string(&p)
                .map_err(|e| CliError::User(format!("{}: {e}", p.display())))?;
            Ok((k as u64, p.display().to_string(), text))
        })
        .collect()
}

/// How many candidate programs a shrink may check.
const SHRINK_BUDGET: usize = 2_000;

/// `text` reduced to a minimal program on which `failure`'s scheduler and setting still fail
/// the same way, with a header saying how ([`header`]). Candidates are checked with that
/// scheduler and setting alone (a whole check of each would be as slow as the seed's); the
/// result is then checked whole, as `--replay` checks it.
fn shrunk(
    seed: u64,
    text: &str,
    failure: &Failure,
    setups: &[Setup],
    compiler: Option<&CCompiler>,
    legs: Legs,
) -> String {
    let fails = |program: &str, only: Option<&Failure>| {
        check_program(seed, program, setups, compiler, legs, only)
            .is_ok_and(|checked| checked.found.iter().any(|f| f.same(failure)))
    };
    let small = progen::shrink::shrink(text, SHRINK_BUDGET, |candidate| {
        fails(candidate, Some(failure))
    });
    let whole = match fails(&small, None) {
        true => Replayed::Fails,
        false => Replayed::Passes,
    };
    if whole == Replayed::Passes {
        eprintln!(
            "  the shrunk program of seed {seed} fails alone but not in a whole check: keep the unshrunk one as its regression"
        );
    }
    format!("{}\n{small}", header(seed, failure, whole))
}

/// What a shrunk program does when checked whole (every scheduler and setting in turn, in
/// one isl context), as `--replay` checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Replayed {
    /// It fails the same way.
    Fails,
    /// It passes: the failure needs the program alone (an isl budget that the schedulers
    /// before it spend less of when they leave Farkas duals in the context's memo: seed 3421).
    Passes,
}

/// A shrunk program's first line: the seed, the scheduler and setting that fail and how,
/// and (`replayed`) whether a whole check fails too. `tests/fuzz/open` reads the failure
/// back from it, up to " fails".
fn header(seed: u64, failure: &Failure, replayed: Replayed) -> String {
    let whole = match replayed {
        Replayed::Fails => "",
        Replayed::Passes => {
            "; checked whole (every scheduler and setting in turn, as `--replay` checks it) it passes"
        }
    };
    format!(
        "// Shrunk from progen's seed {seed}: {} / {} fails ({:?}){whole}.",
        failure.scheduler, failure.setup, failure.fault
    )
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

/// What each program goes through: the schedulers and settings, the NPU's kernels.
#[derive(Clone, Copy, Debug)]
struct Legs {
    schedules: bool,
    npu: bool,
}

/// How many programs the NPU compiled (and matched) or refused, over its machines.
#[derive(Clone, Copy, Debug, Default)]
struct NpuTally {
    matched: usize,
    refused: usize,
}

/// What checking one program found.
struct Checked {
    /// Schedules checked.
    schedules: usize,
    /// Schedules isl's scheduler declined.
    declined: usize,
    /// Distinct C programs built and run (with `--compile`).
    built: usize,
    /// The NPU's answers (with `--npu`).
    npu: NpuTally,
    /// What failed.
    found: Vec<Failure>,
}

/// Checks one program on the `legs` asked for: under every scheduler and setup, on the NPU's
/// machines (or `only` a failure's scheduler and setup): what was checked and what failed (an
/// error: the program itself could not be set up).
fn check_program(
    seed: u64,
    text: &str,
    setups: &[Setup],
    compiler: Option<&CCompiler>,
    legs: Legs,
    only: Only,
) -> Result<Checked, String> {
    let Schedules {
        checked: schedules,
        declined,
        built,
        mut found,
    } = match legs.schedules {
        true => check_schedules(seed, text, setups, compiler, only)?,
        false => Schedules::default(),
    };
    let mut tally = NpuTally::default();
    let npu_legs = fuzz_npu::LEGS.iter().filter(|_| legs.npu);
    for &(kind, machine, label) in npu_legs {
        if only.is_some_and(|f| f.scheduler != NPU || f.setup != label) {
            continue;
        }
        let kernel = fuzz_npu::kernel_text(kind, seed, text);
        match fuzz_npu::check(seed, &kernel, machine)? {
            fuzz_npu::Outcome::Matched => tally.matched += 1,
            fuzz_npu::Outcome::Refused => tally.refused += 1,
            fuzz_npu::Outcome::Failed(detail) => found.push(Failure {
                scheduler: NPU.into(),
                setup: label,
                fault: Fault::Npu,
                detail,
            }),
        }
    }
    Ok(Checked {
        schedules,
        declined,
        built,
        npu: tally,
        found,
    })
}

/// What checking one program under every scheduler and setup found.
#[derive(Default)]
struct Schedules {
    /// Schedules checked.
    checked: usize,
    /// Schedules isl's scheduler declined ([`ScheduleError::IslDeclined`]).
    declined: usize,
    /// Distinct C programs built and run.
    built: usize,
    /// What failed.
    found: Vec<Failure>,
}

/// Checks one program under every scheduler and setup (or `only` a failure's).
fn check_schedules(
    seed: u64,
    text: &str,
    setups: &[Setup],
    compiler: Option<&CCompiler>,
    only: Only,
) -> Result<Schedules, String> {
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
    let (mut checked, mut declined) = (0, 0);
    let mut c_verdicts = CVerdicts::default();
    for scheduler in all_schedulers() {
        let scheduler = Reused::new(scheduler.as_ref());
        for setup in setups {
            if only.is_some_and(|f| f.scheduler != scheduler.name() || f.setup != setup.label) {
                continue;
            }
            let failure = |fault: Fault, detail: String| Failure {
                scheduler: scheduler.name().to_string(),
                setup: setup.label,
                fault,
                detail,
            };
            let problem = Problem {
                program: &program,
                deps: &deps,
                options: setup.options.clone(),
            };
            let schedule = match optimize(&problem, &scheduler, &setup.transforms, &[]) {
                Ok(o) => o.schedule,
                Err(OptimizeError::Schedule(ScheduleError::IslDeclined(_))) => {
                    declined += 1;
                    continue;
                }
                Err(e) => {
                    found.push(failure(Fault::of(&e), e.to_string()));
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
                Err(e) => found.push(failure(Fault::Run, format!("running the new order: {e}"))),
                Ok(()) if !memory.bit_identical(&expected) => found.push(failure(
                    Fault::Differs,
                    "the new order changes the results".into(),
                )),
                Ok(()) => {}
            }
            if let Some(compiler) = compiler {
                let options = CodegenOptions {
                    harness: true,
                    ..CodegenOptions::default()
                };
                let verdict = codegen::generate(&program, &schedule, &options)
                    .map_err(|e| (CFault::Generate, e.to_string()))
                    .and_then(|code| {
                        c_verdicts.of(code, |code| {
                            compiled(&program, code, compiler, &initial, &params, &expected)
                        })
                    });
                if let Err((fault, e)) = verdict {
                    found.push(failure(
                        Fault::GeneratedC(fault),
                        format!("generated C: {e}"),
                    ));
                }
            }
        }
    }
    Ok(Schedules {
        checked,
        declined,
        built: c_verdicts.built(),
        found,
    })
}

/// The name failures of the NPU back end go under, in the place of a scheduler's.
const NPU: &str = "npu";

/// Builds `code` (a schedule's C with its harness), runs it on `initial` and compares the
/// output arrays it writes with the interpreter's (`expected`), bit for bit; or says how
/// that failed.
fn compiled(
    program: &Program,
    code: &str,
    compiler: &CCompiler,
    initial: &Memory,
    params: &ParamValues,
    expected: &Memory,
) -> Result<(), (CFault, String)> {
    let outputs = tempfile::tempdir().map_err(|e| (CFault::Build, e.to_string()))?;
    let out = runner::compile_and_run(compiler, code, initial, params, Some(outputs.path()))
        .map_err(|e| (CFault::Build, e.to_string()))?;
    if !out.success {
        return Err((CFault::Run, out.stderr));
    }
    let kernel = &program.kernel;
    let got = runner::read_outputs(kernel, params, outputs.path())
        .map_err(|e| (CFault::Outputs, e.to_string()))?;
    let wrong = runner::disagreements(kernel, expected, &got, Comparison::Exact)
        .map_err(|e| (CFault::Outputs, e.to_string()))?;
    match wrong.is_empty() {
        true => Ok(()),
        false => Err((
            CFault::Differs,
            format!(
                "outputs differ: {}",
                wrong
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{header, Failure, Replayed};
    use crate::commands::fuzz_fault::{Fault, IslFault, SchedulingFault};

    #[test]
    fn a_shrunk_program_says_whether_it_fails_when_checked_whole() {
        let failure = Failure {
            scheduler: "feautrier".into(),
            setup: "untiled",
            fault: Fault::Scheduling(SchedulingFault::Isl(IslFault::Budget)),
            detail: String::new(),
        };
        let fails = header(3421, &failure, Replayed::Fails);
        let passes = header(3421, &failure, Replayed::Passes);
        let prefix = "// Shrunk from progen's seed 3421: feautrier / untiled fails (";
        assert!(
            fails.starts_with(prefix) && fails.ends_with(")."),
            "{fails}"
        );
        assert!(passes.starts_with(prefix), "{passes}");
        assert!(
            passes.ends_with("as `--replay` checks it) it passes."),
            "{passes}"
        );
        // what `tests/fuzz/open` reads back
        for h in [&fails, &passes] {
            let (_, after) = h.split_once(": ").unwrap();
            assert_eq!(after.split_once(" fails").unwrap().0, "feautrier / untiled");
        }
    }
}
