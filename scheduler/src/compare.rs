//! Schedulers side by side: the shape of the schedule each one finds, and its cost.

use crate::transform::summary::{bands, BandInfo};
use crate::transform::{analysis, optimize, TransformOptions};
use crate::{Problem, Scheduler};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// One scheduler's result on one kernel.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The kernel.
    pub kernel: String,
    /// The scheduler.
    pub scheduler: &'static str,
    /// Its bands after the transformations, or why it failed.
    pub outcome: Result<Shape, String>,
    /// Time to schedule and transform.
    pub time: Duration,
}

/// The shape of a schedule tree.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Its bands.
    pub bands: Vec<BandInfo>,
    /// Its parallel loops ([`analysis::parallel_loops`]: a band copy over statements with
    /// no loop of their own at its depth runs them once and is no loop).
    pub parallel_loops: usize,
}

/// Schedules `problem` with `scheduler`, applies `options`, and measures the result.
pub fn measure(
    problem: &Problem,
    scheduler: &dyn Scheduler,
    options: &TransformOptions,
) -> Measurement {
    let start = Instant::now();
    let outcome = scheduler
        .schedule(problem)
        .map_err(|e| e.to_string())
        .and_then(|s| optimize(problem, &s, options).map_err(|e| e.to_string()))
        .and_then(|o| {
            Ok(Shape {
                bands: bands(&o.tree),
                parallel_loops: analysis::parallel_loops(&o.tree, 0).map_err(|e| e.to_string())?,
            })
        });
    Measurement {
        kernel: problem.program.kernel.name.clone(),
        scheduler: scheduler.name(),
        outcome,
        time: start.elapsed(),
    }
}

/// The columns of [`table`] and [`csv`].
pub const HEADER: [&str; 7] = [
    "kernel",
    "scheduler",
    "bands",
    "band depths",
    "parallel",
    "tiles",
    "ms",
];

/// Each measurement as the cells of one row under [`HEADER`].
pub fn cells(rows: &[Measurement]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|m| {
            let mut row = vec![m.kernel.clone(), m.scheduler.to_string()];
            match &m.outcome {
                Ok(Shape {
                    bands: bs,
                    parallel_loops,
                }) => {
                    let depths: Vec<String> = bs.iter().map(|b| b.members.to_string()).collect();
                    let tiles: Vec<String> = bs
                        .iter()
                        .map(BandInfo::tiling)
                        .filter(|t| t.contains(|c: char| c.is_ascii_digit()))
                        .collect();
                    row.extend([
                        bs.len().to_string(),
                        depths.join(","),
                        parallel_loops.to_string(),
                        if tiles.is_empty() {
                            "-".into()
                        } else {
                            tiles.join(",")
                        },
                    ]);
                }
                Err(e) => row.extend([
                    format!("error: {e}"),
                    String::new(),
                    String::new(),
                    String::new(),
                ]),
            }
            row.push(format!("{:.1}", m.time.as_secs_f64() * 1000.0));
            row
        })
        .collect()
}

/// The measurements as comma-separated values (RFC 4180: a field holding a comma, a quote
/// or a line break is quoted, its quotes doubled), a header line first.
pub fn csv(rows: &[Measurement]) -> String {
    csv_of(&HEADER, &cells(rows))
}

/// Rows of cells under `header` as comma-separated values, the header line first (see
/// [`csv_line`]).
pub fn csv_of(header: &[&str], cells: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    std::iter::once(csv_line(&header))
        .chain(cells.iter().map(|r| csv_line(r)))
        .collect()
}

/// One line of comma-separated values (RFC 4180: a field holding a comma, a quote or a
/// line break is quoted, its quotes doubled), ended by a line break.
pub fn csv_line(fields: &[String]) -> String {
    let field = |f: &str| {
        if f.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", f.replace('"', "\"\""))
        } else {
            f.to_owned()
        }
    };
    let fields: Vec<String> = fields.iter().map(|f| field(f)).collect();
    format!("{}\n", fields.join(","))
}

/// The measurements as an aligned table.
pub fn table(rows: &[Measurement]) -> String {
    table_of(&HEADER, &cells(rows))
}

/// Rows of cells under `header` as an aligned table.
pub fn table_of(header: &[&str], cells: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].len())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = |r: Vec<&str>| {
        let padded: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(s, w)| format!("{s:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", padded.join("  ").trim_end());
    };
    line(header.to_vec());
    for r in cells {
        line(r.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;
    use crate::{FusePolicy, Options};
    use poly::deps::Dependences;

    #[test]
    fn the_parallel_column_counts_loops_not_one_instance_band_copies() {
        // Pluto's smart fusion splits durbin's inner row into copies, some over statements
        // with no loop of their own there: 2 parallel loops (`z`, `y`), not every copy's
        // coincident member.
        let durbin = program("polybench/durbin.pk");
        let deps = Dependences::compute(&durbin).unwrap();
        let problem = Problem {
            program: &durbin,
            deps: &deps,
            options: Options {
                fuse: FusePolicy::Smart,
                ..Options::default()
            },
        };
        let pluto = crate::registry::scheduler_named("pluto").unwrap();
        let m = measure(&problem, pluto.as_ref(), &TransformOptions::default());
        let shape = m.outcome.as_ref().unwrap();
        let members: usize = shape.bands.iter().map(|b| b.parallel.len()).sum();
        assert_eq!(shape.parallel_loops, 2);
        assert!(members > shape.parallel_loops, "{members}");
        let table = table(std::slice::from_ref(&m));
        let row = table.lines().nth(1).unwrap();
        assert_eq!(row.split_whitespace().nth(4), Some("2"), "{table}");
        // The same row as CSV: the band depths, a list, quoted.
        let csv = csv(&[m]);
        let row = csv.lines().nth(1).unwrap();
        assert!(row.starts_with("durbin,pluto,"), "{csv}");
        assert!(row.contains(",\"") && row.contains(",2,"), "{csv}");
    }
}
