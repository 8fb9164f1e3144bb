//! `polyc compare`: several schedulers on several kernels, side by side.

use super::compile::CodegenArgs;
use super::format::Format;
use super::input::lift_file;
use super::progress::Progress;
use super::report::{Band, Report};
use super::schedule::{find_scheduler, transform_options, ScheduleOptions};
use super::timing::{optimize_and_time, Timing};
use crate::error::CliError;
use scheduler::compare::{cells, csv_of, measure, table_of, Measurement, HEADER};
use scheduler::registry::all_schedulers;
use serde::Serialize;
use std::num::NonZeroU32;
use std::time::Duration;

/// Arguments of `polyc compare`.
#[derive(clap::Args, Serialize, Debug)]
pub struct CompareArgs {
    /// The kernel files (`.pk`).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The schedulers to compare, comma-separated (default: every scheduler, the built-in
    /// pluto, feautrier, isl and identity, then the plug-ins).
    #[arg(long, value_delimiter = ',')]
    pub schedulers: Option<Vec<String>>,
    /// How the results are printed (`--format` is another name for it).
    #[arg(long = "emit", alias = "format", value_enum, default_value = "table")]
    pub emit: Format,
    /// How many times each scheduler runs on each kernel, and with `--run` how many times
    /// each schedule's program runs: the times printed are the medians (the JSON lists
    /// every run's).
    #[arg(long, default_value = "1")]
    pub repeat: NonZeroU32,
    /// Also build each schedule as `polyc compile` would (the scheduler's own schedule, no
    /// fallback, register tiles as `--register-tile` says) with `gcc -O3 -march=native
    /// -fopenmp` and time its kernel: median, fastest and slowest of `--repeat` runs, and
    /// the speed-up over the original order (`identity`) when it is compared too.
    #[arg(long)]
    pub run: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub options: ScheduleOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub codegen: CodegenArgs,
}

/// The run columns added to the table with `--run`.
const RUN_HEADER: [&str; 4] = ["run ms", "min", "max", "speed-up"];

/// Runs `polyc compare`: one row per kernel and scheduler.
pub fn run(args: &CompareArgs) -> Result<(), CliError> {
    let schedulers = match &args.schedulers {
        Some(names) => (names.iter())
            .map(|n| find_scheduler(n.trim()))
            .collect::<Result<Vec<_>, _>>()?,
        None => all_schedulers(),
    };
    let transforms = transform_options(&args.options, None)?;
    let built = transform_options(&args.options, args.codegen.register())?;
    let dir = tempfile::tempdir().map_err(super::bench::internal)?;
    let mut rows = Vec::new();
    let lifted_files = (args.files.iter())
        .map(|file| lift_file(file, &args.options.define, &args.options.c))
        .collect::<Result<Vec<_>, _>>()?;
    let jobs = lifted_files.iter().map(Vec::len).sum::<usize>() * schedulers.len();
    let progress = Progress::new(jobs as u64);
    for lifted in lifted_files.iter().flatten() {
        let problem = args.options.problem(lifted);
        for s in &schedulers {
            progress.start(format!("{} {}", lifted.program.kernel.name, s.name()));
            let runs: Vec<Measurement> = (0..args.repeat.get())
                .map(|_| measure(&problem, s.as_ref(), &transforms))
                .collect();
            let mut row = Row::of(runs);
            if args.run {
                let run = Run::of(
                    optimize_and_time(
                        &problem,
                        s.as_ref(),
                        &built,
                        &args.codegen.options(true),
                        &args.options.define,
                        args.repeat.get(),
                        dir.path(),
                    )
                    .map(|(_, timing)| timing),
                );
                if let Some(error) = &run.error {
                    progress.note(&format!("note: {} {}: {error}", row.kernel, row.scheduler));
                }
                row.run = Some(run);
            }
            rows.push(row);
            progress.done();
        }
    }
    drop(progress);
    match args.emit {
        Format::Table => print!("{}", table_of(&header(args.run), &table_cells(&rows))),
        Format::Csv => print!("{}", csv_of(&header(args.run), &table_cells(&rows))),
        Format::Json => {
            let machine = Some(args.options.tile_machine()?);
            Report::new("compare", machine, args, &rows).print()?;
        }
    }
    Ok(())
}

/// The table's columns.
fn header(run: bool) -> Vec<&'static str> {
    let extra = if run { &RUN_HEADER[..] } else { &[] };
    HEADER.iter().chain(extra).copied().collect()
}

/// The table's rows: the scheduling columns of each median, with `--run` the run's.
fn table_cells(rows: &[Row]) -> Vec<Vec<String>> {
    let medians: Vec<Measurement> = rows.iter().map(|r| r.median.clone()).collect();
    let mut cells = cells(&medians);
    for (cells, row) in cells.iter_mut().zip(rows) {
        let Some(run) = &row.run else { continue };
        let baseline = (rows.iter())
            .find(|r| r.kernel == row.kernel && r.scheduler == "identity")
            .and_then(|r| r.run.as_ref()?.timing.as_ref());
        match &run.timing {
            Some(t) => cells.extend([
                format!("{:.2}", t.median_ms),
                format!("{:.2}", t.min_ms),
                format!("{:.2}", t.max_ms),
                baseline.map_or("-".into(), |b| format!("{:.2}", b.median_ms / t.median_ms)),
            ]),
            None => cells.extend(["failed".into(), "-".into(), "-".into(), "-".into()]),
        }
    }
    cells
}

/// One scheduler on one kernel: the scheduling runs, and with `--run` the program's runs.
#[derive(Serialize, Debug)]
struct Row {
    /// The kernel.
    kernel: String,
    /// The scheduler.
    scheduler: &'static str,
    /// Why it failed (`null` when it succeeded).
    error: Option<String>,
    /// The bands of its schedule after the transformations.
    bands: Vec<Band>,
    /// Its parallel loops (`null` when it failed).
    parallel_loops: Option<usize>,
    /// The median time to schedule and transform, in milliseconds.
    ms: f64,
    /// Every run's time to schedule and transform, in milliseconds.
    ms_runs: Vec<f64>,
    /// With `--run`, the program's times.
    run: Option<Run>,
    /// The median scheduling run, for the table.
    #[serde(skip)]
    median: Measurement,
}

impl Row {
    /// The row of `runs`: the first run's outcome (each run computes the same) with the
    /// median time, and every run's time.
    fn of(runs: Vec<Measurement>) -> Row {
        let ms = |t: &Duration| t.as_secs_f64() * 1000.0;
        let mut times: Vec<Duration> = runs.iter().map(|m| m.time).collect();
        let ms_runs = times.iter().map(ms).collect();
        times.sort();
        let median = Measurement {
            time: times[times.len() / 2],
            ..runs.into_iter().next().expect("at least one run")
        };
        let (error, bands, parallel_loops) = match &median.outcome {
            Ok(shape) => (
                None,
                shape.bands.iter().map(Band::from).collect(),
                Some(shape.parallel_loops),
            ),
            Err(e) => (Some(e.clone()), Vec::new(), None),
        };
        Row {
            kernel: median.kernel.clone(),
            scheduler: median.scheduler,
            error,
            bands,
            parallel_loops,
            ms: ms(&median.time),
            ms_runs,
            run: None,
            median,
        }
    }
}

/// A schedule's program, timed, or why it could not be.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Run {
    /// The times (absent when it failed).
    #[serde(flatten)]
    pub timing: Option<Timing>,
    /// Why it could not be built or run (`null` when it ran).
    pub error: Option<String>,
}

impl Run {
    /// The run of an attempt.
    pub fn of(attempt: Result<Timing, CliError>) -> Run {
        match attempt {
            Ok(t) => Run {
                timing: Some(t),
                error: None,
            },
            Err(e) => Run {
                timing: None,
                error: Some(e.to_string()),
            },
        }
    }
}
