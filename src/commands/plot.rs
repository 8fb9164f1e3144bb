//! `polyc plot`: a study's speed-ups as grouped bars in SVG. Reads the JSON lines of `polyc
//! study` (one file or several, e.g. one per machine of a job array), takes each kernel's
//! and scheduler's median time (the last line of a job run twice), divides the baseline's
//! (`identity`, the original order, by default) by it, and draws one group of bars per
//! kernel, one bar per scheduler, on a logarithmic axis around 1 (bars up: faster than the
//! baseline). A job that failed or lacks its baseline gets a cross instead of a bar.

use crate::error::CliError;
use serde::Deserialize;
use std::fmt::Write;
use std::path::PathBuf;

/// Arguments of `polyc plot`.
#[derive(clap::Args, Debug)]
pub struct PlotArgs {
    /// The study's JSON-lines files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the SVG (`-`: standard output).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
    /// The scheduler the speed-ups are over (left out of the bars).
    #[arg(long, default_value = "identity")]
    pub baseline: String,
}

/// What the plot reads of a study line.
#[derive(Deserialize)]
struct Line {
    polyc: Polyc,
    results: Results,
}

#[derive(Deserialize)]
struct Polyc {
    commit: Option<String>,
    #[serde(default)]
    modified: bool,
}

impl Polyc {
    /// The build, as the plot's caption names it.
    fn label(&self) -> String {
        match (&self.commit, self.modified) {
            (Some(c), false) => format!("commit {c}"),
            (Some(c), true) => format!("commit {c}, modified"),
            (None, _) => "commit unknown".into(),
        }
    }
}

#[derive(Deserialize)]
struct Results {
    kernel: String,
    job: Job,
    run: Run,
}

#[derive(Deserialize)]
struct Job {
    scheduler: String,
}

#[derive(Deserialize)]
struct Run {
    median_ms: Option<f64>,
}

/// The speed-ups to draw.
#[derive(Debug, PartialEq)]
pub struct Speedups {
    /// The kernels, in the order the study ran them.
    pub kernels: Vec<String>,
    /// The schedulers but the baseline, in the order the study ran them.
    pub schedulers: Vec<String>,
    /// Per kernel, per scheduler: the baseline's median over the scheduler's, if both ran.
    pub values: Vec<Vec<Option<f64>>>,
    /// The baseline.
    pub baseline: String,
    /// The commits of the polyc builds that made the lines.
    pub commits: Vec<String>,
}

/// Runs `polyc plot`.
pub fn run(args: &PlotArgs) -> Result<(), CliError> {
    let mut text = String::new();
    for file in &args.files {
        text += &std::fs::read_to_string(file)
            .map_err(|e| CliError::User(format!("cannot read `{}`: {e}", file.display())))?;
        text.push('\n');
    }
    let speedups = speedups(&text, &args.baseline)?;
    let svg = svg(&speedups);
    if args.output.as_os_str() == "-" {
        print!("{svg}");
        Ok(())
    } else {
        std::fs::write(&args.output, svg)
            .map_err(|e| CliError::User(format!("cannot write `{}`: {e}", args.output.display())))
    }
}

/// The speed-ups in a study's lines (`text`) over `baseline`.
pub fn speedups(text: &str, baseline: &str) -> Result<Speedups, CliError> {
    let mut kernels: Vec<String> = Vec::new();
    let mut schedulers: Vec<String> = Vec::new();
    let mut commits: Vec<String> = Vec::new();
    let mut times = std::collections::HashMap::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let line: Line = serde_json::from_str(line)
            .map_err(|e| CliError::User(format!("line {}: not a study line: {e}", n + 1)))?;
        let r = line.results;
        if !kernels.contains(&r.kernel) {
            kernels.push(r.kernel.clone());
        }
        if r.job.scheduler != baseline && !schedulers.contains(&r.job.scheduler) {
            schedulers.push(r.job.scheduler.clone());
        }
        let build = line.polyc.label();
        if !commits.contains(&build) {
            commits.push(build);
        }
        times.insert((r.kernel, r.job.scheduler), r.run.median_ms);
    }
    if kernels.is_empty() {
        return Err(CliError::User("no study line to plot".into()));
    }
    let time = |k: &String, s: &String| times.get(&(k.clone(), s.clone())).copied().flatten();
    let values = (kernels.iter())
        .map(|k| {
            let base = time(k, &baseline.to_owned());
            (schedulers.iter())
                .map(|s| Some(base? / time(k, s)?))
                .collect()
        })
        .collect();
    Ok(Speedups {
        kernels,
        schedulers,
        values,
        baseline: baseline.to_owned(),
        commits,
    })
}

/// The bars' colours, one per scheduler (cycled).
const COLOURS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// Sizes of the drawing, in pixels.
const BAR: f64 = 8.0;
const GAP: f64 = 8.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 60.0;
const HEIGHT: f64 = 320.0;
const BOTTOM: f64 = 110.0;

/// The speed-ups as an SVG drawing.
pub fn svg(s: &Speedups) -> String {
    let group = s.schedulers.len().max(1) as f64 * BAR + GAP;
    let legend = LEFT + 110.0 * s.schedulers.len() as f64;
    let width = (LEFT + s.kernels.len() as f64 * group + 20.0)
        .max(legend)
        .max(480.0);
    let known = s.values.iter().flatten().flatten().copied();
    let (lo, hi) = known.fold((0.5f64, 2.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = (lo.log2().floor(), hi.log2().ceil());
    let y = |v: f64| TOP + HEIGHT * (hi - v.log2()) / (hi - lo);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{:.0}\" \
         font-family=\"sans-serif\" font-size=\"11\">",
        TOP + HEIGHT + BOTTOM
    );
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"18\" font-size=\"14\">Speed-up over {} (median run; polyc {})</text>",
        escape(&s.baseline),
        escape(&s.commits.join(", "))
    );
    for (k, name) in s.schedulers.iter().enumerate() {
        let x = LEFT + 110.0 * k as f64;
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"30\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"39\">{}</text>",
            COLOURS[k % COLOURS.len()],
            x + 14.0,
            escape(name)
        );
    }
    for p in lo as i32..=hi as i32 {
        let v = 2f64.powi(p);
        let stroke = if p == 0 { "#000" } else { "#ddd" };
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{width:.1}\" y1=\"{0:.1}\" y2=\"{0:.1}\" stroke=\"{stroke}\"/>\
             <text x=\"{1}\" y=\"{2:.1}\" text-anchor=\"end\">{3}x</text>",
            y(v),
            LEFT - 4.0,
            y(v) + 4.0,
            format_factor(v)
        );
    }
    for (i, kernel) in s.kernels.iter().enumerate() {
        let x0 = LEFT + i as f64 * group + GAP / 2.0;
        for (k, v) in s.values[i].iter().enumerate() {
            let x = x0 + k as f64 * BAR;
            match v {
                Some(v) => {
                    let (top, bottom) = (y(v.max(1.0)), y(v.min(1.0)));
                    let _ = writeln!(
                        out,
                        "<rect class=\"bar\" x=\"{x:.1}\" y=\"{top:.1}\" width=\"{BAR}\" \
                         height=\"{:.1}\" fill=\"{}\"><title>{} {}: {v:.2}x</title></rect>",
                        (bottom - top).max(0.5),
                        COLOURS[k % COLOURS.len()],
                        escape(kernel),
                        escape(&s.schedulers[k])
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "<text class=\"missing\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" \
                         fill=\"{}\">×<title>{} {}: no time</title></text>",
                        x + BAR / 2.0,
                        y(1.0) - 2.0,
                        COLOURS[k % COLOURS.len()],
                        escape(kernel),
                        escape(&s.schedulers[k])
                    );
                }
            }
        }
        let cx = x0 + (group - GAP) / 2.0;
        let ty = TOP + HEIGHT + 10.0;
        let _ = writeln!(
            out,
            "<text x=\"{cx:.1}\" y=\"{ty:.1}\" text-anchor=\"end\" \
             transform=\"rotate(-60 {cx:.1} {ty:.1})\">{}</text>",
            escape(kernel)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// `v` (a power of two) as a short factor: `4`, `0.5`, `0.125`.
fn format_factor(v: f64) -> String {
    let text = format!("{v}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_owned)
}

/// `text` with XML's special characters escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
