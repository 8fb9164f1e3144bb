//! `polyc bench FILE.c`: a PolyBench-style C file (a kernel function with `#pragma scop`
//! regions, a `main` that initialises, times the kernel under `POLYBENCH_TIME` and dumps
//! the arrays under `POLYBENCH_DUMP_ARRAYS`) timed as it is, three ways: (a) the original
//! with `gcc -O3 -march=native`, (b) the original through Polly (`clang-16 -O3 -march=native
//! -mllvm -polly -mllvm -polly-parallel -fopenmp`), (c) `polyc c`'s rewrite (tiled,
//! parallel) with `gcc -O3 -march=native -fopenmp`. Every build has the user's `-I`/`-D` and
//! the other sources of `--link`, and no flag of ours beyond them (no `-ffp-contract=off`).
//!
//! Before anything is timed, each variant is built with `-DPOLYBENCH_DUMP_ARRAYS` and its
//! output compared with (a)'s: identical, or equal within one unit of the last printed digit
//! of each number. Where they differ more, the cause may be fused multiply-adds alone: by
//! default gcc and clang contract `a * b + c` where they see it, and which products they
//! see depends on the loop nest's shape and on the compiler; on an ill-conditioned kernel
//! (gramschmidt) that changes printed digits. So the variant and the original, the latter
//! built by the variant's own compiler without the transformation (`gcc -O3 -march=native`,
//! or `clang-16 -O3 -march=native` for Polly), are both rebuilt with contraction off
//! (`-ffp-contract=off`) and their dumps compared again: agreeing there, the transformation
//! is exact and the variant is timed as the user builds it. polyc's variant that still
//! differs stops the benchmark (polyc's own bug); a peer's is shown and not timed.
//!
//! The timed builds have `-DPOLYBENCH_TIME`: a run's time is what it prints on standard output when that is a number alone (PolyBench's timer),
//! else the run's wall time. Variants run
//! in turn, round after round; the table gives medians and speed-ups over (a), and
//! `polyc bench` ends with the geometric means over the files.

use super::bench::{internal, median, run_once, BenchArgs};
use super::cfile::{rewrite_file, Expand};
use super::compile::Compilation;
use super::schedule::ScheduleOptions;
use crate::error::CliError;
use codegen::toolchain::{CCompiler, FloatMode};
use frontend::c::cpp::Cpp;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One way of building and running the file.
struct Variant {
    name: &'static str,
    compiler: CCompiler,
    /// The same compiler without the transformation (Polly's is clang-16 alone).
    plain: CCompiler,
    /// What this variant compiles (the original, or polyc's rewrite).
    source: PathBuf,
    /// Whether it is polyc's own (whose wrong dumps are an internal error, not a peer's).
    ours: bool,
    /// The built executables: with the dumps, and timed.
    check: PathBuf,
    timed: PathBuf,
    times: Vec<f64>,
}

/// The speed-ups over (a) of each variant, file by file.
#[derive(Default)]
pub struct Speedups {
    by_variant: Vec<(&'static str, Vec<f64>)>,
}

impl Speedups {
    /// Adds one file's speed-ups.
    pub fn add(&mut self, file: Vec<(&'static str, f64)>) {
        for (name, s) in file {
            match self.by_variant.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push(s),
                None => self.by_variant.push((name, vec![s])),
            }
        }
    }

    /// Prints the geometric mean of each variant's speed-ups (when C files were benchmarked).
    pub fn print(&self) {
        if self.by_variant.is_empty() {
            return;
        }
        println!("geometric mean of the speed-ups over the original (gcc -O3):");
        for (name, v) in &self.by_variant {
            let mean = (v.iter().map(|s| s.ln()).sum::<f64>() / v.len() as f64).exp();
            println!("  {name:<28} {mean:>6.2}x  over {} file(s)", v.len());
        }
    }
}

/// How a variant's dumps agree with the original's.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Agreement {
    /// The same text.
    Identical,
    /// The same words, numbers within one unit of their last printed digit.
    WithinPrintedPrecision,
    /// Different from (a)'s (the first difference given), but agreeing with the original
    /// when both are built by the variant's compiler with contraction off.
    WithoutContraction(String),
    /// Different from (a)'s, with contraction off too (both differences given): not timed.
    Disagree(String),
}

/// One unit of the last digit of a printed number (`0.25` -> 0.01, `1.5e3` -> 100).
fn last_digit_unit(text: &str) -> f64 {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(k) => (&text[..k], text[k + 1..].parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let decimals = mantissa.find('.').map_or(0, |k| mantissa.len() - k - 1);
    10f64.powi(exponent - i32::try_from(decimals).unwrap_or(i32::MAX))
}

/// Whether `got` prints what `expected` prints (see [`Agreement`]), or the first difference.
fn agreement(expected: &str, got: &str) -> Result<Agreement, String> {
    if expected == got {
        return Ok(Agreement::Identical);
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (
        expected.split_whitespace().collect(),
        got.split_whitespace().collect(),
    );
    if a.len() != b.len() {
        return Err(format!("{} words printed instead of {}", b.len(), a.len()));
    }
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        if x == y {
            continue;
        }
        let close = match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(p), Ok(q)) => {
                let unit = last_digit_unit(x).max(last_digit_unit(y));
                (p - q).abs() <= unit * (1.0 + 1e-9) + 1e-12 * p.abs().max(q.abs())
            }
            _ => false,
        };
        if !close {
            return Err(format!("word {k}: `{y}` instead of `{x}`"));
        }
    }
    Ok(Agreement::WithinPrintedPrecision)
}

/// Benchmarks one C file; returns the speed-up of each variant over (a).
pub fn bench_file(
    args: &BenchArgs,
    file: &str,
    dir: &Path,
) -> Result<Vec<(&'static str, f64)>, CliError> {
    let stem = Path::new(file)
        .file_stem()
        .map_or("kernel".into(), |s| s.to_string_lossy().into_owned());
    let cpp = Cpp {
        include: args.include.clone(),
        define: args.define.clone(),
    };
    let schedule = ScheduleOptions {
        tile: Some(args.tile.clone().unwrap_or_default()),
        tile2: None,
        fuse: None,
        parallel: true,
        reorder_reductions: false,
        max_coefficient: None,
        define: Vec::new(),
        given: None,
        machine: args.machine.clone(),
        c: Default::default(),
        rar: args.rar,
    };
    let compilation = Compilation {
        file,
        kernel: None,
        scheduler: &args.scheduler,
        schedule: &schedule,
        register: args.codegen.register(),
        passes: &[],
        codegen: args.codegen.options(false),
    };
    let rewritten = rewrite_file(file, &cpp, &compilation, Expand::Yes)?;
    if rewritten.unchanged > 0 {
        eprintln!(
            "note: {file}: {} region(s) left unchanged in polyc's variant",
            rewritten.unchanged
        );
    }
    let rewrite = dir.join(format!("{stem}.polyc.c"));
    std::fs::write(&rewrite, &rewritten.text).map_err(internal)?;
    // The rewrite lives elsewhere: its `#include "..."` must still find the file's headers.
    let home = Path::new(file)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut flags: Vec<String> = (args.include.iter())
        .map(|d| format!("-I{d}"))
        .chain(args.define.iter().map(|d| format!("-D{d}")))
        .collect();
    flags.push(format!("-I{}", home.display()));
    let compiler = |program: &str, flags: &[&str]| {
        CCompiler::new(program, flags).with_float(FloatMode::AsTyped)
    };
    let gcc = |flags: &[&str]| compiler("gcc", flags);
    let plain_gcc = || gcc(&["-O3", "-march=native"]);
    // (name, compiler, the same compiler without the transformation, source).
    let candidates = [
        (
            "original (gcc -O3)",
            plain_gcc(),
            plain_gcc(),
            PathBuf::from(file),
        ),
        // Missing clang-16, Polly or libomp: `scripts/setup.sh clang-16 libpolly-16-dev
        // libomp-16-dev` installs them.
        (
            "original (clang-16 Polly)",
            compiler("clang-16", super::bench::POLLY_FLAGS),
            compiler("clang-16", &["-O3", "-march=native"]),
            PathBuf::from(file),
        ),
        (
            "polyc c (gcc -O3 -fopenmp)",
            gcc(&["-O3", "-march=native", "-fopenmp"]),
            plain_gcc(),
            rewrite,
        ),
    ];
    let build = |compiler: &CCompiler, source: &Path, macro_: &str, tag: String| {
        let sources: Vec<&Path> = std::iter::once(source)
            .chain(args.link.iter().map(Path::new))
            .collect();
        let exe = dir.join(format!("{stem}-{tag}"));
        let mut extra = flags.clone();
        extra.push(format!("-D{macro_}"));
        compiler.compile_files(&sources, &extra, &exe).map(|_| exe)
    };
    let mut variants = Vec::new();
    for (k, (name, compiler, plain, source)) in candidates.into_iter().enumerate() {
        match (
            build(
                &compiler,
                &source,
                "POLYBENCH_DUMP_ARRAYS",
                format!("{k}-check"),
            ),
            build(&compiler, &source, "POLYBENCH_TIME", format!("{k}-timed")),
        ) {
            (Ok(check), Ok(timed)) => variants.push(Variant {
                name,
                compiler,
                plain,
                ours: source != Path::new(file),
                source,
                check,
                timed,
                times: Vec::new(),
            }),
            (Err(e), _) | (_, Err(e)) if k == 0 => return Err(CliError::User(e.to_string())),
            (Err(e), _) | (_, Err(e)) => eprintln!("note: {file}: `{name}` is skipped: {e}"),
        }
    }
    // A variant and the original, both built by the variant's compiler with contraction off.
    let exact = |v: &Variant, k: usize| {
        let exact = |c: &CCompiler| c.clone().with_float(FloatMode::Exact);
        let dump = "POLYBENCH_DUMP_ARRAYS";
        Ok::<_, codegen::toolchain::ToolchainError>((
            build(
                &exact(&v.plain),
                Path::new(file),
                dump,
                format!("{k}-exact-original"),
            )?,
            build(&exact(&v.compiler), &v.source, dump, format!("{k}-exact"))?,
        ))
    };
    let agreements = checked(&variants, |v, k| exact(v, k).map_err(internal))?;
    let timed: Vec<bool> = agreements
        .iter()
        .map(|a| !matches!(a, Some(Agreement::Disagree(_))))
        .collect();
    for _ in 0..args.rounds.max(1) {
        for v in variants.iter_mut().zip(&timed).filter(|(_, t)| **t) {
            let v = v.0;
            let start = Instant::now();
            let out = run_once(&v.timed, &[]).map_err(CliError::User)?;
            let wall = start.elapsed().as_secs_f64();
            // PolyBench's timed build prints its time alone on standard output.
            let printed = out.stdout.trim().parse().ok();
            v.times.push(printed.unwrap_or(wall));
        }
    }
    let shown: Vec<String> = (args.include.iter().map(|d| format!("-I {d}")))
        .chain(args.define.iter().map(|d| format!("-D {d}")))
        .collect();
    match shown.is_empty() {
        true => println!("{file}:"),
        false => println!("{file} ({}):", shown.join(" ")),
    }
    let base = median(&variants[0].times);
    let mut speedups = Vec::new();
    for (v, agreement) in variants.iter().zip(agreements) {
        let dumps = match agreement {
            None => "reference".to_string(),
            Some(Agreement::Identical) => "dumps identical".into(),
            Some(Agreement::WithinPrintedPrecision) => "dumps within the printed precision".into(),
            Some(Agreement::WithoutContraction(why)) => {
                format!("dumps identical with -ffp-contract=off (contracted, {why})")
            }
            Some(Agreement::Disagree(why)) => {
                println!(
                    "  {:<28} not timed: its dumps differ from the original's, with contraction off too ({why})  [{}]",
                    v.name,
                    v.compiler.describe()
                );
                continue;
            }
        };
        let m = median(&v.times);
        println!(
            "  {:<28} median {:>10.6} s  speed-up {:>6.2}x  {dumps}  [{}]",
            v.name,
            m,
            base / m,
            v.compiler.describe()
        );
        speedups.push((v.name, base / m));
    }
    Ok(speedups)
}

/// Runs each variant's dump build once and compares what it prints with the first's: how
/// each agrees (`None` for the first, the reference). A variant that differs is compared
/// again with contraction off, `exact` building it and the original so
/// ([`Agreement::WithoutContraction`] or [`Agreement::Disagree`]); polyc's variant that
/// differs then is polyc's own bug and an error.
fn checked(
    variants: &[Variant],
    exact: impl Fn(&Variant, usize) -> Result<(PathBuf, PathBuf), CliError>,
) -> Result<Vec<Option<Agreement>>, CliError> {
    let dumps = |exe: &Path| -> Result<String, CliError> {
        let run = run_once(exe, &[]).map_err(CliError::User)?;
        Ok(format!("{}{}", run.stdout, run.stderr))
    };
    let mut reference: Option<String> = None;
    let mut out = Vec::new();
    for (k, v) in variants.iter().enumerate() {
        let printed = dumps(&v.check)?;
        let Some(expected) = &reference else {
            reference = Some(printed);
            out.push(None);
            continue;
        };
        let why = match agreement(expected, &printed) {
            Ok(a) => {
                out.push(Some(a));
                continue;
            }
            Err(why) => why,
        };
        let (original, variant) = exact(v, k)?;
        out.push(Some(match agreement(&dumps(&original)?, &dumps(&variant)?) {
            Ok(_) => Agreement::WithoutContraction(why),
            Err(exact_why) if v.ours => {
                return Err(CliError::Internal(format!(
                    "the dumps of `{}` disagree with the original's: {why}; with contraction off: {exact_why}",
                    v.name
                )))
            }
            Err(exact_why) => {
                Agreement::Disagree(format!("{why}; with contraction off: {exact_why}"))
            }
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumps_agree_up_to_their_last_printed_digit() {
        assert_eq!(last_digit_unit("0.25"), 0.01);
        assert_eq!(last_digit_unit("12"), 1.0);
        assert_eq!(last_digit_unit("1.5e3"), 100.0);
        assert_eq!(
            agreement("a 1.00 2.50", "a 1.00 2.50"),
            Ok(Agreement::Identical)
        );
        assert_eq!(
            agreement("a 1.00 2.50", "a 1.01 2.50"),
            Ok(Agreement::WithinPrintedPrecision)
        );
        assert!(agreement("a 1.00 2.50", "a 1.02 2.50").is_err());
        assert!(agreement("a 1.00", "b 1.00").is_err());
        assert!(agreement("a 1.00", "a 1.00 1.00").is_err());
    }
}
