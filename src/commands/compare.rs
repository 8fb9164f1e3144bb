//! `polyc compare`: several schedulers on several kernels, side by side.

use super::format::Format;
use super::input::lift_file;
use super::schedule::{find_scheduler, transform_options, ScheduleOptions};
use crate::error::CliError;
use scheduler::compare::{csv, measure, table, Measurement};
use scheduler::registry::all_schedulers;
use scheduler::transform::summary::BandInfo;
use serde_json::{json, Value};
use std::num::NonZeroU32;
use std::time::Duration;

/// Arguments of `polyc compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The kernel files (`.pk`).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The schedulers to compare, comma-separated (default: every scheduler, the built-in
    /// pluto, feautrier, isl and identity, then the plug-ins).
    #[arg(long, value_delimiter = ',')]
    pub schedulers: Option<Vec<String>>,
    /// How the results are printed.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// How many times each scheduler runs on each kernel: the time printed is the median
    /// (the JSON lists every run's).
    #[arg(long, default_value = "1")]
    pub repeat: NonZeroU32,
    #[command(flatten)]
    pub options: ScheduleOptions,
}

/// Runs `polyc compare`: one row per kernel and scheduler.
pub fn run(args: &CompareArgs) -> Result<(), CliError> {
    let schedulers = match &args.schedulers {
        Some(names) => (names.iter())
            .map(|n| find_scheduler(n.trim()))
            .collect::<Result<Vec<_>, _>>()?,
        None => all_schedulers(),
    };
    let transforms = transform_options(&args.options)?;
    let mut rows = Vec::new();
    for file in &args.files {
        for lifted in lift_file(file, &args.options.define, &args.options.c)? {
            let problem = args.options.problem(&lifted);
            for s in &schedulers {
                let runs: Vec<Measurement> = (0..args.repeat.get())
                    .map(|_| measure(&problem, s.as_ref(), &transforms))
                    .collect();
                rows.push(Repeated::of(runs));
            }
        }
    }
    let medians: Vec<Measurement> = rows.iter().map(Repeated::median).collect();
    match args.format {
        Format::Table => print!("{}", table(&medians)),
        Format::Csv => print!("{}", csv(&medians)),
        Format::Json => {
            let all: Vec<Value> = rows.iter().map(Repeated::json).collect();
            println!("{:#}", Value::Array(all));
        }
    }
    Ok(())
}

/// One scheduler's runs on one kernel: the first run's outcome (each run computes the same)
/// and every run's time.
struct Repeated {
    first: Measurement,
    times: Vec<Duration>,
}

impl Repeated {
    fn of(runs: Vec<Measurement>) -> Repeated {
        let times = runs.iter().map(|m| m.time).collect();
        let first = runs.into_iter().next().expect("at least one run");
        Repeated { first, times }
    }

    /// The first run with the median time.
    fn median(&self) -> Measurement {
        let mut sorted = self.times.clone();
        sorted.sort();
        Measurement {
            time: sorted[sorted.len() / 2],
            ..self.first.clone()
        }
    }

    fn json(&self) -> Value {
        let m = self.median();
        let ms = |t: &Duration| t.as_secs_f64() * 1000.0;
        let (bands, parallel_loops, error) = match &m.outcome {
            Ok(shape) => (
                shape.bands.iter().map(band_json).collect(),
                json!(shape.parallel_loops),
                Value::Null,
            ),
            Err(e) => (Vec::new(), Value::Null, json!(e)),
        };
        json!({
            "kernel": m.kernel,
            "scheduler": m.scheduler,
            "error": error,
            "bands": bands,
            "parallel_loops": parallel_loops,
            "ms": ms(&m.time),
            "ms_runs": self.times.iter().map(ms).collect::<Vec<_>>(),
        })
    }
}

fn band_json(b: &BandInfo) -> Value {
    json!({
        "depth": b.depth,
        "members": b.members,
        "permutable": b.permutable,
        "parallel_members": b.parallel,
        "tiling": b.tiling(),
    })
}
