//! `polyc study`: every scheduler on every kernel file, each (kernel, scheduler) pair an
//! independent job that schedules, builds and times the kernel and appends one JSON line
//! (a report, `docs/studies.md`) to a JSON-lines file. `--resume` skips the jobs already in
//! the file; `--list-jobs` and `--job INDEX` let GNU parallel or a Slurm job array spread
//! the jobs over processes and machines, all appending to one file (or one each, then
//! concatenated).

use super::compare::Run;
use super::compile::CodegenArgs;
use super::input::lift_one;
use super::progress::Progress;
use super::report::{Band, Report};
use super::schedule::{find_scheduler, transform_options, ScheduleOptions};
use super::timing::optimize_and_time;
use crate::error::CliError;
use scheduler::transform::TransformOptions;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `polyc study`.
#[derive(clap::Args, Debug)]
pub struct StudyArgs {
    /// The kernel files (`.pk`, one kernel each).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The JSON-lines file each job appends its line to.
    #[arg(long, value_name = "FILE", required_unless_present = "list_jobs")]
    pub out: Option<PathBuf>,
    /// Skip the jobs whose line is already in `--out` (same file, scheduler, sizes and
    /// options); without it, an `--out` that already holds lines is refused unless `--job`
    /// is given.
    #[arg(long)]
    pub resume: bool,
    /// Print the jobs, one line each (`INDEX FILE SCHEDULER`), and run none.
    #[arg(long, conflicts_with = "job")]
    pub list_jobs: bool,
    /// Run only the job with this index (from 0, as `--list-jobs` numbers them).
    #[arg(long, value_name = "INDEX")]
    pub job: Option<usize>,
    #[command(flatten)]
    pub study: StudyOptions,
}

/// The options of a study that every job's line records (and `--resume` compares).
#[derive(clap::Args, Serialize, Debug, Clone)]
pub struct StudyOptions {
    /// The schedulers, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pluto,feautrier,isl,identity"
    )]
    pub schedulers: Vec<String>,
    /// Parameter values per kernel file, for its runs: a TOML file of tables named after
    /// the files' stems, e.g. `gemm = { NI = 200, NJ = 220, NK = 240 }`
    /// (`docs/studies/polybench-medium.toml`); a file without a table keeps its defaults.
    /// The kernel is scheduled with its parameters symbolic (tiles sized for the declared
    /// defaults), as `polyc bench -D` schedules it; `-D` fixes a parameter for both.
    #[arg(long, value_name = "FILE")]
    pub sizes: Option<PathBuf>,
    /// How many times each job's program runs (median, fastest and slowest recorded).
    #[arg(long, default_value = "5")]
    pub repeat: NonZeroU32,
    #[command(flatten)]
    #[serde(flatten)]
    pub schedule: ScheduleOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub codegen: CodegenArgs,
}

/// What identifies a job in the JSON-lines file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// Its index among the study's jobs.
    pub index: usize,
    /// The kernel file.
    pub file: String,
    /// The scheduler.
    pub scheduler: String,
    /// The parameters fixed for it (`--sizes`, then `-D`).
    pub define: BTreeMap<String, i64>,
}

/// One job's results: the line's `results`.
#[derive(Serialize, Debug)]
struct JobResult {
    /// The job.
    job: Job,
    /// The kernel's name.
    kernel: String,
    /// Why scheduling failed (`null` when it succeeded; there is then no run).
    error: Option<String>,
    /// The bands of the optimized schedule.
    bands: Vec<Band>,
    /// Its parallel loops.
    parallel_loops: Option<usize>,
    /// What the optimizer did or refused.
    notes: Vec<String>,
    /// The time to schedule, optimize, build and run everything, in milliseconds.
    job_ms: f64,
    /// The program's times, or why it could not be built or run.
    run: Run,
}

/// Runs `polyc study`.
pub fn run(args: &StudyArgs) -> Result<(), CliError> {
    let jobs = jobs(&args.files, &args.study)?;
    if args.list_jobs {
        for j in &jobs {
            println!("{} {} {}", j.index, j.file, j.scheduler);
        }
        return Ok(());
    }
    let selected: Vec<&Job> = match args.job {
        Some(i) => vec![jobs.get(i).ok_or_else(|| {
            CliError::User(format!(
                "job {i} does not exist (the study has {} jobs, from 0)",
                jobs.len()
            ))
        })?],
        None => jobs.iter().collect(),
    };
    let out = args
        .out
        .as_deref()
        .expect("clap requires `--out` without `--list-jobs`");
    let options = serde_json::to_value(&args.study).map_err(internal)?;
    let done = done_jobs(out, &options)?;
    if !args.resume && args.job.is_none() && !done.lines.is_empty() {
        return Err(CliError::User(format!(
            "{} already holds {} lines: add `--resume` to run the jobs it lacks, or choose \
             another `--out`",
            out.display(),
            done.lines.len()
        )));
    }
    let todo: Vec<&Job> = (selected.into_iter())
        .filter(|j| !(args.resume && done.jobs.contains(j)))
        .collect();
    let transforms = transform_options(&args.study.schedule, args.study.codegen.register())?;
    let machine = args.study.schedule.tile_machine()?;
    let dir = tempfile::tempdir().map_err(internal)?;
    let progress = Progress::new(todo.len() as u64);
    for job in todo {
        progress.start(format!("{} {}", job.file, job.scheduler));
        let result = run_job(job, &args.study, &transforms, dir.path())?;
        if let Some(e) = result.error.as_ref().or(result.run.error.as_ref()) {
            progress.note(&format!("note: {} {}: {e}", job.file, job.scheduler));
        }
        let report = Report::new("study", Some(machine.clone()), &args.study, result);
        append(out, &report)?;
        progress.done();
    }
    Ok(())
}

/// The study's jobs: each file with each scheduler, files outermost.
fn jobs(files: &[String], study: &StudyOptions) -> Result<Vec<Job>, CliError> {
    let sizes = match &study.sizes {
        Some(path) => read_sizes(path)?,
        None => BTreeMap::new(),
    };
    for s in &study.schedulers {
        find_scheduler(s.trim())?;
    }
    let mut jobs = Vec::new();
    for file in files {
        let stem = Path::new(file)
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        let mut define = sizes.get(&stem).cloned().unwrap_or_default();
        define.extend(study.schedule.define.iter().cloned());
        for s in &study.schedulers {
            jobs.push(Job {
                index: jobs.len(),
                file: file.clone(),
                scheduler: s.trim().to_owned(),
                define: define.clone(),
            });
        }
    }
    Ok(jobs)
}

/// The parameter values of a sizes file, by file stem.
fn read_sizes(path: &Path) -> Result<BTreeMap<String, BTreeMap<String, i64>>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::User(format!("cannot read `{}`: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| CliError::User(format!("{}: {e}", path.display())))
}

/// Runs one job.
fn run_job(
    job: &Job,
    study: &StudyOptions,
    transforms: &TransformOptions,
    dir: &Path,
) -> Result<JobResult, CliError> {
    let start = Instant::now();
    // Scheduled with the parameters `-D` fixes (the others symbolic, as `polyc bench`
    // schedules), run with the job's.
    let define: Vec<(String, i64)> = job.define.clone().into_iter().collect();
    let lifted = lift_one(&job.file, None, &study.schedule.define, &study.schedule.c)?;
    let problem = study.schedule.problem(&lifted);
    let scheduler = find_scheduler(&job.scheduler)?;
    let attempt = optimize_and_time(
        &problem,
        scheduler.as_ref(),
        transforms,
        &study.codegen.options(true),
        &define,
        study.repeat.get(),
        dir,
    );
    let mut result = JobResult {
        job: job.clone(),
        kernel: lifted.program.kernel.name.clone(),
        error: None,
        bands: Vec::new(),
        parallel_loops: None,
        notes: Vec::new(),
        job_ms: 0.0,
        run: Run::of(Err(CliError::User("not scheduled".into()))),
    };
    match attempt {
        Ok((optimized, timing)) => {
            let tree = &optimized.tree;
            result.bands = (scheduler::transform::summary::bands(tree).iter())
                .map(Band::from)
                .collect();
            result.parallel_loops = Some(scheduler::transform::analysis::parallel_loops(tree, 0)?);
            result.notes = optimized.notes.iter().map(ToString::to_string).collect();
            result.run = Run::of(Ok(timing));
        }
        Err(e) => result.error = Some(e.to_string()),
    }
    result.job_ms = start.elapsed().as_secs_f64() * 1000.0;
    Ok(result)
}

/// The lines already in a study's file and the jobs among them run with `options`.
struct Done {
    lines: Vec<String>,
    jobs: Vec<Job>,
}

/// Reads the lines of `path` (none when it does not exist).
fn done_jobs(path: &Path, options: &serde_json::Value) -> Result<Done, CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(CliError::User(format!(
                "cannot read `{}`: {e}",
                path.display()
            )))
        }
    };
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let mut jobs = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            CliError::User(format!(
                "{}:{}: not a study line: {e}",
                path.display(),
                n + 1
            ))
        })?;
        if &value["options"] != options {
            continue;
        }
        let job = serde_json::from_value(value["results"]["job"].clone()).map_err(|e| {
            CliError::User(format!(
                "{}:{}: no job in the line: {e}",
                path.display(),
                n + 1
            ))
        })?;
        jobs.push(job);
    }
    Ok(Done { lines, jobs })
}

/// Appends `report` to `path` as one line, in one write (so that jobs running at once on
/// one file do not interleave their lines).
fn append<O: Serialize, R: Serialize>(path: &Path, report: &Report<O, R>) -> Result<(), CliError> {
    let mut line = serde_json::to_string(report).map_err(internal)?;
    line.push('\n');
    let cannot =
        |e: std::io::Error| CliError::User(format!("cannot write `{}`: {e}", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(cannot)?;
    file.write_all(line.as_bytes()).map_err(cannot)
}

fn internal(e: impl std::fmt::Display) -> CliError {
    CliError::Internal(e.to_string())
}
