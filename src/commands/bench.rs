//! `polyc bench`: time a kernel three ways, alternating runs: (a) the original loop order as
//! C with `gcc -O3 -march=native`, (b) the same C through Polly (`clang-16`), (c) polyc's
//! schedule with `gcc -O3 -march=native -fopenmp`. Checksums of (b) and (c) are checked
//! against (a) before anything is timed.

use super::compile::{self, CodegenArgs};
use super::schedule::ScheduleOptions;
use crate::error::CliError;
use codegen::toolchain::{self, CCompiler, RunOutput};
use std::path::{Path, PathBuf};

/// Arguments of `polyc bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Kernel files (`.pk`), one kernel each.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Parameter values passed to every run, e.g. `-D N=2000`.
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    pub define: Vec<String>,
    /// polyc's scheduler for variant (c).
    #[arg(long, default_value = "isl")]
    pub scheduler: String,
    /// Tile sizes for variant (c).
    #[arg(long, default_value = "32")]
    pub tile: String,
    /// How many timed rounds (each runs every variant once).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    #[command(flatten)]
    pub codegen: CodegenArgs,
}

struct Variant {
    name: &'static str,
    exe: PathBuf,
    times: Vec<f64>,
}

fn options(tile: Option<String>) -> ScheduleOptions {
    ScheduleOptions {
        parallel: tile.is_some(),
        tile,
        tile2: None,
        fuse: None,
        reorder_reductions: false,
        define: Vec::new(),
    }
}

fn internal(e: impl std::fmt::Display) -> CliError {
    CliError::Internal(e.to_string())
}

fn run_once(exe: &Path, args: &[String]) -> Result<RunOutput, CliError> {
    let out = toolchain::run(exe, args).map_err(internal)?;
    if out.success {
        Ok(out)
    } else {
        Err(CliError::User(out.stderr.trim().to_owned()))
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `polyc bench`.
pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    let dir = tempfile::tempdir().map_err(internal)?;
    for file in &args.files {
        let original = compile::generate(file, None, "identity", &options(None), &{
            let mut o = args.codegen.options(true);
            o.loops.openmp = false;
            o
        })?;
        let optimized = compile::generate(
            file,
            None,
            &args.scheduler,
            &options(Some(args.tile.clone())),
            &args.codegen.options(true),
        )?;
        let gcc = CCompiler::new("gcc", &["-O3", "-march=native"]);
        let gcc_omp = CCompiler::new("gcc", &["-O3", "-march=native", "-fopenmp"]);
        let polly = CCompiler::new(
            "clang-16",
            &[
                "-O3",
                "-march=native",
                "-mllvm",
                "-polly",
                "-mllvm",
                "-polly-parallel",
                "-fopenmp",
            ],
        );
        let stem = Path::new(file)
            .file_stem()
            .map_or("kernel".into(), |s| s.to_string_lossy().into_owned());
        let build = |c: &CCompiler, code: &str, tag: &str| {
            c.build(code, dir.path(), &format!("{stem}-{tag}"))
                .map_err(internal)
        };
        let mut variants = vec![Variant {
            name: "original (gcc -O3)",
            exe: build(&gcc, &original, "a")?,
            times: Vec::new(),
        }];
        match build(&polly, &original, "b") {
            Ok(exe) => variants.push(Variant {
                name: "original (clang-16 Polly)",
                exe,
                times: Vec::new(),
            }),
            // Missing clang-16, Polly or libomp: `scripts/setup.sh clang-16 libpolly-16-dev
            // libomp-16-dev` installs them.
            Err(e) => eprintln!("note: the Polly variant is skipped: {e}"),
        }
        variants.push(Variant {
            name: "polyc (gcc -O3 -fopenmp)",
            exe: build(&gcc_omp, &optimized, "c")?,
            times: Vec::new(),
        });
        let reference = run_once(&variants[0].exe, &args.define)?.stdout;
        for v in &variants[1..] {
            let got = run_once(&v.exe, &args.define)?.stdout;
            if got != reference {
                return Err(CliError::Internal(format!(
                    "{}: checksums of `{}` differ from the original's:\n{reference}{got}",
                    file, v.name
                )));
            }
        }
        for _ in 0..args.rounds.max(1) {
            for v in &mut variants {
                v.times.extend(run_once(&v.exe, &args.define)?.times());
            }
        }
        println!("{file} ({}):", args.define.join(" "));
        for line in reference.lines() {
            println!("  {line}");
        }
        let base = median(&variants[0].times);
        for v in &variants {
            let m = median(&v.times);
            println!(
                "  {:<28} median {:>9.4} s  speed-up {:>6.2}x",
                v.name,
                m,
                base / m
            );
        }
    }
    Ok(())
}
